"""The incast stage's checks, declared in the one shape: the stage drives many senders into one victim
(fabcheck.gate.incast_stage) and fabcheck.incast.judge makes the findings from the counters read around
it, so `judge` is None here; each declaration names what one finding judges, what it reads, and the role
and tag that fix a failure."""

from __future__ import annotations

from typing import Any

from fabcheck.checks.declare import ROCE, Check
from fabcheck.checks.roles import HOST_QOS_ROLE, SWITCH_QOS_ROLE

TRAFFIC = "incast.traffic"
COUNTERS = "incast.counters"
LOSSLESS_TRAFFIC = "incast.lossless_traffic"
HOST_DROPS = "incast.host_drops"
OUT_OF_SEQUENCE = "incast.out_of_sequence"
ECN_ENGAGED = "incast.ecn_engaged"
PAUSE = "incast.pause"
PFC_ENGAGED = "incast.pfc_engaged"
SWITCH_DROPS = "incast.switch_drops"
SWITCH_ECN = "incast.switch_ecn"
WATCHDOG = "incast.watchdog"
_NIC_COUNTERS = ("`ethtool -S` of each NIC before and after the incast",)
_SWITCH_COUNTERS = ("the victim's leaf queue counters before and after the incast",)


def _incast(
    check_id: str, scope: str, reads: tuple[str, ...], summary: str, role: str | None, tag: str | None
) -> Check[Any]:
    return Check(check_id, "incast", scope, reads, summary, role, tag, kinds=ROCE)


CHECK_DECLS: tuple[Check[Any], ...] = (
    _incast(TRAFFIC, "sender", ("ib_write_bw into the victim",), "every sender's traffic ran", None, None),
    _incast(COUNTERS, "NIC", _NIC_COUNTERS, "the NIC counters read around the incast", None, None),
    _incast(
        LOSSLESS_TRAFFIC,
        "NIC",
        _NIC_COUNTERS,
        "the incast's traffic counted on the lossless priority",
        HOST_QOS_ROLE,
        "dscp",
    ),
    _incast(HOST_DROPS, "NIC", _NIC_COUNTERS, "no drop on the lossless priority", HOST_QOS_ROLE, "pfc"),
    _incast(OUT_OF_SEQUENCE, "NIC", _NIC_COUNTERS, "no RoCE packet out of sequence", HOST_QOS_ROLE, "pfc"),
    _incast(ECN_ENGAGED, "NIC", _NIC_COUNTERS, "DCQCN engaged: ECN marks or CNPs > 0", HOST_QOS_ROLE, "ecn"),
    _incast(PAUSE, "NIC", _NIC_COUNTERS, "pause frames where PFC had to act", HOST_QOS_ROLE, "pfc"),
    _incast(
        PFC_ENGAGED,
        "switch port",
        _SWITCH_COUNTERS,
        "pause frames on the lossless priority, or DCQCN keeping the queue below PFC",
        SWITCH_QOS_ROLE,
        "pfc",
    ),
    _incast(
        SWITCH_DROPS,
        "switch port",
        _SWITCH_COUNTERS,
        "no drop on the lossless traffic class",
        SWITCH_QOS_ROLE,
        "pfc",
    ),
    _incast(
        SWITCH_ECN,
        "switch port",
        _SWITCH_COUNTERS,
        "ECN marks on the lossless queue toward the victim",
        SWITCH_QOS_ROLE,
        "ecn",
    ),
    _incast(
        WATCHDOG,
        "switch port",
        _SWITCH_COUNTERS,
        "no PFC watchdog storm on the lossless traffic class",
        SWITCH_QOS_ROLE,
        "watchdog",
    ),
)
