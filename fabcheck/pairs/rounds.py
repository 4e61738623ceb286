"""Rounds of perftest pairs: every NIC in at most one test per round, on each rail no host twice.

A test pairs two NICs of the same rail (the same device name on two hosts): rail-optimised fabrics
connect rail k of one host to rail k of the others through the same leaf, so cross-rail pairs would
measure the spine, not the NICs. All-pairs mode schedules every pair of hosts exactly once per rail by
the circle method (N-1 rounds for even N, N for odd). Fast mode gives each rail one matching of the
circle schedule, a different one per rail, so a host meets several peers across its rails in one round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ALL_PAIRS = "all"
FAST = "fast"
MODES = (FAST, ALL_PAIRS)


@dataclass(frozen=True, order=True)
class Endpoint:
    """One NIC of one host."""

    host: str
    nic: str

    def __str__(self) -> str:
        return f"{self.host}/{self.nic}"


@dataclass(frozen=True, order=True)
class Pair:
    """One perftest run: `server` listens, `client` connects and sends. Ends are on the same rail."""

    server: Endpoint
    client: Endpoint

    @property
    def ends(self) -> tuple[Endpoint, Endpoint]:
        return (self.server, self.client)

    @property
    def key(self) -> tuple[Endpoint, Endpoint]:
        """The link the pair measures, whichever end served."""
        return (min(self.server, self.client), max(self.server, self.client))

    def __str__(self) -> str:
        return f"{self.server}<->{self.client}"


Round = tuple[Pair, ...]


def circle_matchings(hosts: Sequence[str]) -> list[list[tuple[str, str]]]:
    """The circle method: hosts[0] stays put, the others rotate one place per round. Every pair of
    hosts meets in exactly one matching; with an odd count a placeholder makes one host sit out."""
    return [circle_matching(hosts, turn) for turn in range(circle_turns(len(hosts)))]


def circle_turns(count: int) -> int:
    """Matchings in a circle schedule of `count` hosts (0 when there is nobody to pair)."""
    if count < 2:
        return 0
    return count - 1 if count % 2 == 0 else count


def circle_matching(hosts: Sequence[str], turn: int) -> list[tuple[str, str]]:
    """Matching `turn` of the circle schedule (alternating which end serves from turn to turn)."""
    ring: list[str | None] = list(hosts)
    if len(ring) % 2:
        ring.append(None)
    count = len(ring)
    order = [ring[0], *(ring[1 + (i + turn) % (count - 1)] for i in range(count - 1))]
    matching = []
    for i in range(count // 2):
        a, b = order[i], order[count - 1 - i]
        if a is not None and b is not None:
            matching.append((a, b) if turn % 2 == 0 else (b, a))
    return matching


def rails_of(nics_by_host: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Rail (NIC device name) -> the hosts that have it, in inventory order."""
    rails: dict[str, list[str]] = {}
    for host, nics in nics_by_host.items():
        for nic in nics:
            rails.setdefault(nic, []).append(host)
    return dict(sorted(rails.items()))


def all_pairs_rounds(nics_by_host: Mapping[str, Sequence[str]]) -> list[Round]:
    """Every pair of hosts once on every rail they share; rails run side by side in each round."""
    per_rail = {rail: circle_matchings(hosts) for rail, hosts in rails_of(nics_by_host).items()}
    count = max((len(m) for m in per_rail.values()), default=0)
    rounds = []
    for turn in range(count):
        pairs = [
            Pair(Endpoint(a, rail), Endpoint(b, rail))
            for rail, matchings in per_rail.items()
            if turn < len(matchings)
            for a, b in matchings[turn]
        ]
        rounds.append(tuple(pairs))
    return rounds


def fast_rounds(nics_by_host: Mapping[str, Sequence[str]]) -> list[Round]:
    """One round: one matching per rail (rail i takes matching i of its circle schedule). On a rail
    with an odd host count one NIC sits out; the localisation's re-pairing round measures it against a
    NIC this round proved good, so it costs no round of its own."""
    pairs: list[Pair] = []
    for index, (rail, hosts) in enumerate(rails_of(nics_by_host).items()):
        turns = circle_turns(len(hosts))
        if turns:
            pairs += [
                Pair(Endpoint(a, rail), Endpoint(b, rail)) for a, b in circle_matching(hosts, index % turns)
            ]
    return [tuple(pairs)] if pairs else []


def plan_rounds(nics_by_host: Mapping[str, Sequence[str]], mode: str) -> list[Round]:
    if mode == FAST:
        return fast_rounds(nics_by_host)
    if mode == ALL_PAIRS:
        return all_pairs_rounds(nics_by_host)
    raise ValueError(f"perftest mode {mode!r}: expected one of {', '.join(MODES)}")
