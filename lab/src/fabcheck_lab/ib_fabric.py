"""The lab's InfiniBand fabric: switches, HCAs and cables, and what infiniband-diags print about them.

One model (plain data, JSON round-trip) and pure renderers of each tool's output in the real format, used
by the mock hosts' tools (mockhost/tools/ib_diags.py, every node reads the same fabric state) and by
bench/ib_stage.py (a 2,048-host 3-tier fabric renders in seconds). Stdlib only: the tools' zip
application ships this module beside them (mockhost/prepare.py), where fabcheck is not importable.

Formats, all from rdma-core infiniband-diags at linux-rdma/rdma-core@691953d8d502f54088f776c5ba2aeed0a5ac945d:
- `ibnetdiscover -p`: ibnetdiscover.c dump_ports_report (`%2s %5d %2d 0x%016x %s %s`, then the peer or
  `%36s'%s'`), nodes' ports from the highest down to 1;
- `iblinkinfo --line`: iblinkinfo.c print_port (line_mode), libibmad dump.c for `4X`, `106.25 Gbps`,
  `Active`, `LinkUp`, ibdiag_common.c get_max_msg for `Could be 4X`;
- `ibqueryerrors`: ibqueryerrors.c print_node / print_results / print_summary, extended counters
  (PortCounters `[%s == %u]`, saturating at each counter's width), switches queried with AllPortSelect;
- `saquery`: saquery.c dump_node_record;
- `vendstat -N`: vendstat.c general info (hw_dev_rev .. sw_version);
- `perfquery -x`: perfquery.c + libibmad fields.c names, the dotted dump as in
  treydock/infiniband_exporter collectors/fixtures/perfquery/*.out@992ebe121f3fe746a5937f5f74fbdff10e8ed388.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

SWITCH_DEVICE_ID = 0xD2F2  # 54002: NVIDIA Quantum-2 (QM9700/QM9790)
SWITCH_FW = "31.2012.1024"
SWITCH_PSID = "MT_0000000681"
SWITCH_HW_REVISION = 0x00A1
SWITCH_PORTS = 64
HCA_DEVICE_ID = 0x1021  # 4129: ConnectX-7 (mockhost/profiles.py NIC_MODEL vendor_part_id)
MELLANOX_VENDOR_ID = 0x02C9
SWITCH_GUID_BASE = 0xFC6A1C0300000000  # an NVIDIA OUI (fc:6a:1c), as switch GUIDs carry
TIER_CODES = {"leaf": 1, "spine": 2, "core": 3}
WIDTH, SPEED = "4x", "NDR"
# ibnetdiscover's width spelling -> libibmad's (iblinkinfo, ibqueryerrors -c).
WIDTH_TEXT = {"1x": "1X", "2x": "2X", "4x": "4X", "8x": "8X", "12x": "12X"}
# Speed generation -> libibmad's per-lane rate text (dump.c mad_dump_linkspeed / linkspeedext).
LANE_TEXT = {
    "SDR": "2.5 Gbps",
    "DDR": "5.0 Gbps",
    "QDR": "10.0 Gbps",
    "FDR10": "10.0 Gbps (FDR10)",
    "FDR": "14.0625 Gbps",
    "EDR": "25.78125 Gbps",
    "HDR": "53.125 Gbps",
    "NDR": "106.25 Gbps",
    "XDR": "212.5 Gbps",
}
# ibqueryerrors' error counters in its print order (IB_PC_ERR_SYM_F .. IB_PC_VL15_DROPPED_F, then
# PortXmitWait), libibmad fields.c names.
COUNTERS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitWait",
)
# PortCounters bit widths (libibmad fields.c): a counter stops at all ones.
COUNTER_BITS = dict(zip(COUNTERS, (16, 8, 8, 16, 16, 16, 16, 8, 8, 4, 4, 16, 32), strict=True))


@dataclass(frozen=True)
class Switch:
    name: str
    tier: str  # leaf, spine, core
    description: str
    guid: int
    lid: int
    port_count: int = SWITCH_PORTS
    device_id: int = SWITCH_DEVICE_ID
    fw_version: str = SWITCH_FW
    psid: str = SWITCH_PSID
    hw_revision: int = SWITCH_HW_REVISION


@dataclass(frozen=True)
class Hca:
    """One host HCA (a one-port CA): `key` is `host/nic`, the end name cables use."""

    host: str
    nic: str
    description: str  # rdma-ndd's "%h %d": "gpu01 mlx5_0"
    node_guid: int
    port_guid: int
    lid: int
    device_id: int = HCA_DEVICE_ID

    @property
    def key(self) -> str:
        return f"{self.host}/{self.nic}"


@dataclass(frozen=True)
class End:
    node: str  # a switch name or an HCA key (host/nic)
    port: int


@dataclass(frozen=True)
class Cable:
    """A cable as it is: `a` the lower tier (the HCA, else the leaf, else the spine), the width and
    speed it trained at (both ends agree)."""

    a: End
    b: End
    width: str = WIDTH
    speed: str = SPEED


@dataclass(frozen=True)
class ErrorSource:
    """A port counting one counter at a rate from `since` until `until` (None: still counting)."""

    end: End
    counter: str
    per_second: float
    since: float
    until: float | None = None

    def count_at(self, now: float) -> int:
        stop = now if self.until is None else min(now, self.until)
        return max(0, int(self.per_second * (stop - self.since)))


@dataclass(frozen=True)
class Fabric:
    switches: tuple[Switch, ...]
    hcas: tuple[Hca, ...]
    cables: tuple[Cable, ...]
    errors: tuple[ErrorSource, ...] = ()
    # saquery only: an HCA (key) answering with another port GUID (the ib-dup-guid fault).
    sa_port_guids: Mapping[str, int] = field(default_factory=dict)

    def switch(self, name: str) -> Switch:
        for switch in self.switches:
            if switch.name == name:
                return switch
        raise KeyError(name)


# --- building ---------------------------------------------------------------------------------


def switch_entry(name: str, tier: str, index: int, lid: int, description: str | None = None) -> Switch:
    guid = SWITCH_GUID_BASE | (TIER_CODES[tier] << 24) | index
    return Switch(name, tier, description or name, guid, lid)


def hca_of(host: str, nic: dict[str, Any], hostname: str | None = None) -> Hca:
    """An HCA from a mock host's NIC entry (mockhost/profiles.py nic_entry: node_guid, port_guid, lid)."""
    node_guid = int(str(nic["node_guid"]).replace(":", ""), 16)
    return Hca(
        host,
        nic["name"],
        f"{hostname or host} {nic['name']}",
        node_guid,
        int(nic["port_guid"], 16),
        nic["lid"],
    )


def profile_hcas(hosts: Sequence[tuple[str, str, int]]) -> list[Hca]:
    """The HCAs of mock hosts (name, profile, node index), as mockhost/profiles.py gives them (controller
    side only: the profiles are not in the tools' zip application)."""
    from fabcheck_lab.mockhost.profiles import nics_for

    return [hca_of(name, nic) for name, profile, index in hosts for nic in nics_for(profile, index)]


def _numbered(prefix: str, count: int) -> list[str]:
    width = max(2, len(str(count)))
    return [f"{prefix}{i:0{width}d}" for i in range(1, count + 1)]


def two_tier(hcas: Sequence[Hca], leaves: int, spines: int, port_count: int = SWITCH_PORTS) -> Fabric:
    """Leaves and spines: the HCAs spread over the leaves' ports from 1 (in order, a leaf's share each),
    each leaf with as many uplinks as host cables, from port count/2 + 1, dealt round the spines."""
    if leaves < 1 or spines < 1:
        raise ValueError("a two-tier fabric needs at least one leaf and one spine")
    first_lid = max((h.lid for h in hcas), default=0) + 1
    leaf_names, spine_names = _numbered("leaf", leaves), _numbered("spine", spines)
    switches = [switch_entry(n, "leaf", i, first_lid + i, None) for i, n in enumerate(leaf_names)]
    switches += [switch_entry(n, "spine", i, first_lid + leaves + i) for i, n in enumerate(spine_names)]
    share = math.ceil(len(hcas) / leaves)
    down = port_count // 2
    if share > down:
        raise ValueError(
            f"{len(hcas)} HCAs over {leaves} leaves: {share} per leaf, more than {down} down ports"
        )
    cables: list[Cable] = []
    spine_next = dict.fromkeys(spine_names, 1)
    for leaf_index, leaf in enumerate(leaf_names):
        mine = hcas[leaf_index * share : (leaf_index + 1) * share]
        cables += [Cable(End(h.key, 1), End(leaf, port)) for port, h in enumerate(mine, start=1)]
        for uplink in range(len(mine)):
            spine = spine_names[uplink % spines]
            cables.append(Cable(End(leaf, down + 1 + uplink), End(spine, spine_next[spine])))
            spine_next[spine] += 1
    if max(spine_next.values()) - 1 > port_count:
        raise ValueError(f"the spines need {max(spine_next.values()) - 1} ports, they have {port_count}")
    return Fabric(tuple(switches), tuple(hcas), tuple(cables))


def fat_tree(hcas: Sequence[Hca], radix: int = SWITCH_PORTS) -> Fabric:
    """A 3-tier fat tree of radix-port switches: leaves with radix/2 HCAs each, pods of radix/2 leaves and
    radix/2 spines (every leaf to every spine of its pod once), every spine's radix/2 uplinks to the
    cores in turn (radix ports each)."""
    half = radix // 2
    leaves = math.ceil(len(hcas) / half)
    pods = math.ceil(leaves / half)
    spines = pods * half
    cores = math.ceil(spines * half / radix)
    first_lid = max((h.lid for h in hcas), default=0) + 1
    names = _numbered("leaf", leaves), _numbered("spine", spines), _numbered("core", cores)
    switches: list[Switch] = []
    for tier, tier_names in zip(("leaf", "spine", "core"), names, strict=True):
        first = first_lid + len(switches)  # one LID per switch, after the HCAs'
        switches += [switch_entry(n, tier, i, first + i) for i, n in enumerate(tier_names)]
    cables: list[Cable] = []
    for leaf_index, leaf in enumerate(names[0]):
        mine = hcas[leaf_index * half : (leaf_index + 1) * half]
        cables += [Cable(End(h.key, 1), End(leaf, port)) for port, h in enumerate(mine, start=1)]
        pod, slot = divmod(leaf_index, half)
        for uplink in range(half):  # leaf port half+1+u -> spine u of the pod, its port slot+1
            cables.append(Cable(End(leaf, half + 1 + uplink), End(names[1][pod * half + uplink], slot + 1)))
    for spine_index, spine in enumerate(names[1]):
        for uplink in range(half):
            slot = spine_index * half + uplink
            cables.append(
                Cable(End(spine, half + 1 + uplink), End(names[2][slot // radix], slot % radix + 1))
            )
    return Fabric(tuple(switches), tuple(hcas), tuple(cables))


def modelled_hcas(hosts: int, per_host: int = 8) -> list[Hca]:
    """HCAs of `hosts` modelled GPU hosts gpu0001.. with the mock profiles' identity scheme (bench)."""
    names = _numbered("gpu", hosts)
    found = []
    for index, host in enumerate(names):
        for nic in range(per_host):
            node_guid = 0xA088C20300000000 | (index << 8) | nic
            found.append(
                Hca(
                    host,
                    f"mlx5_{nic}",
                    f"{host} mlx5_{nic}",
                    node_guid,
                    node_guid,
                    1 + index * per_host + nic,
                )
            )
    return found


# --- JSON state ---------------------------------------------------------------------------------


def to_json(fabric: Fabric) -> dict[str, Any]:
    def end(e: End) -> list[Any]:
        return [e.node, e.port]

    return {
        "switches": [vars(s) for s in fabric.switches],
        "hcas": [vars(h) for h in fabric.hcas],
        "cables": [[*end(c.a), *end(c.b), c.width, c.speed] for c in fabric.cables],
        "errors": [[*end(e.end), e.counter, e.per_second, e.since, e.until] for e in fabric.errors],
        "sa_port_guids": dict(fabric.sa_port_guids),
    }


def from_json(data: Mapping[str, Any]) -> Fabric:
    return Fabric(
        tuple(Switch(**s) for s in data["switches"]),
        tuple(Hca(**h) for h in data["hcas"]),
        tuple(Cable(End(a, ap), End(b, bp), w, s) for a, ap, b, bp, w, s in data["cables"]),
        tuple(
            ErrorSource(End(n, p), c, r, since, until) for n, p, c, r, since, until in data.get("errors", [])
        ),
        dict(data.get("sa_port_guids", {})),
    )


# --- faults ---------------------------------------------------------------------------------------

FAULTS: Mapping[str, str] = {
    "ib-link-width": "one leaf-spine link of the IB switch trains at 1x instead of 4x (both ends)",
    "ib-link-speed": "one leaf-spine link of the IB switch runs at HDR on the NDR fabric",
    "ib-miswire": "two uplinks swapped at a spine: the IB leaf's first uplink to it and the next leaf's",
    "ib-link-missing": "one uplink of the IB switch unplugged (both ports down)",
    "ib-symbol-errors": "one uplink port of the IB switch counts symbol errors, growing (50/s)",
    "ib-dup-guid": "a host HCA (the leaf's first) answers saquery with the next leaf HCA's port GUID",
}
SYMBOL_ERRORS_PER_S = 50.0  # a 2 s window sees 100; the 16-bit counter saturates after 21 min


def uplinks(fabric: Fabric, switch: str) -> list[int]:
    """Indexes of the cables from this switch up to the next tier, in port order."""
    found = [
        i for i, c in enumerate(fabric.cables) if c.a.node == switch and c.b.node in _switch_names(fabric)
    ]
    return sorted(found, key=lambda i: fabric.cables[i].a.port)


def _switch_names(fabric: Fabric) -> set[str]:
    return {s.name for s in fabric.switches}


def fault_cables(fabric: Fabric, fault: str, switch: str) -> tuple[int, ...]:
    """The cable(s) a fault on `switch` (a leaf, or a spine for the ones between spine and core) touches:
    width the first uplink, speed the second, missing the last, symbol errors the third's lower port;
    miswire the first uplink to the first spine from this leaf and from the next leaf."""
    ups = uplinks(fabric, switch)
    if not ups:
        raise ValueError(f"{switch} has no uplink: IB link faults apply to leaves (or spines below cores)")
    pick = {"ib-link-width": 0, "ib-link-speed": 1, "ib-symbol-errors": 2, "ib-link-missing": -1}
    if fault in pick:
        return (ups[pick[fault] % len(ups)],)
    if fault == "ib-miswire":
        same_tier = [s.name for s in fabric.switches if s.tier == fabric.switch(switch).tier]
        other = same_tier[(same_tier.index(switch) + 1) % len(same_tier)]
        spine = fabric.cables[ups[0]].b.node
        theirs = [i for i in uplinks(fabric, other) if fabric.cables[i].b.node == spine]
        if other == switch or not theirs:
            raise ValueError(f"ib-miswire needs a second {fabric.switch(switch).tier} cabled to {spine}")
        return (ups[0], theirs[0])
    raise ValueError(f"unknown IB fault {fault!r}")


def dup_guid_hcas(fabric: Fabric, switch: str) -> tuple[Hca, Hca]:
    """ib-dup-guid on a leaf: its first HCA shows the port GUID of the HCA on its second port."""
    by_key = {h.key: h for h in fabric.hcas}
    mine = sorted((c.b.port, c.a.node) for c in fabric.cables if c.b.node == switch and c.a.node in by_key)
    if len(mine) < 2:
        raise ValueError(f"ib-dup-guid needs two HCAs cabled to {switch}")
    return by_key[mine[0][1]], by_key[mine[1][1]]


def with_fault(fabric: Fabric, fault: str, switch: str, since: float) -> Fabric:
    """The fabric as the fault makes it (pure: heal = the fabric without the fault)."""
    if fault == "ib-dup-guid":
        victim, source = dup_guid_hcas(fabric, switch)
        return replace(fabric, sa_port_guids={**fabric.sa_port_guids, victim.key: source.port_guid})
    chosen = fault_cables(fabric, fault, switch)
    cables = list(fabric.cables)
    if fault == "ib-link-width":
        cables[chosen[0]] = replace(cables[chosen[0]], width="1x")
    elif fault == "ib-link-speed":
        cables[chosen[0]] = replace(cables[chosen[0]], speed="HDR")
    elif fault == "ib-link-missing":
        del cables[chosen[0]]
    elif fault == "ib-miswire":
        first, second = cables[chosen[0]], cables[chosen[1]]
        cables[chosen[0]], cables[chosen[1]] = replace(first, b=second.b), replace(second, b=first.b)
    elif fault == "ib-symbol-errors":
        counting = ErrorSource(cables[chosen[0]].a, "SymbolErrorCounter", SYMBOL_ERRORS_PER_S, since)
        return replace(fabric, errors=(*fabric.errors, counting))
    return replace(fabric, cables=tuple(cables))


# --- rendering ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Port:
    """One port as the tools see it: its node, the width/speed it runs at, its peer (None: down)."""

    kind: str  # SW / CA
    node: str  # switch name or HCA key
    lid: int
    port: int
    guid: int  # the switch GUID for every switch port, the HCA's port GUID
    description: str
    width: str | None
    speed: str | None
    peer: _Port | None = None


class _View:
    """The fabric indexed for rendering: every port with its peer, nodes in discovery order."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.switches = {s.name: s for s in fabric.switches}
        self.hcas = {h.key: h for h in fabric.hcas}
        self.cabled: dict[tuple[str, int], tuple[End, Cable]] = {}
        for cable in fabric.cables:
            self.cabled[(cable.a.node, cable.a.port)] = (cable.b, cable)
            self.cabled[(cable.b.node, cable.b.port)] = (cable.a, cable)

    def bare(
        self, node: str, port: int, width: str | None, speed: str | None, peer: _Port | None = None
    ) -> _Port:
        switch = self.switches.get(node)
        if switch is not None:
            return _Port("SW", node, switch.lid, port, switch.guid, switch.description, width, speed, peer)
        hca = self.hcas[node]
        return _Port("CA", node, hca.lid, port, hca.port_guid, hca.description, width, speed, peer)

    def port(self, node: str, port: int) -> _Port:
        found = self.cabled.get((node, port))
        if found is None:  # a down port: libibmad's defaults (4x SDR), no peer
            return self.bare(node, port, "4x", "SDR")
        far, cable = found
        peer = self.bare(far.node, far.port, cable.width, cable.speed)
        return self.bare(node, port, cable.width, cable.speed, peer)

    def reachable_hcas(self) -> list[Hca]:
        return [h for h in self.fabric.hcas if (h.key, 1) in self.cabled]

    def node_ports(self) -> Iterable[tuple[str, list[_Port]]]:
        """Switches then CAs (discovery order is the tool's own; any order is a real one), each node's
        ports from the highest down (dump_ports_report's loop). A CA without a cable is not discovered."""
        for switch in self.fabric.switches:
            yield switch.name, [self.port(switch.name, p) for p in range(switch.port_count, 0, -1)]
        for hca in self.reachable_hcas():
            yield hca.key, [self.port(hca.key, 1)]


def render_ibnetdiscover_ports(fabric: Fabric) -> str:
    """`ibnetdiscover -p`."""
    lines = []
    for _, ports in _View(fabric).node_ports():
        for p in ports:
            head = f"{p.kind:>2} {p.lid:5d} {p.port:2d} 0x{p.guid:016x} {p.width} {p.speed}"
            if p.peer is None:
                lines.append(f"{head}{'':36s}'{p.description}'\n")
            else:
                r = p.peer
                lines.append(
                    f"{head} - {r.kind:>2} {r.lid:5d} {r.port:2d} 0x{r.guid:016x} "
                    f"( '{p.description}' - '{r.description}' )\n"
                )
    return "".join(lines)


def _link_text(p: _Port) -> str:
    if p.peer is None:
        return f"({'':14s}{'Down':>6s}/{'Polling':>8s})"
    width, speed = WIDTH_TEXT[p.width or "4x"], LANE_TEXT[p.speed or "SDR"]
    return f"({width:>3s} {speed:>18s} {'Active':>6s}/{'LinkUp':>8s})"


def _could_be(p: _Port) -> str:
    """get_max_msg: both ends support 4x NDR, so a narrower or slower link says what it could be."""
    width = "" if p.width == WIDTH else f"Could be {WIDTH_TEXT[WIDTH]}"
    speed = "" if p.speed == SPEED else f"Could be {LANE_TEXT[SPEED]}"
    return f"({width} {speed})"


def render_iblinkinfo_line(fabric: Fabric) -> str:
    """`iblinkinfo --line`."""
    lines = []
    view = _View(fabric)
    for _, ports in view.node_ports():
        for p in sorted(ports, key=lambda q: q.port):  # print_node: ports 1..numports
            head = f'0x{p.guid:016x} "{p.description:>30s}" {p.lid:6d} {p.port:4d}[  ] =={_link_text(p)}==>  '
            if p.peer is None:
                lines.append(head + '           [  ] "" ( )\n')
            else:
                r = p.peer
                lines.append(
                    f'{head}0x{r.guid:016x} {r.lid:6d} {r.port:4d}[  ] "{r.description}" {_could_be(p)}\n'
                )
    return "".join(lines)


def counters_at(fabric: Fabric, now: float) -> dict[tuple[str, int], dict[str, int]]:
    """(node, port) -> counter -> value at `now`: what the error sources counted (all else 0)."""
    found: dict[tuple[str, int], dict[str, int]] = {}
    for source in fabric.errors:
        port = found.setdefault((source.end.node, source.end.port), {})
        port[source.counter] = port.get(source.counter, 0) + source.count_at(now)
    return found


def _counter_text(counts: Mapping[str, int]) -> str:
    """print_results' `[%s == %u]` per non-zero counter (the PortCounters form, as the SX6036 sample under
    tests/data/real/ib shows), each held at its bit width's all-ones as the real counter stops there."""
    shown = ((name, min(counts.get(name, 0), (1 << COUNTER_BITS[name]) - 1)) for name in COUNTERS)
    return "".join(f" [{name} == {value}]" for name, value in shown if value)


def render_ibqueryerrors(fabric: Fabric, now: float, threshold_text: str = "Thresholds: ") -> tuple[str, int]:
    """`ibqueryerrors --threshold-file <empty file>`: (stdout, exit status). Every threshold 0, so every
    non-zero counter is printed. A switch is asked with AllPortSelect first: when the aggregate is clean
    its ports count as checked unprinted; else `port ALL` and each port (0 included, enhanced port 0)."""
    view = _View(fabric)
    counts = counters_at(fabric, now)
    out: list[str] = []
    nodes_checked = ports_checked = bad_nodes = bad_ports = 0
    for switch in fabric.switches:
        nodes_checked += 1
        total: dict[str, int] = {}
        for (node, _), values in counts.items():
            if node == switch.name:
                for name, value in values.items():
                    total[name] = total.get(name, 0) + value
        if not _counter_text(total):
            ports_checked += switch.port_count
            continue
        out.append(f'Errors for 0x{switch.guid:x} "{switch.description}"\n')
        out.append(f"   GUID 0x{switch.guid:x} port ALL:{_counter_text(total)}\n")
        bad_nodes += 1
        for port in range(0, switch.port_count + 1):
            ports_checked += 1
            text = _counter_text(counts.get((switch.name, port), {}))
            if text:
                out.append(f"   GUID 0x{switch.guid:x} port {port}:{text}\n")
                bad_ports += 1
    for hca in view.reachable_hcas():
        nodes_checked += 1
        ports_checked += 1
        text = _counter_text(counts.get((hca.key, 1), {}))
        if text:
            out.append(f'Errors for "{hca.description}"\n   GUID 0x{hca.port_guid:x} port 1:{text}\n')
            bad_nodes += 1
            bad_ports += 1
    out.append(f"\n## Summary: {nodes_checked} nodes checked, {bad_nodes} bad nodes found\n")
    out.append(f"##          {ports_checked} ports checked, {bad_ports} ports have errors beyond threshold\n")
    out.append(f"## {threshold_text}\n## Suppressed:\n")
    return "".join(out), bad_ports & 0xFF  # exit(bad_ports)


def _sa_line(name: str, value: str) -> str:
    return f"\t\t{name:.<24s}{value}\n"


def render_saquery_nodes(fabric: Fabric) -> str:
    """`saquery` (NodeRecords): one per switch (port 0) and one per CA port the SM knows."""
    out: list[str] = []

    def record(lid: int, kind: str, ports: int, sys_guid: int, node_guid: int, port_guid: int, device: int,
               revision: int, port_num: int, description: str) -> None:  # fmt: skip
        out.append("NodeRecord dump:\n")
        out.extend(
            [
                _sa_line("lid", str(lid)),
                _sa_line("reserved", "0x0"),
                _sa_line("base_version", "0x1"),
                _sa_line("class_version", "0x1"),
                _sa_line("node_type", kind),
                _sa_line("num_ports", str(ports)),
                _sa_line("sys_guid", f"0x{sys_guid:016x}"),
                _sa_line("node_guid", f"0x{node_guid:016x}"),
                _sa_line("port_guid", f"0x{port_guid:016x}"),
                _sa_line("partition_cap", "0x20" if kind == "Switch" else "0x10"),
                _sa_line("device_id", f"0x{device:X}"),
                _sa_line("revision", f"0x{revision:X}"),
                _sa_line("port_num", str(port_num)),
                _sa_line("vendor_id", f"0x{MELLANOX_VENDOR_ID:X}"),
                _sa_line("NodeDescription", description),
            ]
        )

    for s in fabric.switches:
        record(
            s.lid,
            "Switch",
            s.port_count,
            s.guid,
            s.guid,
            s.guid,
            s.device_id,
            s.hw_revision,
            0,
            s.description,
        )
    for h in _View(fabric).reachable_hcas():
        port_guid = fabric.sa_port_guids.get(h.key, h.port_guid)
        record(
            h.lid, "Channel Adapter", 1, h.node_guid, h.node_guid, port_guid, h.device_id, 0, 1, h.description
        )
    return "".join(out)


def render_vendstat_general(switch: Switch) -> str:
    """`vendstat -N <lid>` of a switch (vendstat.c general_info)."""
    major, minor, sub = (int(x) for x in switch.fw_version.split("."))
    return (
        f"hw_dev_rev:  0x{switch.hw_revision:04x}\n"
        f"hw_dev_id:   0x{switch.device_id:04x}\n"
        "hw_uptime:   0x0012d687\n"
        f"fw_version:  {major:02d}.{minor:02d}.{sub:02d}\n"
        "fw_build_id: 0x0000\n"
        "fw_date:     03/14/2024\n"
        f"fw_psid:     '{switch.psid}'\n"
        "fw_ini_ver:  0\n"
        "sw_version:  00.00.00\n"
    )


def _perf_line(name: str, value: str) -> str:
    return f"{name + ':':.<33s}{value}\n"


def render_perfquery_extended(
    fabric: Fabric, lid: int, port: int, now: float, elapsed_s: float
) -> str | None:
    """`perfquery -x <lid> <port>`: the extended counters of one port (None: no such LID/port). Data
    counters grow with the time the port has been up (a quiet fabric: a little traffic)."""
    view = _View(fabric)
    node = next((s.name for s in fabric.switches if s.lid == lid), None)
    if node is None:
        node = next((h.key for h in fabric.hcas if h.lid == lid), None)
    if (
        node is None
        or (node in view.hcas and port != 1)
        or (node in view.switches and not 0 <= port <= view.switches[node].port_count)
    ):
        return None
    counts = counters_at(fabric, now).get((node, port), {})
    moved = int(max(elapsed_s, 0.0) * 1000) if (node, port) in view.cabled else 0
    lines = [
        f"# Port extended counters: Lid {lid} port {port} (CapMask: 0x5300 CapMask2: 0x0000002)\n",
        _perf_line("PortSelect", str(port)),
        _perf_line("CounterSelect", "0x0000"),
        *(
            _perf_line(name, str(moved))
            for name in ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")
        ),
        *(_perf_line(name, str(moved)) for name in ("PortUnicastXmitPkts", "PortUnicastRcvPkts")),
        _perf_line("PortMulticastXmitPkts", "0"),
        _perf_line("PortMulticastRcvPkts", "0"),
        _perf_line("CounterSelect2", "0x00000000"),
        *(_perf_line(name, str(counts.get(name, 0))) for name in COUNTERS),
        _perf_line("QP1Dropped", "0"),
    ]
    return "".join(lines)
