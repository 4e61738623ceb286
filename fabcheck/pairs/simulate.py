"""A simulated fleet for proving the localisation at sizes no lab reaches (N = 1,024 hosts).

Pair bandwidth = min(capability of the two NICs) x factor of the link between them x noise, where a
good NIC is capable of line rate x the protocol efficiency perftest reaches; bad NICs, bad hosts (all
NICs slow) and bad links are given by the caller. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.pairs.rounds import Endpoint, Pair, Round
from fabcheck.pairs.verdict import Measurement

# What a healthy 400G RoCE NIC shows in ib_write_bw at 64 KiB..1 MiB messages: ~96% of line rate.
HEALTHY_EFFICIENCY = 0.96


@dataclass(frozen=True)
class Fleet:
    hosts: tuple[str, ...]
    rails: tuple[str, ...]
    line_rate_gbps: float = 400.0
    noise: float = 0.01  # each measurement x uniform(1 - noise, 1)
    nic_factor: Mapping[Endpoint, float] = field(default_factory=dict)  # bad NICs: < 1
    host_factor: Mapping[str, float] = field(default_factory=dict)  # bad hosts: every NIC < 1
    link_factor: Mapping[tuple[Endpoint, Endpoint], float] = field(default_factory=dict)  # by Pair.key

    @property
    def nics_by_host(self) -> dict[str, list[str]]:
        return {host: list(self.rails) for host in self.hosts}

    @property
    def endpoints(self) -> list[Endpoint]:
        return [Endpoint(host, rail) for host in self.hosts for rail in self.rails]

    def capability(self, end: Endpoint) -> float:
        factor = self.nic_factor.get(end, 1.0) * self.host_factor.get(end.host, 1.0)
        return self.line_rate_gbps * HEALTHY_EFFICIENCY * factor

    def bandwidth(self, pair: Pair, rng: random.Random) -> float:
        base = min(self.capability(pair.server), self.capability(pair.client))
        return base * self.link_factor.get(pair.key, 1.0) * rng.uniform(1 - self.noise, 1.0)


@dataclass
class SimulatedRunner:
    """Measures rounds on a Fleet, checking what a real round must satisfy (one test per NIC)."""

    fleet: Fleet
    seed: int = 0
    rounds_run: list[Round] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, round_: Round, number: int) -> list[Measurement]:
        ends = [end for pair in round_ for end in pair.ends]
        if len(ends) != len(set(ends)):
            raise AssertionError(f"round {number} uses a NIC twice")
        self.rounds_run.append(round_)
        return [Measurement(p, self.fleet.bandwidth(p, self.rng), number) for p in round_]


def fleet_of(
    count: int,
    rails: int = 8,
    *,
    bad_nics: Sequence[Endpoint] = (),
    bad_hosts: Sequence[str] = (),
    bad_links: Sequence[tuple[Endpoint, Endpoint]] = (),
    factor: float = 0.6,
) -> Fleet:
    hosts = tuple(f"gpu{i:04d}" for i in range(count))
    return Fleet(
        hosts=hosts,
        rails=tuple(f"mlx5_{r}" for r in range(rails)),
        nic_factor={end: factor for end in bad_nics},
        host_factor={host: factor for host in bad_hosts},
        link_factor={(min(link), max(link)): factor for link in bad_links},  # sorted, as Pair.key
    )
