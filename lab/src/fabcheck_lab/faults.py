"""Lab fault registry and dispatch: host faults to the mock hosts, switch faults to the switch server,
`slow-link` and `down` done here with tc and signals, `sm-stopped` inside the SM node over its ssh (the
opensm daemon's pid is one of the node's pid namespace). Active faults are recorded in the lab state."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping

from fabcheck_lab import ib_fabric, ib_lab, net, procs
from fabcheck_lab import nodes as lab_nodes
from fabcheck_lab.mockhost import faults as host_faults
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockswitch import SWITCH_FAULTS, heal_switch_fault, inject_switch_fault
from fabcheck_lab.state import (
    ActiveFault,
    LabError,
    LabPaths,
    LabState,
    NodeRecord,
    lab_lock,
    load_pids,
    load_state,
    save_state,
)

LAB_FAULTS: Mapping[str, str] = {
    "slow-link": f"rate-limits every packet from or to the node to {net.SLOW_LINK_RATE} (tc htb on lo)",
    "down": "the node stops answering: a host's processes are SIGSTOPped, a switch's packets are dropped",
    "sm-stopped": "opensm stopped on one SM node (`systemctl stop opensm`, still enabled); with no SM left "
    "the InfiniBand host ports fall back to INIT",
    "imex-down": "nvidia-imex stopped on one NVL tray (`systemctl stop nvidia-imex`, still enabled): its "
    "nvidia-imex-ctl finds no daemon, its peers show it UNAVAILABLE and not connected",
    "fabric-manager-down": "nvidia-fabricmanager stopped on one HGX host (`systemctl stop "
    "nvidia-fabricmanager`, still enabled)",
}
SM_PROFILE = "sm"
# The lab faults that stop a service the node runs (the role that starts it, to say how to start it):
# fault -> (unit, the host profiles that have it, the role's tag).
SERVICE_FAULTS: Mapping[str, tuple[str, tuple[str, ...], str]] = {
    "sm-stopped": ("opensm", (SM_PROFILE,), "sm"),
    "imex-down": ("nvidia-imex", ("nvl",), "nvlink"),
    "fabric-manager-down": ("nvidia-fabricmanager", ("rail8",), "nvlink"),
}
# Lab faults that apply to one kind of node only (the rest: any node).
LAB_FAULT_TARGETS: Mapping[str, str] = {fault: "host" for fault in SERVICE_FAULTS}
IB_SWITCH = "IB switch"  # the ib profile's leaves and spines (`up --profile ib --switches N`): model entries
SM_COMMAND_TIMEOUT_S = 60.0


def catalog() -> dict[str, tuple[str, str]]:
    """Every fault name -> (what it applies to, one-line description)."""
    listing = {name: ("host", text) for name, text in host_faults.HOST_FAULTS.items()}
    listing.update({name: ("switch", text) for name, text in SWITCH_FAULTS.items()})
    listing.update({name: (IB_SWITCH, text) for name, text in ib_fabric.FAULTS.items()})
    listing.update(
        {name: (LAB_FAULT_TARGETS.get(name, "any node"), text) for name, text in LAB_FAULTS.items()}
    )
    return listing


def _check_fault(fault: str) -> str:
    listing = catalog()
    if fault not in listing:
        raise LabError(f"unknown fault {fault!r}; faults: {', '.join(listing)}")
    return listing[fault][0]


def _check_target(fault: str, node: NodeRecord, state: LabState) -> None:
    applies_to = _check_fault(fault)
    if applies_to in ("host", "switch") and node.kind != applies_to:
        valid = [n.name for n in state.nodes if n.kind == applies_to] or ["none in this lab"]
        raise LabError(
            f"fault {fault} applies to {applies_to} nodes ({', '.join(valid)}), not to {node.name}"
        )
    if fault in SERVICE_FAULTS and node.profile not in SERVICE_FAULTS[fault][1]:
        unit, profiles, _tag = SERVICE_FAULTS[fault]
        valid = [n.name for n in state.nodes if n.profile in profiles] or ["none in this lab"]
        kind = "SM nodes" if fault == "sm-stopped" else f"{unit} hosts"
        raise LabError(f"fault {fault} applies to {kind} ({', '.join(valid)}), not to {node.name}")


def _slot(node: NodeRecord) -> int:
    """A number unique per node, used for its tc classes and filter preferences."""
    return node.index if node.kind == "host" else lab_nodes.MAX_HOST_NODES + node.index


def _node_tree(paths: LabPaths, node: NodeRecord) -> list[int]:
    pids = load_pids(paths)
    ref = None if pids is None else pids.nodes.get(node.name)
    if ref is None or not procs.is_running(ref.pid, ref.start):
        raise LabError(f"node {node.name} is not running; `fabcheck lab up` restarts a broken lab")
    return procs.descendants(ref.pid)  # the node's PID 1 (sshd) first, then its sessions


def _apply(paths: LabPaths, fault: str, node: NodeRecord) -> None:
    if fault in host_faults.HOST_FAULTS:
        host_faults.inject(MockNodePaths.under(paths.node_root(node.name)), fault)
    elif fault in SWITCH_FAULTS:
        inject_switch_fault(paths.run_dir, node.name, fault)
    elif fault == "slow-link":
        net.add_slow_link(node.address, _slot(node))
    elif fault in SERVICE_FAULTS:
        unit, _profiles, tag = SERVICE_FAULTS[fault]
        if _in_node(paths, node, f"systemctl is-active {unit}").stdout.strip() != "active":
            raise LabError(
                f"{unit} is not running on {node.name}: nothing to stop; start it with "
                f"`ansible-playbook site.yml --limit {node.name} --tags {tag}`"
            )
        _in_node(paths, node, f"systemctl stop {unit}", check=True)
    elif node.kind == "switch":
        net.add_blackhole(node.address, _slot(node))
    else:
        tree = _node_tree(paths, node)
        procs.send(tree, signal.SIGSTOP)
        # Stop anything forked between listing and stopping (the listener is stopped now, so it is final).
        procs.send(_node_tree(paths, node), signal.SIGSTOP)


def _revert(paths: LabPaths, fault: str, node: NodeRecord) -> None:
    if fault in host_faults.HOST_FAULTS:
        host_faults.heal(MockNodePaths.under(paths.node_root(node.name)), fault)
    elif fault in SWITCH_FAULTS:
        heal_switch_fault(paths.run_dir, node.name, fault)
    elif fault == "slow-link":
        net.remove_slow_link(_slot(node))
    elif fault in SERVICE_FAULTS:
        _in_node(paths, node, f"systemctl start {SERVICE_FAULTS[fault][0]}", check=True)
    elif node.kind == "switch":
        net.remove_blackhole(_slot(node))
    else:
        procs.send(_node_tree(paths, node), signal.SIGCONT)


def _in_node(
    paths: LabPaths, node: NodeRecord, command: str, *, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """One fixed command in the node, through its sshd as a user would run it."""
    argv = ["ssh", "-F", str(paths.ssh_config), "-o", "BatchMode=yes", node.name, command]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SM_COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise LabError(f"{node.name}: `{command}` did not finish in {SM_COMMAND_TIMEOUT_S:g} s") from None
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        raise LabError(f"{node.name}: `{command}` failed (exit {done.returncode}): {said}")
    return done


def _running_state(paths: LabPaths) -> LabState:
    state = load_state(paths)
    if state is None:
        raise LabError("no lab is up; start one with `fabcheck lab up`")
    return state


def inject(paths: LabPaths, fault: str, node_name: str) -> bool:
    """Inject fault on node; False (and nothing done) when it is already active there."""
    _check_fault(fault)
    with lab_lock(paths):
        state = _running_state(paths)
        if fault in ib_fabric.FAULTS:
            return _inject_ib(paths, state, fault, node_name)
        node = state.node(node_name)
        _check_target(fault, node, state)
        active = ActiveFault(fault=fault, node=node.name)
        if active in state.faults:
            return False
        _apply(paths, fault, node)
        state.faults.append(active)
        save_state(paths, state)
    return True


def heal(paths: LabPaths, node_name: str | None = None, fault: str | None = None) -> list[ActiveFault]:
    """Heal the active faults matching node and fault (None = any), newest first; return what was healed.

    Newest first because stacked faults can touch the same state: each records the value it replaced,
    so undoing them in reverse order ends on the state before the first (no-rdma moves the sysfs tree
    that tos writes into, and trust-pcp and dscp-map both record the mlnx_qos trust)."""
    if fault is not None:
        _check_fault(fault)
    with lab_lock(paths):
        state = _running_state(paths)
        if node_name is not None and node_name not in ib_lab.switch_names(state):
            state.node(node_name)  # unknown names are an error even when nothing is active
        chosen = [
            f
            for f in reversed(state.faults)
            if (node_name is None or f.node == node_name) and (fault is None or f.fault == fault)
        ]
        for active in chosen:
            if active.fault in ib_fabric.FAULTS:
                ib_lab.heal(paths, state, active.fault, active.node)
            else:
                _revert(paths, active.fault, state.node(active.node))
            state.faults.remove(active)
            save_state(paths, state)
        if not state.faults:
            net.remove_tree()
    return chosen


def _inject_ib(paths: LabPaths, state: LabState, fault: str, switch: str) -> bool:
    """An IB fault on one of the lab's IB switches, in the fabric state every host node reads."""
    valid = ib_lab.switch_names(state)
    if switch not in valid:
        listed = ", ".join(valid) or "none in this lab: `fabcheck lab up --profile ib --switches 4`"
        raise LabError(f"fault {fault} applies to IB switches ({listed}), not to {switch}")
    active = ActiveFault(fault=fault, node=switch)
    if active in state.faults:
        return False
    ib_lab.inject(paths, state, fault, switch)
    state.faults.append(active)
    save_state(paths, state)
    return True
