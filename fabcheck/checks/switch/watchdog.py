"""The PFC watchdog (role switch_qos, tag watchdog): on for every port with PFC and no class stormed,
on EOS the guaranteed bandwidth without which it watches no queue, and its timers and storm action."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck, eos_profile_and_port
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, ids, switch_check
from fabcheck.checks.switch.scheduler import SCHEDULER
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import QueueGuarantees, WatchdogConfig, WatchdogSettings, WatchdogStatus

WATCHDOG = "switch.watchdog"
WATCHDOG_SETTINGS = "switch.watchdog_settings"


def _needs_watchdog(d: DesiredSwitch) -> str | None:
    return None if d.watchdog.enabled else "the intent runs no PFC: no PFC watchdog is expected"


def _guarantees_text(guarantees: Mapping[int, str]) -> str:
    return ", ".join(f"tx-queue {tc} guaranteed {rate}" for tc, rate in sorted(guarantees.items()))


def _wanted_guarantees(d: DesiredSwitch) -> dict[int, str]:
    return {tc: f"percent {percent}" for tc, percent in d.watchdog_guarantees.items()}


def _want_watchdog(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    watched = _guarantees_text(_wanted_guarantees(d))
    return "PFC watchdog enabled, no class stormed" + (f", watching {watched}" if watched else "")


def _judge_watchdog(
    r: WatchdogConfig,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    status = more.get(WatchdogStatus)
    state = "enabled" if r.enabled else "disabled"
    guaranteed = more.get(QueueGuarantees)
    wanted = _wanted_guarantees(d)
    if r.enabled and wanted and guaranteed is not None:
        # EOS watches only PFC queues with guaranteed bandwidth: one without it is never watched.
        have = dict(guaranteed.by_queue)
        shown = {tc: have.get(tc, "nothing") for tc in wanted}
        if shown != wanted:
            unwatched = _guarantees_text(shown)
            return Status.FAIL, f"PFC watchdog {state}, but {unwatched}: EOS watches no such queue"
    if status is None:
        return (Status.PASS if r.enabled else Status.FAIL), f"PFC watchdog {state} (storm state not shown)"
    if status.stormed:
        return Status.FAIL, f"PFC watchdog {state}, stormed: {ids(status.stormed)}"
    return (Status.PASS if r.enabled else Status.FAIL), f"PFC watchdog {state}, no class stormed"


def _settings_text(settings: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{key} {value}" for key, value in settings) or "none set"


def _want_watchdog_settings(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"PFC watchdog {_settings_text(d.watchdog.settings(d.platform))}"


def _judge_watchdog_settings(
    r: WatchdogSettings,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    config = more.get(WatchdogConfig)
    if port is not None and config is not None and not config.enabled:
        return Status.SKIP, f"the PFC watchdog is off on {port} ({WATCHDOG} fails it); its settings are moot"
    wanted = d.watchdog.settings(d.platform)
    have = r.mapping
    shown = [(key, have.get(key, "unset")) for key, _value in wanted]
    return (
        Status.PASS if dict(shown) == dict(wanted) else Status.FAIL
    ), f"PFC watchdog {_settings_text(shown)}"


WATCHDOG_CHECK = switch_check(
    WATCHDOG,
    "watchdog",
    "PFC watchdog enabled and not stormed",
    SwitchJudge(
        WatchdogConfig,
        _want_watchdog,
        _judge_watchdog,
        also=(WatchdogStatus, QueueGuarantees),
        ports=lambda port: port.pfc_watchdog,
    ),
    NO_INPUTS,
    applies=_needs_watchdog,
)
WATCHDOG_SETTINGS_CHECK = switch_check(
    WATCHDOG_SETTINGS,
    "watchdog",
    "PFC watchdog timers and storm action",
    SwitchJudge(
        WatchdogSettings,
        _want_watchdog_settings,
        _judge_watchdog_settings,
        also=(WatchdogConfig,),
        ports=lambda port: port.pfc_watchdog,
        not_shown="the gate reads no PFC watchdog settings there",
    ),
    NO_INPUTS,
    applies=_needs_watchdog,
)

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "interface <port> qos pfc-watchdog state", WATCHDOG),
    FieldCheck("nvue", "qos pfc-watchdog polling-interval", WATCHDOG_SETTINGS),
    FieldCheck("nvue", "qos pfc-watchdog robustness", WATCHDOG_SETTINGS),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfcwd_sw_enable", WATCHDOG),
    FieldCheck("sonic", "PFC_WD|<port> action", WATCHDOG_SETTINGS),
    FieldCheck("sonic", "PFC_WD|<port> detection_time", WATCHDOG_SETTINGS),
    FieldCheck("sonic", "PFC_WD|<port> restoration_time", WATCHDOG_SETTINGS),
    *eos_profile_and_port("priority-flow-control pause watchdog", WATCHDOG),
    # the watched lossless queue's DWRR share, written as the guarantee the watchdog needs
    *eos_profile_and_port("uc-tx-queue <tc> bandwidth guaranteed", WATCHDOG, (SCHEDULER,)),
    FieldCheck("eos", "priority-flow-control pause watchdog default timeout", WATCHDOG_SETTINGS),
    FieldCheck("eos", "priority-flow-control pause watchdog default recovery-time", WATCHDOG_SETTINGS),
    FieldCheck("eos", "priority-flow-control pause watchdog action", WATCHDOG_SETTINGS),
)
