"""bench/counter_window.py without a lab: the command it times, the order of its runs, its figures and
verdict, its options (the lab runs are the coordinator's: see docs/performance.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "counter_window.py"
spec = importlib.util.spec_from_file_location("counter_window_bench", BENCH)
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
sys.modules["counter_window_bench"] = bench
spec.loader.exec_module(bench)


def test_the_timed_command_is_the_default_gate_with_the_window() -> None:
    argv = bench.validate_argv(Path("/v/fabcheck"), Path("inv/lab"), None, 5)
    assert argv == ["/v/fabcheck", "validate", "-i", "inv/lab", "--timeout", "300", "--counter-window", "5"]
    assert bench.validate_argv(Path("f"), Path("i"), 16, 0)[-4:] == [
        "--concurrency",
        "16",
        "--counter-window",
        "0",
    ]


def test_runs_take_turns() -> None:
    assert bench.turns(5, 3) == [5, 0, 5, 0, 5, 0]


def test_the_figures_are_medians_their_difference_ratio_and_the_goal() -> None:
    timings = [bench.Timing(5, wall, 1) for wall in (30.0, 31.0, 29.0)]
    timings += [bench.Timing(0, wall, 1) for wall in (26.0, 27.0, 40.0)]
    lines = bench.summary(timings, 5, 64)
    assert lines[0].startswith("64 hosts: --counter-window 5: median 30.0 s")
    assert lines[1].startswith("64 hosts: --counter-window 0: median 27.0 s")
    assert lines[2] == "difference +3.0 s (within the 5 s window), ratio 1.11x"
    assert lines[3].endswith(": met")
    over = bench.summary([bench.Timing(5, 40.0, 0), bench.Timing(0, 30.0, 0)], 5, 64)
    assert "OVER the 5 s window" in over[2] and over[3].endswith(": not met")
    assert len(bench.summary([bench.Timing(5, 4.0, 0), bench.Timing(0, 3.0, 0)], 5, 8)) == 3  # no goal at 8
    with pytest.raises(ValueError):
        bench.summary([bench.Timing(0, 3.0, 0)], 5, 64)


def test_the_options_default_to_the_goal_and_refuse_nonsense() -> None:
    args = bench.parser().parse_args([])
    assert (args.hosts, args.window, args.runs, args.concurrency) == (64, 5, 3, None)
    with pytest.raises(SystemExit):
        bench.parser().parse_args(["--window", "0"])
