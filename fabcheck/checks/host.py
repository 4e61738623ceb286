"""Host checks of the pre-flight gate: parsed host evidence + the host's intent -> findings.

Pure. Evidence that could not be read arrives as `Unreadable` and becomes an ERROR naming the command,
never a pass. Every failure hint names the role that fixes it fleet-wide and the command that fixes
it on this one host.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.checks.roles import GPU_RDMA_ROLE, HOST_PERSIST_TAG, HOST_QOS_ROLE
from fabcheck.checks.topo import CHECK as TOPO_CHECK
from fabcheck.checks.topo import check_topo
from fabcheck.desired.nic import PERSIST_PATHS, PERSIST_UNIT, desired_host, desired_nic
from fabcheck.intent.model import ROCE_HEADER_BYTES, FabricIntent
from fabcheck.parsers.ibv_devinfo import IbvDevice, IbvPort
from fabcheck.parsers.mlnx_qos import PRIORITIES, MlnxQos
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.topo import TopoMatrix

RDMA_DEVICE = "host.rdma_device"
PORT_STATE = "host.port_state"
LINK_LAYER = "host.link_layer"
TRUST = "host.trust"
PFC = "host.pfc"
DSCP2PRIO = "host.dscp2prio"
ECN_ENABLE = "host.ecn_enable"
CNP = "host.cnp"
ROCE_TOS = "host.roce_tos"
NETDEV_MTU = "host.netdev_mtu"
RDMA_MTU = "host.rdma_mtu"
PORT_SPEED = "host.port_speed"
PEERMEM = "host.nvidia_peermem"
NIC_PERSISTENCE = "host.nic_persistence"
AFFINITY = TOPO_CHECK
ROCE_ONLY_CHECKS = (TRUST, PFC, DSCP2PRIO, ECN_ENABLE, CNP, ROCE_TOS, NETDEV_MTU)  # per rail NIC
HOST_CHECKS = (
    RDMA_DEVICE,
    PORT_STATE,
    LINK_LAYER,
    PORT_SPEED,
    *ROCE_ONLY_CHECKS,
    RDMA_MTU,
    NIC_PERSISTENCE,
    PEERMEM,
    AFFINITY,
)

PEERMEM_MODULE = "nvidia_peermem"
GOOD_PORT = ("ACTIVE", "LINK_UP")


@dataclass(frozen=True)
class Unreadable:
    """Evidence that could not be read: the command, and why (exit code, stderr, parse error)."""

    command: str
    reason: str


@dataclass(frozen=True)
class NetdevEvidence:
    """What the host showed for one RoCE netdev."""

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


NOT_COLLECTED = PersistEvidence(*(Unreadable("boot files", "not collected"),) * 3)


@dataclass(frozen=True)
class HostEvidence:
    """Everything one collection round trip showed, parsed. Per-NIC data is keyed by netdev / device."""

    topo: TopoMatrix | Unreadable
    links: tuple[RdmaLink, ...] | Unreadable
    devices: tuple[IbvDevice, ...] | Unreadable
    modules: frozenset[str] | Unreadable
    netdevs: Mapping[str, NetdevEvidence] = field(default_factory=dict)
    traffic_class: Mapping[str, int | Unreadable] = field(default_factory=dict)  # "mlx5_0/1" -> TClass
    persistence: PersistEvidence = NOT_COLLECTED


@dataclass(frozen=True)
class _Nic:
    """One rail NIC as the host shows it: its ports in `rdma link` and `ibv_devinfo`."""

    name: str
    links: tuple[RdmaLink, ...]
    ports: tuple[IbvPort, ...]

    @property
    def netdev(self) -> str | None:
        return next((link.netdev for link in self.links if link.netdev), None)


def check_host(evidence: HostEvidence, intent: FabricIntent) -> list[Finding]:
    """Every host check for one host, in a stable order (HOST_CHECKS)."""
    findings = check_rdma_devices(evidence, intent)
    nics = _present_nics(evidence, intent)
    findings += check_port_state(nics)
    findings += check_link_layer(nics, intent)
    findings += check_port_speed(nics, intent)
    for check in (check_trust, check_pfc, check_dscp2prio, check_ecn_enable, check_cnp):
        findings += _per_netdev(check, evidence, nics, intent)
    findings += check_roce_tos(evidence, nics, intent)
    findings += _per_netdev(check_netdev_mtu, evidence, nics, intent)
    findings += check_rdma_mtu(nics, intent)
    findings += check_nic_persistence(evidence.persistence, intent)
    findings += check_peermem(evidence.modules, intent)
    findings += check_affinity(evidence.topo, intent)
    return findings


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


def check_port_state(nics: list[_Nic]) -> list[Finding]:
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

NetdevCheck = Callable[[str, str, NetdevEvidence, FabricIntent], list[Finding]]


def _per_netdev(
    check: NetdevCheck, evidence: HostEvidence, nics: list[_Nic], intent: FabricIntent
) -> list[Finding]:
    name = _CHECK_NAMES[check]
    if intent.kind != "roce":
        return [skipped(name, "host", f"RoCE-only check; fabric_intent.kind is {intent.kind}")]
    findings: list[Finding] = []
    for nic in nics:
        netdev = nic.netdev
        data = evidence.netdevs.get(netdev) if netdev else None
        if netdev is None or data is None:
            actual = f"`rdma link` shows no netdev for {nic.name}" if netdev is None else "not collected"
            findings.append(
                errored(
                    name, nic.name, "a RoCE netdev to read", actual, "check `rdma link` and `ibdev2netdev`"
                )
            )
            continue
        findings += check(nic.name, netdev, data, intent)
    return findings


def check_trust(nic: str, netdev: str, data: NetdevEvidence, intent: FabricIntent) -> list[Finding]:
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
            _fix(HOST_QOS_ROLE, _cmd("mlnx_qos", "-i", netdev, "--trust", intent.trust)),
        )
    ]


def check_pfc(nic: str, netdev: str, data: NetdevEvidence, intent: FabricIntent) -> list[Finding]:
    want = desired_nic(intent, "", nic).pfc_priorities
    expected = _pfc_text(want)
    if isinstance(data.qos, Unreadable):
        return [_error(PFC, nic, expected, data.qos)]
    actual = _pfc_text(tuple(sorted(data.qos.pfc_enabled)))
    if tuple(sorted(data.qos.pfc_enabled)) == want:
        return [passed(PFC, nic, expected, actual)]
    bitmap = ",".join("1" if p in want else "0" for p in PRIORITIES)
    return [
        failed(
            PFC, nic, expected, actual, _fix(HOST_QOS_ROLE, _cmd("mlnx_qos", "-i", netdev, "--pfc", bitmap))
        )
    ]


def _pfc_text(priorities: tuple[int, ...]) -> str:
    return (
        f"PFC on priority {','.join(map(str, priorities))} only"
        if priorities
        else "PFC off on every priority"
    )


def check_dscp2prio(nic: str, netdev: str, data: NetdevEvidence, intent: FabricIntent) -> list[Finding]:
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
    return [failed(DSCP2PRIO, nic, expected, actual, _fix(HOST_QOS_ROLE, command))]


def check_ecn_enable(nic: str, netdev: str, data: NetdevEvidence, intent: FabricIntent) -> list[Finding]:
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
    return [failed(ECN_ENABLE, nic, expected, actual, _fix(HOST_QOS_ROLE, "; ".join(commands)))]


def check_cnp(nic: str, netdev: str, data: NetdevEvidence, intent: FabricIntent) -> list[Finding]:
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
    return [failed(CNP, nic, expected, actual, _fix(HOST_QOS_ROLE, "; ".join(commands)))]


def check_netdev_mtu(nic: str, netdev: str, data: NetdevEvidence, intent: FabricIntent) -> list[Finding]:
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
            _fix(HOST_QOS_ROLE, _cmd("ip", "link", "set", "dev", netdev, "mtu", str(intent.mtu.netdev))),
        )
    ]


_CHECK_NAMES: Mapping[NetdevCheck, str] = {
    check_trust: TRUST,
    check_pfc: PFC,
    check_dscp2prio: DSCP2PRIO,
    check_ecn_enable: ECN_ENABLE,
    check_cnp: CNP,
    check_netdev_mtu: NETDEV_MTU,
}


# ---- per-device -----------------------------------------------------------------------------------


def check_roce_tos(evidence: HostEvidence, nics: list[_Nic], intent: FabricIntent) -> list[Finding]:
    if intent.kind != "roce":
        return [skipped(ROCE_TOS, "host", f"RoCE-only check; fabric_intent.kind is {intent.kind}")]
    findings = []
    expected = f"traffic_class {intent.roce_tos}"
    for nic in nics:
        for link in nic.links:
            value = evidence.traffic_class.get(link.name)
            if value is None:
                value = Unreadable(
                    _cmd("cat", f"/sys/class/infiniband/{nic.name}/tc/{link.port}/traffic_class"),
                    "not collected",
                )
            if isinstance(value, Unreadable):
                findings.append(_error(ROCE_TOS, link.name, expected, value))
            elif value == intent.roce_tos:
                findings.append(passed(ROCE_TOS, link.name, expected, f"traffic_class {value}"))
            else:
                command = _echo(
                    intent.roce_tos, f"/sys/class/infiniband/{nic.name}/tc/{link.port}/traffic_class"
                )
                rdma_cm = _cmd(
                    "cma_roce_tos", "-d", nic.name, "-p", str(link.port), "-t", str(intent.roce_tos)
                )
                findings.append(
                    failed(
                        ROCE_TOS,
                        link.name,
                        expected,
                        f"traffic_class {value}",
                        _fix(HOST_QOS_ROLE, f"{command}; {rdma_cm}"),
                    )
                )
    return findings


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
                    HOST_QOS_ROLE, set_mtu
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
    if intent.kind != "roce":
        return [skipped(NIC_PERSISTENCE, "host", f"RoCE-only check; fabric_intent.kind is {intent.kind}")]
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
    if not intent.nccl.gdr_required:
        return [skipped(PEERMEM, "host", "fabric_intent.nccl.gdr_required is false")]
    expected = f"{PEERMEM_MODULE} loaded (GPUDirect RDMA)"
    if isinstance(modules, Unreadable):
        return [_error(PEERMEM, "host", expected, modules)]
    if PEERMEM_MODULE in modules:
        return [passed(PEERMEM, "host", expected, "loaded")]
    return [
        failed(
            PEERMEM, "host", expected, "not loaded (lsmod)", _fix(GPU_RDMA_ROLE, f"modprobe {PEERMEM_MODULE}")
        )
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


# ---- helpers --------------------------------------------------------------------------------------


def _fix(role: str, command: str) -> str:
    return f"role {role} sets it fleet-wide; on this host: `{command}`"


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
