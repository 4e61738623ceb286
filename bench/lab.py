"""Benchmark the lab: bring-up and tear-down time, memory (PSS) per node, and the cost of a mock tool call.

Run as root, preferably inside the CI wrapper so nothing collides with a lab already running:

    .ci/lab-wrapper.sh .venv/bin/python bench/lab.py [--hosts 8 64 256] [--switches 16] [--tool-calls 200]

Tool calls (one 2-host lab): each tool of the gate's collection, run --tool-calls times on gpu01's files
three ways: "before" is the interpreter path (the fabcheck-mock zip application under the system Python,
one interpreter per call, as every call was before the tool server); "no cache" is the C client talking
to a second tool server of the bench's own, started with --no-sysfs-cache on a copy of gpu01's files
(the server as it was before its sysfs cache: every attribute opened and read on every call); "after" is
the C client talking to the lab's own tool server (these two take turns call by call). Wall time and the
caller's CPU are measured per call (wait4); a tool server's CPU is read from /proc before and after the
calls (clock ticks), so its share is a mean per call.

PSS comes from /proc/<pid>/smaps_rollup of every process of a node (its unshare, the node's sshd and
anything below), so shared pages are split fairly between nodes. Goals: 256 hosts + 16 switches up in
< 20 s, < 5 MB PSS per node, tear-down < 5 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fabcheck.desired.nic import PERSIST_UNIT
from fabcheck_lab import lifecycle, procs
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import compile_client
from fabcheck_lab.mockhost.tools import CLIENT, DISPATCHER, SOCKET_NAME
from fabcheck_lab.state import LabPaths, load_pids, project_root

GOAL_UP_S = 20.0
GOAL_DOWN_S = 5.0
GOAL_PSS_MB = 5.0
GOAL_TOOL_MS = 5.0  # median wall and CPU of one mock tool call
# What the gate's collection runs on a rail8 host (sysfs reads are plain `cat`, not mock tools).
TOOL_CALLS = (
    ("nvidia-smi", "topo", "-m"),
    ("lsmod",),
    ("ibv_devinfo", "-v"),
    ("rdma", "link"),
    ("mlnx_qos", "-i", "ens1np0"),
    ("cma_roce_tos", "-d", "mlx5_0"),
    ("ibstat",),
    ("show_gids",),
    ("ip", "link", "show"),
    ("ethtool", "-S", "ens1np0"),
    ("systemctl", "is-enabled", PERSIST_UNIT),
)
# The boot unit the roce_host role installs, so that `systemctl is-enabled` reads a unit of the node's own.
BOOT_UNIT = (
    "[Unit]\nDescription=bench\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n\n"
    "[Install]\nWantedBy=multi-user.target\n"
)
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


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


@dataclass(frozen=True)
class ServedCost:
    wall_ms: float  # median over the calls
    client_cpu_ms: float  # median over the calls
    server_cpu_ms: float  # mean per call (the server's CPU over the batch / calls)

    @property
    def cpu_ms(self) -> float:
        return self.client_cpu_ms + self.server_cpu_ms


@dataclass(frozen=True)
class ToolCost:
    call: str
    before_wall_ms: float  # medians over the calls
    before_cpu_ms: float
    uncached: ServedCost  # a tool server without its sysfs cache
    after: ServedCost  # the lab's tool server


def cpu_ticks(pid: int) -> int:
    """utime + stime of a running process, in clock ticks."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def timed_call(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall ms, CPU ms of the process and its children, exit status) of one run, output discarded."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        began = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - began
    finally:
        os.close(null)
    return wall * 1000, (usage.ru_utime + usage.ru_stime) * 1000, os.waitstatus_to_exitcode(status)


def batch(argv: list[str], env: dict[str, str], calls: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(calls):
        wall, cpu, code = timed_call(argv, env)
        if code != 0:
            raise SystemExit(f"{' '.join(argv)} exited {code}: the measured call must succeed")
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


def served_batches(servers: list[tuple[list[str], int]], calls: int) -> list[ServedCost]:
    """Each (argv, server pid) run calls times, in turns, so that a load spike of the shared machine
    falls on all of them alike. Each server answers only its own argv, so its CPU over the whole loop
    (clean-up after a reply included) is the CPU of its calls."""
    served_env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
    walls: list[list[float]] = [[] for _ in servers]
    cpus: list[list[float]] = [[] for _ in servers]
    ticks_before = [cpu_ticks(server_pid) for _, server_pid in servers]
    for _ in range(calls):
        for index, (argv, _) in enumerate(servers):
            wall, cpu = batch(argv, served_env, 1)
            walls[index] += wall
            cpus[index] += cpu
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    spent = [cpu_ticks(pid) - ticks for (_, pid), ticks in zip(servers, ticks_before, strict=True)]
    server_ms = [ticks * tick_ms / calls for ticks in spent]
    return [
        ServedCost(statistics.median(wall), statistics.median(cpu), ms)
        for wall, cpu, ms in zip(walls, cpus, server_ms, strict=True)
    ]


def client_dir(bin_dir: Path, node: MockNodePaths, paths: LabPaths) -> Path:
    """bin_dir: tool names linked to a client of node's socket (and the dispatcher it falls back to)."""
    bin_dir.mkdir()
    problem = compile_client(bin_dir / CLIENT, str(node.state / SOCKET_NAME))
    if problem:
        raise SystemExit(f"cannot build the client: {problem}")
    (bin_dir / DISPATCHER).symlink_to(paths.bin_dir / DISPATCHER)
    for name in {call[0] for call in TOOL_CALLS}:
        (bin_dir / name).symlink_to(CLIENT)
    return bin_dir


def start_uncached_server(node: MockNodePaths, scratch: Path) -> subprocess.Popen[bytes]:
    """A tool server without the sysfs cache, serving node (a copy of a lab node's files) alone."""
    ready = scratch / "uncached.ready"
    argv = [sys.executable, "-m", "fabcheck_lab.mockhost.toolserver", "--no-sysfs-cache"]
    argv += ["--node", f"{node.root.name}={node.root}", "--ready", str(ready)]
    server = subprocess.Popen(argv, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60.0
    while not ready.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise SystemExit(f"the uncached tool server did not start: {server.communicate()[1].decode()}")
        time.sleep(0.05)
    return server


def copy_node(node: MockNodePaths, root: Path) -> MockNodePaths:
    copy = MockNodePaths.under(root)
    for source, target in ((node.state, copy.state), (node.sys_class, copy.sys_class), (node.etc, copy.etc)):
        shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(SOCKET_NAME))
    return copy


def tool_costs(paths: LabPaths, calls: int) -> list[ToolCost]:
    """Per-call cost of each tool on gpu01: interpreter path, uncached and lab tool server (see the top)."""
    pids = load_pids(paths)
    if pids is None or pids.tool_server is None:
        raise SystemExit("the lab has no tool server (no C compiler?): nothing to compare")
    node = MockNodePaths.under(paths.node_root("gpu01"))
    unit = node.etc / "systemd/system" / PERSIST_UNIT
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(BOOT_UNIT)
    link = node.etc / "systemd/system/multi-user.target.wants" / PERSIST_UNIT  # enabled: the call exits 0
    link.parent.mkdir(exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(f"/etc/systemd/system/{PERSIST_UNIT}")
    direct_env = {
        "PATH": SYSTEM_PATH,
        "LANG": "C.UTF-8",
        "FABCHECK_MOCK_STATE": str(node.state),
        "FABCHECK_MOCK_SYSCLASS": str(node.sys_class),
        "FABCHECK_MOCK_ETC": str(node.etc),
    }
    # Next to the lab's run dir: the copy's files on the same filesystem (tmpfs) as the lab's.
    with tempfile.TemporaryDirectory(prefix="fabcheck-bench-", dir=paths.run_dir.parent) as scratch_dir:
        scratch = Path(scratch_dir)
        # The lab's own client connects to the path the node sees; these to the sockets from here.
        lab_bin = client_dir(scratch / "bin-lab", node, paths)
        uncached_node = copy_node(node, scratch / node.root.name)
        uncached_bin = client_dir(scratch / "bin-uncached", uncached_node, paths)
        uncached_server = start_uncached_server(uncached_node, scratch)
        costs = []
        try:
            for call in TOOL_CALLS:
                before_wall, before_cpu = batch([str(paths.bin_dir / DISPATCHER), *call], direct_env, calls)
                uncached, after = served_batches(
                    [
                        ([str(uncached_bin / call[0]), *call[1:]], uncached_server.pid),
                        ([str(lab_bin / call[0]), *call[1:]], pids.tool_server.pid),
                    ],
                    calls,
                )
                median = statistics.median
                costs.append(
                    ToolCost(" ".join(call), median(before_wall), median(before_cpu), uncached, after)
                )
        finally:
            uncached_server.terminate()
            uncached_server.communicate(timeout=30)
    return costs


def tool_table(costs: list[ToolCost]) -> str:
    rows = [
        f"{'call':<24} {'before':>17} {'no cache':>15} {'after':>15} {'(client+server)':>15} "
        f"{'wall x':>7} {'CPU x':>6} {'cache CPU x':>11}",
        f"{'':<24} {'wall':>8} {'CPU':>8} {'wall':>7} {'CPU':>7} {'wall':>7} {'CPU':>7}",
    ]
    for c in costs:
        before = f"{c.before_wall_ms:>8.1f} {c.before_cpu_ms:>8.1f}"
        uncached = f"{c.uncached.wall_ms:>7.2f} {c.uncached.cpu_ms:>7.2f}"
        after = f"{c.after.wall_ms:>7.2f} {c.after.cpu_ms:>7.2f}"
        split = f"{c.after.client_cpu_ms:.2f}+{c.after.server_cpu_ms:.2f}"
        ratios = (
            f"{c.before_wall_ms / c.after.wall_ms:>7.0f} {c.before_cpu_ms / c.after.cpu_ms:>6.0f} "
            f"{c.uncached.cpu_ms / c.after.cpu_ms:>11.2f}"
        )
        rows.append(f"{c.call:<24} {before} {uncached} {after} {split:>15} {ratios}")
    return "\n".join(rows)


def tool_verdicts(costs: list[ToolCost]) -> list[str]:
    worst_wall = max(costs, key=lambda c: c.after.wall_ms)
    worst_cpu = max(costs, key=lambda c: c.after.cpu_ms)
    checks = [
        (f"median wall {worst_wall.after.wall_ms:.2f} ms ({worst_wall.call}) < {GOAL_TOOL_MS:.0f} ms",
         worst_wall.after.wall_ms < GOAL_TOOL_MS),
        (f"median CPU {worst_cpu.after.cpu_ms:.2f} ms ({worst_cpu.call}) < {GOAL_TOOL_MS:.0f} ms",
         worst_cpu.after.cpu_ms < GOAL_TOOL_MS),
    ]  # fmt: skip
    return [f"  {'ok  ' if passed else 'MISS'} {text} (slowest tool)" for text, passed in checks]


def measure_tools(paths: LabPaths, calls: int) -> None:
    lifecycle.up(paths, profile="roce", hosts=2, switches=0)
    try:
        costs = tool_costs(paths, calls)
    finally:
        lifecycle.down(paths)
    print(f"mock tool calls, ms ({calls} each, medians; served CPU = client median + server mean;")
    print(" x: before / after, cache x: no cache / after):")
    print(tool_table(costs))
    print("\n".join(tool_verdicts(costs)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, nargs="+", default=[8, 64, 256], help="first one is the base")
    parser.add_argument("--switches", type=int, default=16)
    parser.add_argument("--tool-calls", type=int, default=200, metavar="N", help="per tool; 0: skip")
    parser.add_argument("--tools-only", action="store_true", help="only the tool-call comparison")
    args = parser.parse_args(argv)
    paths = LabPaths.for_project(project_root())
    if lifecycle.status(paths) is not None:
        raise SystemExit("a lab is up in this checkout (the bench would replace it); run `fabcheck lab down`")
    if args.tool_calls > 0:
        measure_tools(paths, args.tool_calls)
    if args.tools_only:
        return 0
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
