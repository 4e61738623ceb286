"""The incast stage (fabcheck.gate.incast_stage): plugged, not run by default, after the host stage; its
pairs run for a duration. The plan, the captures and the verdict are tested in tests/incast/."""

from __future__ import annotations

import sys
from pathlib import Path

from fabcheck.desired.perftest import desired_perftest
from fabcheck.gate.stages import STAGE_MODULES, all_stages
from fabcheck.pairs.commands import PairCommand, pair_command
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.runner import timed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import intent

VICTIM = Endpoint("gpu01", "mlx5_0")
SENDERS = (Endpoint("gpu02", "mlx5_0"), Endpoint("gpu03", "mlx5_0"))


def test_the_stage_is_plugged_not_by_default_and_reads_the_host_stage() -> None:
    assert "fabcheck.gate.incast_stage" in STAGE_MODULES
    stage = next(s for s in all_stages() if s.name == "incast")
    assert stage.by_default is False and stage.requires == ("host",)


def test_timed_pairs_run_for_a_duration_instead_of_an_iteration_count() -> None:
    perftest = {h: desired_perftest(intent(), h) for h in ("gpu01", "gpu02")}
    command = pair_command(Pair(VICTIM, SENDERS[0]), 18515, "10.0.0.1", perftest, {})
    swapped = timed(command, 2)
    assert isinstance(swapped, PairCommand)
    for argv in (swapped.server, swapped.client):
        assert "-n" not in argv and argv[argv.index("-D") + 1] == "2"
    assert swapped.client[-1] == "10.0.0.1" and swapped.port == 18515
