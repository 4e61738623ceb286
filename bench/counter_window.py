"""Benchmark the counter window: the gate's wall time with `--counter-window W` against `--counter-window 0`.

Every host waits the window inside its own round trip and every switch inside its own session, all at
once, so the whole gate should take about W longer, not W per node (issue 35: no more than the window
at 64 lab hosts). Run as root inside the CI wrapper (it brings a lab up and down in the lab tests'
scratch project, never the checkout's own lab):

    .ci/lab-wrapper.sh .venv/bin/python bench/counter_window.py [--hosts 64] [--window 5] [--runs 3]

One lab (`lab up`, the lab's default switches unless --switches), its hosts configured to the lab
intent as bench/validate.py does, then `--runs` pairs of cold runs of `fabcheck validate -i
inventory/lab` (the default pool, which reads the waiting hosts and switches that much more at once;
`--concurrency N` passes a fixed one), one with `--counter-window W` and one with `--counter-window 0`,
taking turns (so a slow minute of the shared machine hits both). Printed: each run's wall time, the
medians, their difference and ratio, and whether the difference is within the window.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

GOAL_HOSTS = 64  # issue 35: at 64 lab hosts the gate's wall grows by no more than the window


@dataclass(frozen=True)
class Timing:
    window_s: int
    wall_s: float
    exit_code: int


def validate_argv(fabcheck: Path, inventory: Path, concurrency: int | None, window_s: int) -> list[str]:
    """The timed command: the whole default gate (host, switch, link) with this counter window."""
    argv = [str(fabcheck), "validate", "-i", str(inventory), "--timeout", "300"]
    argv += [] if concurrency is None else ["--concurrency", str(concurrency)]
    return [*argv, "--counter-window", str(window_s)]


def turns(window_s: int, runs: int) -> list[int]:
    """The windows in the order they run: W, 0, W, 0, ... (`runs` of each)."""
    return [w for _ in range(runs) for w in (window_s, 0)]


def summary(timings: list[Timing], window_s: int, hosts: int) -> list[str]:
    """The figures: median wall with and without the window, their difference and ratio, the verdict."""
    with_window = [t.wall_s for t in timings if t.window_s == window_s]
    without = [t.wall_s for t in timings if t.window_s == 0]
    if not with_window or not without:
        raise ValueError("summary needs runs with the window and without it")
    median_with, median_without = statistics.median(with_window), statistics.median(without)
    grown = median_with - median_without
    within = "within" if grown <= window_s else "OVER"
    lines = [
        f"{hosts} hosts: --counter-window {window_s}: median {median_with:.1f} s "
        f"({', '.join(f'{w:.1f}' for w in with_window)})",
        f"{hosts} hosts: --counter-window 0: median {median_without:.1f} s "
        f"({', '.join(f'{w:.1f}' for w in without)})",
        f"difference {grown:+.1f} s ({within} the {window_s} s window), "
        f"ratio {median_with / median_without:.2f}x",
    ]
    if hosts == GOAL_HOSTS:
        met = "met" if grown <= window_s else "not met"
        lines.append(f"goal (issue 35: the wall grows by no more than the window): {met}")
    return lines


def parser() -> argparse.ArgumentParser:
    parsed = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parsed.add_argument("--hosts", type=_at_least_one, default=GOAL_HOSTS)
    parsed.add_argument("--switches", type=int, default=None, help="lab switches (default: the lab's own)")
    parsed.add_argument("--window", type=_at_least_one, default=5, help="the window W in seconds (default 5)")
    parsed.add_argument("--runs", type=_at_least_one, default=3, help="runs with W and with 0 (default 3)")
    parsed.add_argument(
        "--concurrency", type=_at_least_one, help="fabcheck validate --concurrency (default: its own)"
    )
    return parsed


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number, at least 1")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    repo = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(repo / "bench"), str(repo / "tests" / "lab")]
    from labsupport import lab_paths  # test support, found through the path set just above
    from site_rerun import in_wrapper_namespace
    from validate import VENV_BIN, close_masters, configure_hosts, timed

    from fabcheck_lab import lifecycle

    if not in_wrapper_namespace():
        raise SystemExit("run inside .ci/lab-wrapper.sh: it keeps the lab apart from any other")
    paths = lab_paths()  # the lab tests' scratch project: never the checkout's own lab
    result = lifecycle.up(paths, profile="roce", hosts=args.hosts, switches=args.switches)
    timings: list[Timing] = []
    try:
        configure_hosts(paths, result.state)
        sshd_ports = {n.port for n in result.state.host_nodes()}
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        with tempfile.TemporaryDirectory(prefix="fabcheck-bench-window-") as scratch:
            for window_s in turns(args.window, args.runs):
                command = validate_argv(
                    VENV_BIN / "fabcheck", paths.inventory.parent, args.concurrency, window_s
                )
                run = timed(command, env, Path(scratch), sshd_ports)
                close_masters(paths)
                if run.exit_code not in (0, 1):
                    raise SystemExit(
                        f"fabcheck validate could not check every node (exit {run.exit_code}):\n{run.tail}"
                    )
                timings.append(Timing(window_s, run.wall_s, run.exit_code))
                print(
                    f"  --counter-window {window_s}: {run.wall_s:.1f} s, exit {run.exit_code}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        lifecycle.down(paths)
    print("\n".join(summary(timings, args.window, args.hosts)))
    pool = "its default" if args.concurrency is None else args.concurrency
    print(f"({os.cpu_count()} CPUs; --concurrency {pool}; cold runs, no ssh ControlMaster left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
