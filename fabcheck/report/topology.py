"""The scheduler's topology from the cabling map and the gate's verdicts. Pure.

Input: the inventory's cables (fabcheck.intent.fabric: each GPU host's rail NIC to its leaf, RoCE
`Link` or InfiniBand `IbCable`; switch-to-switch cables, RoCE `SwitchLink` or IB `IbCable`) and, where
a validate's snapshot was replayed, its findings. Output: a `Topology` (leaves with their nodes, upper
switches with their children, blocks, the nodes left out and why), written as Slurm's topology.conf
for topology/tree or topology/block, or as JSON (`to_json`, documented in README "Scheduler topology").

Which verdicts judge a cable (the `where` fields the checks write, fabcheck.checks.model.Where):
- a RoCE host cable: every `link.*` finding at (host, NIC, `switch:port`) (link.trust, link.pfc,
  link.dscp_map, link.mtu, link.lldp, link.health: fabcheck.checks.link, link_health);
- an IB cable: every `ib.*` finding at (its switch end, that port, the other end's label): the ib
  checks put a cable's findings there (fabcheck.checks.ib.link_where);
- a RoCE switch-to-switch cable: every `link.*` finding at either end (switch, port).
A cable passed when it has a passing finding and none failed or errored (a skip is neutral); failed
when one failed; not judged when one errored or none judged it. Only a passed cable counts: a node is
kept when every one of its rail cables passed, and left out (named, with why, in a `#` comment)
otherwise, unless `include_failed`. A switch-to-switch cable that failed or errored is dropped, named;
one no check judged is kept as cabled and counted in the header (a failed cable is never kept).
Without verdicts (no snapshot) every cable counts as cabled and the header says it is unverified.

Slurm's rules the writers follow (https://slurm.schedmd.com/topology.conf.html; the same page as
SchedMD/slurm:doc/man/man5/topology.conf.5, and the plugins that read the file,
SchedMD/slurm:src/plugins/topology/tree/switch_record.c and .../block/block_record.c, all @
284c3b95f08a2dc2478499837b03355e1b9c5c75): a switch lists either Nodes or Switches, never both, and
never neither (Slurm 22.05 refuses that: SchedMD/slurm:src/plugins/topology/tree/topology_tree.c@
d525b6872a106d32916b33a8738f12510ec7cf04, tag slurm-22-05-8-1); SwitchName shorter than 64
characters; names are hostlist expressions (fabcheck.report.hostlist); a node under several leaf
switches draws the warning "Multiple leaf switches contain nodes", so a node is listed under ONE leaf:
the leaf of its first rail (in a rail-optimised pod the nodes sharing their rail-0 leaf share every
rail's leaf); BlockSizes: the first is the base block's node count (every block holds at least it),
each further one that count times a power of two (at most 2^15).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fabcheck.checks.model import Finding, Status
from fabcheck.intent.fabric import Fabric
from fabcheck.report.hostlist import compress, is_hostlist_name

MAX_SWITCH_NAME = 63  # HOST_NAME_MAX (64) with its NUL: src/plugins/topology/tree/switch_record.c
MAX_BLOCK_LEVELS = 16  # block_level > 15 is refused: src/plugins/topology/block/block_record.c
ROOT_NAME = "fabric"
FORMAT = "fabcheck-topology"
VERSION = 1


class CableState(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "could not be judged"  # a check errored: never a pass
    UNJUDGED = "judged by no check"  # no finding at all (its stage was not in the snapshot)
    CABLED = "cabled"  # no verdicts were read (no snapshot): the cabling map alone


@dataclass(frozen=True)
class Verdict:
    state: CableState
    why: tuple[str, ...] = ()  # "link.lldp fail: <actual>" for each finding that kept it from passing

    @property
    def counts(self) -> bool:
        return self.state in (CableState.PASSED, CableState.CABLED)


@dataclass(frozen=True)
class HostCable:
    """One rail NIC of a GPU host cabled to its leaf; `key`: the (node, part, peer) its findings carry."""

    host: str
    nic: str
    leaf: str
    label: str  # "gpu01:mlx5_0 <-> leaf01:swp1", "leaf01/1 <-> gpu01/mlx5_0"
    key: tuple[str, str, str]
    family: str  # "link" or "ib": the checks that judge it


@dataclass(frozen=True)
class UpCable:
    """One switch-to-switch cable, `lower` below `upper`; `keys`: the (node, part) its findings carry."""

    lower: str
    upper: str
    label: str
    keys: tuple[tuple[str, str], ...]
    family: str
    peer: str = ""  # IB: the other end's label its findings carry as peer ("": any)


@dataclass(frozen=True)
class CablingMap:
    """What the topology is built from: GPU hosts (inventory order, each with its Slurm node name), their
    rail cables in rail order, the switch-to-switch cables, the NVLink domains (name, hosts)."""

    hosts: tuple[tuple[str, str], ...]  # (inventory name, Slurm node name)
    host_cables: tuple[HostCable, ...]
    up_cables: tuple[UpCable, ...] = ()
    nvlink_domains: tuple[tuple[str, tuple[str, ...]], ...] = ()
    tiers: Mapping[str, str] = field(default_factory=dict)  # switch -> leaf, spine, core where known


@dataclass(frozen=True)
class Switch:
    name: str
    tier: str
    nodes: tuple[str, ...] = ()  # Slurm node names (a leaf)
    switches: tuple[str, ...] = ()  # child switches (above a leaf)
    synthetic: bool = False  # the root fabcheck adds when the map cables no switch to another


@dataclass(frozen=True)
class LeftOut:
    host: str
    node: str  # its Slurm node name
    why: tuple[str, ...]


@dataclass(frozen=True)
class Topology:
    switches: tuple[Switch, ...]  # leaves first, then upward
    blocks: tuple[tuple[str, tuple[str, ...]], ...]  # (block name, Slurm node names)
    block_source: str  # "nvlink" or "leaf"
    left_out: tuple[LeftOut, ...]
    kept_failed: tuple[LeftOut, ...]  # nodes kept by include_failed, with why they would be left out
    dropped_up_cables: tuple[tuple[str, tuple[str, ...]], ...]  # (label, why)
    unjudged_up_cables: tuple[str, ...]
    verified: bool
    notes: tuple[str, ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(node for switch in self.switches for node in switch.nodes)


def switch_cables(fabric: Fabric) -> tuple[UpCable, ...]:
    """The fabric's switch-to-switch cables, each with where its checks file their findings: a RoCE
    cable's link.switch_lldp at either end (fabcheck.checks.uplinks), an IB cable's ib.* at its lower
    switch end with the upper end's label as peer (fabcheck.checks.ib.link_where)."""
    ethernet = [
        UpCable(s.a_switch, s.b_switch, s.label, ((s.a_switch, s.a_port), (s.b_switch, s.b_port)), "link")
        for s in fabric.switch_links
    ]
    ib = [
        UpCable(c.a.node, c.b.node, c.label, ((c.a.node, str(c.a.port)),), "ib", peer=c.b.label)
        for c in fabric.ib.cables
        if c.a.nic is None
    ]
    return (*ethernet, *ib)


# ---- verdicts -------------------------------------------------------------------------------------


def cable_verdicts(
    cabling: CablingMap, findings: Sequence[Finding] | None
) -> tuple[dict[HostCable, Verdict], dict[UpCable, Verdict]]:
    """Each cable's verdict from the findings (None: no snapshot, every cable CABLED)."""
    if findings is None:
        cabled = Verdict(CableState.CABLED)
        return {c: cabled for c in cabling.host_cables}, {c: cabled for c in cabling.up_cables}
    by_key: dict[tuple[str, str, str], list[Finding]] = {}
    by_end: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        where = finding.where
        if where is None or not where.part:
            continue
        by_key.setdefault((where.node, where.part, where.peer), []).append(finding)
        by_end.setdefault((where.node, where.part), []).append(finding)
    hosts = {
        cable: _verdict(f for f in by_key.get(cable.key, ()) if _family(f, cable.family))
        for cable in cabling.host_cables
    }
    ups = {
        cable: _verdict(
            f
            for key in cable.keys
            for f in by_end.get(key, ())
            if _family(f, cable.family) and (not cable.peer or f.where is None or f.where.peer == cable.peer)
        )
        for cable in cabling.up_cables
    }
    return hosts, ups


def _family(finding: Finding, family: str) -> bool:
    return finding.check.startswith(family + ".")


def _verdict(findings: Iterable[Finding]) -> Verdict:
    found = list(findings)
    bad = [f for f in found if f.status in (Status.FAIL, Status.ERROR)]
    grouped: dict[tuple[str, str], list[str]] = {}  # (status, actual) -> checks: six "not read" are one
    for f in bad:
        grouped.setdefault((f.status.value, _one_line(f.actual)), []).append(f.check)
    why = tuple(f"{', '.join(checks)} {status}: {actual}" for (status, actual), checks in grouped.items())
    if any(f.status is Status.FAIL for f in bad):
        return Verdict(CableState.FAILED, why)
    if bad:
        return Verdict(CableState.ERRORED, why)
    if any(f.status is Status.PASS for f in found):
        return Verdict(CableState.PASSED)
    skips = tuple(f"{f.check} skip: {_one_line(f.actual)}" for f in found if f.status is Status.SKIP)
    return Verdict(CableState.UNJUDGED, skips or ("no check judged it (was its stage in the snapshot?)",))


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 120 else flat[:117] + "..."


# ---- the topology ---------------------------------------------------------------------------------


def build_topology(
    cabling: CablingMap, findings: Sequence[Finding] | None, *, include_failed: bool = False
) -> Topology:
    """Leaves with the nodes whose rail cables all count, upper switches with the children whose
    cables count, blocks; ValueError for a name Slurm cannot read (naming it)."""
    host_verdicts, up_verdicts = cable_verdicts(cabling, findings)
    slurm = dict(cabling.hosts)
    cables_of: dict[str, list[HostCable]] = {}
    for cable in cabling.host_cables:
        cables_of.setdefault(cable.host, []).append(cable)
    leaves: dict[str, list[str]] = {}
    left_out: list[LeftOut] = []
    kept_failed: list[LeftOut] = []
    for host, node in cabling.hosts:
        cables = cables_of.get(host, [])
        why = [
            f"{cable.label}: {reason}"
            for cable in cables
            if not host_verdicts[cable].counts
            for reason in host_verdicts[cable].why or (host_verdicts[cable].state.value,)
        ]
        if not cables:
            why.append("no rail cable in the cabling map (fabric_links)")
        if why:
            (kept_failed if include_failed and cables else left_out).append(LeftOut(host, node, tuple(why)))
            if not include_failed or not cables:
                continue
        leaves.setdefault(cables[0].leaf, []).append(node)
    dropped = tuple(
        (cable.label, verdict.why)
        for cable, verdict in up_verdicts.items()
        if verdict.state in (CableState.FAILED, CableState.ERRORED)
    )
    unjudged = tuple(
        cable.label for cable, verdict in up_verdicts.items() if verdict.state is CableState.UNJUDGED
    )
    dropped_labels = {label for label, _why in dropped}
    uplinks = [cable for cable in cabling.up_cables if cable.label not in dropped_labels]
    switches, notes = _tree(leaves, uplinks, cabling, bool(cabling.up_cables))
    for switch in switches:
        _check_name(switch.name, "switch")
    for node in slurm.values():
        _check_name(node, "node")
    blocks, source = _blocks(leaves, cabling, slurm)
    return Topology(
        switches=switches,
        blocks=blocks,
        block_source=source,
        left_out=tuple(left_out),
        kept_failed=tuple(kept_failed),
        dropped_up_cables=dropped,
        unjudged_up_cables=unjudged,
        verified=findings is not None,
        notes=notes,
    )


def _tree(
    leaves: Mapping[str, Sequence[str]], uplinks: Sequence[UpCable], cabling: CablingMap, mapped_up: bool
) -> tuple[tuple[Switch, ...], tuple[str, ...]]:
    """The leaves holding nodes, every switch above them through counting cables, and a root where the
    map cables no switch to another (Slurm's tree needs one switch that reaches every node)."""
    children: dict[str, set[str]] = {}
    for cable in uplinks:
        children.setdefault(cable.upper, set()).add(cable.lower)
    reach: dict[str, set[str]] = {leaf: set(nodes) for leaf, nodes in leaves.items()}

    def nodes_under(switch: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if switch in reach:
            return reach[switch]
        if switch in seen:  # a loop in the map: read_fabric refuses one, never recurse forever
            return set()
        found: set[str] = set()
        for child in children.get(switch, ()):
            found |= nodes_under(child, seen | {switch})
        reach[switch] = found
        return found

    upper = sorted(
        (s for s in children if s not in leaves and nodes_under(s)),
        key=lambda s: (_rank(cabling.tiers.get(s, "spine")), s),
    )
    useful = set(leaves) | set(upper)
    switches = [Switch(leaf, "leaf", tuple(leaves[leaf])) for leaf in sorted(leaves)]
    for name in upper:
        kids = tuple(sorted(child for child in children[name] if child in useful))
        switches.append(Switch(name, cabling.tiers.get(name, "spine"), switches=kids))
    everyone = {node for nodes in leaves.values() for node in nodes}
    tops = [s.name for s in switches if not any(s.name in other.switches for other in switches)]
    notes: list[str] = []
    if everyone and not any(reach.get(s.name, set()) >= everyone for s in switches):
        if not mapped_up and len(tops) > 1:
            root = ROOT_NAME
            while root in useful:
                root += "-root"
            switches.append(Switch(root, "root", switches=tuple(sorted(tops)), synthetic=True))
            notes.append(
                f"{root} is no cabled switch: the cabling map cables no switch to another, and Slurm's tree "
                "needs one switch that reaches every node"
            )
        else:
            notes.append(
                "no switch reaches every node through cables that count: Slurm runs no job across "
                f"the parts ({', '.join(tops)})"
            )
    return tuple(switches), tuple(notes)


def _rank(tier: str) -> int:
    return {"leaf": 0, "spine": 1, "core": 2}.get(tier, 1)


def _blocks(
    leaves: Mapping[str, Sequence[str]], cabling: CablingMap, slurm: Mapping[str, str]
) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], str]:
    """NVLink domains where the intent declares them, else the nodes that share a leaf."""
    kept = {node for nodes in leaves.values() for node in nodes}
    if cabling.nvlink_domains:
        blocks = []
        for name, hosts in cabling.nvlink_domains:
            members = tuple(slurm[h] for h in hosts if h in slurm and slurm[h] in kept)
            if members:
                blocks.append((name, members))
        return tuple(blocks), "nvlink"
    return tuple((leaf, tuple(nodes)) for leaf, nodes in sorted(leaves.items()) if nodes), "leaf"


def block_sizes(blocks: Sequence[tuple[str, Sequence[str]]]) -> tuple[int, ...]:
    """Slurm's BlockSizes: the base (the smallest block's node count: every block must hold at least
    it), then the base times 2, 4, ... while that many base blocks exist."""
    if not blocks:
        return ()
    base = min(len(nodes) for _name, nodes in blocks)
    sizes, level = [], 0
    while (1 << level) <= len(blocks) and level < MAX_BLOCK_LEVELS:
        sizes.append(base << level)
        level += 1
    return tuple(sizes)


def _check_name(name: str, what: str) -> None:
    if not is_hostlist_name(name):
        raise ValueError(
            f"{what} {name!r}: Slurm cannot read it in topology.conf (letters, digits, '.', '_', '-')"
        )
    if what == "switch" and len(name) > MAX_SWITCH_NAME:
        raise ValueError(f"switch {name!r}: longer than Slurm's {MAX_SWITCH_NAME} characters for SwitchName")


# ---- writers --------------------------------------------------------------------------------------


def _header(topology: Topology, kind: str, source: str) -> list[str]:
    lines = [f"# Slurm topology.conf for {kind}, written by `fabcheck topology` from {source}."]
    if topology.verified:
        lines.append("# Only cables whose checks passed in that run count.")
    else:
        lines.append("# UNVERIFIED: no --snapshot given: every cable of the cabling map counts as cabled.")
    for left in topology.left_out:
        lines.append(f"# left out: {left.node} ({left.host}): {'; '.join(left.why)}")
    for kept in topology.kept_failed:
        lines.append(f"# kept (--include-failed): {kept.node} ({kept.host}): {'; '.join(kept.why)}")
    for label, why in topology.dropped_up_cables:
        lines.append(f"# switch cable left out: {label}: {'; '.join(why)}")
    if topology.unjudged_up_cables:
        count = len(topology.unjudged_up_cables)
        lines.append(f"# {count} switch-to-switch cable(s) no check passed or failed: counted as cabled")
    lines += [f"# note: {note}" for note in topology.notes]
    return [_comment_safe(line) for line in lines]


def _comment_safe(line: str) -> str:
    """One comment line: a newline in a reason would start a line Slurm parses."""
    return " ".join(line.splitlines())


def slurm_tree(topology: Topology, source: str) -> str:
    """topology.conf for topology/tree: `SwitchName=leaf01 Nodes=gpu[01-04]` per leaf,
    `SwitchName=spine01 Switches=leaf[01-02]` above."""
    lines = _header(topology, "topology/tree", source)
    for switch in topology.switches:
        if switch.nodes:
            lines.append(f"SwitchName={switch.name} Nodes={compress(switch.nodes)}")
        elif switch.switches:
            lines.append(f"SwitchName={switch.name} Switches={compress(switch.switches)}")
    return "\n".join(lines) + "\n"


def slurm_block(topology: Topology, source: str) -> str:
    """topology.conf for topology/block (Slurm 23.11 and later): `BlockName=... Nodes=...` per block,
    then BlockSizes."""
    lines = _header(topology, "topology/block", source)
    what = "NVLink domain" if topology.block_source == "nvlink" else "the nodes of one leaf"
    lines.append(f"# one block per {what}")
    for name, nodes in topology.blocks:
        _check_name(name, "block")
        lines.append(f"BlockName={name} Nodes={compress(nodes)}")
    sizes = block_sizes(topology.blocks)
    if sizes:
        lines.append(f"BlockSizes={','.join(str(size) for size in sizes)}")
    return "\n".join(lines) + "\n"


def to_json(topology: Topology, source: str) -> dict[str, Any]:
    """The documented JSON shape (README "Scheduler topology")."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "source": source,
        "verified": topology.verified,
        "switches": [
            {
                "name": s.name,
                "tier": s.tier,
                "nodes": list(s.nodes),
                "switches": list(s.switches),
                "synthetic": s.synthetic,
            }
            for s in topology.switches
        ],
        "blocks": [{"name": name, "nodes": list(nodes)} for name, nodes in topology.blocks],
        "block_source": topology.block_source,
        "block_sizes": list(block_sizes(topology.blocks)),
        "left_out": [{"host": x.host, "node": x.node, "why": list(x.why)} for x in topology.left_out],
        "kept_failed": [{"host": x.host, "node": x.node, "why": list(x.why)} for x in topology.kept_failed],
        "dropped_switch_cables": [
            {"cable": label, "why": list(why)} for label, why in topology.dropped_up_cables
        ],
        "unjudged_switch_cables": list(topology.unjudged_up_cables),
        "notes": list(topology.notes),
    }
