"""Localisation: which host, NIC or link makes a slow pair slow, found by re-pairing.

After the survey rounds, an endpoint (NIC) that reached the bar with any peer is good: it can carry the
traffic. Each end of a slow pair is then re-paired with a good NIC of its rail in one split round:

- slow again with a good peer: that NIC is bad (and every measured NIC of a host bad: the host); one
  slow link alone never convicts a NIC, since the link may be what is bad;
- fast with its good peer, and so is the other end: the link between the two is bad;
- no good peer free for it this round: a confirm round tries again with the NICs the split freed.

A NIC the survey left out (an odd host count on its rail) joins the split round against a good NIC.
When a rail has no good NIC yet, its undecided NICs are paired among themselves on links not measured
before, so the confirm round finds good peers there.

So one bad NIC is named in the survey round plus one split round, and k bad NICs in the same rounds as
long as each rail has a good NIC free for each suspect (k small against N).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from fabcheck.pairs.rounds import Endpoint, Pair, Round
from fabcheck.pairs.verdict import Judge, Measurement

Measure = Callable[[Round, int], list[Measurement]]  # (pairs, round number) -> one result per pair


@dataclass(frozen=True)
class Diagnosis:
    """What the rounds showed. Every slow pair ends up explained by a bad NIC or host, a bad link, or
    listed as not localised; no slow pair is dropped."""

    rounds: int
    measurements: tuple[Measurement, ...]
    bad_hosts: tuple[str, ...]
    bad_nics: tuple[Endpoint, ...]  # NICs of hosts that are not bad as a whole
    bad_links: tuple[tuple[Endpoint, Endpoint], ...]
    unlocalised: tuple[Endpoint, ...]  # slow, and no good peer was found to tell why
    slow: dict[tuple[Endpoint, Endpoint], str] = field(default_factory=dict)  # link -> reason


@dataclass
class _Evidence:
    judge: Judge
    judged: list[tuple[Measurement, str | None]] = field(default_factory=list)  # (result, slow reason)
    slow: dict[tuple[Endpoint, Endpoint], str] = field(default_factory=dict)  # latest reason per link

    def add(self, results: Iterable[Measurement]) -> None:
        for m in results:
            reason = self.judge.slow_reason(m)
            self.judged.append((m, reason))
            if reason is None:
                self.slow.pop(m.pair.key, None)
            else:
                self.slow[m.pair.key] = reason

    def good(self) -> set[Endpoint]:
        """Every NIC that reached the bar with some peer."""
        return {end for m, reason in self.judged if reason is None for end in m.pair.ends}

    def proven_bad(self, good: set[Endpoint]) -> set[Endpoint]:
        """NICs slow with a good peer and slow on at least two links: with a single slow link the
        link itself may be what is bad (its other end was cleared, this one not yet)."""
        slow_links: dict[Endpoint, set[tuple[Endpoint, Endpoint]]] = {}
        with_good: set[Endpoint] = set()
        for m, reason in self.judged:
            if reason is None:
                continue
            a, b = m.pair.ends
            for end, peer in ((a, b), (b, a)):
                if end not in good:
                    slow_links.setdefault(end, set()).add(m.pair.key)
                    if peer in good:
                        with_good.add(end)
        return {end for end in with_good if len(slow_links[end]) >= 2}

    def suspects(self) -> set[Endpoint]:
        return {end for link in self.slow for end in link} - self.good()

    def measured_ends(self) -> set[Endpoint]:
        return {end for m, _reason in self.judged for end in m.pair.ends}

    def measured_links(self) -> set[tuple[Endpoint, Endpoint]]:
        return {m.pair.key for m, _reason in self.judged}


def localise(
    survey: Sequence[Round],
    measure: Measure,
    judge_of: Callable[[Sequence[Measurement]], Judge],
    endpoints: Iterable[Endpoint] = (),
) -> Diagnosis:
    """Run the survey rounds, judge them, then at most a split and a confirm round of re-pairings.
    `endpoints`: every NIC that should be measured (those the survey left out join the split)."""
    results: list[Measurement] = []
    for number, round_ in enumerate(survey, start=1):
        results += measure(round_, number)
    evidence = _Evidence(judge_of(results))
    evidence.add(results)
    wanted = set(endpoints)
    rounds = len(survey)
    for _ in ("split", "confirm"):
        good = evidence.good()
        unmeasured = wanted - evidence.measured_ends()
        undecided = (evidence.suspects() | unmeasured) - evidence.proven_bad(good)
        repairing = _repair_round(sorted(undecided), good, evidence.measured_links())
        if not repairing:
            break
        rounds += 1
        evidence.add(measure(repairing, rounds))
    return _diagnose(evidence, rounds)


def _repair_round(
    undecided: Sequence[Endpoint], good: set[Endpoint], measured: set[tuple[Endpoint, Endpoint]]
) -> Round:
    """Each undecided NIC against a distinct good NIC of its rail; where no good NIC is free, the
    undecided NICs of the rail against each other. Only links not measured yet: a second look at the
    same link tells nothing new."""
    free: dict[str, list[Endpoint]] = {}
    for end in sorted(good):
        free.setdefault(end.nic, []).append(end)
    pairs = []
    waiting: dict[str, list[Endpoint]] = {}
    for end in undecided:
        peers = free.get(end.nic, [])
        peer = next((p for p in peers if Pair(p, end).key not in measured), None)
        if peer is not None:
            peers.remove(peer)
            pairs.append(Pair(peer, end))
        else:
            waiting.setdefault(end.nic, []).append(end)
    for ends in waiting.values():
        while ends:
            end = ends.pop(0)
            peer = next((p for p in ends if Pair(end, p).key not in measured), None)
            if peer is not None:
                ends.remove(peer)
                pairs.append(Pair(end, peer))
    return tuple(pairs)


def _diagnose(evidence: _Evidence, rounds: int) -> Diagnosis:
    good = evidence.good()
    bad = evidence.proven_bad(good)
    links = tuple(sorted(link for link in evidence.slow if link[0] in good and link[1] in good))
    measured: dict[str, set[str]] = {}
    for m, _reason in evidence.judged:
        for end in m.pair.ends:
            measured.setdefault(end.host, set()).add(end.nic)
    bad_by_host: dict[str, set[str]] = {}
    for end in bad:
        bad_by_host.setdefault(end.host, set()).add(end.nic)
    hosts = tuple(
        sorted(h for h, nics in bad_by_host.items() if len(measured[h]) > 1 and nics == measured[h])
    )
    return Diagnosis(
        rounds=rounds,
        measurements=tuple(m for m, _reason in evidence.judged),
        bad_hosts=hosts,
        bad_nics=tuple(sorted(e for e in bad if e.host not in hosts)),
        bad_links=links,
        unlocalised=tuple(sorted(evidence.suspects() - bad)),
        slow=dict(evidence.slow),
    )
