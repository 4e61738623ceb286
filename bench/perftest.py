"""Benchmark the perftest stage: wall time on lab hosts in fast mode, and the rounds the localisation
needs on simulated fleets.

Run as root inside the CI wrapper (it brings labs up and down in a scratch project, never the
checkout's own lab):

    .ci/lab-wrapper.sh .venv/bin/python bench/perftest.py [--hosts 8 32 64] [--sim 64 256 1024]

Lab part, for each host count: one lab (roce profile, no switches: the last host has 2 NICs, the
others 8), each host given what perftest needs to reach its floor (MTU 9000, so active_mtu 4096, and
nvidia_peermem for --use_cuda), then the perftest stage run in-process as the gate runs it (setup probe,
survey round, re-pairings). Figures: wall time, rounds, pairs measured, and the NIC verdicts (a healthy
lab should pass every NIC; on 2 cores the lab's CPU is shared by every pair of a wave).

Simulation part: fleets of N hosts x 8 rails with 1 and 3 bad NICs (factor 0.6, 1% noise), several
seeds; figures: rounds used (max over seeds), whether every bad NIC was named and nothing else, and
the CPU time of planning + localising.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fabcheck.collect.ssh import TimeLimits
from fabcheck.gate.fabric import plan_gate
from fabcheck.gate.perftest_stage import NIC, STAGE
from fabcheck.gate.stages import StageContext
from fabcheck.intent.loader import load_inventory
from fabcheck.pairs.localise import localise
from fabcheck.pairs.rounds import FAST, Endpoint, plan_rounds
from fabcheck.pairs.simulate import SimulatedRunner, fleet_of
from fabcheck.pairs.verdict import Judge
from fabcheck_lab import lifecycle
from fabcheck_lab.state import LabPaths, LabState

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "lab"))
from labsupport import lab_paths  # noqa: E402 - test support, found through the path set just above

PREPARE = r"""
set -e
for netdev in $(ls /sys/class/net); do ip link set dev "$netdev" mtu 9000; done
modprobe nvidia_peermem
"""
SEEDS = 5


def prepare_hosts(paths: LabPaths, state: LabState) -> None:
    def one(name: str) -> None:
        argv = ["ssh", "-F", str(paths.ssh_config), name, PREPARE]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise SystemExit(f"preparing {name} failed: {done.stderr.strip()}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, [n.name for n in state.host_nodes()]))


def lab_run(paths: LabPaths, hosts: int, concurrency: int) -> str:
    state = lifecycle.up(paths, profile="roce", hosts=hosts, switches=0).state
    try:
        prepare_hosts(paths, state)
        inventory = load_inventory(str(paths.inventory.parent))
        plan = plan_gate(inventory, stages=["host", "perftest"])
        context = StageContext(inventory, plan, TimeLimits(connect_s=60, command_s=120), concurrency, None)
        began = time.monotonic()
        outcome = STAGE.run(context)
        wall = time.monotonic() - began
    finally:
        lifecycle.down(paths)
    verdicts = Counter(f.status.value for node in outcome.nodes for f in node.findings if f.check == NIC)
    summary = outcome.notes[0]  # "perftest fast mode: P pairs in R rounds (...)"
    shown = ", ".join(f"{status} {count}" for status, count in sorted(verdicts.items()))
    return f"{hosts:>5} {concurrency:>6} {wall:>8.1f}  {summary}; NICs: {shown}"


def sim_run(count: int, bad: int) -> str:
    rounds, exact, cpu = [], 0, 0.0
    for seed in range(SEEDS):
        rng = random.Random(seed * 7919 + count + bad)
        nics = sorted(
            Endpoint(f"gpu{h:04d}", f"mlx5_{rng.randrange(8)}") for h in rng.sample(range(count), bad)
        )
        fleet = fleet_of(count, bad_nics=nics)
        runner = SimulatedRunner(fleet, seed=seed)
        began = time.process_time()
        diagnosis = localise(
            plan_rounds(fleet.nics_by_host, FAST),
            runner,
            lambda results: Judge.from_survey(lambda _pair: 360.0, results),
            fleet.endpoints,
        )
        cpu += time.process_time() - began
        rounds.append(diagnosis.rounds)
        exact += list(diagnosis.bad_nics) == nics and not (diagnosis.bad_links or diagnosis.unlocalised)
    spread = f"{max(rounds):>10} {min(rounds):>10}"
    return f"{count:>6} {bad:>4} {spread} {exact:>4}/{SEEDS} {cpu / SEEDS * 1000:>9.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--hosts", type=int, nargs="*", default=[8, 32, 64], help="lab sizes (none: skip the lab)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=16, help="pairs run at once in the lab (default 16)"
    )
    parser.add_argument("--sim", type=int, nargs="*", default=[64, 256, 1024], help="simulated fleet sizes")
    args = parser.parse_args(argv)
    print(f" hosts    bad max rounds min rounds exact   CPU ms   (simulated, 8 rails, {SEEDS} seeds)")
    for count in args.sim:
        for bad in (1, 3):
            print(sim_run(count, bad), flush=True)
    if args.hosts:
        paths = lab_paths()  # the lab tests' scratch project: never the checkout's own lab
        print("\n hosts  conc.   wall s  (lab, fast mode)")
        for hosts in args.hosts:
            print(lab_run(paths, hosts, args.concurrency), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
