"""Switch-to-switch cables (issue 39): each planned Ethernet cable between two switches (leaf-spine,
spine-core: Fabric.switch_links) as both switches' LLDP tables show it. Pure.

Switches send LLDP on every port by default (Cumulus/NVUE lldpd, EOS, SONiC's lldp container) with
their host name as the system name and the interface as the port id, so each end of a switch cable
names the other: `leaf-01:swp33` hears `spine-01 swp1` and `spine-01:swp1` hears `leaf-01 swp33`.
A SONiC neighbour sends its port alias as the port id, so it proves the switch only
(ALIAS_PORT_ID_PLATFORMS). A cable is as planned when both ends hear each other; missing when neither
end hears anything, or one end hears nothing (its check fails, so the summary counts it missing);
two swapped cables are named with where each belongs and the one swap that fixes both;
a port no planned cable uses that hears a planned switch is an extra cable. Evidence that could not
be read is an error, a platform without an LLDP view a named skip: never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from fabcheck.checks.declare import ROCE, Check
from fabcheck.checks.link import MAC, MANAGEMENT_PORT, same_system
from fabcheck.checks.model import Finding, Where, errored, failed, passed, skipped
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.intent.fabric import Fabric, SwitchLink
from fabcheck.parsers.switch_records import LldpNeighbor

SWITCH_LLDP = "link.switch_lldp"
# Platforms whose LLDP port id is not the interface name the inventory uses: SONiC's lldpmgrd sets
# `lldpcli configure ports <name> lldp portidsubtype local <alias>`, the port's CONFIG_DB alias (the
# name only when it has none) (sonic-net/sonic-buildimage:dockers/docker-lldp/lldpmgrd@
# 086b03bd70f9e211aaaf5f6aefe0790b508d2a94). A neighbour of such a platform proves the switch only.
ALIAS_PORT_ID_PLATFORMS = frozenset({"sonic"})

End = tuple[str, str]  # (switch, port)

CABLING_HINT = (
    "if the plan is what is wrong, correct the switches' fabric_links in the inventory "
    "(or plan the fabric again: `fabcheck plan ... --inventory DIR`)"
)


class Hears(str, Enum):
    NEIGHBOUR = "neighbour"  # one LLDP neighbour: `system`, `port`
    SILENT = "silent"  # the port hears nobody
    SEVERAL = "several"  # more than one neighbour: the cable cannot be proved
    UNREAD = "unread"  # the switch, or its LLDP view, was not read
    NO_VIEW = "no view"  # the platform shows no LLDP


@dataclass(frozen=True)
class Heard:
    """What one switch port hears over LLDP."""

    end: End
    hears: Hears
    system: str = ""
    port: str = ""
    why: str = ""  # why nothing could be judged (UNREAD, NO_VIEW, SEVERAL)

    @property
    def label(self) -> str:
        return f"{self.end[0]}:{self.end[1]}"

    def shown(self) -> str:
        if self.hears is Hears.NEIGHBOUR:
            return f"{self.label} hears {self.system or '(no system name)'} {self.port}"
        if self.hears is Hears.SILENT:
            return f"{self.label} hears no LLDP neighbour"
        return f"{self.label}: {self.why}"


def heard_at(switches: Mapping[str, SwitchEvidence], end: End) -> Heard:
    name, port = end
    evidence = switches.get(name)
    if evidence is None:
        return Heard(end, Hears.UNREAD, why=f"switch {name} was not read in this run")
    if evidence.unreachable is not None:
        return Heard(end, Hears.UNREAD, why=f"switch {name} was not read ({evidence.unreachable})")
    if LldpNeighbor not in evidence.provided:
        return Heard(end, Hears.NO_VIEW, why=f"switch {name} ({evidence.platform}) shows no LLDP")
    record, own = evidence.get(LldpNeighbor, port)
    if isinstance(record, LldpNeighbor) and own:
        if record.ambiguous:
            heard = "; ".join(
                f"{s or '(no system name)'} {p}" for s, p in [(record.system, record.port), *record.others]
            )
            return Heard(end, Hears.SEVERAL, why=f"hears {len(record.others) + 1} LLDP neighbours: {heard}")
        return Heard(end, Hears.NEIGHBOUR, record.system, record.port)
    if any(LldpNeighbor in types for types, _port, _why in evidence.missing):
        reason, _switch_wide = evidence.why_missing((LldpNeighbor,), port)
        return Heard(end, Hears.UNREAD, why=f"the LLDP view of {name} was not read: {reason}")
    return Heard(end, Hears.SILENT)


class State(str, Enum):
    """A planned cable as the LLDP tables show it: what the summary (link.as_planned) counts."""

    AS_PLANNED = "as planned"
    MISSING = "missing"
    MISWIRED = "miswired"
    NOT_PROVED = "not proved"  # not read, several neighbours, or no LLDP view: never a failed finding


@dataclass(frozen=True)
class Judged:
    cable: SwitchLink
    state: State
    finding: Finding
    swapped_with: SwitchLink | None = None


@dataclass(frozen=True)
class _Plan:
    """The planned switch cables by either end, and the switches they name."""

    by_end: Mapping[End, SwitchLink]
    switches: Sequence[str]
    host_ports: frozenset[End]  # switch ports the host cabling map uses
    by_alias: frozenset[str] = frozenset()  # switches whose LLDP port id is an alias (SONiC)

    def names(self, heard: Heard, want: End) -> bool:
        """The neighbour is the planned far end: that switch, and that port unless its port id is a MAC
        or the far switch sends an alias."""
        if heard.hears is not Hears.NEIGHBOUR or not same_system(heard.system, want[0]):
            return False
        return heard.port == want[1] or want[0] in self.by_alias or bool(MAC.fullmatch(heard.port))

    def resolve(self, heard: Heard) -> End | None:
        """The planned switch end a neighbour names (system by its first label, port exactly)."""
        if heard.hears is not Hears.NEIGHBOUR:
            return None
        switch = next((s for s in self.switches if same_system(heard.system, s)), None)
        return None if switch is None else (switch, heard.port)


def _ends(cable: SwitchLink) -> tuple[End, End]:
    return (cable.a_switch, cable.a_port), (cable.b_switch, cable.b_port)


def _label(end: End) -> str:
    return f"{end[0]}:{end[1]}"


def check_switch_links(fabric: Fabric, switches: Mapping[str, SwitchEvidence]) -> list[Judged]:
    """Every planned switch cable judged from both ends' LLDP, in plan order."""
    plan = _plan(fabric)
    seen = {end: heard_at(switches, end) for cable in fabric.switch_links for end in _ends(cable)}
    return [_judge(cable, seen, plan) for cable in fabric.switch_links]


def _plan(fabric: Fabric) -> _Plan:
    by_end: dict[End, SwitchLink] = {}
    for cable in fabric.switch_links:
        for end in _ends(cable):
            by_end[end] = cable
    names = [s.name for s in fabric.switches]
    names += sorted({end[0] for end in by_end} - set(names))
    hosts = frozenset((link.switch, link.port) for link in fabric.links)
    aliased = frozenset(s.name for s in fabric.switches if s.platform in ALIAS_PORT_ID_PLATFORMS)
    return _Plan(by_end, tuple(names), hosts, aliased)


def _judge(cable: SwitchLink, seen: Mapping[End, Heard], plan: _Plan) -> Judged:
    a, b = _ends(cable)
    at_a, at_b = seen[a], seen[b]
    expected = f"{_label(a)} and {_label(b)} hear each other over LLDP"
    where = Where(cable.a_switch, cable.a_port, _label(b))

    def made(state: State, finding: Finding, swapped: SwitchLink | None = None) -> Judged:
        return Judged(cable, state, replace(finding, where=where), swapped)

    a_ok, b_ok = plan.names(at_a, b), plan.names(at_b, a)
    actual = f"{at_a.shown()}; {at_b.shown()}"
    if a_ok and b_ok:
        return made(State.AS_PLANNED, passed(SWITCH_LLDP, cable.label, expected, actual))
    wrong = [
        h for h in (at_a, at_b) if h.hears is Hears.NEIGHBOUR and not plan.names(h, b if h is at_a else a)
    ]
    if wrong:
        swap = _swap(cable, seen, plan)
        if swap is not None:
            other, shown, fix = swap
            return made(State.MISWIRED, failed(SWITCH_LLDP, cable.label, expected, shown, fix), other)
        detail = "; ".join(h.shown() + _planned_for(h, cable, plan) for h in wrong)
        hint = f"move the cable so that {_label(a)} reaches {_label(b)}; {CABLING_HINT}"
        return made(State.MISWIRED, failed(SWITCH_LLDP, cable.label, expected, "miswired: " + detail, hint))
    unjudged = [h for h in (at_a, at_b) if h.hears in (Hears.UNREAD, Hears.SEVERAL)]
    if unjudged:
        hint = "; ".join(_unjudged_hint(h) for h in unjudged)
        return made(State.NOT_PROVED, errored(SWITCH_LLDP, cable.label, expected, actual, hint))
    silent = [h for h in (at_a, at_b) if h.hears is Hears.SILENT]
    if len(silent) == 2 or (silent and not (a_ok or b_ok)):
        hint = (
            f"plug (or reseat) the cable between {_label(a)} and {_label(b)}, or bring both ports up "
            f"(a port that is down sends no LLDP); {CABLING_HINT}"
        )
        return made(State.MISSING, failed(SWITCH_LLDP, cable.label, expected, f"no link: {actual}", hint))
    if silent:  # the other end hears this one; this one hears nothing
        # Its finding fails, so the summary counts the cable missing: the summary never passes or
        # skips over a cable whose own check failed.
        deaf = silent[0]
        hint = f"enable LLDP (receive and transmit) on {deaf.label}: one end alone does not prove the cable"
        return made(State.MISSING, failed(SWITCH_LLDP, cable.label, expected, actual, hint))
    why = "; ".join(h.why for h in (at_a, at_b) if h.hears is Hears.NO_VIEW)
    return made(State.NOT_PROVED, skipped(SWITCH_LLDP, cable.label, f"{why}: the cable is not proved"))


def _unjudged_hint(heard: Heard) -> str:
    if heard.hears is Hears.SEVERAL:
        return f"{heard.label} {heard.why}: cable it point to point"
    return f"{heard.why}: rerun once it answers"


def _planned_for(heard: Heard, cable: SwitchLink, plan: _Plan) -> str:
    end = plan.resolve(heard)
    other = plan.by_end.get(end) if end is not None else None
    return "" if other is None or other == cable else f" (planned for {other.label})"


def _swap(cable: SwitchLink, seen: Mapping[End, Heard], plan: _Plan) -> tuple[SwitchLink, str, str] | None:
    """Two planned cables whose ends are crossed: this cable's end `mine` hears an end `near` of
    cable M, and M's other end `far` hears this cable's other end `theirs`. Both cables, where each
    belongs, and the one swap that fixes both."""
    for mine, theirs in (_ends(cable), _ends(cable)[::-1]):
        near = plan.resolve(seen[mine])
        other = plan.by_end.get(near) if near is not None else None
        if near is None or other is None or other == cable:
            continue
        m_a, m_b = _ends(other)
        far = m_a if near == m_b else m_b
        if far not in seen or not plan.names(seen[far], theirs):
            continue
        actual = (
            f"swapped with {other.label}: {_label(mine)} reaches {_label(near)}, "
            f"{_label(far)} reaches {_label(theirs)}"
        )
        if near[0] == theirs[0]:
            fix = f"swap the cables at {_label(near)} and {_label(theirs)}"
        else:
            fix = f"swap the cables at {_label(mine)} and {_label(far)}"
        hint = (
            f"{fix}: {_label(mine)} belongs to {_label(theirs)} and {_label(far)} to {_label(near)}, "
            "as the switches' fabric_links plan"
        )
        return other, actual, hint
    return None


def extra_switch_cables(
    fabric: Fabric, switches: Mapping[str, SwitchEvidence], judged: Sequence[Judged] = ()
) -> list[Finding]:
    """A port no planned cable uses (neither a switch cable nor a host cable) that hears a planned
    switch: a cable the plan does not have. Each cable once. Where the far end is a planned end whose
    own cable is not as planned, that cable's finding names it; where that cable IS as planned, the
    same name and port answer on two cables (two switches sending one host name): named here too."""
    plan = _plan(fabric)
    proved = {end for j in judged if j.state is State.AS_PLANNED for end in _ends(j.cable)}
    findings = []
    done: set[frozenset[End]] = set()
    for name in plan.switches:
        evidence = switches.get(name)
        if evidence is None or evidence.unreachable is not None:
            continue
        for (kind, port), record in sorted(evidence.records.items(), key=lambda item: str(item[0][1])):
            if kind is not LldpNeighbor or port is None or not isinstance(record, LldpNeighbor):
                continue
            end = (name, port)
            if end in plan.by_end or end in plan.host_ports or MANAGEMENT_PORT.fullmatch(port):
                continue
            for system, remote in [(record.system, record.port), *record.others]:
                far = plan.resolve(Heard(end, Hears.NEIGHBOUR, system, remote))
                if far is None or far in plan.host_ports or (far in plan.by_end and far not in proved):
                    continue  # no planned switch, or a planned end its own cable's finding names
                pair = frozenset((end, far))
                if pair in done:
                    continue
                done.add(pair)
                twice = (
                    f", which already answers on its planned cable {plan.by_end[far].label}"
                    if far in plan.by_end
                    else ""
                )
                hint = (
                    "give every switch its own host name (LLDP's system name), then rerun"
                    if twice
                    else "unplug it, or plan it in the switches' fabric_links if it belongs to the fabric"
                )
                finding = failed(
                    SWITCH_LLDP,
                    _label(end),
                    f"no cable at {_label(end)} (fabric_links plans none)",
                    f"{_label(end)} hears {system} {remote}{twice}",
                    hint,
                )
                findings.append(replace(finding, where=Where(name, port, _label(far))))
    return findings


# ---- the declaration ------------------------------------------------------------------------------

SWITCH_LLDP_CHECK: Check[Callable[[Fabric, Mapping[str, SwitchEvidence]], Any]] = Check(
    SWITCH_LLDP,
    "link",
    "switch cable (on its lower-tier end)",
    ("both switches' LLDP records",),
    "each planned switch-to-switch cable (the switches' fabric_links) heard by LLDP at both ends as "
    "planned; a missing, extra or miswired cable named by its ends, two swapped cables by both and "
    "where each belongs",
    None,
    None,
    check_switch_links,
    kinds=ROCE,
)
