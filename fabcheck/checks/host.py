"""Host checks of the pre-flight gate: the records one host showed + its intent -> findings.

Pure. Each check is declared once in HOST_CHECK_DECLS (per host) or FLEET_CHECK_DECLS (comparing the
hosts of a run): id, scope, the probes whose records it needs, when it applies (fabric kind,
congestion-control mode), the role and tag that fix it, and a judge. A record that could not be
read arrives as `Unreadable` and becomes an ERROR naming the command, never a pass. Every failure
hint names the role (and its tag) that fixes it fleet-wide and the command that fixes this device.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.checks.roles import GPU_RDMA_ROLE, HOST_PERSIST_TAG, HOST_QOS_ROLE
from fabcheck.checks.topo import CHECK as TOPO_CHECK
from fabcheck.checks.topo import check_topo
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable, section_command
from fabcheck.desired.nic import PERSIST_PATHS, PERSIST_UNIT, desired_host, desired_nic
from fabcheck.intent.model import ROCE_HEADER_BYTES, FabricIntent
from fabcheck.parsers.host_sysfs import DriverInfo
from fabcheck.parsers.ibv_devinfo import IbvDevice, IbvPort
from fabcheck.parsers.mlnx_qos import MlnxQos
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.show_gids import GidEntry
from fabcheck.parsers.topo import TopoMatrix

__all__ = ["Unreadable"]  # re-exported: later stages read host records through this module

RDMA_DEVICE = "host.rdma_device"
PORT_STATE = "host.port_state"
LINK_LAYER = "host.link_layer"
TRUST = "host.trust"
PFC = "host.pfc"
DSCP2PRIO = "host.dscp2prio"
ECN_ENABLE = "host.ecn_enable"
CNP = "host.cnp"
MIN_TIME_BETWEEN_CNPS = "host.min_time_between_cnps"
RP_PARAMS = "host.rp_params"
ROCE_TOS = "host.roce_tos"
CMA_ROCE_TOS = "host.cma_roce_tos"
CMA_ROCE_MODE = "host.cma_roce_mode"
NETDEV_MTU = "host.netdev_mtu"
RDMA_MTU = "host.rdma_mtu"
PORT_SPEED = "host.port_speed"
PEERMEM = "host.nvidia_peermem"
NIC_PERSISTENCE = "host.nic_persistence"
PFC_STORM_PREVENTION = "host.pfc_storm_prevention"
AFFINITY = TOPO_CHECK
GID_INDEX = "host.gid_index"  # fleet: the RoCE v2 GID NCCL uses sits at one index on every host
VERSIONS = "host.versions"  # fleet: one driver and firmware version per NIC model across the hosts

PEERMEM_MODULE = "nvidia_peermem"
GOOD_PORT = ("ACTIVE", "LINK_UP")
ROCE_V2 = "RoCE v2"
ROCE_V2_MODE = "2"  # `cma_roce_mode -m 2`


@dataclass(frozen=True)
class NetdevEvidence:
    """What the host showed for one RoCE netdev (the view the link stage reads)."""

    qos: MlnxQos | Unreadable
    mtu: int | Unreadable
    np_enable: int | Unreadable  # roce_np/enable/<lossless priority>
    rp_enable: int | Unreadable
    cnp_dscp: int | Unreadable
    cnp_prio: int | Unreadable


@dataclass(frozen=True)
class PersistEvidence:
    """What the host keeps to re-apply its NIC settings at boot (role roce_host, tag persist)."""

    settings: dict[str, Any] | Unreadable | None  # the boot file's settings; None: no boot file
    unit_state: str | Unreadable  # `systemctl is-enabled`: enabled, disabled, ..., absent
    present: frozenset[str] | Unreadable  # which of PERSIST_PATHS exist


@dataclass(frozen=True)
class HostEvidence:
    """Every record one collection round trip showed: (probe, subject) -> record or Unreadable.

    The subject is "" for a host probe, "mlx5_0/1" for a port probe, the netdev for a netdev probe
    (collect.host.HOST_PROBES). The properties are the named views checks and later stages read."""

    records: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    priority: int = 3  # the lossless priority the collection read ECN enables at

    def record(self, probe: str, subject: str = "") -> Any:
        if (probe, subject) in self.records:
            return self.records[(probe, subject)]
        name = f"{probe}:{subject}" if subject else probe
        return Unreadable(section_command(name, self.priority), "not collected")

    @property
    def topo(self) -> TopoMatrix | Unreadable:
        return self.record(probes.TOPO)  # type: ignore[no-any-return]

    @property
    def links(self) -> tuple[RdmaLink, ...] | Unreadable:
        return self.record(probes.RDMA_LINK)  # type: ignore[no-any-return]

    @property
    def devices(self) -> tuple[IbvDevice, ...] | Unreadable:
        return self.record(probes.IBV_DEVINFO)  # type: ignore[no-any-return]

    @property
    def modules(self) -> frozenset[str] | Unreadable:
        return self.record(probes.LSMOD)  # type: ignore[no-any-return]

    @property
    def netdevs(self) -> dict[str, NetdevEvidence]:
        names = sorted({subject for (probe, subject) in self.records if probe == probes.MLNX_QOS})
        return {name: self.netdev(name) for name in names}

    def netdev(self, name: str) -> NetdevEvidence:
        return NetdevEvidence(
            qos=self.record(probes.MLNX_QOS, name),
            mtu=self.record(probes.NETDEV_MTU, name),
            np_enable=self.record(probes.ECN_NP_ENABLE, name),
            rp_enable=self.record(probes.ECN_RP_ENABLE, name),
            cnp_dscp=self.record(probes.CNP_DSCP, name),
            cnp_prio=self.record(probes.CNP_PRIO, name),
        )

    @property
    def traffic_class(self) -> dict[str, int | Unreadable]:
        """ "mlx5_0/1" -> the port's default TClass."""
        return {s: v for (p, s), v in self.records.items() if p == probes.TRAFFIC_CLASS}

    @property
    def persistence(self) -> PersistEvidence:
        return PersistEvidence(
            settings=self.record(probes.PERSIST_CONFIG),
            unit_state=self.record(probes.PERSIST_UNIT_STATE),
            present=self.record(probes.PERSIST_FILES),
        )


@dataclass(frozen=True)
class _Nic:
    """One rail NIC as the host shows it: its ports in `rdma link` and `ibv_devinfo`."""

    name: str
    links: tuple[RdmaLink, ...]
    ports: tuple[IbvPort, ...]

    @property
    def netdev(self) -> str | None:
        return next((link.netdev for link in self.links if link.netdev), None)


Judge = Callable[[HostEvidence, FabricIntent], list[Finding]]
Scope = Literal["host", "nic", "port", "gpu", "boot file"]


@dataclass(frozen=True)
class HostCheck:
    """A host check, declared once: what it judges, what it reads, when it applies, who fixes it."""

    id: str
    scope: Scope
    needs: tuple[str, ...]  # the probes (collect.host.HOST_PROBES) whose records it reads
    summary: str  # one line for the check table
    role: str | None  # the role that sets what it judges (None: no fabcheck role does)
    tag: str | None  # the role's tag that scopes a run to it (None: the whole role)
    judge: Judge
    kinds: tuple[str, ...] = ("roce", "ib")  # fabric_intent.kind values it applies to
    modes: tuple[str, ...] | None = None  # congestion_control values it applies to (None: all)
    applies: Callable[[FabricIntent], str | None] = lambda _intent: None  # None, or why it does not

    def not_applicable(self, intent: FabricIntent) -> str | None:
        """Why this check does not apply to the intent, or None."""
        if intent.kind not in self.kinds:
            return _other_kind(self.kinds, intent)
        if self.modes is not None and intent.congestion_control not in self.modes:
            return (
                f"fabric_intent.congestion_control is {intent.congestion_control}: "
                f"judged with {' or '.join(self.modes)} only"
            )
        return self.applies(intent)


def _other_kind(kinds: tuple[str, ...], intent: FabricIntent) -> str:
    only = "RoCE" if kinds == ("roce",) else "/".join(kinds)
    return f"{only}-only check; fabric_intent.kind is {intent.kind}"


FleetJudge = Callable[[Mapping[str, HostEvidence], Mapping[str, FabricIntent]], dict[str, list[Finding]]]


@dataclass(frozen=True)
class FleetCheck:
    """A check across the hosts of one run (each host's findings name what differs there)."""

    id: str
    needs: tuple[str, ...]
    summary: str
    role: str | None
    tag: str | None
    judge: FleetJudge
    scope: Scope  # what one finding judges on each host
    kinds: tuple[str, ...] = ("roce", "ib")


def check_host(evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    """Every declared host check for one host, in declaration order (HOST_CHECKS)."""
    findings: list[Finding] = []
    for check in HOST_CHECK_DECLS:
        reason = check.not_applicable(intent)
        findings += [skipped(check.id, "host", reason)] if reason else check.judge(evidence, intent)
    return findings


def check_fleet(
    evidence: Mapping[str, HostEvidence], intents: Mapping[str, FabricIntent]
) -> dict[str, list[Finding]]:
    """Every fleet check over the hosts that were read: host -> its findings."""
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    for check in FLEET_CHECK_DECLS:
        applies = {h: e for h, e in evidence.items() if intents[h].kind in check.kinds}
        for host in evidence.keys() - applies.keys():
            result[host].append(skipped(check.id, "host", _other_kind(check.kinds, intents[host])))
        for host, findings in check.judge(applies, intents).items():
            result[host] += findings
    return result


def rail_nics(evidence: HostEvidence, intent: FabricIntent) -> list[str]:
    """The NICs to judge: the intent's rails, else every RDMA device the host shows."""
    if intent.rails:
        return sorted(set(intent.rails.values()))
    names: set[str] = set()
    if not isinstance(evidence.links, Unreadable):
        names |= {link.dev for link in evidence.links}
    if not isinstance(evidence.devices, Unreadable):
        names |= {device.hca_id for device in evidence.devices}
    return sorted(names)


# ---- RDMA devices ---------------------------------------------------------------------------------


def check_rdma_devices(evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    unreadable = [e for e in (evidence.links, evidence.devices) if isinstance(e, Unreadable)]
    if unreadable:
        return [_error(RDMA_DEVICE, "host", "RDMA devices listed", e) for e in unreadable]
    assert not isinstance(evidence.links, Unreadable) and not isinstance(evidence.devices, Unreadable)
    names = rail_nics(evidence, intent)
    if not names:
        return [
            failed(
                RDMA_DEVICE,
                "host",
                "at least one RDMA device",
                "`rdma link` and `ibv_devinfo` show no RDMA device",
                f"load the RDMA driver (role {GPU_RDMA_ROLE}; on this host: `modprobe mlx5_ib`), "
                "then check `ibv_devinfo`",
            )
        ]
    in_link = {link.dev for link in evidence.links}
    in_devinfo = {device.hca_id for device in evidence.devices}
    return [_device_finding(name, name in in_link, name in in_devinfo) for name in names]


def _device_finding(name: str, in_link: bool, in_devinfo: bool) -> Finding:
    expected = f"{name} in `rdma link` and `ibv_devinfo`"
    if in_link and in_devinfo:
        return passed(RDMA_DEVICE, name, expected, "listed by both")
    missing = " and ".join(
        t for t, seen in (("`rdma link`", in_link), ("`ibv_devinfo`", in_devinfo)) if not seen
    )
    return failed(
        RDMA_DEVICE,
        name,
        expected,
        f"not listed by {missing}",
        f"the rail NIC is missing: load the RDMA driver (role {GPU_RDMA_ROLE}; on this host: "
        f"`modprobe mlx5_ib`) and check `{_cmd('ibv_devinfo', '-d', name)}`, or fix fabric_rails",
    )


def _present_nics(evidence: HostEvidence, intent: FabricIntent) -> list[_Nic]:
    links = () if isinstance(evidence.links, Unreadable) else evidence.links
    devices = () if isinstance(evidence.devices, Unreadable) else evidence.devices
    nics = []
    for name in rail_nics(evidence, intent):
        nic_links = tuple(link for link in links if link.dev == name)
        ports = tuple(p for d in devices if d.hca_id == name for p in d.ports)
        if nic_links and ports:
            nics.append(_Nic(name, nic_links, ports))
    return nics


def check_port_state(nics: list[_Nic], _intent: FabricIntent) -> list[Finding]:
    findings = []
    for nic in nics:
        for link in nic.links:
            actual = f"{link.state}/{link.physical_state}"
            expected = "/".join(GOOD_PORT)
            if (link.state, link.physical_state) == GOOD_PORT:
                findings.append(passed(PORT_STATE, link.name, expected, actual))
                continue
            show_netdev = _cmd("ip", "link", "show", link.netdev) if link.netdev else "ip link show <netdev>"
            hint = (
                "the link is not up: check the cable and the switch port; on this host "
                f"`{_cmd('rdma', 'link', 'show', link.name)}` and `{show_netdev}`"
            )
            if link.state == "INIT" and link.physical_state == "LINK_UP":
                # Trained but never made ACTIVE: on InfiniBand no subnet manager has swept the port.
                hint = (
                    "the port is up but no subnet manager made it ACTIVE: start or fix OpenSM (role "
                    "opensm, `ansible-playbook site.yml --limit subnet_managers --tags sm`); on this host "
                    f"`sminfo` and `{_cmd('ibstat', link.dev)}`"
                )
            findings.append(failed(PORT_STATE, link.name, expected, actual, hint))
    return findings


def check_link_layer(nics: list[_Nic], intent: FabricIntent) -> list[Finding]:
    expected = intent.link_layer
    want = "ETH(2)" if expected == "Ethernet" else "IB(1)"
    findings = []
    for nic in nics:
        for port in nic.ports:
            subject = f"{nic.name}/{port.number}"
            if port.link_layer == expected:
                findings.append(passed(LINK_LAYER, subject, expected, port.link_layer))
            else:
                findings.append(
                    failed(
                        LINK_LAYER,
                        subject,
                        expected,
                        port.link_layer,
                        f"fabric_intent.kind is {intent.kind}: set the port type with "
                        f"`{_cmd('mlxconfig', '-d', nic.name, 'set', f'LINK_TYPE_P{port.number}={want}')}` "
                        "and reset the NIC, "
                        "or fix fabric_intent.kind",
                    )
                )
    return findings


# ---- per-netdev RoCE QoS --------------------------------------------------------------------------

NetdevCheck = Callable[[str, str, HostEvidence, FabricIntent], list[Finding]]


def _per_netdev(check_id: str, check: NetdevCheck) -> Judge:
    """A judge that runs `check` on the RoCE netdev of every rail NIC the host shows."""

    def judge(evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
        findings: list[Finding] = []
        for nic in _present_nics(evidence, intent):
            if nic.netdev is None:
                actual = f"`rdma link` shows no netdev for {nic.name}"
                hint = "check `rdma link` and `ibdev2netdev`"
                findings.append(errored(check_id, nic.name, "a RoCE netdev to read", actual, hint))
                continue
            findings += check(nic.name, nic.netdev, evidence, intent)
        return findings

    return judge


def _per_nic(check: Callable[[list[_Nic], FabricIntent], list[Finding]]) -> Judge:
    """A judge over the rail NICs the host shows in both `rdma link` and `ibv_devinfo`."""
    return lambda evidence, intent: check(_present_nics(evidence, intent), intent)


def check_trust(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    data = evidence.netdev(netdev)
    if isinstance(data.qos, Unreadable):
        return [_error(TRUST, nic, f"trust {intent.trust}", data.qos)]
    actual = f"trust {data.qos.trust or 'not shown'}"
    if data.qos.trust == intent.trust:
        return [passed(TRUST, nic, f"trust {intent.trust}", actual)]
    return [
        failed(
            TRUST,
            nic,
            f"trust {intent.trust}",
            actual,
            _fix(TRUST, _cmd("mlnx_qos", "-i", netdev, "--trust", intent.trust)),
        )
    ]


def check_pfc(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    data = evidence.netdev(netdev)
    want = desired_nic(intent, "", nic).pfc_priorities
    expected = _pfc_text(want)
    if isinstance(data.qos, Unreadable):
        return [_error(PFC, nic, expected, data.qos)]
    actual = _pfc_text(tuple(sorted(data.qos.pfc_enabled)))
    if tuple(sorted(data.qos.pfc_enabled)) == want:
        return [passed(PFC, nic, expected, actual)]
    bitmap = ",".join(map(str, desired_nic(intent, "", nic).pfc_bitmap))
    return [failed(PFC, nic, expected, actual, _fix(PFC, _cmd("mlnx_qos", "-i", netdev, "--pfc", bitmap)))]


def _pfc_text(priorities: tuple[int, ...]) -> str:
    return (
        f"PFC on priority {','.join(map(str, priorities))} only"
        if priorities
        else "PFC off on every priority"
    )


def check_dscp2prio(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    data = evidence.netdev(netdev)
    wanted = desired_nic(intent, "", nic).dscp_to_priority
    expected = ", ".join(f"DSCP {d} -> prio {p}" for d, p in sorted(wanted.items()))
    if intent.trust != "dscp":
        return [skipped(DSCP2PRIO, nic, f"fabric_intent.trust is {intent.trust}: no DSCP map in use")]
    if isinstance(data.qos, Unreadable):
        return [_error(DSCP2PRIO, nic, expected, data.qos)]
    if data.qos.trust != "dscp":
        return [
            skipped(DSCP2PRIO, nic, f"the NIC trusts {data.qos.trust}: its DSCP map is not in use ({TRUST})")
        ]
    if not data.qos.dscp2prio_shown:
        unshown = Unreadable(_cmd("mlnx_qos", "-i", netdev), "trust dscp but no dscp2prio mapping printed")
        return [_error(DSCP2PRIO, nic, expected, unshown)]
    actual_map = {d: data.qos.dscp2prio.get(d) for d in wanted}
    actual = ", ".join(
        f"DSCP {d} -> prio {'unmapped' if p is None else p}" for d, p in sorted(actual_map.items())
    )
    wrong = sorted(d for d, p in wanted.items() if actual_map[d] != p)
    if not wrong:
        return [passed(DSCP2PRIO, nic, expected, actual)]
    options = [word for d in wrong for word in ("--dscp2prio", f"set,{d},{wanted[d]}")]
    command = _cmd("mlnx_qos", "-i", netdev, *options)
    return [failed(DSCP2PRIO, nic, expected, actual, _fix(DSCP2PRIO, command))]


def check_ecn_enable(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    data = evidence.netdev(netdev)
    desired = desired_nic(intent, "", nic)
    prio, want_np, want_rp = desired.ecn_priority, int(desired.np_enable), int(desired.rp_enable)
    expected = f"roce_np/enable/{prio}={want_np} roce_rp/enable/{prio}={want_rp}"
    for value in (data.np_enable, data.rp_enable):
        if isinstance(value, Unreadable):
            return [_error(ECN_ENABLE, nic, expected, value)]
    assert isinstance(data.np_enable, int) and isinstance(data.rp_enable, int)
    actual = f"roce_np/enable/{prio}={data.np_enable} roce_rp/enable/{prio}={data.rp_enable}"
    if (data.np_enable, data.rp_enable) == (want_np, want_rp):
        return [passed(ECN_ENABLE, nic, expected, actual)]
    commands = [
        _echo(want, f"/sys/class/net/{netdev}/ecn/{point}/enable/{prio}")
        for point, want, have in (("roce_np", want_np, data.np_enable), ("roce_rp", want_rp, data.rp_enable))
        if want != have
    ]
    return [failed(ECN_ENABLE, nic, expected, actual, _fix(ECN_ENABLE, "; ".join(commands)))]


def check_cnp(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    data = evidence.netdev(netdev)
    desired = desired_nic(intent, "", nic)
    want = {"cnp_dscp": desired.cnp_dscp, "cnp_802p_prio": desired.cnp_priority}
    expected = " ".join(f"{k}={v}" for k, v in want.items())
    have = {"cnp_dscp": data.cnp_dscp, "cnp_802p_prio": data.cnp_prio}
    for value in have.values():
        if isinstance(value, Unreadable):
            return [_error(CNP, nic, expected, value)]
    actual = " ".join(f"{k}={v}" for k, v in have.items())
    commands = [_echo(v, f"/sys/class/net/{netdev}/ecn/roce_np/{k}") for k, v in want.items() if have[k] != v]
    if not commands:
        return [passed(CNP, nic, expected, actual)]
    return [failed(CNP, nic, expected, actual, _fix(CNP, "; ".join(commands)))]


def check_pfc_storm_prevention(
    nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent
) -> list[Finding]:
    """The NIC stops sending pauses after `lossless.pfc_storm_prevention_ms` of a stalled receive path
    (0: never), so a stuck host cannot freeze its switch port and spread the pause upstream."""
    want = desired_nic(intent, "", nic).pfc_storm_prevention_ms
    assert want is not None  # the declaration skips the check when the intent leaves it alone
    expected = _storm_text(want)
    have = evidence.record(probes.PFC_STORM, netdev)
    if isinstance(have, Unreadable):
        return [_error(PFC_STORM_PREVENTION, nic, expected, have)]
    actual = _storm_text(have)
    if have == want:
        return [passed(PFC_STORM_PREVENTION, nic, expected, actual)]
    command = _cmd("ethtool", "--set-tunable", netdev, "pfc-prevention-tout", str(want))
    return [failed(PFC_STORM_PREVENTION, nic, expected, actual, _fix(PFC_STORM_PREVENTION, command))]


def _storm_text(ms: int) -> str:
    return "pfc-prevention-tout 0 (storm prevention off)" if ms == 0 else f"pfc-prevention-tout {ms} ms"


def check_netdev_mtu(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    data = evidence.netdev(netdev)
    expected = f"{netdev} MTU {intent.mtu.netdev}"
    if isinstance(data.mtu, Unreadable):
        return [_error(NETDEV_MTU, nic, expected, data.mtu)]
    actual = f"{netdev} MTU {data.mtu}"
    if data.mtu == intent.mtu.netdev:
        return [passed(NETDEV_MTU, nic, expected, actual)]
    return [
        failed(
            NETDEV_MTU,
            nic,
            expected,
            actual,
            _fix(NETDEV_MTU, _cmd("ip", "link", "set", "dev", netdev, "mtu", str(intent.mtu.netdev))),
        )
    ]


# ---- per-device -----------------------------------------------------------------------------------


def _per_port(
    check_id: str,
    probe: str,
    want: Callable[[FabricIntent], Any],
    shown: Callable[[Any], str],
    fix: Callable[[str, int, Any], str],
) -> Judge:
    """A judge of one value per rail port: the record of `probe` must equal `want(intent)`."""

    def judge(evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
        wanted = want(intent)
        expected = shown(wanted)
        findings = []
        for nic in _present_nics(evidence, intent):
            for link in nic.links:
                value = evidence.record(probe, link.name)
                if isinstance(value, Unreadable):
                    findings.append(_error(check_id, link.name, expected, value))
                elif value == wanted:
                    findings.append(passed(check_id, link.name, expected, shown(value)))
                else:
                    hint = _fix(check_id, fix(nic.name, link.port, wanted))
                    findings.append(failed(check_id, link.name, expected, shown(value), hint))
        return findings

    return judge


def _tos(intent: FabricIntent) -> int:
    return desired_host(intent, "").template.roce_tos


check_roce_tos = _per_port(
    ROCE_TOS,
    probes.TRAFFIC_CLASS,
    _tos,
    lambda value: f"traffic_class {value}",
    lambda dev, port, tos: _echo(tos, f"/sys/class/infiniband/{dev}/tc/{port}/traffic_class"),
)
check_cma_roce_tos = _per_port(
    CMA_ROCE_TOS,
    probes.CMA_ROCE_TOS,
    _tos,
    lambda value: f"RDMA-CM default ToS {value}",
    lambda dev, port, tos: _cmd("cma_roce_tos", "-d", dev, "-p", str(port), "-t", str(tos)),
)
check_cma_roce_mode = _per_port(
    CMA_ROCE_MODE,
    probes.CMA_ROCE_MODE,
    lambda _intent: ROCE_V2,
    lambda value: f"RDMA-CM default mode {value}",
    lambda dev, port, _mode: _cmd("cma_roce_mode", "-d", dev, "-p", str(port), "-m", ROCE_V2_MODE),
)


def check_min_time_between_cnps(
    nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent
) -> list[Finding]:
    want = desired_nic(intent, "", nic).min_time_between_cnps
    expected = f"min_time_between_cnps {want} us"
    value = evidence.record(probes.MIN_TIME_BETWEEN_CNPS, netdev)
    if isinstance(value, Unreadable):
        return [_error(MIN_TIME_BETWEEN_CNPS, nic, expected, value)]
    actual = f"min_time_between_cnps {value} us"
    if value == want:
        return [passed(MIN_TIME_BETWEEN_CNPS, nic, expected, actual)]
    command = _echo(want, f"/sys/class/net/{netdev}/ecn/roce_np/min_time_between_cnps")
    return [failed(MIN_TIME_BETWEEN_CNPS, nic, expected, actual, _fix(MIN_TIME_BETWEEN_CNPS, command))]


def check_rp_params(nic: str, netdev: str, evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    """The DCQCN reaction-point parameters the intent sets (dcqcn.rp_params), each as written."""
    wanted = desired_nic(intent, "", nic).rp_params
    expected = " ".join(f"{key}={value}" for key, value in sorted(wanted.items()))
    listing = evidence.record(probes.ROCE_RP, netdev)
    if isinstance(listing, Unreadable):
        return [_error(RP_PARAMS, nic, expected, listing)]
    absent = sorted(key for key in wanted if key not in listing)
    if absent:
        reason = f"the NIC shows no roce_rp/{', roce_rp/'.join(absent)}"
        command = section_command(f"{probes.ROCE_RP}:{netdev}", evidence.priority)
        return [_error(RP_PARAMS, nic, expected, Unreadable(command, reason))]
    actual = " ".join(f"{key}={listing[key]}" for key in sorted(wanted))
    wrong = sorted(key for key, value in wanted.items() if listing[key] != value)
    if not wrong:
        return [passed(RP_PARAMS, nic, expected, actual)]
    commands = "; ".join(_echo(wanted[key], f"/sys/class/net/{netdev}/ecn/roce_rp/{key}") for key in wrong)
    return [failed(RP_PARAMS, nic, expected, actual, _fix(RP_PARAMS, commands))]


# Signalling rates print a little above the data rate (4X NDR: 4 x 106.25 Gb/s for a 400G port); a port
# at or above the intent and below the next step up is at the intended speed.
SPEED_HEADROOM = 1.1


def check_port_speed(nics: list[_Nic], intent: FabricIntent) -> list[Finding]:
    """Every rail port trained at the intended line rate (active_width x active_speed of ibv_devinfo -v):
    a 400G intent with a port at 100G fails; a port that does not show its rate is an error."""
    speed = intent.link.speed_gbps
    expected = f"{speed} Gb/s (link.speed_gbps)"
    findings = []
    for nic in nics:
        for port in nic.ports:
            subject = f"{nic.name}/{port.number}"
            rate = port.link_rate_gbps
            if rate is None:
                findings.append(
                    errored(
                        PORT_SPEED,
                        subject,
                        expected,
                        "ibv_devinfo -v showed no active_width/active_speed",
                        f"read it on the host: `{_cmd('ibv_devinfo', '-v', '-d', nic.name)}`",
                    )
                )
                continue
            actual = f"{port.active_width} x {port.active_speed} = {rate:g} Gb/s"
            if speed <= rate < speed * SPEED_HEADROOM:
                findings.append(passed(PORT_SPEED, subject, expected, actual))
                continue
            show = _cmd("ethtool", nic.netdev) if nic.netdev else f"ibstat {nic.name}"
            hint = (
                "the port trained at another rate than the intent: check the cable or transceiver and the "
                f"switch port's speed (switch_port_speeds); on this host `{show}`"
            )
            findings.append(failed(PORT_SPEED, subject, expected, actual, hint))
    return findings


def check_rdma_mtu(nics: list[_Nic], intent: FabricIntent) -> list[Finding]:
    expected = f"active_mtu >= {intent.mtu.rdma}"
    findings = []
    for nic in nics:
        for port in nic.ports:
            subject = f"{nic.name}/{port.number}"
            actual = f"active_mtu {port.active_mtu} (max_mtu {port.max_mtu})"
            if port.active_mtu >= intent.mtu.rdma:
                findings.append(passed(RDMA_MTU, subject, expected, actual))
            elif intent.kind == "roce":
                set_mtu = (
                    _cmd("ip", "link", "set", "dev", nic.netdev, "mtu", str(intent.mtu.netdev))
                    if nic.netdev
                    else f"ip link set dev <netdev> mtu {intent.mtu.netdev}"
                )
                hint = f"RoCE active_mtu follows the netdev MTU minus {ROCE_HEADER_BYTES} B: " + _fix(
                    RDMA_MTU, set_mtu
                )
                findings.append(failed(RDMA_MTU, subject, expected, actual, hint))
            else:
                hint = (
                    "InfiniBand MTU is set by the subnet manager's partition (mtu=5 for 4096) and the switch"
                )
                findings.append(failed(RDMA_MTU, subject, expected, actual, hint))
    return findings


PERSIST_HINT = (
    f"role {HOST_QOS_ROLE} (tag {HOST_PERSIST_TAG}) installs it: "
    f"`ansible-playbook site.yml --tags {HOST_PERSIST_TAG} --limit <this host>`"
)


def check_nic_persistence(data: PersistEvidence, intent: FabricIntent) -> list[Finding]:
    """Whether a reboot or driver reload brings this host's NIC settings back: the boot file holds
    exactly the desired record role roce_host applies, the unit that re-applies it is enabled, and the
    applier and udev rule are installed. Judged apart from the running state, which the other checks see."""
    return [
        _boot_file_finding(data.settings, intent),
        _boot_unit_finding(data.unit_state),
        _boot_helpers_finding(data.present),
    ]


def desired_boot_settings(intent: FabricIntent) -> dict[str, Any]:
    """The record the role writes to the boot file, in its JSON form (it names no host)."""
    args = desired_host(intent, "").roce_nic_args()
    return json.loads(json.dumps(args, sort_keys=True))


def _boot_file_finding(settings: dict[str, Any] | Unreadable | None, intent: FabricIntent) -> Finding:
    path = PERSIST_PATHS["config"]
    expected = "the settings of the desired state (roce_nic_args of the intent)"
    if isinstance(settings, Unreadable):
        return _error(NIC_PERSISTENCE, path, expected, settings)
    if settings is None:
        return failed(
            NIC_PERSISTENCE, path, expected, "no boot file: a reboot leaves the NICs lossy", PERSIST_HINT
        )
    wanted = desired_boot_settings(intent)
    keys = sorted(set(wanted) | set(settings))
    have = {key: settings.get(key, "<missing>") for key in keys}
    want = {key: wanted.get(key, "<not a setting>") for key in keys}
    stale = [
        f"{key} {json.dumps(have[key])} (desired {json.dumps(want[key])})"
        for key in keys
        if have[key] != want[key]
    ]
    if not stale:
        return passed(NIC_PERSISTENCE, path, expected, "equal to the desired state")
    actual = "stale: " + "; ".join(stale)
    return failed(
        NIC_PERSISTENCE, path, expected, actual, f"a reboot would apply these values; {PERSIST_HINT}"
    )


def _boot_unit_finding(state: str | Unreadable) -> Finding:
    expected = f"{PERSIST_UNIT} enabled (runs the applier at boot)"
    if isinstance(state, Unreadable):
        return _error(NIC_PERSISTENCE, PERSIST_UNIT, expected, state)
    if state == "enabled":
        return passed(NIC_PERSISTENCE, PERSIST_UNIT, expected, "enabled")
    actual = "no such unit file" if state == "absent" else state
    return failed(NIC_PERSISTENCE, PERSIST_UNIT, expected, actual, PERSIST_HINT)


def _boot_helpers_finding(present: frozenset[str] | Unreadable) -> Finding:
    wanted = [PERSIST_PATHS["applier"], PERSIST_PATHS["rule"]]
    subject = "applier and udev rule"
    expected = " and ".join(wanted) + " present (a driver reload re-applies the settings)"
    if isinstance(present, Unreadable):
        return _error(NIC_PERSISTENCE, subject, expected, present)
    missing = [path for path in wanted if path not in present]
    if not missing:
        return passed(NIC_PERSISTENCE, subject, expected, "present")
    return failed(NIC_PERSISTENCE, subject, expected, f"missing: {', '.join(missing)}", PERSIST_HINT)


def check_peermem(modules: frozenset[str] | Unreadable, intent: FabricIntent) -> list[Finding]:
    expected = f"{PEERMEM_MODULE} loaded (GPUDirect RDMA)"
    if isinstance(modules, Unreadable):
        return [_error(PEERMEM, "host", expected, modules)]
    if PEERMEM_MODULE in modules:
        return [passed(PEERMEM, "host", expected, "loaded")]
    return [
        failed(PEERMEM, "host", expected, "not loaded (lsmod)", _fix(PEERMEM, f"modprobe {PEERMEM_MODULE}"))
    ]


def check_affinity(topo: TopoMatrix | Unreadable, intent: FabricIntent) -> list[Finding]:
    if isinstance(topo, Unreadable):
        return [_error(AFFINITY, "topology", f"GPU-NIC links at {intent.max_gpu_nic_link} or better", topo)]
    if topo.gpus and not topo.nics:
        # No NIC column at all is a definite finding: NCCL on this host sees no RDMA NIC either.
        return [_no_nic_in_topology(gpu, intent) for gpu in _judged_gpus(topo, intent)]
    return check_topo(topo, intent)


def _judged_gpus(topo: TopoMatrix, intent: FabricIntent) -> list[tuple[str, str | None]]:
    if intent.rails:
        return [(f"GPU{index}", nic) for index, nic in sorted(intent.rails.items())]
    return [(gpu, None) for gpu in topo.gpus]


def _no_nic_in_topology(gpu_nic: tuple[str, str | None], intent: FabricIntent) -> Finding:
    gpu, nic = gpu_nic
    target = nic or "nearest NIC"
    return failed(
        AFFINITY,
        gpu,
        f"{gpu} -> {target} at {intent.max_gpu_nic_link} or better",
        "no NIC in topology (`nvidia-smi topo -m` shows no NIC column)",
        f"no RDMA NIC is visible: load the NIC driver (role {GPU_RDMA_ROLE}; on this host: "
        "`modprobe mlx5_ib`) and check `ibv_devinfo`",
    )


# ---- across the hosts of a run ------------------------------------------------------------------


NAMED_HOSTS = 5  # hosts named per odd value; a larger group is counted


def _fleet_value(readings: Mapping[str, str], plausible: Callable[[str], bool]) -> str | None:
    """The value more hosts show than any other, among values a fleet can hold; None on a tie."""
    counts = Counter(value for value in readings.values() if plausible(value))
    ranked = counts.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _spread(readings: Mapping[str, str], common: str | None) -> str:
    """ "a on 6 host(s); b on gpu03": the fleet's value counted, every other value with its hosts."""
    by_value: dict[str, list[str]] = {}
    for host, value in sorted(readings.items()):
        by_value.setdefault(value, []).append(host)
    parts = [] if common is None else [f"{common} on {len(by_value.pop(common))} host(s)"]
    for value, hosts in sorted(by_value.items()):
        named = ", ".join(hosts[:NAMED_HOSTS]) + (
            f" and {len(hosts) - NAMED_HOSTS} more" if len(hosts) > NAMED_HOSTS else ""
        )
        parts.append(f"{value} on {named}")
    return "; ".join(parts)


def _compare(
    check_id: str,
    subject: str,
    readings: Mapping[str, str | Unreadable],
    what: str,
    hint: Callable[[str, str | None], str],
    plausible: Callable[[str], bool] = lambda _value: True,
) -> dict[str, Finding]:
    """One finding per host for one value that must agree across hosts: a host that differs from what
    most hosts show fails, naming the spread. With no value ahead (a tie) every host fails."""
    read = {host: value for host, value in readings.items() if isinstance(value, str)}
    findings: dict[str, Finding] = {}
    for host, value in readings.items():
        if isinstance(value, Unreadable):
            findings[host] = _error(check_id, subject, f"one {what} on every host", value)
    if len(read) < 2:
        for host in read:
            findings[host] = skipped(
                check_id, subject, f"{what}: only this host read in this run, nothing to compare"
            )
        return findings
    common = _fleet_value(read, plausible)
    expected = f"one {what} on every host" if common is None else f"{what} {common}, as on the other hosts"
    spread = _spread(read, common)
    for host, value in read.items():
        if value == common:
            findings[host] = passed(check_id, subject, expected, f"{value} ({spread})")
        else:
            findings[host] = failed(check_id, subject, expected, f"{value} ({spread})", hint(host, common))
    return findings


def _versions(evidence: HostEvidence, intent: FabricIntent) -> dict[str, str | Unreadable]:
    """subject -> version on one host: "firmware <part id>" per NIC model, "driver <name>" per driver."""
    shown: dict[str, str | Unreadable] = {}
    for nic in _present_nics(evidence, intent):
        device = next(d for d in evidence.devices if isinstance(d, IbvDevice) and d.hca_id == nic.name)
        key = f"firmware of NIC part {device.vendor_part_id}"
        shown[key] = _joined(shown.get(key), device.fw_ver or "not shown")
        if nic.netdev is None:
            continue
        driver = evidence.record(probes.DRIVER, nic.netdev)
        if isinstance(driver, Unreadable):
            shown.setdefault("driver", driver)
        elif isinstance(driver, DriverInfo):
            key = f"driver {driver.driver}"
            shown[key] = _joined(shown.get(key), driver.version)
    return shown


def _joined(earlier: str | Unreadable | None, version: str) -> str | Unreadable:
    """NICs of one model on one host with different versions read as "a/b": odd against any fleet."""
    if earlier is None or isinstance(earlier, Unreadable):
        return earlier if isinstance(earlier, Unreadable) else version
    return earlier if version in earlier.split("/") else "/".join(sorted({*earlier.split("/"), version}))


def check_versions(
    evidence: Mapping[str, HostEvidence], intents: Mapping[str, FabricIntent]
) -> dict[str, list[Finding]]:
    """Driver and firmware versions that differ across the hosts: the odd host is named."""
    per_host = {host: _versions(shown, intents[host]) for host, shown in evidence.items()}
    subjects = sorted({subject for shown in per_host.values() for subject in shown})
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    for subject in subjects:
        readings = {host: shown[subject] for host, shown in per_host.items() if subject in shown}
        what = subject.split(" of ")[0] if subject.startswith("firmware") else subject
        compared = _compare(VERSIONS, subject, readings, f"{what} version", _version_hint, _one_version)
        for host, finding in compared.items():
            result[host].append(finding)
    for findings in result.values():
        if not findings:  # host.rdma_device says why
            findings.append(skipped(VERSIONS, "host", "no rail NIC read on this host: nothing to compare"))
    return result


def _one_version(value: str) -> bool:
    return "/" not in value  # NICs of one model on one host disagreeing cannot be the fleet's version


def _version_hint(host: str, common: str | None) -> str:
    fleet = f"the fleet's {common}" if common else "one version chosen for the fleet"
    return (
        f"bring {host} to {fleet}: the NIC firmware (mlxfwmanager) or the driver package (DOCA-OFED); "
        "no fabcheck role sets versions; on this host: `mlxfwmanager --query` and `ethtool -i <netdev>`"
    )


def _gid_rows(
    evidence: HostEvidence, intent: FabricIntent
) -> list[tuple[RdmaLink, list[GidEntry] | Unreadable]]:
    table = evidence.record(probes.SHOW_GIDS)
    rows: list[tuple[RdmaLink, list[GidEntry] | Unreadable]] = []
    for nic in _present_nics(evidence, intent):
        for link in nic.links:
            if isinstance(table, Unreadable):
                rows.append((link, table))
            else:
                rows.append((link, [g for g in table if g.dev == link.dev and g.port == link.port]))
    return rows


def check_gid_index(
    evidence: Mapping[str, HostEvidence], intents: Mapping[str, FabricIntent]
) -> dict[str, list[Finding]]:
    """The GID NCCL uses (nccl.gid_index) is a RoCE v2 GID on every rail port of every host; with
    gid_index null (NCCL picks), the first IPv4 RoCE v2 GID sits at the same index on every host."""
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    auto: dict[str, dict[str, str | Unreadable]] = {}
    for host, shown in evidence.items():
        index = intents[host].nccl.gid_index
        for link, gids in _gid_rows(shown, intents[host]):
            if index is None:
                auto.setdefault(link.name, {})[host] = (
                    gids if isinstance(gids, Unreadable) else _first_v2(gids)
                )
            else:
                result[host].append(_gid_at(link, gids, index))
    for port, readings in sorted(auto.items()):

        def hint(_host: str, index: str | None, port: str = port) -> str:
            return _gid_hint(port, index)

        what = "first IPv4 RoCE v2 GID at index"
        for host, finding in _compare(GID_INDEX, port, readings, what, hint, lambda i: i != NO_GID).items():
            result[host].append(finding)
    return result


NO_GID = "none"


def _first_v2(gids: list[GidEntry]) -> str:
    return next((str(g.index) for g in gids if g.version == "v2" and g.ipv4), NO_GID)


def _gid_at(link: RdmaLink, gids: list[GidEntry] | Unreadable, index: int) -> Finding:
    expected = f"a RoCE v2 GID at index {index} (nccl.gid_index, NCCL_IB_GID_INDEX)"
    if isinstance(gids, Unreadable):
        return _error(GID_INDEX, link.name, expected, gids)
    entry = next((g for g in gids if g.index == index), None)
    if entry is not None and entry.version == "v2":
        return passed(
            GID_INDEX, link.name, expected, f"{entry.gid} v2" + (f" ({entry.ipv4})" if entry.ipv4 else "")
        )
    actual = "no GID at that index" if entry is None else f"{entry.gid} {entry.version or 'of unknown type'}"
    return failed(GID_INDEX, link.name, expected, actual, _gid_hint(link.name, str(index)))


def _gid_hint(port: str, index: str | None) -> str:
    at = f"GID index {index}" if index is not None else "one GID index"
    return (
        f"NCCL needs {at} to be the IPv4 RoCE v2 GID on every host: give each rail netdev its IPv4 "
        f"address (and no other) so that GID lands there, or fix nccl.gid_index; on this host: "
        f"`{_cmd('show_gids', port.split('/')[0])}`"
    )


# ---- the declarations -----------------------------------------------------------------------------

ROCE = ("roce",)
DCQCN_MODES = ("dcqcn", "ecn_only")  # the modes that run the notification and reaction points
HOST_CHECK_DECLS: tuple[HostCheck, ...] = (
    HostCheck(
        RDMA_DEVICE,
        "nic",
        (probes.RDMA_LINK, probes.IBV_DEVINFO),
        "listed by `rdma link` and `ibv_devinfo`",
        GPU_RDMA_ROLE,
        None,
        check_rdma_devices,
    ),
    HostCheck(
        PORT_STATE,
        "port",
        (probes.RDMA_LINK,),
        "`ACTIVE/LINK_UP`",
        GPU_RDMA_ROLE,
        None,
        _per_nic(check_port_state),
    ),
    HostCheck(
        LINK_LAYER,
        "port",
        (probes.IBV_DEVINFO,),
        "`Ethernet` (roce) or `InfiniBand` (ib)",
        GPU_RDMA_ROLE,
        None,
        _per_nic(check_link_layer),
    ),
    HostCheck(
        PORT_SPEED,
        "port",
        (probes.IBV_DEVINFO,),
        "`active_width` x `active_speed` at `link.speed_gbps` (a 400G intent with a port at 100G fails; "
        "no rate shown is an error)",
        GPU_RDMA_ROLE,
        None,
        _per_nic(check_port_speed),
    ),
    HostCheck(
        TRUST,
        "nic",
        (probes.MLNX_QOS,),
        "`trust`",
        HOST_QOS_ROLE,
        "dscp",
        _per_netdev(TRUST, check_trust),
        ROCE,
    ),
    HostCheck(
        PFC,
        "nic",
        (probes.MLNX_QOS,),
        "PFC on exactly `lossless.priority` (none when `lossless.pfc: false`)",
        HOST_QOS_ROLE,
        "pfc",
        _per_netdev(PFC, check_pfc),
        ROCE,
    ),
    HostCheck(
        PFC_STORM_PREVENTION,
        "nic",
        (probes.PFC_STORM,),
        "`pfc-prevention-tout` == `lossless.pfc_storm_prevention_ms` (0: off; skip without PFC or when null)",
        HOST_QOS_ROLE,
        "pfc",
        _per_netdev(PFC_STORM_PREVENTION, check_pfc_storm_prevention),
        ROCE,
        applies=lambda intent: (
            None
            if desired_host(intent, "").template.pfc_storm_prevention_ms is not None
            else "no PFC storm prevention to judge: fabric_intent.lossless.pfc is false or "
            "lossless.pfc_storm_prevention_ms is null"
        ),
    ),
    HostCheck(
        DSCP2PRIO,
        "nic",
        (probes.MLNX_QOS,),
        "every `lossless.dscp` -> `lossless.priority`, `cnp.dscp` -> `cnp.priority`",
        HOST_QOS_ROLE,
        "dscp",
        _per_netdev(DSCP2PRIO, check_dscp2prio),
        ROCE,
    ),
    HostCheck(
        ECN_ENABLE,
        "nic",
        (probes.ECN_NP_ENABLE, probes.ECN_RP_ENABLE),
        "NP/RP enable on the lossless priority per `congestion_control` and `dcqcn`",
        HOST_QOS_ROLE,
        "ecn",
        _per_netdev(ECN_ENABLE, check_ecn_enable),
        ROCE,
    ),
    HostCheck(
        CNP,
        "nic",
        (probes.CNP_DSCP, probes.CNP_PRIO),
        "`cnp_dscp` == `cnp.dscp`, `cnp_802p_prio` == `cnp.priority`",
        HOST_QOS_ROLE,
        "ecn",
        _per_netdev(CNP, check_cnp),
        ROCE,
    ),
    HostCheck(
        MIN_TIME_BETWEEN_CNPS,
        "nic",
        (probes.MIN_TIME_BETWEEN_CNPS,),
        "`roce_np/min_time_between_cnps` == `dcqcn.min_time_between_cnps`",
        HOST_QOS_ROLE,
        "ecn",
        _per_netdev(MIN_TIME_BETWEEN_CNPS, check_min_time_between_cnps),
        ROCE,
        DCQCN_MODES,
    ),
    HostCheck(
        RP_PARAMS,
        "nic",
        (probes.ROCE_RP,),
        "each `dcqcn.rp_params` entry in `roce_rp/<name>` (skip when the intent sets none)",
        HOST_QOS_ROLE,
        "ecn",
        _per_netdev(RP_PARAMS, check_rp_params),
        ROCE,
        DCQCN_MODES,
        lambda intent: (
            None
            if desired_host(intent, "").template.rp_params
            else "fabric_intent.dcqcn.rp_params is empty: the role writes none"
        ),
    ),
    HostCheck(
        ROCE_TOS,
        "port",
        (probes.TRAFFIC_CLASS,),
        "`traffic_class` == `roce_tos` (`106` or `Global tclass=106`)",
        HOST_QOS_ROLE,
        "dscp",
        check_roce_tos,
        ROCE,
    ),
    HostCheck(
        CMA_ROCE_TOS,
        "port",
        (probes.CMA_ROCE_TOS,),
        "RDMA-CM `default_roce_tos` == `roce_tos`",
        HOST_QOS_ROLE,
        "dscp",
        check_cma_roce_tos,
        ROCE,
    ),
    HostCheck(
        CMA_ROCE_MODE,
        "port",
        (probes.CMA_ROCE_MODE,),
        "RDMA-CM `default_roce_mode` is `RoCE v2`",
        None,
        None,
        check_cma_roce_mode,
        ROCE,
    ),
    HostCheck(
        NETDEV_MTU,
        "nic",
        (probes.NETDEV_MTU,),
        "netdev MTU == `mtu.netdev`",
        HOST_QOS_ROLE,
        "mtu",
        _per_netdev(NETDEV_MTU, check_netdev_mtu),
        ROCE,
    ),
    HostCheck(
        RDMA_MTU,
        "port",
        (probes.IBV_DEVINFO,),
        "`active_mtu` >= `mtu.rdma`",
        HOST_QOS_ROLE,
        "mtu",
        _per_nic(check_rdma_mtu),
    ),
    HostCheck(
        NIC_PERSISTENCE,
        "boot file",
        (probes.PERSIST_CONFIG, probes.PERSIST_UNIT_STATE, probes.PERSIST_FILES),
        "boot file equal to the desired settings, `fabcheck-roce-nic.service` enabled, applier and udev "
        "rule present",
        HOST_QOS_ROLE,
        HOST_PERSIST_TAG,
        lambda evidence, intent: check_nic_persistence(evidence.persistence, intent),
        ROCE,
    ),
    HostCheck(
        PEERMEM,
        "host",
        (probes.LSMOD,),
        "`nvidia_peermem` loaded when `nccl.gdr_required`",
        GPU_RDMA_ROLE,
        None,
        lambda evidence, intent: check_peermem(evidence.modules, intent),
        applies=lambda intent: (
            None if desired_host(intent, "").nvidia_peermem else "fabric_intent.nccl.gdr_required is false"
        ),
    ),
    HostCheck(
        AFFINITY,
        "gpu",
        (probes.TOPO,),
        "each GPU's rail NIC at `max_gpu_nic_link` or better",
        GPU_RDMA_ROLE,
        None,
        lambda evidence, intent: check_affinity(evidence.topo, intent),
    ),
)
FLEET_CHECK_DECLS: tuple[FleetCheck, ...] = (
    FleetCheck(
        GID_INDEX,
        (probes.SHOW_GIDS,),
        "a RoCE v2 GID at `nccl.gid_index` on every rail port of every host (null: the first IPv4 v2 "
        "GID at one index everywhere)",
        None,
        None,
        check_gid_index,
        "port",
        ROCE,
    ),
    FleetCheck(
        VERSIONS,
        (probes.IBV_DEVINFO, probes.DRIVER),
        "one driver version and one firmware version per NIC model on every host; the odd host is named",
        None,
        None,
        check_versions,
        "nic",
    ),
)
HOST_CHECKS = tuple(check.id for check in HOST_CHECK_DECLS)
FLEET_CHECKS = tuple(check.id for check in FLEET_CHECK_DECLS)
# The RoCE checks judged per rail NIC or port: nothing to judge, nothing passed on a host without NICs.
ROCE_ONLY_CHECKS = tuple(c.id for c in HOST_CHECK_DECLS if c.kinds == ROCE and c.scope in ("nic", "port"))
_DECLARED: Mapping[str, HostCheck | FleetCheck] = {c.id: c for c in (*HOST_CHECK_DECLS, *FLEET_CHECK_DECLS)}


# ---- helpers --------------------------------------------------------------------------------------


def _fix(check_id: str, command: str) -> str:
    """The fix of a failed check: its role (and tag) fleet-wide, the one command on this device."""
    check = _DECLARED[check_id]
    if check.role is None:
        return f"no fabcheck role sets it; on this host: `{command}`"
    tag = f" (tag {check.tag})" if check.tag else ""
    return f"role {check.role}{tag} sets it fleet-wide; on this host: `{command}`"


def _cmd(*words: str) -> str:
    """A command line to paste: every word shell-quoted (NIC and netdev names come from the inventory
    and from the host, and may hold anything)."""
    return shlex.join(words)


def _echo(value: int, path: str) -> str:
    return f"echo {value} > {shlex.quote(path)}"


def _error(check: str, subject: str, expected: str, missing: Unreadable) -> Finding:
    return errored(
        check,
        subject,
        expected,
        f"could not read `{missing.command}`: {missing.reason}",
        "fix collection first (tool installed? run as root?), then run validate again",
    )
