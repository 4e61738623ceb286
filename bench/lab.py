"""Benchmark the lab: bring-up and tear-down time, and memory (PSS) per node, at several sizes.

Run as root, preferably inside the CI wrapper so nothing collides with a lab already running:

    .ci/lab-wrapper.sh .venv/bin/python bench/lab.py [--hosts 8 64 256] [--switches 16]

PSS comes from /proc/<pid>/smaps_rollup of every process of a node (its unshare, the node's sshd and
anything below), so shared pages are split fairly between nodes. Goals: 256 hosts + 16 switches up in
< 20 s, < 5 MB PSS per node, tear-down < 5 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from fabcheck.lab import lifecycle, procs
from fabcheck.lab.state import LabPaths, load_pids, project_root

GOAL_UP_S = 20.0
GOAL_DOWN_S = 5.0
GOAL_PSS_MB = 5.0


@dataclass(frozen=True)
class Run:
    hosts: int
    switches: int
    up_s: float
    down_s: float
    node_pss_mb: float  # mean over host nodes
    server_pss_mb: float  # the one mock switch server process serving every switch


def pss_kib(pid: int) -> int:
    """PSS of one process in KiB (every lab process must still be there: a lost one is an error)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            text = rollup.read()
    except OSError as err:
        raise SystemExit(f"cannot read the memory of lab process {pid}: {err}") from err
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    raise SystemExit(f"/proc/{pid}/smaps_rollup has no Pss line: {text[:200]!r}")


def measure_memory(paths: LabPaths) -> tuple[float, float]:
    pids = load_pids(paths)
    if pids is None:
        raise SystemExit("the lab recorded no pids")
    per_node = [sum(map(pss_kib, [ref.pid, *procs.descendants(ref.pid)])) for ref in pids.nodes.values()]
    server = pss_kib(pids.switch_server.pid) if pids.switch_server else 0
    return sum(per_node) / len(per_node) / 1024, server / 1024


def one_run(paths: LabPaths, hosts: int, switches: int) -> Run:
    began = time.monotonic()
    lifecycle.up(paths, profile="roce", hosts=hosts, switches=switches)
    up_s = time.monotonic() - began
    time.sleep(1.0)  # let sshd listeners settle before reading their memory
    node_mb, server_mb = measure_memory(paths)
    began = time.monotonic()
    result = lifecycle.down(paths)
    down_s = time.monotonic() - began
    if result.leftovers:
        raise SystemExit(f"tear-down left: {result.leftovers}")
    return Run(hosts, switches, up_s, down_s, node_mb, server_mb)


def table(runs: list[Run]) -> str:
    base = runs[0]
    rows = [
        f"{'hosts':>5} {'switches':>8} {'up s':>7} {'down s':>7} {'PSS/node MB':>11} {'server MB':>9} "
        f"{'up x':>6} {'down x':>6} {'PSS x':>6}"
    ]
    for run in runs:
        rows.append(
            f"{run.hosts:>5} {run.switches:>8} {run.up_s:>7.2f} {run.down_s:>7.2f} {run.node_pss_mb:>11.2f} "
            f"{run.server_pss_mb:>9.1f} {run.up_s / base.up_s:>6.1f} {run.down_s / base.down_s:>6.1f} "
            f"{run.node_pss_mb / base.node_pss_mb:>6.2f}"
        )
    return "\n".join(rows)


def verdicts(run: Run) -> list[str]:
    checks = [
        (f"up {run.up_s:.1f} s < {GOAL_UP_S:.0f} s", run.up_s < GOAL_UP_S),
        (f"PSS {run.node_pss_mb:.2f} MB/node < {GOAL_PSS_MB:.0f} MB", run.node_pss_mb < GOAL_PSS_MB),
        (f"down {run.down_s:.1f} s < {GOAL_DOWN_S:.0f} s", run.down_s < GOAL_DOWN_S),
    ]
    return [f"  {'ok  ' if passed else 'MISS'} {text}" for text, passed in checks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, nargs="+", default=[8, 64, 256], help="first one is the base")
    parser.add_argument("--switches", type=int, default=16)
    args = parser.parse_args(argv)
    paths = LabPaths.for_project(project_root())
    if lifecycle.status(paths) is not None:
        raise SystemExit("a lab is up in this checkout (the bench would replace it); run `fabcheck lab down`")
    runs = []
    for hosts in args.hosts:
        runs.append(one_run(paths, hosts, args.switches))
        print(f"measured {hosts} hosts + {args.switches} switches", file=sys.stderr, flush=True)
    print(table(runs))
    print(f"goals at {runs[-1].hosts} hosts + {runs[-1].switches} switches:")
    print("\n".join(verdicts(runs[-1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
