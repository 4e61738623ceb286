"""Host checks of the rail NICs and their ports: the devices listed, the port up, its link layer,
speed and MTUs."""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.checks.declare import ROCE, Inputs
from fabcheck.checks.host.evidence import HostEvidence, RailNic, rail_nics, unreadable_error
from fabcheck.checks.host.judges import HostCheck, cmd, host_check, per_netdev, per_nic
from fabcheck.checks.model import Finding, errored, failed, passed
from fabcheck.checks.roles import GPU_RDMA_ROLE, HOST_QOS_ROLE
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost, DesiredNic
from fabcheck.intent.model import ROCE_HEADER_BYTES, FabricIntent

RDMA_DEVICE = "host.rdma_device"
PORT_STATE = "host.port_state"
LINK_LAYER = "host.link_layer"
PORT_SPEED = "host.port_speed"
NETDEV_MTU = "host.netdev_mtu"
RDMA_MTU = "host.rdma_mtu"

GOOD_PORT = ("ACTIVE", "LINK_UP")


def check_rdma_devices(
    evidence: HostEvidence, desired: DesiredHost, _intent: FabricIntent, _inputs: Inputs
) -> list[Finding]:
    links, devices = evidence.links, evidence.devices
    if isinstance(links, Unreadable) or isinstance(devices, Unreadable):
        unreadable = [e for e in (links, devices) if isinstance(e, Unreadable)]
        return [unreadable_error(RDMA_DEVICE, "host", "RDMA devices listed", e) for e in unreadable]
    names = rail_nics(evidence, desired)
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
    in_link = {link.dev for link in links}
    in_devinfo = {device.hca_id for device in devices}
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
        f"`modprobe mlx5_ib`) and check `{cmd('ibv_devinfo', '-d', name)}`, or fix fabric_rails",
    )


def check_port_state(nics: list[RailNic], _desired: DesiredHost, _inputs: Inputs) -> list[Finding]:
    findings = []
    for nic in nics:
        for link in nic.links:
            actual = f"{link.state}/{link.physical_state}"
            expected = "/".join(GOOD_PORT)
            if (link.state, link.physical_state) == GOOD_PORT:
                findings.append(passed(PORT_STATE, link.name, expected, actual))
                continue
            show_netdev = cmd("ip", "link", "show", link.netdev) if link.netdev else "ip link show <netdev>"
            hint = (
                "the link is not up: check the cable and the switch port; on this host "
                f"`{cmd('rdma', 'link', 'show', link.name)}` and `{show_netdev}`"
            )
            if link.state == "INIT" and link.physical_state == "LINK_UP":
                # Trained but never made ACTIVE: on InfiniBand no subnet manager has swept the port.
                hint = (
                    "the port is up but no subnet manager made it ACTIVE: start or fix OpenSM (role "
                    "opensm, `ansible-playbook site.yml --limit subnet_managers --tags sm`); on this host "
                    f"`sminfo` and `{cmd('ibstat', link.dev)}`"
                )
            findings.append(failed(PORT_STATE, link.name, expected, actual, hint))
    return findings


def check_link_layer(nics: list[RailNic], desired: DesiredHost, _inputs: Inputs) -> list[Finding]:
    expected = desired.template.link_layer
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
                        f"fabric_intent.kind is {desired.kind}: set the port type with "
                        f"`{cmd('mlxconfig', '-d', nic.name, 'set', f'LINK_TYPE_P{port.number}={want}')}` "
                        "and reset the NIC, "
                        "or fix fabric_intent.kind",
                    )
                )
    return findings


@dataclass(frozen=True)
class PortSpeedInputs(Inputs):
    # Signalling rates print a little above the data rate (4X NDR: 4 x 106.25 Gb/s for a 400G port); a
    # port at or above the intent and below intent x headroom (the next step up is 2x) is at the intended
    # speed.
    headroom: float = 1.1


def check_port_speed(nics: list[RailNic], desired: DesiredHost, inputs: PortSpeedInputs) -> list[Finding]:
    """Every rail port trained at the intended line rate (active_width x active_speed of ibv_devinfo -v):
    a 400G intent with a port at 100G fails; a port that does not show its rate is an error."""
    speed = desired.template.speed_gbps
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
                        f"read it on the host: `{cmd('ibv_devinfo', '-v', '-d', nic.name)}`",
                    )
                )
                continue
            actual = f"{port.active_width} x {port.active_speed} = {rate:g} Gb/s"
            if speed <= rate < speed * inputs.headroom:
                findings.append(passed(PORT_SPEED, subject, expected, actual))
                continue
            show = cmd("ethtool", nic.netdev) if nic.netdev else f"ibstat {nic.name}"
            hint = (
                "the port trained at another rate than the intent: check the cable or transceiver and the "
                f"switch port's speed (switch_port_speeds); on this host `{show}`"
            )
            findings.append(failed(PORT_SPEED, subject, expected, actual, hint))
    return findings


def check_netdev_mtu(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    data = evidence.netdev(netdev)
    expected = f"{netdev} MTU {desired.netdev_mtu}"
    if isinstance(data.mtu, Unreadable):
        return [unreadable_error(NETDEV_MTU, nic, expected, data.mtu)]
    actual = f"{netdev} MTU {data.mtu}"
    if data.mtu == desired.netdev_mtu:
        return [passed(NETDEV_MTU, nic, expected, actual)]
    command = cmd("ip", "link", "set", "dev", netdev, "mtu", str(desired.netdev_mtu))
    return [failed(NETDEV_MTU, nic, expected, actual, NETDEV_MTU_CHECK.fix(command))]


def check_rdma_mtu(nics: list[RailNic], desired: DesiredHost, _inputs: Inputs) -> list[Finding]:
    want = desired.template
    expected = f"active_mtu >= {want.rdma_mtu}"
    findings = []
    for nic in nics:
        for port in nic.ports:
            subject = f"{nic.name}/{port.number}"
            actual = f"active_mtu {port.active_mtu} (max_mtu {port.max_mtu})"
            if port.active_mtu >= want.rdma_mtu:
                findings.append(passed(RDMA_MTU, subject, expected, actual))
            elif desired.kind == "roce":
                set_mtu = (
                    cmd("ip", "link", "set", "dev", nic.netdev, "mtu", str(want.netdev_mtu))
                    if nic.netdev
                    else f"ip link set dev <netdev> mtu {want.netdev_mtu}"
                )
                hint = f"RoCE active_mtu follows the netdev MTU minus {ROCE_HEADER_BYTES} B: " + (
                    RDMA_MTU_CHECK.fix(set_mtu)
                )
                findings.append(failed(RDMA_MTU, subject, expected, actual, hint))
            else:
                hint = (
                    "InfiniBand MTU is set by the subnet manager's partition (mtu=5 for 4096) and the switch"
                )
                findings.append(failed(RDMA_MTU, subject, expected, actual, hint))
    return findings


RDMA_DEVICE_CHECK = HostCheck(
    RDMA_DEVICE,
    "host",
    "nic",
    (probes.RDMA_LINK, probes.IBV_DEVINFO),
    "listed by `rdma link` and `ibv_devinfo`",
    GPU_RDMA_ROLE,
    None,
    check_rdma_devices,
)
PORT_STATE_CHECK = HostCheck(
    PORT_STATE,
    "host",
    "port",
    (probes.RDMA_LINK,),
    "`ACTIVE/LINK_UP`",
    GPU_RDMA_ROLE,
    None,
    per_nic(check_port_state),
)
LINK_LAYER_CHECK = HostCheck(
    LINK_LAYER,
    "host",
    "port",
    (probes.IBV_DEVINFO,),
    "`Ethernet` (roce) or `InfiniBand` (ib)",
    GPU_RDMA_ROLE,
    None,
    per_nic(check_link_layer),
)
PORT_SPEED_CHECK = host_check(
    PORT_SPEED,
    "port",
    (probes.IBV_DEVINFO,),
    "`active_width` x `active_speed` at `link.speed_gbps` (a 400G intent with a port at 100G fails; "
    "no rate shown is an error)",
    GPU_RDMA_ROLE,
    None,
    per_nic(check_port_speed),
    PortSpeedInputs(),
)
NETDEV_MTU_CHECK = HostCheck(
    NETDEV_MTU,
    "host",
    "nic",
    (probes.NETDEV_MTU,),
    "netdev MTU == `mtu.netdev`",
    HOST_QOS_ROLE,
    "mtu",
    per_netdev(NETDEV_MTU, check_netdev_mtu),
    kinds=ROCE,
)
RDMA_MTU_CHECK = HostCheck(
    RDMA_MTU,
    "host",
    "port",
    (probes.IBV_DEVINFO,),
    "`active_mtu` >= `mtu.rdma`",
    HOST_QOS_ROLE,
    "mtu",
    per_nic(check_rdma_mtu),
)
