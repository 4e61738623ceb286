"""Simulated power events of a lab host: a reboot, and a driver reload of one NIC.

Both start like the real event: the NIC state the driver holds is lost (factory values, written from
the controller into the node's state and mock sysfs), and nothing of Ansible runs. Then the node does
what a host does by itself, inside the node over the lab's ssh: a reboot runs its boot (mock systemd:
modules-load.d, then every enabled unit), a driver reload the udev add event of that NIC's RDMA device
(the RUN programs of the node's matching rules). What comes back is whatever the node's own boot files
put back; `fabcheck validate` then says whether that is the intent.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import NP_DEFAULTS, RP_DEFAULTS
from fabcheck_lab.mockhost.tools.common import Node
from fabcheck_lab.state import LabError, LabPaths, NodeRecord, lab_lock, load_state

DISPATCHER = "/usr/local/bin/fabcheck-mock"  # the node's mock tools, called by tool name
EVENT_TIMEOUT_S = 120.0  # a boot runs every enabled unit; the applier takes well under a second per NIC
ROCE_FACTORY_MTU = 1500
IB_FACTORY_MTU = 2044
PRIORITIES = 8


@dataclass(frozen=True)
class PowerEvent:
    """What one simulated event did: the NICs reset, and what the node printed doing its part."""

    node: str
    reset: tuple[str, ...]
    output: str
    ok: bool


def reset_nic(node: Node, nic: dict[str, Any]) -> None:
    """The NIC as its driver comes up: trust pcp, PFC off, ToS 0, factory DCQCN, MTU 1500 (IB 2044)."""
    net = f"net/{nic['netdev']}"
    if nic["link_layer"] == "InfiniBand":
        _write_sys(node, f"{net}/mtu", IB_FACTORY_MTU)
        return
    _write_sys(node, f"{net}/mtu", ROCE_FACTORY_MTU)
    for point in ("roce_np", "roce_rp"):
        for prio in range(PRIORITIES):
            _write_sys(node, f"{net}/ecn/{point}/enable/{prio}", 1)
    for name, value in NP_DEFAULTS.items():
        _write_sys(node, f"{net}/ecn/roce_np/{name}", value)
    for name, value in RP_DEFAULTS.items():
        _write_sys(node, f"{net}/ecn/roce_rp/{name}", value)
    _write_sys(node, f"infiniband/{nic['name']}/tc/1/traffic_class", "Global tclass=0")
    (node.state / "qos" / f"{nic['netdev']}.json").unlink(missing_ok=True)  # mlnx_qos: factory state
    table = node.load("rdma_cm.json", {})
    if table.pop(nic["name"], None) is not None:
        node.save("rdma_cm.json", table)


def _write_sys(node: Node, rel: str, value: object) -> None:
    # In place, as the driver's attributes are: strict sysfs in the node refuses a replaced file.
    with open(node.sys_class / rel, "w") as handle:
        handle.write(f"{value}\n")


def _host(paths: LabPaths, name: str) -> tuple[NodeRecord, Node]:
    state = load_state(paths)
    if state is None:
        raise LabError("no lab is up; start one with `fabcheck lab up`")
    record = state.node(name)
    if record.kind != "host":
        hosts = ", ".join(n.name for n in state.host_nodes())
        raise LabError(f"{name} is a {record.kind}; reboot and reload-driver apply to host nodes ({hosts})")
    node_paths = MockNodePaths.under(paths.node_root(name))
    return record, Node(node_paths.state, node_paths.sys_class, node_paths.etc)


def in_node(paths: LabPaths, name: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a command inside the node, as root over the lab's ssh (the node's own environment)."""
    ssh = ["ssh", "-F", str(paths.ssh_config), "-o", "BatchMode=yes", name, "--", *argv]
    try:
        return subprocess.run(ssh, capture_output=True, text=True, timeout=EVENT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise LabError(f"{name}: `{' '.join(argv)}` did not finish within {EVENT_TIMEOUT_S:g} s") from None


def _event(
    paths: LabPaths, name: str, reset: list[dict[str, Any]], node: Node, argv: list[str]
) -> PowerEvent:
    with lab_lock(paths):
        for nic in reset:
            reset_nic(node, nic)
    done = in_node(paths, name, argv)
    if done.returncode == 255 and not done.stdout:
        raise LabError(f"{name}: cannot reach the node over ssh: {done.stderr.strip()}")
    return PowerEvent(name, tuple(n["name"] for n in reset), done.stdout + done.stderr, done.returncode == 0)


def reboot(paths: LabPaths, name: str) -> PowerEvent:
    """Every NIC back to factory values and nvidia_peermem unloaded, then the node's boot."""
    _record, node = _host(paths, name)
    with lab_lock(paths):
        modules = node.load("modules.json", {})
        if modules.get("nvidia_peermem"):
            node.save("modules.json", modules | {"nvidia_peermem": False})
    return _event(paths, name, node.rdma_nics(), node, [DISPATCHER, "fabcheck-mock-boot"])


def reload_driver(paths: LabPaths, name: str, device: str) -> PowerEvent:
    """One NIC back to factory values, then the udev add event of its RDMA device."""
    _record, node = _host(paths, name)
    nic = node.nic_by_name(device)
    if nic is None:
        known = ", ".join(n["name"] for n in node.rdma_nics()) or "none"
        raise LabError(f"{name} has no RDMA device {device!r} (devices: {known})")
    trigger = [
        "udevadm",
        "trigger",
        "--action=add",
        "--subsystem-match=infiniband",
        f"--sysname-match={device}",
    ]
    return _event(paths, name, [nic], node, [DISPATCHER, *trigger])
