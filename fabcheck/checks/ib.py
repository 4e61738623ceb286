"""InfiniBand fabric checks (issue 37): what one node's infiniband-diags showed + the planned fabric
(fabcheck.desired.ib) -> findings, by inventory node. Pure.

A planned end is matched to the discovery by its node description and port number, as `ibnetdiscover -p`
prints them (a switch's description from the inventory, a host HCA's rdma-ndd "%h %d"). Five checks:

- ib.topology: every planned cable up between the planned ports; a missing, extra or miswired cable is
  named by both ends, and two swapped cables by both cables and where each belongs;
- ib.link: both ends of each planned cable at the intended width and speed;
- ib.errors: the error counters of both ends over the counter window (ibqueryerrors twice, never
  cleared) against ib_fabric.max_errors; PortXmitWait is congestion, reported, never a failure;
- ib.guids, ib.firmware (fabcheck.checks.ib_nodes): unique GUIDs and LIDs, the planned node
  descriptions, switch firmware.

Where a finding goes: a cable's to the switch at its `a` end (the lower tier), else its `b` end (the leaf
of a host cable), part = that switch's port, peer = the other end's label; a switch's own finding to the
switch; a host HCA's ib.guids finding to the host, part = the HCA. Evidence that could not be read is an
ERROR naming the command, a counter window of 0 a named SKIP: never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.checks.declare import Check
from fabcheck.checks.host import Unreadable
from fabcheck.checks.ib_nodes import (
    FIRMWARE,
    GUIDS,
    NodeNames,
    check_firmware,
    check_guids,
    switch_lids,
    with_where,
)
from fabcheck.checks.model import Finding, Measure, Status, Where, errored, failed, passed, skipped
from fabcheck.desired.ib import DesiredIbEnd, DesiredIbFabric, DesiredIbLink
from fabcheck.parsers.ib_records import (
    CONGESTION_COUNTER,
    ERROR_COUNTERS,
    NOMINAL_4X_GBPS,
    IbCounterDelta,
    IbErrorSweep,
    IbNodeRecord,
    IbPortEnd,
    IbPortSeen,
    IbSwitchFirmware,
    IbTopology,
)

TOPOLOGY = "ib.topology"
LINK = "ib.link"
ERRORS = "ib.errors"
IB = ("ib",)

CABLING_HINT = (
    "reseat or replace the cable or optic at both ends (`ibportstate <lid> <port>` shows the port's "
    "physical state); if the plan is what is wrong, correct fabric_links in the inventory"
)


@dataclass(frozen=True)
class IbEvidence:
    """What the one round trip to the reader showed, parsed; a section that could not be read is
    Unreadable (the command and why). `deltas`: the sweeps' differences (parsers.ibqueryerrors
    sweep_deltas); `firmware`: `vendstat -N <lid>` by switch LID; `window_s`: the seconds between the two
    sweeps; `unreachable`: why nothing came back from the reader at all."""

    topology: IbTopology | Unreadable
    nodes: tuple[IbNodeRecord, ...] | Unreadable
    before: IbErrorSweep | Unreadable
    after: IbErrorSweep | Unreadable
    deltas: tuple[IbCounterDelta, ...]
    firmware: Mapping[int, IbSwitchFirmware | Unreadable]
    window_s: int
    unreachable: str | None = None


# ---- the discovery as the plan names it -----------------------------------------------------------


EndKey = tuple[str, int]  # (node description, port)


@dataclass(frozen=True)
class Discovery:
    """The discovered port lines by (description, port). More than one distinct GUID under one key is
    two nodes showing one description: their cables are not judged here (ib.guids names them)."""

    lines: Mapping[EndKey, Sequence[IbPortSeen]]
    descriptions: frozenset[str]  # every node description discovered

    def line(self, end: DesiredIbEnd) -> IbPortSeen | None:
        found = self.lines.get((end.description, end.port), ())
        return found[0] if len(found) == 1 else None

    def ambiguous(self, end: DesiredIbEnd) -> bool:
        return len(self.lines.get((end.description, end.port), ())) > 1


def discovery(topology: IbTopology) -> Discovery:
    """Every port line by its (description, port); an end only seen as a peer gets a line of its own
    (width and speed unknown), so each cable is found from either end."""
    by_key: dict[EndKey, dict[tuple[str, int], IbPortSeen]] = {}
    for line in topology.ports:
        by_key.setdefault(_key(line.local), {})[line.local.key] = line
    for line in topology.ports:
        peer = line.peer
        if peer is not None and peer.key not in by_key.get(_key(peer), {}):
            by_key.setdefault(_key(peer), {})[peer.key] = IbPortSeen(peer, None, None, line.local)
    lines = {key: tuple(found.values()) for key, found in by_key.items()}
    return Discovery(lines, frozenset(description for description, _ in lines))


def _key(end: IbPortEnd) -> EndKey:
    return (end.description, end.port)


def _planned_key(end: DesiredIbEnd) -> EndKey:
    return (end.description, end.port)


def link_where(link: DesiredIbLink) -> Where:
    """A cable's finding goes to the switch at its `a` end, else its `b` end (the leaf of a host cable)."""
    switch, other = (link.a, link.b) if link.a.kind == "SW" else (link.b, link.a)
    return Where(switch.node, str(switch.port), other.label)


def link_node(link: DesiredIbLink) -> str:
    return link.a.node if link.a.kind == "SW" else link.b.node


# ---- ib.topology ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cabling:
    """The plan's ends and the discovery, and how to name any discovered end."""

    desired: DesiredIbFabric
    seen: Discovery
    names: NodeNames
    planned: Mapping[EndKey, DesiredIbLink]  # every planned end -> its cable

    def reaches(self, end: DesiredIbEnd) -> EndKey | None:
        line = self.seen.line(end)
        return None if line is None or line.peer is None else _key(line.peer)

    def label(self, key: EndKey) -> str:
        return self.names.end_label(key[0], key[1])


def cabling(desired: DesiredIbFabric, seen: Discovery, names: NodeNames) -> Cabling:
    planned: dict[EndKey, DesiredIbLink] = {}
    for link in desired.links:
        planned[_planned_key(link.a)] = link
        planned[_planned_key(link.b)] = link
    return Cabling(desired, seen, names, planned)


def as_planned(link: DesiredIbLink, cab: Cabling) -> bool:
    return cab.reaches(link.a) == _planned_key(link.b) or cab.reaches(link.b) == _planned_key(link.a)


def check_topology(link: DesiredIbLink, cab: Cabling) -> Finding:
    expected = f"a cable {link.label}"
    where = link_where(link)
    ambiguous = [end.label for end in (link.a, link.b) if cab.seen.ambiguous(end)]
    if ambiguous:
        return with_where(
            errored(
                TOPOLOGY,
                link.label,
                expected,
                f"more than one node shows the description of {', '.join(ambiguous)}",
                "see ib.guids: give each node its own node description, then rerun",
            ),
            where,
        )
    if as_planned(link, cab):
        return with_where(passed(TOPOLOGY, link.label, expected, "discovered as planned"), where)
    to_a, to_b = cab.reaches(link.a), cab.reaches(link.b)
    if to_a is None and to_b is None:
        actual = f"no link: {_down(link.a, cab)}; {_down(link.b, cab)}"
        return with_where(failed(TOPOLOGY, link.label, expected, actual, CABLING_HINT), where)
    swapped = swapped_pair(link, cab)
    if swapped is not None:
        return with_where(failed(TOPOLOGY, link.label, expected, swapped[0], swapped[1]), where)
    wrong = [
        f"{end.label} reaches {cab.label(to)}{_planned_for(to, link, cab)}"
        for end, to in ((link.a, to_a), (link.b, to_b))
        if to is not None
    ]
    hint = (
        f"move the cable so that {link.a.label} reaches {link.b.label} (the cabling map: fabric_links); "
        "if the plan is what is wrong, correct fabric_links in the inventory"
    )
    return with_where(failed(TOPOLOGY, link.label, expected, "miswired: " + "; ".join(wrong), hint), where)


def _down(end: DesiredIbEnd, cab: Cabling) -> str:
    known = end.description in cab.seen.descriptions
    return f"{end.label} {'shows no link' if known else 'not discovered'}"


def _planned_for(key: EndKey, link: DesiredIbLink, cab: Cabling) -> str:
    other = cab.planned.get(key)
    return "" if other is None or other == link else f" (planned for {other.label})"


def swapped_pair(link: DesiredIbLink, cab: Cabling) -> tuple[str, str] | None:
    """Two planned cables whose ends are crossed (L.a reaches M's end and M's other end reaches L's
    other end): both cables and where each belongs, and the one swap that fixes both."""
    for mine, theirs in ((link.a, link.b), (link.b, link.a)):
        to = cab.reaches(mine)
        other = cab.planned.get(to) if to is not None else None
        if other is None or other == link:
            continue
        far = other.a if _planned_key(other.b) == to else other.b  # the end of M that `mine` is not at
        if cab.reaches(far) != _planned_key(theirs):
            continue
        near = other.b if far is other.a else other.a  # where `mine` landed
        actual = (
            f"swapped with {other.label}: {mine.label} reaches {near.label}, "
            f"{far.label} reaches {theirs.label}"
        )
        if near.node == theirs.node:
            fix = f"swap the cables at {near.label} and {theirs.label}"
        else:
            fix = f"swap the cables at {mine.label} and {far.label}"
        return actual, f"{fix}: each cable then reaches the port the cabling map (fabric_links) plans"
    return None


def check_extra(cab: Cabling, topology: IbTopology) -> list[tuple[str, Finding]]:
    """Up links between two planned nodes that no cable plans, at ports the plan leaves free (a port
    the plan uses is judged, with what it reaches, by its own cable's finding)."""
    out = []
    done: set[tuple[tuple[str, int], tuple[str, int]]] = set()
    for line in topology.ports:  # each cable shows twice, once from each end: judged once
        if line.peer is None or _key(line.local) in cab.planned or _key(line.peer) in cab.planned:
            continue
        pair = (min(line.local.key, line.peer.key), max(line.local.key, line.peer.key))
        named = cab.names.node_of(line.local.description), cab.names.node_of(line.peer.description)
        if None in named or pair in done:
            continue
        done.add(pair)
        first, second = _switch_first(line.local, line.peer, cab.names)
        node = cab.names.node_of(first.description)
        assert node is not None
        label = f"{cab.label(_key(first))} ↔ {cab.label(_key(second))}"
        finding = failed(
            TOPOLOGY,
            label,
            f"no cable at {cab.label(_key(first))} and {cab.label(_key(second))} (none planned)",
            f"an up link {label}",
            "unplug it, or plan it in fabric_links if it belongs to the fabric",
        )
        part = str(first.port) if first.kind == "SW" else ""
        out.append((node[0], with_where(finding, Where(node[0], part, cab.label(_key(second))))))
    return out


def _switch_first(x: IbPortEnd, y: IbPortEnd, names: NodeNames) -> tuple[IbPortEnd, IbPortEnd]:
    rank_x, rank_y = names.rank(x.description), names.rank(y.description)
    return (x, y) if rank_x <= rank_y else (y, x)


# ---- ib.link --------------------------------------------------------------------------------------


def _runs(line: IbPortSeen | None) -> tuple[str | None, str | None]:
    return (None, None) if line is None else (line.width, line.speed)


def _gbps(width: str | None, speed: str | None) -> float | None:
    if width is None or speed is None:
        return None
    return float(int(width.rstrip("x")) * NOMINAL_4X_GBPS[speed] / 4)


def check_link(link: DesiredIbLink, cab: Cabling) -> Finding:
    expected = f"{link.width} {link.speed} at both ends"
    where = link_where(link)
    if not as_planned(link, cab):
        return with_where(skipped(LINK, link.label, "not cabled as planned: judged by ib.topology"), where)
    ends = [(end, _runs(cab.seen.line(end))) for end in (link.a, link.b)]
    known = [(end, runs) for end, runs in ends if None not in runs]
    if not known:
        return with_where(
            errored(
                LINK,
                link.label,
                expected,
                "neither end's width and speed were shown (ibnetdiscover printed an unknown code)",
                "read the ports with `iblinkinfo --line` or `ibportstate <lid> <port>` on the reader",
            ),
            where,
        )
    wanted = (link.width, link.speed)
    runs = {runs for _, runs in known}
    if len(runs) == 1:
        actual = "runs {} {}".format(*runs.pop())
    else:
        actual = "; ".join(f"{end.label} runs {w} {s}" for end, (w, s) in known)
    unknown = [end.label for end, runs in ends if None in runs]
    if unknown:
        actual += f" ({', '.join(unknown)}: not shown)"
    slowest = min(_gbps(w, s) or 0.0 for _, (w, s) in known)
    measure = Measure(slowest, "Gb/s", _gbps(link.width, link.speed))
    if all(runs == wanted for _, runs in known):
        return Finding(LINK, Status.PASS, link.label, expected, actual, where=where, measure=measure)
    switch_end = link.a if link.a.kind == "SW" else link.b
    hint = (
        f"{actual}, should be {link.width} {link.speed}: reseat or replace the cable or optic (a link "
        f"that trained to fewer lanes or a lower speed has a bad lane or a cable rated lower); check the "
        f"width and speed port {switch_end.port} of {switch_end.node} is configured for (the switch's "
        "CLI or UFM)"
    )
    return Finding(LINK, Status.FAIL, link.label, expected, actual, hint, where, measure)


# ---- ib.errors ------------------------------------------------------------------------------------

# What a counter counting inside the window points at (rdma-core etc/error_thresholds names; the
# meanings: Linux Documentation/ABI/stable/sysfs-class-infiniband).
_COUNTER_FIX = {
    "SymbolErrorCounter": "reseat or replace the cable or optic (a marginal lane)",
    "LinkErrorRecoveryCounter": "the link retrained: reseat or replace the cable or optic",
    "LinkDownedCounter": "the link went down (flap): reseat or replace the cable or optic",
    "PortRcvErrors": "received packets with errors: reseat or replace the cable or optic",
    "PortRcvRemotePhysicalErrors": "the fault is on the upstream hop: check the port feeding this one",
    "PortXmitDiscards": "packets dropped on send: the port went down or the fabric is congested",
    "ExcessiveBufferOverrunErrors": "input buffer overrun: very poor signal or a credit misconfiguration",
    "LocalLinkIntegrityErrors": "physical-layer errors: reseat or replace the cable or optic",
}


@dataclass(frozen=True)
class Counted:
    """The window's deltas by (guid, port) and, where one description names one port, by it."""

    by_guid: Mapping[tuple[str, int], IbCounterDelta]
    by_description: Mapping[EndKey, IbCounterDelta]
    complete: bool  # both sweeps complete: a port not printed counted nothing

    def of(self, line: IbPortSeen | None) -> IbCounterDelta | None:
        if line is None:
            return None
        found = self.by_guid.get(line.local.key)
        return found if found is not None else self.by_description.get(_key(line.local))


def counted(deltas: Iterable[IbCounterDelta], complete: bool) -> Counted:
    by_guid: dict[tuple[str, int], IbCounterDelta] = {}
    by_description: dict[EndKey, list[IbCounterDelta]] = {}
    for delta in deltas:
        by_guid[(delta.guid, delta.port)] = delta
        by_description.setdefault((delta.description, delta.port), []).append(delta)
    unique = {key: found[0] for key, found in by_description.items() if len(found) == 1}
    return Counted(by_guid, unique, complete)


def errors_blocked(evidence: IbEvidence) -> tuple[Status, str, str] | None:
    """Why no link's counters can be judged (status, actual, hint), or None."""
    for sweep in (evidence.before, evidence.after):
        if isinstance(sweep, Unreadable):
            return (
                Status.ERROR,
                f"`{sweep.command}`: {sweep.reason}",
                "rerun; the reader must run ibqueryerrors",
            )
    if evidence.window_s <= 0:
        return Status.SKIP, "counter window 0 s: one reading, no delta (--counter-window N)", ""
    return None


def _sweep_gap(evidence: IbEvidence) -> str:
    sweeps = [s for s in (evidence.before, evidence.after) if isinstance(s, IbErrorSweep)]
    failures = sum(s.pma_failures for s in sweeps)
    if failures:
        return f"the sweep had {failures} PMA query failures"
    return "the sweep printed no `## Summary`"


def check_errors(link: DesiredIbLink, cab: Cabling, counts: Counted, evidence: IbEvidence) -> Finding:
    desired = cab.desired
    where = link_where(link)
    limits = ", ".join(f"{name} {n}" for name, n in sorted(desired.max_errors.items()))
    expected = f"no error counted in {evidence.window_s} s at either end" + (
        f" beyond ib_fabric.max_errors ({limits})" if limits else ""
    )
    # A down port (ibnetdiscover -p prints it without a peer) counts nothing worth judging.
    ends = [
        (end, line if line is not None and line.peer is not None else None) for end, line in _lines(link, cab)
    ]
    if all(line is None for _, line in ends):
        return with_where(
            skipped(ERRORS, link.label, "neither port shows a link: judged by ib.topology"), where
        )
    over: list[str] = []
    reset: list[str] = []
    waits: list[str] = []
    unread: list[str] = []
    stuck: list[str] = []  # narrow counters at all ones: they count nothing more, so "+0" proves nothing
    for end, line in ends:
        if line is None:
            continue
        delta = counts.of(line)
        if delta is None:
            if not counts.complete:
                unread.append(end.label)
            continue
        for name in ERROR_COUNTERS:
            value = delta.deltas.get(name)
            if name in delta.reset:
                reset.append(f"{end.label} {name}")
            elif value is not None and value > desired.max_errors.get(name, 0):
                least = "at least " if name in delta.saturated else ""
                over.append(f"{end.label} {name} +{least}{value}")
            elif name in delta.saturated:
                stuck.append(f"{end.label} {name}")
        wait = delta.deltas.get(CONGESTION_COUNTER)
        if wait:
            waits.append(f"{end.label} {CONGESTION_COUNTER} +{wait}")
    congestion = f"; congestion (not an error): {', '.join(waits)}" if waits else ""
    if over:
        fixes = sorted({_COUNTER_FIX[item.split()[1]] for item in over})
        hint = f"{'; '.join(fixes)}; `perfquery -x <lid> <port>` reads the counters again"
        return with_where(failed(ERRORS, link.label, expected, ", ".join(over) + congestion, hint), where)
    if reset or unread or stuck:
        why = []
        if stuck:
            why.append(f"at its maximum, so it cannot count inside the window: {', '.join(stuck)}")
        if reset:
            why.append(
                f"cleared inside the window (by the SM, UFM or `ibqueryerrors -k`): {', '.join(reset)}"
            )
        if unread:
            why.append(f"{_sweep_gap(evidence)}: {', '.join(unread)} not read")
        hint = (
            "clear the port's counters (`perfquery -R <lid> <port>`) and rerun; a saturated counter has "
            "stopped counting"
            if stuck and not (reset or unread)
            else "rerun; nothing may clear the counters inside the window"
        )
        return with_where(errored(ERRORS, link.label, expected, "; ".join(why), hint), where)
    actual = f"no error counted in {evidence.window_s} s" + congestion
    return with_where(passed(ERRORS, link.label, expected, actual), where)


def _lines(link: DesiredIbLink, cab: Cabling) -> list[tuple[DesiredIbEnd, IbPortSeen | None]]:
    return [(end, cab.seen.line(end)) for end in (link.a, link.b)]


def check_unplanned_errors(cab: Cabling, counts: Counted, evidence: IbEvidence) -> list[tuple[str, Finding]]:
    """A port of a planned node that no planned cable uses, counting errors in the window: a failure on
    that node (an unplanned port with errors is a real fault of the fabric)."""
    out = []
    planned_keys = {
        line.local.key
        for link in cab.desired.links
        for end in (link.a, link.b)
        if (line := cab.seen.line(end)) is not None
    }
    for key, delta in counts.by_guid.items():
        if key in planned_keys or (delta.description, delta.port) in cab.planned:
            continue
        node = cab.names.node_of(delta.description)
        over = [
            f"{name} +{delta.deltas[name]}"
            for name in ERROR_COUNTERS
            if name not in delta.reset and delta.deltas.get(name, 0) > cab.desired.max_errors.get(name, 0)
        ]
        if node is None or not over:
            continue
        label = cab.label((delta.description, delta.port))
        finding = failed(
            ERRORS,
            label,
            f"no error counted in {evidence.window_s} s",
            ", ".join(over) + " (a port no planned cable uses)",
            "reseat or replace the cable or optic at this port, or unplug it if it does not belong",
        )
        part = str(delta.port) if node[1] is None else node[1]
        out.append((node[0], with_where(finding, Where(node[0], part))))
    return out


# ---- the whole fabric -----------------------------------------------------------------------------


def check_ib_fabric(evidence: IbEvidence, desired: DesiredIbFabric) -> dict[str, list[Finding]]:
    """Every ib check by inventory node: each planned cable's ib.topology, ib.link and ib.errors at its
    switch, then extra cables and unplanned ports counting errors, then ib.guids and ib.firmware."""
    out: dict[str, list[Finding]] = {switch.name: [] for switch in desired.switches}
    names = NodeNames.of(desired)
    if evidence.unreachable is not None:
        for switch in desired.switches:
            out[switch.name] = [_unreachable(check, switch.name, evidence, desired) for check in IB_CHECKS]
        return out
    if isinstance(evidence.topology, Unreadable):
        _cables_unread(out, desired, evidence.topology)
    else:
        _cables(out, desired, evidence, evidence.topology, names)
    for node, finding in check_guids(evidence.nodes, desired, names, evidence.topology):
        out.setdefault(node, []).append(finding)
    lids = switch_lids(evidence.topology, evidence.nodes, desired)
    for node, finding in check_firmware(evidence.firmware, lids, evidence.nodes, desired):
        out.setdefault(node, []).append(finding)
    return out


def _cables(
    out: dict[str, list[Finding]],
    desired: DesiredIbFabric,
    evidence: IbEvidence,
    topology: IbTopology,
    names: NodeNames,
) -> None:
    cab = cabling(desired, discovery(topology), names)
    blocked = errors_blocked(evidence)
    complete = all(isinstance(s, IbErrorSweep) and s.complete for s in (evidence.before, evidence.after))
    counts = counted(evidence.deltas, complete)
    for link in desired.links:
        node = link_node(link)
        findings = out.setdefault(node, [])
        findings += [check_topology(link, cab), check_link(link, cab)]
        if blocked is None:
            findings.append(check_errors(link, cab, counts, evidence))
        else:
            status, actual, hint = blocked
            expected = "no error counted at either end over the counter window"
            made = Finding(
                ERRORS, status, link.label, "n/a" if status is Status.SKIP else expected, actual, hint
            )
            findings.append(with_where(made, link_where(link)))
    for node, finding in check_extra(cab, topology):
        out.setdefault(node, []).append(finding)
    if blocked is None:
        for node, finding in check_unplanned_errors(cab, counts, evidence):
            out.setdefault(node, []).append(finding)


def _cables_unread(out: dict[str, list[Finding]], desired: DesiredIbFabric, why: Unreadable) -> None:
    for link in desired.links:
        for check in (TOPOLOGY, LINK, ERRORS):
            finding = errored(
                check,
                link.label,
                "the discovered fabric",
                f"`{why.command}`: {why.reason}",
                "rerun; the reader must run ibnetdiscover as root on an active port (ib_fabric.read_port)",
            )
            out.setdefault(link_node(link), []).append(with_where(finding, link_where(link)))


def _unreachable(check: str, switch: str, evidence: IbEvidence, desired: DesiredIbFabric) -> Finding:
    return with_where(
        errored(
            check,
            switch,
            f"one ssh round trip to the reader {desired.reader}",
            evidence.unreachable or "",
            f"check that {desired.reader} answers `ssh` with the inventory's connection variables, or "
            "name another reader in ib_fabric.read_from",
        ),
        Where(switch),
    )


# ---- the declarations -----------------------------------------------------------------------------

_READS_TOPOLOGY = "`ibnetdiscover -p`"
_READS_ERRORS = "`ibqueryerrors --threshold-file <empty>` twice, the counter window apart"


def _ib_check(check_id: str, scope: str, reads: str, summary: str, judge: Callable[..., Any]) -> Check[Any]:
    return Check(check_id, "ib", scope, (reads,), summary, None, None, judge, kinds=IB)


IB_CHECK_DECLS: tuple[Check[Any], ...] = (
    _ib_check(
        TOPOLOGY,
        "cable (on its switch end)",
        _READS_TOPOLOGY,
        "every planned cable (fabric_links) up between the planned ports, matched by node description "
        "and port; a missing, extra or miswired cable named by both ends, two swapped cables by both",
        check_topology,
    ),
    _ib_check(
        LINK,
        "cable (on its switch end)",
        _READS_TOPOLOGY,
        "both ends at `ib_fabric.width` and `ib_fabric.speed` (default 4x NDR): a link that trained down is "
        "named with what it runs at",
        check_link,
    ),
    _ib_check(
        ERRORS,
        "cable (on its switch end)",
        _READS_ERRORS,
        "each error counter's growth over the counter window <= `ib_fabric.max_errors` (default 0, "
        "ibqueryerrors' own threshold) at both ends; PortXmitWait reported as congestion, never failed; "
        "window 0: a named skip; an incomplete sweep: an error",
        check_errors,
    ),
    _ib_check(
        GUIDS,
        "IB switch, host HCA",
        "`saquery` (NodeRecords)",
        "no port GUID under two LIDs, no LID under two port GUIDs, no LID 0 or GUID 0 (ibidsverify.pl's "
        "rules); every planned node description shown by exactly one node",
        check_guids,
    ),
    _ib_check(
        FIRMWARE,
        "IB switch",
        "`vendstat -N <lid>` of every switch LID",
        "each switch at the version `ib_fabric.firmware` pins for its device id; unpinned: one version per "
        "device id across the switches, the odd ones named",
        check_firmware,
    ),
)
IB_CHECKS = tuple(check.id for check in IB_CHECK_DECLS)
