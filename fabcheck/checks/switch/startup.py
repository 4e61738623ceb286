"""Whether the startup config holds what runs (role switch_qos, tag switch: a push cut off before
its save leaves a reboot to revert it). It compares the two configurations, so it has no owned field."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, switch_check
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.errors import FabcheckError
from fabcheck.intent.platforms import platform_named, resolve
from fabcheck.parsers.switch_records import RunningConfigText, StartupConfigText
from fabcheck.switch.render import render_switch

STARTUP_CONFIG = "switch.startup_config"
# A reboot loads the startup config: at most this many of the owned lines it would revert are named.
STARTUP_LAG_SHOWN = 6


def _want_startup(_d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return "the startup config holds what runs (a reboot reverts nothing fabcheck owns)"


def _judge_startup(
    r: StartupConfigText,
    _port: str | None,
    d: DesiredSwitch,
    _p: DesiredSwitchPort | None,
    more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    running = more.get(RunningConfigText)
    if running is None:
        return Status.ERROR, "the running configuration was not read, so startup has nothing to match"
    try:
        compare = resolve(platform_named(d.platform).startup_lag)
        assert callable(compare)
        # Only what a push of the desired state owns counts: what no push writes, no push saves.
        lines: list[str] = compare(running.text, r.text, render_switch(d).text)
    except FabcheckError as err:  # a reader refused an output, no reader is named, or no render
        return Status.ERROR, f"running and startup cannot be compared: {err}"
    if not lines:
        return Status.PASS, "startup matches running on every owned setting"
    shown = "; ".join(lines[:STARTUP_LAG_SHOWN])
    more_lines = f" (+{len(lines) - STARTUP_LAG_SHOWN} more)" if len(lines) > STARTUP_LAG_SHOWN else ""
    return Status.FAIL, f"{len(lines)} owned line(s) differ, a reboot reverts them: {shown}{more_lines}"


STARTUP_CONFIG_CHECK = switch_check(
    STARTUP_CONFIG,
    "switch",
    "startup config holds what runs (a push cut off before its save)",
    SwitchJudge(StartupConfigText, _want_startup, _judge_startup, also=(RunningConfigText,)),
    NO_INPUTS,
)

FIELDS: tuple[FieldCheck, ...] = ()
