"""Benchmark the switch half: render, then push through site.yml to the lab's mock switches.

Run as root, inside the CI wrapper (it brings labs up and down in a scratch project of its own):

    .ci/lab-wrapper.sh .venv/bin/python bench/switch_push.py [--switches 16] [--serial N] [--quick]

Three labs of N switches (platforms cycle nvue, sonic, eos) and 2 hosts, each from factory state:

- lab 1: `fabcheck render` of every switch (the CLI as a process, and in-process: the inventory load
  once, then desired_switch + render_switch per switch); site.yml with a tag no task has (what every
  run pays before its first switch: ansible start, inventory, plays); the first run at serial 1; the
  idempotent rerun (must change nothing);
- lab 2: the first run and the rerun at `-e fabcheck_switch_serial=N` (every switch at once);
- lab 3: one switch of each platform alone (`--limit`), first run then rerun: the per-platform cost,
  since the playbook output has no per-host timing (no profile_tasks in ansible-core, and the junit
  callback times a task from its first serial batch, not per host).

Every play is `ansible-playbook site.yml --limit switches` with the repo's ansible.cfg. Figures: wall
time, controller CPU (user + system of the ansible process tree, RUSAGE_CHILDREN deltas), the mock
switch server's CPU (its /proc ticks; the switches' side, not the controller's) and the changed count
from the recap. Ratios are against runs of the same invocation. The bench exits 1 when a first run did
not change every switch, a rerun changed any, or any play failed: its figures would not be a push.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from fabcheck.errors import FabcheckError
from fabcheck_lab import lifecycle
from fabcheck_lab.state import LabPaths, LabState, load_pids, project_root

REPO = project_root()
VENV_BIN = Path(sys.executable).parent
HOSTS = 2
QUICK_SWITCHES = 4
RUN_TIMEOUT_S = 1800.0
RENDER_REPEATS = 20  # in-process render of every switch, median of this many passes
NO_SUCH_TAG = "fabcheck-bench-no-task"
RECAP = re.compile(r"^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
RENDER_HEADER = re.compile(r"^# \S+ \((?:nvue|sonic|eos), ", re.M)  # one per switch rendered
# Lab files the scratch project shares with the checkout (its own hosts.yml, .lab/ and run dir).
SHARED_LAB_FILES = ("ansible.cfg", "inventory/lab/group_vars", "inventory/lab/groups.yml")


class BenchFailed(SystemExit):
    """A run that did not do what its figure stands for (exit 1, with the reason)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"switch_push: {reason}")


@dataclasses.dataclass(frozen=True)
class Cost:
    label: str
    switches: int  # switches the run touched (0 for the fixed-cost run)
    wall_s: float
    cpu_s: float  # controller: the measured process and all its children
    server_cpu_s: float | None = None  # the mock switch server during the run
    changed: int | None = None  # switches whose recap says changed >= 1


@dataclasses.dataclass(frozen=True)
class PlayRun:
    cost: Cost
    changed: dict[str, int]
    troubled: dict[str, tuple[int, int]]  # switch -> (unreachable, failed), only where not (0, 0)
    output: str


@contextlib.contextmanager
def scratch_project() -> Iterator[LabPaths]:
    with tempfile.TemporaryDirectory(prefix="fabcheck-bench-switch-") as scratch:
        root = Path(scratch)
        (root / "inventory" / "lab").mkdir(parents=True)
        for shared in SHARED_LAB_FILES:
            (root / shared).symlink_to(REPO / shared)
        yield LabPaths.for_project(root)


@contextlib.contextmanager
def fresh_lab(paths: LabPaths, switches: int) -> Iterator[LabState]:
    """A lab from factory state (nothing offers to reset a mock switch in place: down, then up)."""
    lifecycle.down(paths)
    state = lifecycle.up(paths, profile="roce", hosts=HOSTS, switches=switches).state
    try:
        yield state
    finally:
        result = lifecycle.down(paths)
        if result.leftovers:
            print(f"switch_push: tear-down left {result.leftovers}", file=sys.stderr)


def switch_platforms(state: LabState) -> dict[str, str]:
    return {node.name: node.profile for node in state.nodes if node.kind == "switch"}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_cpu_s(paths: LabPaths) -> float:
    pids = load_pids(paths)
    if pids is None or pids.switch_server is None:
        raise BenchFailed("the lab recorded no switch server pid")
    with open(f"/proc/{pids.switch_server.pid}/stat") as stat:
        utime, stime = stat.read().rsplit(")", 1)[1].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


def timed_process(argv: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, controller CPU s, the finished process) of one command run from the checkout."""
    cpu_before = children_cpu_s()
    began = time.perf_counter()
    try:
        done = subprocess.run(
            argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise BenchFailed(f"{' '.join(argv[:2])} ran past {RUN_TIMEOUT_S:.0f} s") from err
    return time.perf_counter() - began, children_cpu_s() - cpu_before, done


def play(paths: LabPaths, label: str, *options: str) -> PlayRun:
    """One `site.yml --limit switches` run against the lab, with the recap parsed."""
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(paths.inventory.parent), str(REPO / "site.yml")]
    argv += ["--limit", "switches", *options]
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    server_before = server_cpu_s(paths)
    wall, cpu, done = timed_process(argv, env)
    server = server_cpu_s(paths) - server_before
    output = done.stdout + done.stderr
    recap = {m.group(1): tuple(map(int, m.group(2, 3, 4))) for m in RECAP.finditer(output)}
    if done.returncode != 0:
        raise BenchFailed(f"{label}: ansible-playbook exited {done.returncode}:\n{output[-3000:]}")
    changed = {name: counts[0] for name, counts in recap.items()}
    troubled = {name: counts[1:] for name, counts in recap.items() if counts[1:] != (0, 0)}
    touched = sum(1 for count in changed.values() if count)
    cost = Cost(label, len(recap), wall, cpu, server, touched)
    print(f"  {label}: {wall:.1f} s, CPU {cpu:.1f} s, changed {touched}/{len(recap)}", file=sys.stderr)
    return PlayRun(cost, changed, troubled, output)


def require(run: PlayRun, switches: list[str], changes: bool) -> None:
    """A first run changes every switch it names, a rerun none; no switch unreachable or failed."""
    label = run.cost.label
    if sorted(run.changed) != sorted(switches):
        raise BenchFailed(f"{label}: recap names {sorted(run.changed)}, expected {switches}")
    if run.troubled:
        raise BenchFailed(f"{label}: (unreachable, failed) {run.troubled}:\n{run.output[-3000:]}")
    wrong = [name for name, count in run.changed.items() if bool(count) != changes]
    if wrong:
        expected = "changed >= 1" if changes else "changed 0"
        raise BenchFailed(f"{label}: {', '.join(wrong)} not {expected}:\n{run.output[-3000:]}")


def render_in_process(inventory: Path, switches: int) -> list[Cost]:
    """The inventory load with its cabling (once), then desired_switch + render_switch of every switch.

    CPU here is this process's own (time.process_time), not its children's.
    """
    from fabcheck.desired.switch import desired_switch
    from fabcheck.intent.fabric import fabric_of
    from fabcheck.intent.loader import load_inventory
    from fabcheck.switch.render import render_switch

    began, cpu_began = time.perf_counter(), time.process_time()
    loaded = load_inventory(inventory)
    fabric = fabric_of(loaded)
    load = Cost(
        "inventory + cabling load (in-process)",
        0,
        time.perf_counter() - began,
        time.process_time() - cpu_began,
    )
    walls, cpus = [], []
    for _ in range(RENDER_REPEATS):
        began, cpu_began = time.perf_counter(), time.process_time()
        for switch in fabric.switches:
            if not render_switch(desired_switch(loaded.intent, fabric, switch.name)).text:
                raise BenchFailed(f"render_switch gave {switch.name} an empty config")
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu_began)
    label = f"desired+render (in-process, median of {RENDER_REPEATS})"
    return [load, Cost(label, switches, statistics.median(walls), statistics.median(cpus))]


def render_costs(paths: LabPaths, switches: int) -> list[Cost]:
    argv = [str(VENV_BIN / "fabcheck"), "render", "-i", str(paths.inventory.parent)]
    wall, cpu, done = timed_process(argv, dict(os.environ))
    if done.returncode != 0:
        raise BenchFailed(f"fabcheck render exited {done.returncode}: {done.stderr[-2000:]}")
    headers = RENDER_HEADER.findall(done.stdout)
    if len(headers) != switches:
        raise BenchFailed(f"fabcheck render printed {len(headers)} switch headers, expected {switches}")
    cli = Cost("fabcheck render (CLI process)", switches, wall, cpu)
    return [cli, *render_in_process(paths.inventory.parent, switches)]


@dataclasses.dataclass
class Figures:
    switches: int
    serial: int
    render: list[Cost]
    fixed: Cost
    first: Cost
    rerun: Cost
    first_parallel: Cost
    rerun_parallel: Cost
    alone: dict[str, tuple[Cost, Cost]]  # platform -> (first run, rerun) of one switch


def lab_serial_one(paths: LabPaths, switches: int) -> tuple[Counter[str], list[Cost], Cost, Cost, Cost]:
    with fresh_lab(paths, switches) as state:
        platforms = Counter(switch_platforms(state).values())
        names = sorted(switch_platforms(state))
        render = render_costs(paths, switches)
        fixed = play(paths, "site.yml, no task (fixed cost)", "--tags", NO_SUCH_TAG)
        require(fixed, names, changes=False)
        fixed_cost = dataclasses.replace(fixed.cost, switches=0)  # it pushes to none: no per-switch figure
        first = play(paths, "first run, serial 1")
        require(first, names, changes=True)
        rerun = play(paths, "rerun, serial 1")
        require(rerun, names, changes=False)
    return platforms, render, fixed_cost, first.cost, rerun.cost


def lab_parallel(paths: LabPaths, switches: int, serial: int) -> tuple[Cost, Cost]:
    option = f"fabcheck_switch_serial={serial}"
    with fresh_lab(paths, switches) as state:
        names = sorted(switch_platforms(state))
        first = play(paths, f"first run, serial {serial}", "-e", option)
        require(first, names, changes=True)
        rerun = play(paths, f"rerun, serial {serial}", "-e", option)
        require(rerun, names, changes=False)
    return first.cost, rerun.cost


def lab_one_switch_each(paths: LabPaths, switches: int) -> dict[str, tuple[Cost, Cost]]:
    alone: dict[str, tuple[Cost, Cost]] = {}
    with fresh_lab(paths, switches) as state:
        for name, platform in sorted(switch_platforms(state).items()):
            if platform in alone:
                continue
            first = play(paths, f"{name} alone ({platform}), first run", "--limit", name)
            require(first, [name], changes=True)
            rerun = play(paths, f"{name} alone ({platform}), rerun", "--limit", name)
            require(rerun, [name], changes=False)
            alone[platform] = (first.cost, rerun.cost)
    return alone


def ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}" if denominator > 0 else "-"


def cost_table(figures: Figures) -> str:
    rows = [
        f"{'run':<48} {'switches':>8} {'wall s':>7} {'CPU s':>6} {'server CPU s':>12} {'changed':>7} "
        f"{'wall/switch s':>13} {'CPU/switch s':>12}"
    ]
    alone = [cost for pair in figures.alone.values() for cost in pair]
    every = [*figures.render, figures.fixed, figures.first, figures.rerun]
    for cost in [*every, figures.first_parallel, figures.rerun_parallel, *alone]:
        server = f"{cost.server_cpu_s:.2f}" if cost.server_cpu_s is not None else "-"
        changed = str(cost.changed) if cost.changed is not None else "-"
        per_wall = f"{cost.wall_s / cost.switches:.3f}" if cost.switches else "-"
        per_cpu = f"{cost.cpu_s / cost.switches:.3f}" if cost.switches else "-"
        rows.append(
            f"{cost.label:<48} {cost.switches:>8} {cost.wall_s:>7.2f} {cost.cpu_s:>6.2f} {server:>12} "
            f"{changed:>7} {per_wall:>13} {per_cpu:>12}"
        )
    return "\n".join(rows)


def platform_table(figures: Figures) -> str:
    """One switch alone, per platform; 'push' takes off the fixed cost of a run that runs no task."""
    fixed = figures.fixed
    rows = [
        f"{'platform':<8} {'first wall s':>12} {'push s':>7} {'rerun wall s':>12} {'push s':>7} {'CPU s':>6}"
    ]
    for platform, (first, rerun) in figures.alone.items():
        rows.append(
            f"{platform:<8} {first.wall_s:>12.2f} {first.wall_s - fixed.wall_s:>7.2f} {rerun.wall_s:>12.2f} "
            f"{rerun.wall_s - fixed.wall_s:>7.2f} {first.cpu_s:>6.2f}"
        )
    return "\n".join(rows)


def ratio_lines(figures: Figures) -> list[str]:
    n, first, rerun, fixed = figures.switches, figures.first, figures.rerun, figures.fixed
    alone_first = statistics.mean(pair[0].wall_s for pair in figures.alone.values())
    marginal = (first.wall_s - alone_first) / (n - 1) if n > 1 else float("nan")
    parallel = figures.first_parallel
    return [
        f"rerun / first run (serial 1): wall {ratio(rerun.wall_s, first.wall_s)}, "
        f"CPU {ratio(rerun.cpu_s, first.cpu_s)}",
        f"serial {figures.serial} / serial 1 (first run): wall {ratio(parallel.wall_s, first.wall_s)}, "
        f"CPU {ratio(parallel.cpu_s, first.cpu_s)}; rerun: wall "
        f"{ratio(figures.rerun_parallel.wall_s, rerun.wall_s)}",
        f"{n} switches / one switch alone (first run, mean of the platforms {alone_first:.2f} s): wall "
        f"{ratio(first.wall_s, alone_first)} for {n}x the switches",
        f"per switch at serial 1: {first.wall_s / n:.2f} s wall, {first.cpu_s / n:.2f} s CPU (first run); "
        f"{rerun.wall_s / n:.2f} s wall (rerun); each switch past the first adds {marginal:.2f} s",
        f"fixed cost of a run (no task): {fixed.wall_s:.2f} s wall = "
        f"{ratio(fixed.wall_s, first.wall_s)} of the first run",
        f"render, in-process: {figures.render[2].wall_s * 1000 / n:.2f} ms per switch; a switch's push at "
        f"serial 1 (first run) costs {ratio(first.wall_s, figures.render[2].wall_s)} times that",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--switches", type=int, default=16, metavar="N", help="lab switches (default 16)")
    parser.add_argument("--serial", type=int, metavar="S", help="serial of the parallel run (default N)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SWITCHES} switches")
    args = parser.parse_args(argv)
    switches = QUICK_SWITCHES if args.quick else args.switches
    if not 3 <= switches <= 250:
        parser.error(f"--switches {switches}: needs 3..250 (one switch of each platform, at least)")
    serial = args.serial or switches
    if serial < 1:
        parser.error(f"--serial {serial}: needs >= 1")
    began = time.monotonic()
    try:
        with scratch_project() as paths:
            print(f"lab 1: {switches} switches, serial 1", file=sys.stderr)
            platforms, render, fixed, first, rerun = lab_serial_one(paths, switches)
            print(f"lab 2: {switches} switches, serial {serial}", file=sys.stderr)
            first_parallel, rerun_parallel = lab_parallel(paths, switches, serial)
            print(f"lab 3: one switch of each platform alone, of {switches}", file=sys.stderr)
            alone = lab_one_switch_each(paths, switches)
    except FabcheckError as err:  # not root, a port in use, a lab that did not come up: said, not traced
        raise SystemExit(f"switch_push: {err}") from None
    figures = Figures(switches, serial, render, fixed, first, rerun, first_parallel, rerun_parallel, alone)
    mix = ", ".join(f"{platform} {count}" for platform, count in sorted(platforms.items()))
    print(f"{switches} switches ({mix}) + {HOSTS} hosts, site.yml --limit switches")
    print(cost_table(figures))
    print("\none switch alone, per platform (push s = wall - the no-task run's wall):")
    print(platform_table(figures))
    print("\nratios:")
    print("\n".join(f"  {line}" for line in ratio_lines(figures)))
    print(f"({os.cpu_count()} CPUs; bench wall {time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
