"""One perftest session over inventory hosts: their desired perftest state, how to reach them, what
each host's setup probe showed, and the survey rounds. The gate stage and `fabcheck baseline` share it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.collect.ssh import ConnectionVarError, SshTarget, TimeLimits
from fabcheck.desired.perftest import DesiredPerftest, pair_floor_gbps
from fabcheck.errors import DeadlinePassed
from fabcheck.intent.loader import HostEntry
from fabcheck.pairs.commands import HostSetup
from fabcheck.pairs.localise import Measure
from fabcheck.pairs.rounds import Endpoint, Pair, Round, plan_rounds
from fabcheck.pairs.runner import SshRunner
from fabcheck.pairs.verdict import Judge, Measurement

# The time limits left before the run's deadline for what is named; DeadlinePassed when none are left.
LimitsLeft = Callable[[str], TimeLimits]


@dataclass
class Session:
    desired: dict[str, DesiredPerftest]
    runner: SshRunner
    rounds: list[Round]
    # Hosts that take no part, and why (a bad connection variable, no rail NIC, no setup answer).
    left_out: dict[str, str] = field(default_factory=dict)
    unpinned: list[str] = field(default_factory=list)  # hosts without numactl

    @property
    def endpoints(self) -> list[Endpoint]:
        """Every rail NIC of the hosts that take part."""
        return [Endpoint(h, nic) for h in self.runner.setup for nic in self.desired[h].nics]

    def floor_of(self, pair: Pair) -> float:
        return pair_floor_gbps(self.desired[pair.server.host], self.desired[pair.client.host])[0]

    def floor_text(self, pair: Pair) -> str:
        floor, how = pair_floor_gbps(self.desired[pair.server.host], self.desired[pair.client.host])
        return f">= {floor:.2f} Gb/sec ({how}) and within peers"

    def judge_of(self, survey: Sequence[Measurement]) -> Judge:
        return Judge.from_survey(self.floor_of, survey)

    @property
    def measure(self) -> Measure:
        return self.runner


def open_session(
    entries: Sequence[HostEntry],
    limits: TimeLimits,
    concurrency: int,
    mode: str,
    planned: Mapping[str, DesiredPerftest],
) -> Session:
    """Plan the hosts, probe each one (numactl, NUMA nodes), then the rounds over those that answered.
    `planned`: each host's perftest floors as the gate's plan derived them (GatePlan.desired.perftest)."""
    desired: dict[str, DesiredPerftest] = {}
    targets: dict[str, SshTarget] = {}
    left_out: dict[str, str] = {}
    for entry in entries:
        want = planned[entry.name]
        if not want.nics:
            left_out[entry.name] = "the intent names no rail NIC (fabric_rails) to test"
            continue
        try:
            targets[entry.name] = SshTarget.from_host_vars(entry.name, entry.variables)
        except ConnectionVarError as err:
            left_out[entry.name] = f"bad inventory variable: {err}"
            continue
        desired[entry.name] = want
    runner = SshRunner(targets, desired, limits, concurrency)
    probed = runner.probe(list(desired))
    setup = {host: answer for host, answer in probed.items() if isinstance(answer, HostSetup)}
    for host, answer in probed.items():
        if isinstance(answer, str):
            left_out[host] = f"could not reach it to prepare perftest: {answer}"
    runner.setup = setup
    testing = {host: list(desired[host].nics) for host in setup}
    return Session(
        desired=desired,
        runner=runner,
        rounds=plan_rounds(testing, mode),
        left_out=left_out,
        unpinned=sorted(h for h, s in setup.items() if not s.numactl),
    )


def within_deadline(session: Session, limits_left: LimitsLeft, what: str) -> Measure:
    """The session's measure with each round under the time the run's deadline leaves it. When the
    deadline has passed by the end of a round with a pair left without a result, that is DeadlinePassed:
    judged, the pair would blame its NIC for the clock."""
    full = session.runner.limits

    def measure(round_: Round, number: int) -> list[Measurement]:
        session.runner.limits = limits_left(f"{what} round {number}")
        try:
            results = session.runner(round_, number)
        finally:
            session.runner.limits = full
        unfinished = sum(m.gbps is None for m in results)
        if unfinished:
            try:
                limits_left(f"judging {what} round {number}")
            except DeadlinePassed as err:
                raise DeadlinePassed(f"{err}: {unfinished} of {len(results)} pairs had no result") from None
        return results

    return measure
