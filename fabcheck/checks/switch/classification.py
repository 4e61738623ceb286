"""Classification (role switch_qos, tag dscp): what a port trusts and the maps that carry a packet's
DSCP (or PCP) to its switch priority, its traffic class, its egress queue and its ingress priority
group."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.ecn import ECN
from fabcheck.checks.switch.fields import FieldCheck, eos_profile_and_port
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, map_drift, pairs, switch_check
from fabcheck.checks.switch.pfc import PFC
from fabcheck.checks.switch.scheduler import SCHEDULER
from fabcheck.checks.switch.watchdog import WATCHDOG
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import DscpMap, PriorityMap, QueueMaps, Trust

TRUST = "switch.trust"
DSCP_MAP = "switch.dscp_map"
PRIORITY_MAP = "switch.priority_map"
QUEUE_MAP = "switch.queue_map"


def _want_trust(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return p.trust if p else d.trust


def _judge_trust(
    r: Trust, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: MoreRecords, _i: Inputs
) -> Verdict:
    return (Status.PASS if r.mode == _want_trust(d, p, NO_INPUTS) else Status.FAIL), r.mode


def _wanted_dscp(d: DesiredSwitch, r: DscpMap) -> dict[int, int]:
    return d.dscp_to_switch_priority if r.target == "switch-priority" else d.dscp_to_traffic_class


def _want_dscp(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return (
        f"DSCP->switch priority {pairs(d.dscp_to_switch_priority)} "
        f"(DSCP->traffic class {pairs(d.dscp_to_traffic_class)})"
    )


def _judge_dscp(
    r: DscpMap, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, more: MoreRecords, _i: Inputs
) -> Verdict:
    trust = more.get(Trust)
    if port is not None and trust is not None and "dscp" not in trust.mode.split(","):
        return Status.SKIP, f"{port} trusts {trust.mode}: its DSCP map is not in use ({TRUST} fails it)"
    have = r.mapping
    wanted = _wanted_dscp(d, r)
    shown = ", ".join(f"{dscp}->{have.get(dscp, 'unmapped')}" for dscp in sorted(wanted))
    ok = all(have.get(dscp) == value for dscp, value in wanted.items())
    return (Status.PASS if ok else Status.FAIL), f"DSCP->{r.target} {shown}"


def _want_priority_map(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return pairs(dict(enumerate(d.switch_priority_to_traffic_class)))


def _judge_priority_map(
    r: PriorityMap,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    wanted = dict(enumerate(d.switch_priority_to_traffic_class))
    have = r.mapping
    ok = all(have.get(prio) == tc for prio, tc in wanted.items())
    return (Status.PASS if ok else Status.FAIL), pairs(have)


def _want_queue_map(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    wanted = (
        f"traffic class->queue {pairs(d.traffic_class_to_queue)}; "
        f"traffic class->priority group {pairs(d.traffic_class_to_priority_group)}"
    )
    if (p.trust if p else d.trust) != "dscp":
        wanted += f"; PCP->traffic class {pairs(d.pcp_to_traffic_class)}"
    return wanted


def _judge_queue_map(
    r: QueueMaps,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    """SONiC: the class -> queue and class -> ingress group maps the port binds (the other checks judge
    queue n as class n's: a class that leaves by another queue gets another queue's ECN, scheduler and
    buffer), and on a port that trusts PCP its PCP -> class map."""
    off = map_drift("TC_TO_QUEUE_MAP", "class", "queue", d.traffic_class_to_queue, r.tc_to_queue)
    off += map_drift(
        "TC_TO_PRIORITY_GROUP_MAP",
        "class",
        "priority group",
        d.traffic_class_to_priority_group,
        r.tc_to_priority_group,
    )
    if (p.trust if p else d.trust) != "dscp":
        off += map_drift("DOT1P_TO_TC_MAP", "PCP", "class", d.pcp_to_traffic_class, r.pcp_to_tc)
    if off:
        return Status.FAIL, "; ".join(off)
    return Status.PASS, (
        f"traffic class->queue {pairs(dict(r.tc_to_queue or ()))}; "
        f"traffic class->priority group {pairs(dict(r.tc_to_priority_group or ()))}"
    )


TRUST_CHECK = switch_check(
    TRUST, "dscp", "classification trust (dscp)", SwitchJudge(Trust, _want_trust, _judge_trust), NO_INPUTS
)
DSCP_MAP_CHECK = switch_check(
    DSCP_MAP,
    "dscp",
    "DSCP -> switch priority / traffic class",
    SwitchJudge(DscpMap, _want_dscp, _judge_dscp, also=(Trust,)),
    NO_INPUTS,
)
PRIORITY_MAP_CHECK = switch_check(
    PRIORITY_MAP,
    "dscp",
    "switch priority -> traffic class",
    SwitchJudge(
        PriorityMap,
        _want_priority_map,
        _judge_priority_map,
        not_shown="DSCP maps straight to traffic classes; there is no switch-priority stage to check",
    ),
    NO_INPUTS,
)
QUEUE_MAP_CHECK = switch_check(
    QUEUE_MAP,
    "dscp",
    "traffic class -> egress queue and ingress priority group",
    SwitchJudge(
        QueueMaps,
        _want_queue_map,
        _judge_queue_map,
        not_shown="a traffic class leaves by the queue of its number; there is no class -> queue map",
    ),
    NO_INPUTS,
)

# An EOS port binds the service profile, which carries the class settings of these checks too.
_PROFILE_CHECKS = (PFC, WATCHDOG, ECN, SCHEDULER)

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "qos mapping default-global trust", TRUST),
    FieldCheck("nvue", "qos mapping default-global dscp <d> switch-priority", DSCP_MAP),
    FieldCheck(
        "nvue", "qos egress-queue-mapping default-global switch-priority <p> traffic-class", PRIORITY_MAP
    ),
    FieldCheck("nvue", "interface <port> qos mapping profile", TRUST),
    FieldCheck("sonic", "DSCP_TO_TC_MAP|FABCHECK <d>", DSCP_MAP),
    FieldCheck("sonic", "DOT1P_TO_TC_MAP|FABCHECK <pcp>", QUEUE_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> dscp_to_tc_map", DSCP_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> dot1p_to_tc_map", TRUST),
    FieldCheck("sonic", "TC_TO_QUEUE_MAP|FABCHECK <tc>", QUEUE_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> tc_to_queue_map", QUEUE_MAP),
    FieldCheck("sonic", "TC_TO_PRIORITY_GROUP_MAP|FABCHECK <tc>", QUEUE_MAP),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> tc_to_pg_map", QUEUE_MAP),
    FieldCheck("eos", "qos map dscp <d> to traffic-class <tc>", DSCP_MAP),
    *eos_profile_and_port("qos trust", TRUST),
    FieldCheck("eos", "interface <port>: service-profile", TRUST, also=_PROFILE_CHECKS),
)
