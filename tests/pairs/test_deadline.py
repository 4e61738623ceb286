"""--deadline on the perftest and incast rounds: each round runs under the limits the run's clock leaves
it, the full limits come back after it, a pair the deadline ended is DeadlinePassed (never a slow NIC),
and a pair that failed with time left is judged as the failure it is."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from fabcheck.collect.ssh import TimeLimits
from fabcheck.errors import DeadlinePassed
from fabcheck.pairs.rounds import Endpoint, Pair, Round
from fabcheck.pairs.session import Session, within_deadline
from fabcheck.pairs.verdict import Measurement

FULL = TimeLimits(connect_s=10, command_s=60)
PAIRS = (
    Pair(Endpoint("gpu01", "mlx5_0"), Endpoint("gpu02", "mlx5_0")),
    Pair(Endpoint("gpu03", "mlx5_0"), Endpoint("gpu04", "mlx5_0")),
)


@dataclass
class FakeRunner:
    """Measures a round: the first pair reaches 380 Gb/sec, the others give no result."""

    limits: TimeLimits = FULL
    ran_under: list[TimeLimits] = field(default_factory=list)
    unfinished: int = 1

    def __call__(self, round_: Round, number: int) -> list[Measurement]:
        self.ran_under.append(self.limits)
        done = len(round_) - self.unfinished
        return [
            Measurement(p, 380.0 if i < done else None, number, None if i < done else "client timed out")
            for i, p in enumerate(round_)
        ]


class Clock:
    """limits_left over a fake clock: `left` seconds remain, less after each `tick`."""

    def __init__(self, left: float, tick: float) -> None:
        self.left, self.tick = left, tick
        self.asked: list[str] = []

    def __call__(self, before: str) -> TimeLimits:
        self.asked.append(before)
        if self.left <= 0:
            raise DeadlinePassed(f"the run's deadline (--deadline 30 s) passed before {before}")
        limits = FULL.within(self.left)
        self.left -= self.tick
        return limits


def _session(runner: FakeRunner) -> Session:
    return Session(desired={}, runner=runner, rounds=[])  # type: ignore[arg-type]


def test_a_round_runs_under_the_time_left_and_the_full_limits_come_back() -> None:
    runner = FakeRunner(unfinished=0)
    measure = within_deadline(_session(runner), Clock(left=20, tick=5), "perftest")
    results = measure(PAIRS, 1)
    assert [m.gbps for m in results] == [380.0, 380.0]
    (cut,) = runner.ran_under
    assert cut.client_s <= 20 < FULL.client_s
    assert runner.limits == FULL


def test_a_pair_the_deadline_ended_is_deadline_passed_naming_the_round_and_the_count() -> None:
    clock = Clock(left=10, tick=10)  # the round uses up the time left
    measure = within_deadline(_session(FakeRunner()), clock, "the incast")
    with pytest.raises(DeadlinePassed) as raised:
        measure(PAIRS, 2)
    said = str(raised.value)
    assert "before judging the incast round 2" in said and "1 of 2 pairs had no result" in said, said
    assert clock.asked == ["the incast round 2", "judging the incast round 2"]


def test_a_pair_that_failed_with_time_left_is_returned_for_judging() -> None:
    measure = within_deadline(_session(FakeRunner()), Clock(left=100, tick=1), "perftest")
    results = measure(PAIRS, 1)
    assert [(m.gbps, m.error) for m in results] == [(380.0, None), (None, "client timed out")]


def test_a_round_the_deadline_passed_before_does_not_start() -> None:
    runner = FakeRunner()
    measure = within_deadline(_session(runner), Clock(left=0, tick=0), "perftest")
    with pytest.raises(DeadlinePassed, match="passed before perftest round 3"):
        measure(PAIRS, 3)
    assert runner.ran_under == []
