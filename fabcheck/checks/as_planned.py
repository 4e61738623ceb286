"""Built vs planned (issue 39): one summary finding per run, "N of M planned cables as planned", with
the missing, miswired (swapped pairs among them), extra and unproved cables counted. Pure.

- link.as_planned (RoCE): the host cables as link.lldp judged them (the switch port hears the planned
  NIC) and the switch-to-switch cables as link.switch_lldp judged them (both ends hear each other); the
  extra cables are the ports those checks found hearing a planned node where no cable is planned.
- ib.as_planned (InfiniBand): every planned cable as ib.topology judges it from `ibnetdiscover -p`,
  and the up links between planned nodes that no cable plans.

The summary fails when a cable is missing (a host port that is down and hears nothing, a switch cable
one or both ends of which hear nothing), miswired or extra: whenever one of the per-cable findings it
counts fails; it is an error when a cable's evidence could not be read, and a named skip when the only
shortfall is cables nothing proves (a host port that is up, or whose state the switch does not show,
and hears no LLDP neighbour: the host sends no LLDP; or one that hears the host with a MAC as its port
id, which proves the host and not which of its NICs); it passes only when every planned cable is proved
as planned and nothing else is cabled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.checks import ib
from fabcheck.checks.declare import ROCE, Check
from fabcheck.checks.host import Unreadable
from fabcheck.checks.ib_nodes import NodeNames
from fabcheck.checks.link import LLDP, HostHearing
from fabcheck.checks.model import Finding, Status, errored, failed, passed, skipped
from fabcheck.checks.uplinks import SWITCH_LLDP, Judged, State
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.intent.fabric import Fabric

LINK_AS_PLANNED = "link.as_planned"
IB_AS_PLANNED = "ib.as_planned"
LINK_SUBJECT = "the cabling map (fabric_links)"  # the one summary's subject
IB_SUBJECT = "the IB cabling map (fabric_links)"


@dataclass(frozen=True)
class Tally:
    """Planned cables by how they were found, and the unplanned ones."""

    planned: int = 0
    as_planned: int = 0
    missing: int = 0
    miswired: int = 0
    swapped_pairs: int = 0
    extra: int = 0
    unread: int = 0  # evidence that could not be read (or could not tell, several neighbours)
    unproved: int = 0  # nothing heard or shown that proves the cable either way

    def __add__(self, other: Tally) -> Tally:
        return Tally(*(x + y for x, y in zip(self.counts(), other.counts(), strict=True)))

    def counts(self) -> tuple[int, ...]:
        return (
            self.planned,
            self.as_planned,
            self.missing,
            self.miswired,
            self.swapped_pairs,
            self.extra,
            self.unread,
            self.unproved,
        )

    @property
    def line(self) -> str:
        swapped = f" ({self.swapped_pairs} swapped pairs)" if self.swapped_pairs else ""
        return (
            f"{self.as_planned} of {self.planned} planned cables as planned: {self.missing} missing, "
            f"{self.miswired} miswired{swapped}, {self.extra} extra"
            + (f", {self.unread} not read" if self.unread else "")
            + (f", {self.unproved} not proved" if self.unproved else "")
        )


def summary(check: str, subject: str, tally: Tally, parts: str, hint_of: Mapping[str, str]) -> Finding:
    """The one finding: fail on a missing, miswired or extra cable; error on unread evidence; a named
    skip when some cables are only unproved; a pass when all M are as planned and none is extra."""
    expected = f"all {tally.planned} planned cables as planned, none extra"
    actual = tally.line + (f" ({parts})" if parts else "")
    if tally.missing or tally.miswired or tally.extra:
        return failed(check, subject, expected, actual, hint_of["fail"])
    if tally.unread:
        return errored(check, subject, expected, actual, hint_of["error"])
    if tally.unproved or tally.planned == 0:
        return skipped(check, subject, f"{actual}: {hint_of['skip']}")
    return passed(check, subject, expected, actual)


# ---- RoCE: link.as_planned ------------------------------------------------------------------------


def host_tally(fabric: Fabric, findings: Iterable[Finding], hearing: HostHearing) -> Tally:
    """The host cables as their link.lldp findings judged them, and the ports link.lldp found hearing a
    host where no cable is planned (extra). A cable whose port is down and hears nothing is missing; one
    link.lldp passes on the host alone (a MAC port id) is not proved: it may be another NIC's."""
    by_cable: dict[tuple[str, str, str], Status] = {}
    extra = 0
    for finding in findings:
        if finding.check != LLDP:
            continue
        if " <-> " not in finding.subject:
            extra += finding.status is Status.FAIL
        elif finding.where is not None:
            by_cable[(finding.where.node, finding.where.part, finding.where.peer)] = finding.status
    counts = dict.fromkeys(Status, 0)
    missing = 0
    for link in fabric.links:
        status = by_cable.get((link.host, link.nic, link.switch_end), Status.SKIP)
        if link in hearing.down and status is not Status.ERROR:
            missing += 1
        elif link in hearing.host_only and status is Status.PASS:
            counts[Status.SKIP] += 1
        else:
            counts[status] += 1
    return Tally(
        planned=len(fabric.links),
        as_planned=counts[Status.PASS],
        missing=missing,
        miswired=counts[Status.FAIL],
        swapped_pairs=len(hearing.swaps) // 2,
        extra=extra,
        unread=counts[Status.ERROR],
        unproved=counts[Status.SKIP],
    )


def switch_tally(judged: Sequence[Judged], extras: Sequence[Finding]) -> Tally:
    states = [j.state for j in judged]
    return Tally(
        planned=len(judged),
        as_planned=states.count(State.AS_PLANNED),
        missing=states.count(State.MISSING),
        miswired=states.count(State.MISWIRED),
        swapped_pairs=sum(j.swapped_with is not None for j in judged) // 2,
        extra=len(extras),
        unread=sum(j.finding.status is Status.ERROR for j in judged),
        unproved=sum(j.state is State.NOT_PROVED and j.finding.status is not Status.ERROR for j in judged),
    )


_LINK_HINTS = {
    "fail": f"the failing {LLDP} and {SWITCH_LLDP} findings name each cable, where it belongs and the fix",
    "error": f"the erroring {LLDP} and {SWITCH_LLDP} findings say what was not read: rerun once it answers",
    "skip": (
        "a port that is up and hears no LLDP neighbour is a host that sends no LLDP, and one that hears "
        "the host with a MAC as its port id (lldpd's default) proves the host, not which NIC: run lldpd "
        "on the hosts with `configure lldp portidsubtype ifname` so the gate can prove every cable"
    ),
}


def link_summary(host: Tally, switch: Tally) -> Finding:
    parts = []
    if host.planned:
        parts.append(f"host cables {host.as_planned} of {host.planned}")
    if switch.planned:
        parts.append(f"switch cables {switch.as_planned} of {switch.planned}")
    return summary(
        LINK_AS_PLANNED, "the cabling map (fabric_links)", host + switch, ", ".join(parts), _LINK_HINTS
    )


TIER_RANK = {"core": 0, "spine": 1, "leaf": 2}  # the top tier first


def top_switch(fabric: Fabric) -> str | None:
    """Where the run's summary is filed: the first switch of the fabric's top tier (switch_tier)."""
    ordered = sorted(fabric.switches, key=lambda s: TIER_RANK.get(s.tier, len(TIER_RANK)))
    return ordered[0].name if ordered else None


# ---- InfiniBand: ib.as_planned ----------------------------------------------------------------------

_IB_HINTS = {
    "fail": f"the failing {ib.TOPOLOGY} findings name each cable, where it belongs and the fix",
    "error": "the fabric could not be read (see the ib.topology errors): rerun once the reader answers",
    "skip": "no planned cable",
}


def ib_summary(evidence: ib.IbEvidence, desired: DesiredIbFabric) -> Finding:
    subject = IB_SUBJECT
    if evidence.unreachable is not None or isinstance(evidence.topology, Unreadable):
        why = evidence.unreachable or (
            f"`{evidence.topology.command}`: {evidence.topology.reason}"
            if isinstance(evidence.topology, Unreadable)
            else ""
        )
        tally = Tally(planned=len(desired.links), unread=len(desired.links))
        return errored(
            IB_AS_PLANNED,
            subject,
            f"all {len(desired.links)} planned cables as planned, in the fabric read from {desired.reader}",
            f"{tally.line}: {why}",
            _IB_HINTS["error"],
        )
    cab = ib.cabling(desired, ib.discovery(evidence.topology), NodeNames.of(desired))
    tally = Tally(planned=len(desired.links), extra=len(ib.check_extra(cab, evidence.topology)))
    for link in desired.links:
        tally = tally + _ib_cable(link, cab)
    return summary(IB_AS_PLANNED, subject, tally, "", _IB_HINTS)


def _ib_cable(link: Any, cab: ib.Cabling) -> Tally:
    if any(cab.seen.ambiguous(end) for end in (link.a, link.b)):
        return Tally(unread=1)
    if ib.as_planned(link, cab):
        return Tally(as_planned=1)
    if cab.reaches(link.a) is None and cab.reaches(link.b) is None:
        return Tally(missing=1)
    swapped = ib.swapped_pair(link, cab) is not None
    return Tally(miswired=1, swapped_pairs=1 if swapped and _first_of_pair(link, cab) else 0)


def _first_of_pair(link: Any, cab: ib.Cabling) -> bool:
    """Count a swapped pair once: at the cable whose label sorts first."""
    for end in (link.a, link.b):
        to = cab.reaches(end)
        other = cab.planned.get(to) if to is not None else None
        if other is not None and other != link:
            return bool(link.label < other.label)
    return True


def ib_top_switch(desired: DesiredIbFabric, chosen: Iterable[str]) -> str | None:
    """The first chosen IB switch of the top tier (core, spine, leaf)."""
    names = set(chosen)
    ordered = sorted(
        (s for s in desired.switches if s.name in names), key=lambda s: TIER_RANK.get(s.tier, len(TIER_RANK))
    )
    return ordered[0].name if ordered else None


# ---- the declarations -----------------------------------------------------------------------------

Summary = Callable[..., Finding]
LINK_AS_PLANNED_CHECK: Check[Summary] = Check(
    LINK_AS_PLANNED,
    "link",
    "run (filed at the first top-tier switch)",
    (f"the {LLDP} and {SWITCH_LLDP} results",),
    "one summary per run: `N of M planned cables as planned` (host and switch cables) with the missing, "
    "miswired (swapped pairs), extra, unread and unproved counts; fails on any missing (a host port "
    "down and silent, a switch cable an end of which hears nothing), miswired or extra cable, so "
    "whenever a cable's own check fails; a named skip when some cables are only unproved (an up port "
    "hearing no LLDP, or the host with a MAC port id, which names no NIC)",
    None,
    None,
    link_summary,
    kinds=ROCE,
)
IB_AS_PLANNED_CHECK: Check[Summary] = Check(
    IB_AS_PLANNED,
    "ib",
    "run (filed at the first top-tier IB switch)",
    ("`ibnetdiscover -p`",),
    "one summary per run: `N of M planned cables as planned` with the missing, miswired (swapped pairs) "
    "and extra counts, as ib.topology judges each cable; fails on any missing, miswired or extra cable",
    None,
    None,
    ib_summary,
    kinds=("ib",),
)
