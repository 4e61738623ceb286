"""Host checks of the pre-flight gate: the records one host showed + its desired state -> findings.

Pure. Each check is declared once (fabcheck.checks.declare.Check) in the module of its concern:
ports (devices, port state, link layer, speed, MTUs), qos (trust, PFC, DSCP map, ECN, ToS), dcqcn
(CNP, min_time_between_cnps, rp_params), pfc_storm, persistence (the boot file), gpu (GPUDirect by
dma-buf or nvidia_peermem, GPU-NIC affinity), wire (errors, flaps and optics of each rail NIC;
docs/checks/wire.md) and fleet (what must agree across the hosts of a run). This module lists them
in the order the gate runs them and docs/checks/host.md shows them. A record that could not be read
arrives as `Unreadable` (evidence.py) and becomes an ERROR naming the command, never a pass. Every
failure hint names the role (and its tag) that fixes it fleet-wide and the command that fixes this
device (the wire checks, which no role sets: what to clean, reseat or replace).

Adding a host check: a probe line in fabcheck.collect.host, its parser, one module here with the
judge and its `Check`, and its name in HOST_CHECK_DECLS.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabcheck.checks.declare import ROCE, other_kind
from fabcheck.checks.host.dcqcn import (
    CNP,
    CNP_CHECK,
    DCQCN_MODES,
    MIN_TIME_BETWEEN_CNPS,
    MIN_TIME_BETWEEN_CNPS_CHECK,
    RP_PARAMS,
    RP_PARAMS_CHECK,
    check_cnp,
    check_min_time_between_cnps,
    check_rp_params,
)
from fabcheck.checks.host.evidence import (
    HostEvidence,
    NetdevEvidence,
    PersistEvidence,
    RailNic,
    Unreadable,
    present_nics,
    rail_nics,
)
from fabcheck.checks.host.firmware import NIC_FIRMWARE, NIC_FIRMWARE_CHECK, NIC_FW_CONFIG, NIC_FW_CONFIG_CHECK
from fabcheck.checks.host.fleet import GID_INDEX, GID_INDEX_CHECK, VERSIONS, VERSIONS_CHECK, FleetCheck
from fabcheck.checks.host.gpu import (
    AFFINITY,
    AFFINITY_CHECK,
    GPUDIRECT,
    GPUDIRECT_CHECK,
    check_affinity,
    check_gpudirect,
)
from fabcheck.checks.host.gpu_health import GPU_HEALTH, GPU_HEALTH_CHECK, check_gpu_health
from fabcheck.checks.host.judges import HostCheck, Scope
from fabcheck.checks.host.nvlink import FABRIC_MANAGER, IMEX, NVLINK, NVLINK_FABRIC, NVLINK_FABRIC_CHECK
from fabcheck.checks.host.nvlink import HOST_CHECKS as NVLINK_CHECKS
from fabcheck.checks.host.pcie import CHECKS as PCIE_CHECKS
from fabcheck.checks.host.pcie import IOMMU, PCIE_ACS, PCIE_ERRORS, PCIE_LINK
from fabcheck.checks.host.persistence import (
    NIC_PERSISTENCE,
    NIC_PERSISTENCE_CHECK,
    boot_settings,
    check_nic_persistence,
)
from fabcheck.checks.host.pfc_storm import (
    PFC_STORM_PREVENTION,
    PFC_STORM_PREVENTION_CHECK,
    check_pfc_storm_prevention,
)
from fabcheck.checks.host.ports import (
    LINK_LAYER,
    LINK_LAYER_CHECK,
    NETDEV_MTU,
    NETDEV_MTU_CHECK,
    PORT_SPEED,
    PORT_SPEED_CHECK,
    PORT_STATE,
    PORT_STATE_CHECK,
    RDMA_DEVICE,
    RDMA_DEVICE_CHECK,
    RDMA_MTU,
    RDMA_MTU_CHECK,
    PortSpeedInputs,
    check_link_layer,
    check_netdev_mtu,
    check_port_speed,
    check_port_state,
    check_rdma_devices,
    check_rdma_mtu,
)
from fabcheck.checks.host.qos import (
    CMA_ROCE_MODE,
    CMA_ROCE_MODE_CHECK,
    CMA_ROCE_TOS,
    CMA_ROCE_TOS_CHECK,
    DSCP2PRIO,
    DSCP2PRIO_CHECK,
    ECN_ENABLE,
    ECN_ENABLE_CHECK,
    PFC,
    PFC_CHECK,
    ROCE_TOS,
    ROCE_TOS_CHECK,
    TRUST,
    TRUST_CHECK,
    check_dscp2prio,
    check_ecn_enable,
    check_pfc,
    check_trust,
)
from fabcheck.checks.host.wire import CHECKS as WIRE_CHECKS
from fabcheck.checks.host.wire import LINK_ERRORS, LINK_FLAPS, OPTICS
from fabcheck.checks.model import Finding, skipped
from fabcheck.desired.nic import DesiredHost
from fabcheck.intent.model import FabricIntent

HOST_CHECK_DECLS: tuple[HostCheck, ...] = (
    RDMA_DEVICE_CHECK,
    PORT_STATE_CHECK,
    LINK_LAYER_CHECK,
    PORT_SPEED_CHECK,
    TRUST_CHECK,
    PFC_CHECK,
    PFC_STORM_PREVENTION_CHECK,
    DSCP2PRIO_CHECK,
    ECN_ENABLE_CHECK,
    CNP_CHECK,
    MIN_TIME_BETWEEN_CNPS_CHECK,
    RP_PARAMS_CHECK,
    ROCE_TOS_CHECK,
    CMA_ROCE_TOS_CHECK,
    CMA_ROCE_MODE_CHECK,
    NETDEV_MTU_CHECK,
    RDMA_MTU_CHECK,
    NIC_PERSISTENCE_CHECK,
    GPUDIRECT_CHECK,
    AFFINITY_CHECK,
    *WIRE_CHECKS,
    NIC_FW_CONFIG_CHECK,
    *PCIE_CHECKS,
    GPU_HEALTH_CHECK,
    *NVLINK_CHECKS,
)
FLEET_CHECK_DECLS: tuple[FleetCheck, ...] = (
    GID_INDEX_CHECK,
    VERSIONS_CHECK,
    NIC_FIRMWARE_CHECK,
    NVLINK_FABRIC_CHECK,
)
HOST_CHECKS = tuple(check.id for check in HOST_CHECK_DECLS)
FLEET_CHECKS = tuple(check.id for check in FLEET_CHECK_DECLS)
# The RoCE checks judged per rail NIC or port: nothing to judge, nothing passed on a host without NICs.
ROCE_ONLY_CHECKS = tuple(c.id for c in HOST_CHECK_DECLS if c.kinds == ROCE and c.scope in ("nic", "port"))


def check_host(evidence: HostEvidence, desired: DesiredHost, intent: FabricIntent) -> list[Finding]:
    """Every declared host check for one host, in declaration order (HOST_CHECKS). `desired` is the
    host's desired state as the gate planned it; the checks read it and derive nothing."""
    findings: list[Finding] = []
    for check in HOST_CHECK_DECLS:
        reason = check.not_applicable(intent, desired)
        if reason:
            findings.append(skipped(check.id, "host", reason))
        else:
            assert check.judge is not None  # every host check is judged here
            findings += check.judge(evidence, desired, intent, check.inputs)
    return findings


def check_fleet(
    evidence: Mapping[str, HostEvidence],
    desired: Mapping[str, DesiredHost],
    intents: Mapping[str, FabricIntent],
) -> dict[str, list[Finding]]:
    """Every fleet check over the hosts that were read: host -> its findings."""
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    for check in FLEET_CHECK_DECLS:
        applies = {h: e for h, e in evidence.items() if intents[h].kind in check.kinds}
        for host in evidence.keys() - applies.keys():
            result[host].append(skipped(check.id, "host", other_kind(check.kinds, intents[host].kind)))
        assert check.judge is not None  # every fleet check is judged here
        for host, findings in check.judge(applies, desired, intents, check.inputs).items():
            result[host] += findings
    return result


__all__ = [
    "AFFINITY",
    "CMA_ROCE_MODE",
    "CMA_ROCE_TOS",
    "CNP",
    "DCQCN_MODES",
    "DSCP2PRIO",
    "ECN_ENABLE",
    "FABRIC_MANAGER",
    "FLEET_CHECKS",
    "FLEET_CHECK_DECLS",
    "GID_INDEX",
    "GPUDIRECT",
    "GPU_HEALTH",
    "HOST_CHECKS",
    "HOST_CHECK_DECLS",
    "IMEX",
    "IOMMU",
    "LINK_ERRORS",
    "LINK_FLAPS",
    "LINK_LAYER",
    "MIN_TIME_BETWEEN_CNPS",
    "NETDEV_MTU",
    "NIC_FIRMWARE",
    "NIC_FW_CONFIG",
    "NIC_PERSISTENCE",
    "NVLINK",
    "NVLINK_FABRIC",
    "OPTICS",
    "PCIE_ACS",
    "PCIE_ERRORS",
    "PCIE_LINK",
    "PFC",
    "PFC_STORM_PREVENTION",
    "PORT_SPEED",
    "PORT_STATE",
    "RDMA_DEVICE",
    "RDMA_MTU",
    "ROCE_ONLY_CHECKS",
    "ROCE_TOS",
    "RP_PARAMS",
    "TRUST",
    "VERSIONS",
    "FleetCheck",
    "HostCheck",
    "HostEvidence",
    "NetdevEvidence",
    "PersistEvidence",
    "PortSpeedInputs",
    "RailNic",
    "Scope",
    "Unreadable",
    "boot_settings",
    "check_affinity",
    "check_cnp",
    "check_dscp2prio",
    "check_ecn_enable",
    "check_fleet",
    "check_gpu_health",
    "check_gpudirect",
    "check_host",
    "check_link_layer",
    "check_min_time_between_cnps",
    "check_netdev_mtu",
    "check_nic_persistence",
    "check_pfc",
    "check_pfc_storm_prevention",
    "check_port_speed",
    "check_port_state",
    "check_rdma_devices",
    "check_rdma_mtu",
    "check_rp_params",
    "check_trust",
    "present_nics",
    "rail_nics",
]
