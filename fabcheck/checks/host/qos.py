"""Host checks of the NIC's RoCE QoS: what it trusts, where PFC runs, how DSCP maps to priorities,
where ECN is enabled, and the ToS and mode RDMA traffic leaves with."""

from __future__ import annotations

from fabcheck.checks.declare import ROCE
from fabcheck.checks.host.evidence import HostEvidence, unreadable_error
from fabcheck.checks.host.judges import HostCheck, cmd, echo, per_netdev, per_port
from fabcheck.checks.model import Finding, failed, passed, skipped
from fabcheck.checks.roles import HOST_QOS_ROLE
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import ECN_FILES, DesiredNic, ecn_file

TRUST = "host.trust"
PFC = "host.pfc"
DSCP2PRIO = "host.dscp2prio"
ECN_ENABLE = "host.ecn_enable"
ROCE_TOS = "host.roce_tos"
CMA_ROCE_TOS = "host.cma_roce_tos"
CMA_ROCE_MODE = "host.cma_roce_mode"

ROCE_V2 = "RoCE v2"
ROCE_V2_MODE = "2"  # `cma_roce_mode -m 2`


def check_trust(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    data = evidence.netdev(netdev)
    expected = f"trust {desired.trust}"
    if isinstance(data.qos, Unreadable):
        return [unreadable_error(TRUST, nic, expected, data.qos)]
    actual = f"trust {data.qos.trust or 'not shown'}"
    if data.qos.trust == desired.trust:
        return [passed(TRUST, nic, expected, actual)]
    command = cmd("mlnx_qos", "-i", netdev, "--trust", desired.trust)
    return [failed(TRUST, nic, expected, actual, TRUST_CHECK.fix(command))]


def check_pfc(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    data = evidence.netdev(netdev)
    want = desired.pfc_priorities
    expected = _pfc_text(want)
    if isinstance(data.qos, Unreadable):
        return [unreadable_error(PFC, nic, expected, data.qos)]
    actual = _pfc_text(tuple(sorted(data.qos.pfc_enabled)))
    if tuple(sorted(data.qos.pfc_enabled)) == want:
        return [passed(PFC, nic, expected, actual)]
    bitmap = ",".join(map(str, desired.pfc_bitmap))  # the desired record's, as mlnx_qos takes it
    return [failed(PFC, nic, expected, actual, PFC_CHECK.fix(cmd("mlnx_qos", "-i", netdev, "--pfc", bitmap)))]


def _pfc_text(priorities: tuple[int, ...]) -> str:
    return (
        f"PFC on priority {','.join(map(str, priorities))} only"
        if priorities
        else "PFC off on every priority"
    )


def check_dscp2prio(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    data = evidence.netdev(netdev)
    wanted = desired.dscp_to_priority
    expected = ", ".join(f"DSCP {d} -> prio {p}" for d, p in sorted(wanted.items()))
    if desired.trust != "dscp":
        return [skipped(DSCP2PRIO, nic, f"fabric_intent.trust is {desired.trust}: no DSCP map in use")]
    if isinstance(data.qos, Unreadable):
        return [unreadable_error(DSCP2PRIO, nic, expected, data.qos)]
    if data.qos.trust != "dscp":
        return [
            skipped(DSCP2PRIO, nic, f"the NIC trusts {data.qos.trust}: its DSCP map is not in use ({TRUST})")
        ]
    if not data.qos.dscp2prio_shown:
        unshown = Unreadable(cmd("mlnx_qos", "-i", netdev), "trust dscp but no dscp2prio mapping printed")
        return [unreadable_error(DSCP2PRIO, nic, expected, unshown)]
    actual_map = {d: data.qos.dscp2prio.get(d) for d in wanted}
    actual = ", ".join(
        f"DSCP {d} -> prio {'unmapped' if p is None else p}" for d, p in sorted(actual_map.items())
    )
    wrong = sorted(d for d, p in wanted.items() if actual_map[d] != p)
    if not wrong:
        return [passed(DSCP2PRIO, nic, expected, actual)]
    options = [word for d in wrong for word in ("--dscp2prio", f"set,{d},{wanted[d]}")]
    command = cmd("mlnx_qos", "-i", netdev, *options)
    return [failed(DSCP2PRIO, nic, expected, actual, DSCP2PRIO_CHECK.fix(command))]


def check_ecn_enable(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    data = evidence.netdev(netdev)
    prio, want_np, want_rp = desired.ecn_priority, int(desired.np_enable), int(desired.rp_enable)
    np_file, rp_file = (ECN_FILES[value].format(priority=prio) for value in ("np_enable", "rp_enable"))
    expected = f"{np_file}={want_np} {rp_file}={want_rp}"
    np_enable, rp_enable = data.np_enable, data.rp_enable
    if isinstance(np_enable, Unreadable):
        return [unreadable_error(ECN_ENABLE, nic, expected, np_enable)]
    if isinstance(rp_enable, Unreadable):
        return [unreadable_error(ECN_ENABLE, nic, expected, rp_enable)]
    actual = f"{np_file}={np_enable} {rp_file}={rp_enable}"
    if (np_enable, rp_enable) == (want_np, want_rp):
        return [passed(ECN_ENABLE, nic, expected, actual)]
    commands = [
        echo(want, ecn_file(value, netdev, prio))
        for value, want, have in (
            ("np_enable", want_np, np_enable),
            ("rp_enable", want_rp, rp_enable),
        )
        if want != have
    ]
    return [failed(ECN_ENABLE, nic, expected, actual, ECN_ENABLE_CHECK.fix("; ".join(commands)))]


check_roce_tos = per_port(
    ROCE_TOS,
    probes.TRAFFIC_CLASS,
    lambda desired: desired.template.roce_tos,
    lambda value: f"traffic_class {value}",
    lambda dev, port, tos: ROCE_TOS_CHECK.fix(
        echo(tos, f"/sys/class/infiniband/{dev}/tc/{port}/traffic_class")
    ),
)
check_cma_roce_tos = per_port(
    CMA_ROCE_TOS,
    probes.CMA_ROCE_TOS,
    lambda desired: desired.template.roce_tos,
    lambda value: f"RDMA-CM default ToS {value}",
    lambda dev, port, tos: CMA_ROCE_TOS_CHECK.fix(
        cmd("cma_roce_tos", "-d", dev, "-p", str(port), "-t", str(tos))
    ),
)
check_cma_roce_mode = per_port(
    CMA_ROCE_MODE,
    probes.CMA_ROCE_MODE,
    lambda _desired: ROCE_V2,
    lambda value: f"RDMA-CM default mode {value}",
    lambda dev, port, _mode: CMA_ROCE_MODE_CHECK.fix(
        cmd("cma_roce_mode", "-d", dev, "-p", str(port), "-m", ROCE_V2_MODE)
    ),
)

TRUST_CHECK = HostCheck(
    TRUST,
    "host",
    "nic",
    (probes.MLNX_QOS,),
    "`trust`",
    HOST_QOS_ROLE,
    "dscp",
    per_netdev(TRUST, check_trust),
    kinds=ROCE,
)
PFC_CHECK = HostCheck(
    PFC,
    "host",
    "nic",
    (probes.MLNX_QOS,),
    "PFC on exactly `lossless.priority` (none when `lossless.pfc: false`)",
    HOST_QOS_ROLE,
    "pfc",
    per_netdev(PFC, check_pfc),
    kinds=ROCE,
)
DSCP2PRIO_CHECK = HostCheck(
    DSCP2PRIO,
    "host",
    "nic",
    (probes.MLNX_QOS,),
    "every `lossless.dscp` -> `lossless.priority`, `cnp.dscp` -> `cnp.priority`",
    HOST_QOS_ROLE,
    "dscp",
    per_netdev(DSCP2PRIO, check_dscp2prio),
    kinds=ROCE,
)
ECN_ENABLE_CHECK = HostCheck(
    ECN_ENABLE,
    "host",
    "nic",
    (probes.ECN_NP_ENABLE, probes.ECN_RP_ENABLE),
    "NP/RP enable on the lossless priority per `congestion_control` and `dcqcn`",
    HOST_QOS_ROLE,
    "ecn",
    per_netdev(ECN_ENABLE, check_ecn_enable),
    kinds=ROCE,
)
ROCE_TOS_CHECK: HostCheck = HostCheck(
    ROCE_TOS,
    "host",
    "port",
    (probes.TRAFFIC_CLASS,),
    "`traffic_class` == `roce_tos` (`106` or `Global tclass=106`)",
    HOST_QOS_ROLE,
    "dscp",
    check_roce_tos,
    kinds=ROCE,
)
CMA_ROCE_TOS_CHECK: HostCheck = HostCheck(
    CMA_ROCE_TOS,
    "host",
    "port",
    (probes.CMA_ROCE_TOS,),
    "RDMA-CM `default_roce_tos` == `roce_tos`",
    HOST_QOS_ROLE,
    "dscp",
    check_cma_roce_tos,
    kinds=ROCE,
)
CMA_ROCE_MODE_CHECK: HostCheck = HostCheck(
    CMA_ROCE_MODE,
    "host",
    "port",
    (probes.CMA_ROCE_MODE,),
    "RDMA-CM `default_roce_mode` is `RoCE v2`",
    None,
    None,
    check_cma_roce_mode,
    kinds=ROCE,
)
