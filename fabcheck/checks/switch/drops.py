"""Drops on the lossless queue while the gate ran (role switch_qos, tag pfc: a lossless class that
drops lacks PFC somewhere on its path). A counter, not a setting: it has no owned field."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, switch_check
from fabcheck.checks.switch.pfc import needs_pfc
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import QueueDrops

LOSSLESS_DROPS = "switch.lossless_drops"


def _want_drops(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"no drops on lossless traffic class {d.lossless_traffic_class} while the gate ran"


def _judge_drops(
    r: QueueDrops,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    drops = dict(r.by_queue).get(d.lossless_traffic_class, r.roce_class)
    if drops is None:
        return Status.ERROR, f"no drop counter for traffic class {d.lossless_traffic_class}"
    return (Status.PASS if drops == 0 else Status.FAIL), f"{drops} packets dropped while the gate ran"


LOSSLESS_DROPS_CHECK = switch_check(
    LOSSLESS_DROPS,
    "pfc",
    "no drops on the lossless queue during the run",
    SwitchJudge(
        QueueDrops,
        _want_drops,
        _judge_drops,
        ports=lambda port: bool(port.pfc_priorities),
        not_shown="queue drop counters are not read on this platform yet",
    ),
    NO_INPUTS,
    applies=needs_pfc,
)

FIELDS: tuple[FieldCheck, ...] = ()
