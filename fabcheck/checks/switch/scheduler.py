"""Egress scheduling (role switch_qos, tag scheduler): every class the push writes, its mode (strict
or DWRR) and its DWRR share, as the switch shows them."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck, eos_profile_and_port
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, or_unknown, switch_check
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import Schedulers

SCHEDULER = "switch.scheduler"


def _want_scheduler(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return "; ".join(_scheduled_text(c.traffic_class, c.mode, c.share) for c in d.egress_schedule)


def _scheduled_text(traffic_class: int, mode: str, share: int | None) -> str:
    return f"TC{traffic_class} {mode}" + (f" {or_unknown(share)} %" if mode == "dwrr" else "")


def _judge_scheduler(
    r: Schedulers,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    """Every class the push writes (DesiredSwitch.egress_schedule: on NVUE all eight classes of
    default-global, the unplanned ones at their small share), mode and DWRR share as shown."""
    shown, ok = [], True
    for wanted in d.egress_schedule:
        have = r.queue(wanted.traffic_class)
        if have is None:
            shown.append(f"TC{wanted.traffic_class} not scheduled")
            ok = False
            continue
        shown.append(_scheduled_text(have.traffic_class, have.mode, have.weight_percent))
        same_weight = wanted.mode != "dwrr" or have.weight_percent == wanted.share
        ok = ok and have.mode == wanted.mode and same_weight
    return (Status.PASS if ok else Status.FAIL), "; ".join(shown)


SCHEDULER_CHECK = switch_check(
    SCHEDULER,
    "scheduler",
    "egress scheduling",
    SwitchJudge(Schedulers, _want_scheduler, _judge_scheduler),
    NO_INPUTS,
)

_NVUE_SCHED = "qos egress-scheduler default-global traffic-class <tc>"

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "interface <port> qos egress-scheduler profile", SCHEDULER),
    FieldCheck("nvue", f"{_NVUE_SCHED} bw-percent", SCHEDULER),
    FieldCheck("nvue", f"{_NVUE_SCHED} mode", SCHEDULER),
    FieldCheck("sonic", "QUEUE|<port>|<tc> scheduler", SCHEDULER),
    FieldCheck("sonic", "SCHEDULER|FABCHECK_TC<tc> type", SCHEDULER),
    FieldCheck("sonic", "SCHEDULER|FABCHECK_TC<tc> weight", SCHEDULER),
    *eos_profile_and_port("uc-tx-queue <tc> bandwidth percent", SCHEDULER),
    *eos_profile_and_port("uc-tx-queue <tc> priority", SCHEDULER),
)
