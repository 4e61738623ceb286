"""The ib profile's InfiniBand switches on the controller: the lab's fabric (fabcheck_lab.ib_fabric) from
its host nodes and `--switches N` (half leaves, half spines; model entries, no process, no ssh), the one
fabric state every node's mock tools read, its faults, and the inventory's IB groups and cabling.

Every host node holds the same `ib_fabric.json` in its state folder (each node's mocks see only their own
state): the factory fabric and the active faults, rewritten on every node by inject and heal, so every
node answers with the same fabric.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fabcheck_lab import ib_fabric
from fabcheck_lab.mockhost.tools.ib_diags import STATE_FILE, effective
from fabcheck_lab.state import LabError, LabPaths, LabState, NodeRecord, write_atomic

IB_GROUPS = {"leaf": "ib_leaves", "spine": "ib_spines", "core": "ib_cores"}


def split(switches: int) -> tuple[int, int]:
    """--switches N of the ib profile: (leaves, spines)."""
    if switches == 1:
        raise LabError("the ib profile's --switches are IB leaves and spines: give 0, or 2 or more")
    return math.ceil(switches / 2), switches // 2


def fabric_of(hosts: Iterable[NodeRecord], switches: int) -> ib_fabric.Fabric:
    """The lab's fabric: every host node's HCAs (GPU hosts, then SM nodes) over the leaves."""
    leaves, spines = split(switches)
    hcas = ib_fabric.profile_hcas([(n.name, n.profile, n.index) for n in hosts])
    try:
        return ib_fabric.two_tier(hcas, leaves, spines)
    except ValueError as err:
        raise LabError(f"--switches {switches}: {err}") from None


def lab_fabric(state: LabState) -> ib_fabric.Fabric | None:
    if state.profile != "ib" or not state.switches:
        return None
    if state.plan is not None:  # `up --plan`: the planned switches and cables
        from fabcheck_lab.fromplan import ib_fabric_of

        return ib_fabric_of(state)
    return fabric_of(state.host_nodes(), state.switches)


def state_document(
    fabric: ib_fabric.Fabric, faults: Iterable[tuple[str, str, float]] = (), counted: Iterable[Any] = ()
) -> dict[str, Any]:
    """What ib_diags reads: the factory fabric, the active faults [fault, switch, since] and the error
    sources of healed faults (they keep what they counted, as real counters do)."""
    return {
        "fabric": ib_fabric.to_json(fabric),
        "faults": [list(f) for f in faults],
        "counted": list(counted),
    }


def _node_states(paths: LabPaths, state: LabState) -> list[Path]:
    return [paths.node_root(n.name) / "state" / STATE_FILE for n in state.host_nodes()]


def write_fabric_state(paths: LabPaths, state: LabState, document: Mapping[str, Any]) -> None:
    text = json.dumps(document, sort_keys=True) + "\n"
    for target in _node_states(paths, state):
        write_atomic(target, text)


def read_fabric_state(paths: LabPaths, state: LabState) -> dict[str, Any]:
    targets = _node_states(paths, state)
    if not targets or not targets[0].is_file():
        raise LabError("this lab has no InfiniBand switches (`fabcheck lab up --profile ib --switches 4`)")
    document: dict[str, Any] = json.loads(targets[0].read_text())
    return document


def prepare(paths: LabPaths, state: LabState) -> None:
    """At `up`: every host node gets the factory fabric (no fault)."""
    fabric = lab_fabric(state)
    if fabric is not None:
        write_fabric_state(paths, state, state_document(fabric))


def switch_names(state: LabState) -> list[str]:
    fabric = lab_fabric(state)
    return [] if fabric is None else [s.name for s in fabric.switches]


def inject(paths: LabPaths, state: LabState, fault: str, switch: str, now: float | None = None) -> None:
    document = read_fabric_state(paths, state)
    base = ib_fabric.from_json(document["fabric"])
    if switch not in {s.name for s in base.switches}:
        raise LabError(
            f"fault {fault} applies to IB switches ({', '.join(switch_names(state))}), not {switch}"
        )
    try:
        ib_fabric.with_fault(effective(document), fault, switch, time.time() if now is None else now)
    except ValueError as err:
        raise LabError(f"fault {fault} on {switch}: {err}") from None
    document["faults"].append([fault, switch, time.time() if now is None else now])
    write_fabric_state(paths, state, document)


def heal(paths: LabPaths, state: LabState, fault: str, switch: str, now: float | None = None) -> None:
    """Drop the fault; what an error source counted stays counted (stopped now)."""
    document = read_fabric_state(paths, state)
    kept = [f for f in document["faults"] if (f[0], f[1]) != (fault, switch)]
    for name, on, since in document["faults"]:
        if (name, on) == (fault, switch):
            counting = ib_fabric.with_fault(ib_fabric.from_json(document["fabric"]), name, on, since).errors
            stopped = time.time() if now is None else now
            document["counted"] += [
                [e.end.node, e.end.port, e.counter, e.per_second, e.since, stopped] for e in counting
            ]
    document["faults"] = kept
    write_fabric_state(paths, state, document)


# --- inventory --------------------------------------------------------------------------------------


def inventory_groups(
    fabric: ib_fabric.Fabric, planned: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """Group ib_switches with children per tier; each switch's node description and its cables up;
    `planned`: a plan's variables of each switch (ib_port_count, fabric_links), as the plan writes them."""
    children: dict[str, Any] = {}
    for switch in fabric.switches:
        entry: dict[str, Any] = {"ib_node_description": switch.description}
        links = {c.a.port: f"{c.b.node}/{c.b.port}" for c in fabric.cables if c.a.node == switch.name}
        if links:
            entry["fabric_links"] = links
        entry.update((planned or {}).get(switch.name, {}))
        children.setdefault(IB_GROUPS[switch.tier], {"hosts": {}})["hosts"][switch.name] = entry
    return {"ib_switches": {"children": children}}


def host_links(fabric: ib_fabric.Fabric) -> dict[str, dict[str, str]]:
    """host -> {mlx5_N: leaf/port}: each host's (and SM node's) HCA cables."""
    by_key = {h.key: h for h in fabric.hcas}
    links: dict[str, dict[str, str]] = {}
    for cable in fabric.cables:
        hca = by_key.get(cable.a.node)
        if hca is not None:
            links.setdefault(hca.host, {})[hca.nic] = f"{cable.b.node}/{cable.b.port}"
    return links
