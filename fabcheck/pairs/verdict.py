"""Judging pair bandwidth: layer 1, the physics floor (line rate x efficiency); layer 2, outliers
against the peers of the same line rate, median-based so that several bad links cannot drag the
reference down (a mean would follow them)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabcheck.checks.perftest import OUTLIER_INPUTS, OutlierInputs
from fabcheck.pairs.rounds import Pair

MAD_TO_SIGMA = 1.4826  # MAD x this = the standard deviation, for normally distributed noise
MIN_PEERS_FOR_OUTLIERS = 4  # with fewer pairs a median says little about what peers reach


@dataclass(frozen=True)
class Measurement:
    """One pair's result. gbps None: the run gave no bandwidth (error says why)."""

    pair: Pair
    gbps: float | None
    round: int
    error: str | None = None
    evidence: str = ""  # the result line (or failure line) the value rests on


@dataclass(frozen=True)
class PeerStats:
    median: float
    sigma: float
    count: int
    inputs: OutlierInputs = OUTLIER_INPUTS

    @property
    def outlier_below(self) -> float:
        """Bandwidth under which a pair is an outlier against these peers."""
        return self.median - max(self.inputs.mads * self.sigma, self.inputs.min_drop * self.median)


def peer_stats(values: Sequence[float], inputs: OutlierInputs = OUTLIER_INPUTS) -> PeerStats | None:
    """Median and robust sigma; None when too few values to speak for the peers."""
    if len(values) < MIN_PEERS_FOR_OUTLIERS:
        return None
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return PeerStats(median, MAD_TO_SIGMA * mad, len(values), inputs)


@dataclass(frozen=True)
class Judge:
    """How slow is judged: the floor of each pair (from the desired state of its two hosts) and the
    peers' reference, computed once from the survey so later re-pairings compare against it."""

    floor_of: Callable[[Pair], float]
    peers: Mapping[float, PeerStats]  # floor -> stats of the survey pairs with that floor

    @classmethod
    def from_survey(cls, floor_of: Callable[[Pair], float], survey: Iterable[Measurement]) -> Judge:
        groups: dict[float, list[float]] = {}
        for m in survey:
            if m.gbps is not None:
                groups.setdefault(floor_of(m.pair), []).append(m.gbps)
        stats = {floor: peer_stats(values) for floor, values in groups.items()}
        return cls(floor_of, {floor: s for floor, s in stats.items() if s is not None})

    def slow_reason(self, m: Measurement) -> str | None:
        """Why the pair is slow (failed, below the floor, an outlier), or None when it is not."""
        if m.gbps is None:
            return f"no bandwidth: {m.error or 'the run failed'}"
        floor = self.floor_of(m.pair)
        if m.gbps < floor:
            return f"{m.gbps:.2f} Gb/sec is below the floor {floor:.2f} Gb/sec"
        peers = self.peers.get(floor)
        if peers is not None and m.gbps < peers.outlier_below:
            return (
                f"{m.gbps:.2f} Gb/sec is an outlier: peers' median {peers.median:.2f} Gb/sec, "
                f"outliers below {peers.outlier_below:.2f} ({peers.count} pairs)"
            )
        return None
