"""Benchmark the gate: `fabcheck validate` against a naive testinfra suite, on lab hosts behind an RTT.

Run as root inside the CI wrapper (it brings labs up and down in the lab tests' scratch project, never
the checkout's own lab):

    .ci/lab-wrapper.sh .venv/bin/python bench/validate.py [--hosts 8 64 256] [--rtt-ms 0 20]

For every (hosts, RTT): one lab (`lab up --rtt-ms`, no switches), its hosts configured to the lab intent
(so both sides judge mostly passing hosts; the last host is the pcie profile: fabcheck fails its GPU
affinity and exits 1, the naive suite has no affinity check and passes), then up to three runs, each
cold (no ssh ControlMaster left from the one before):

- fabcheck: `fabcheck validate -i inventory/lab --concurrency N` (one ssh round trip per host, N hosts
  at a time);
- naive -n 2: a pytest-testinfra suite that runs one ssh command per probe (the gate's core
  probes, 4 per host plus 7 per rail NIC; the gate reads more: GIDs, RDMA-CM mode, DCQCN parameters,
  driver and firmware, port rate, boot files), with xdist over 2 workers;
- naive: the same suite in one process (only up to --naive-serial-max-hosts: at 256 hosts and 20 ms it
  would run for a quarter of an hour and it is never the faster naive run there).

Figures: wall time and time per host (wall / hosts), controller CPU (user + system of the run and all
its children, plus the ssh ControlMaster processes it left behind, which are not its children any
more), lab CPU (every other process of the wrapper's PID namespace: sshd sessions, the scripts and
commands they run, the mock tool server), the most ssh connections open to the lab at once (established
TCP connections to the hosts' sshd port, sampled every 50 ms during the run) and ssh round trips per host
(ssh invocations, counted in a separate untimed pass through a counting `ssh` on PATH, so the counter's
own cost never enters the timed runs). Ratios are naive / fabcheck from the same lab.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fabcheck_lab import lifecycle, procs
from fabcheck_lab.state import LabPaths, LabState, project_root

REPO = project_root()
sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests" / "lab")]
from labsupport import lab_paths  # noqa: E402 - test support, found through the path set just above
from site_rerun import in_wrapper_namespace, namespace_cpu_s  # noqa: E402 - a sibling bench script

VENV_BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 1800.0
SAMPLE_EVERY_S = 0.05
TCP_ESTABLISHED = "01"
GOAL_HOSTS, GOAL_RATIO = 64, 5.0  # issue 10: at 64 hosts at least 5x faster than the best naive run
CONFIGURE = r"""
set -e
for netdev in $(ls /sys/class/net); do
    mlnx_qos -i "$netdev" --trust dscp >/dev/null
    mlnx_qos -i "$netdev" --pfc 0,0,0,1,0,0,0,0 >/dev/null
    ip link set dev "$netdev" mtu 9000
done
for dev in $(ls /sys/class/infiniband); do
    echo 106 > "/sys/class/infiniband/$dev/tc/1/traffic_class"
    cma_roce_tos -d "$dev" -t 106 >/dev/null
done
modprobe nvidia_peermem
"""

# The naive suite: what a testinfra user writes for the gate's checks, one command per probe.
NAIVE_SUITE = r"""
import re

import pytest

LINKS = {}  # host -> `rdma link` output, read once per host (one probe)
SLOTS = range(8)


def links(host):
    name = host.backend.get_hostname()
    if name not in LINKS:
        LINKS[name] = host.run("rdma link").stdout
    return LINKS[name]


def nics(host):
    return re.findall(r"^link (\S+)/1 .*netdev (\S+)", links(host), re.M)


def nic(host, slot):
    found = nics(host)
    if slot >= len(found):
        pytest.skip(f"no rail NIC {slot}")
    return found[slot]


def test_rdma_links_active(host):
    lines = links(host).splitlines()
    assert lines and all("state ACTIVE physical_state LINK_UP" in line for line in lines)


def test_topology_lists_gpus(host):
    assert "GPU0" in host.run("nvidia-smi topo -m").stdout


def test_nvidia_peermem_loaded(host):
    assert re.search(r"^nvidia_peermem ", host.run("lsmod").stdout, re.M)


def test_ports_active(host):
    out = host.run("ibv_devinfo -v").stdout
    assert out.count("PORT_ACTIVE") == len(nics(host))


@pytest.mark.parametrize("slot", SLOTS)
def test_qos(host, slot):
    _, netdev = nic(host, slot)
    out = host.run(f"mlnx_qos -i {netdev}").stdout
    assert "Priority trust state: dscp" in out
    assert re.search(r"enabled\s+0\s+0\s+0\s+1\s+0\s+0\s+0\s+0", out)


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("net/{netdev}/mtu", "9000"),
        ("net/{netdev}/ecn/roce_np/enable/3", "1"),
        ("net/{netdev}/ecn/roce_rp/enable/3", "1"),
        ("net/{netdev}/ecn/roce_np/cnp_dscp", "48"),
        ("net/{netdev}/ecn/roce_np/cnp_802p_prio", "6"),
        ("infiniband/{dev}/tc/1/traffic_class", "Global tclass=106"),
    ],
)
def test_sysfs(host, slot, path, expected):
    dev, netdev = nic(host, slot)
    value = host.run("cat /sys/class/" + path.format(dev=dev, netdev=netdev)).stdout.strip()
    assert value in (expected, expected.split("=")[-1])
"""

COUNTING_SSH = '#!/bin/sh\necho x >> "{log}"\nexec {ssh} "$@"\n'


@dataclass(frozen=True)
class Run:
    tool: str
    hosts: int
    rtt_ms: float
    wall_s: float
    cpu_s: float
    lab_cpu_s: float
    exit_code: int
    most_open: int
    round_trips_per_host: float | None = None

    @property
    def ms_per_host(self) -> float:
        return 1000 * self.wall_s / self.hosts


class OpenConnections:
    """The most ssh connections open to the lab at once while it runs: a thread reads the kernel's TCP
    table every 50 ms and counts the client ends of established connections to the sshd port."""

    def __init__(self, sshd_ports: set[int]) -> None:
        self.ports = {f"{port:04X}" for port in sshd_ports}
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> OpenConnections:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def count(self) -> int:
        found = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as rows:
                    next(rows, None)  # the header
                    for row in rows:
                        fields = row.split(maxsplit=4)  # sl, local, remote, state, ...
                        remote_port = fields[2].rpartition(":")[2]
                        found += fields[3] == TCP_ESTABLISHED and remote_port in self.ports
            except OSError:
                continue  # no IPv6 table: nothing open there
        return found

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self.most = max(self.most, self.count())


def children_cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0  # gone already: its CPU cannot be read any more
    return int(fields[11]) + int(fields[12])


def close_masters(paths: LabPaths) -> float:
    """CPU seconds of the ssh ControlMaster processes left behind; then end them (the next run is cold)."""
    masters = procs.pids_mentioning(str(paths.control_dir))
    seconds = sum(cpu_ticks(pid) for pid in masters) / os.sysconf("SC_CLK_TCK")
    procs.send(masters, signal.SIGTERM)
    procs.wait_gone(masters, 10.0)
    return seconds


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float  # the run's process tree
    namespace_cpu_s: float  # every process of the wrapper's PID namespace, the run included, this one not
    exit_code: int
    most_open: int
    tail: str


def timed(argv: list[str], env: dict[str, str], cwd: Path, sshd_ports: set[int]) -> Timed:
    with tempfile.TemporaryFile() as output, OpenConnections(sshd_ports) as connections:
        namespace_before, own_before = namespace_cpu_s(), own_cpu_s()
        began = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        # The bench itself (its sampler) is in the namespace too; the run it reaped stays in.
        namespace = namespace_cpu_s() - namespace_before - (own_cpu_s() - own_before)
        output.seek(0)
        tail = output.read()[-2000:].decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    return Timed(wall, children_cpu_s(usage), namespace, code, connections.most, tail)


def fabcheck_argv(paths: LabPaths, concurrency: int) -> list[str]:
    inventory = str(paths.inventory.parent)
    return [
        str(VENV_BIN / "fabcheck"),
        "validate",
        "-i",
        inventory,
        "--timeout",
        "300",
        "--concurrency",
        str(concurrency),
    ]


def naive_argv(paths: LabPaths, state: LabState, suite: Path, workers: int) -> list[str]:
    hosts = ",".join(f"ssh://{n.name}" for n in state.host_nodes() if n.group == "gpu_hosts")
    argv = [str(VENV_BIN / "python"), "-m", "pytest", str(suite), "-q", "-p", "no:cacheprovider"]
    argv += ["--rootdir", str(suite.parent), "-c", str(suite.parent / "pytest.ini")]
    argv += [f"--hosts={hosts}", f"--ssh-config={paths.ssh_config}"]
    return argv + (["-n", str(workers)] if workers else ["-p", "no:xdist"])


def configure_hosts(paths: LabPaths, state: LabState) -> None:
    def one(name: str) -> None:
        argv = ["ssh", "-F", str(paths.ssh_config), name, CONFIGURE]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise SystemExit(f"configuring {name} failed: {result.stderr.strip()}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, [n.name for n in state.host_nodes()]))
    close_masters(paths)


def count_round_trips(argv: list[str], env: dict[str, str], cwd: Path, hosts: int, scratch: Path) -> float:
    """ssh invocations per host of one (untimed) run, through a counting ssh first on PATH."""
    real_ssh = shutil.which("ssh")
    if real_ssh is None:
        raise SystemExit("ssh is not installed")
    counter_dir = scratch / "counting-bin"
    counter_dir.mkdir(exist_ok=True)
    log = scratch / "ssh-calls.log"
    log.write_text("")
    (counter_dir / "ssh").write_text(COUNTING_SSH.format(log=log, ssh=real_ssh))
    (counter_dir / "ssh").chmod(0o755)
    counted_env = {**env, "PATH": f"{counter_dir}:{env['PATH']}"}
    subprocess.run(argv, env=counted_env, cwd=cwd, capture_output=True, timeout=RUN_TIMEOUT_S, check=False)
    return len(log.read_text().splitlines()) / hosts


@dataclass(frozen=True)
class Options:
    concurrency: int
    naive_serial_max_hosts: int
    count_round_trips_at: int


def one_lab(
    paths: LabPaths, hosts: int, rtt_ms: float, scratch: Path, options: Options, count: bool
) -> list[Run]:
    result = lifecycle.up(paths, profile="roce", hosts=hosts, switches=0, rtt_ms=rtt_ms)
    state = result.state
    try:
        began = time.perf_counter()
        configure_hosts(paths, state)
        print(
            f"  lab of {hosts} hosts, RTT {rtt_ms:g} ms: up in {result.seconds:.1f} s, "
            f"configured in {time.perf_counter() - began:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        sshd_ports = {n.port for n in state.host_nodes()}
        suite = scratch / "test_naive_gate.py"
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        env.pop("PYTEST_ADDOPTS", None)
        variants = [("fabcheck", fabcheck_argv(paths, options.concurrency))]
        variants.append(("naive -n 2", naive_argv(paths, state, suite, 2)))
        if hosts <= options.naive_serial_max_hosts:
            variants.append(("naive", naive_argv(paths, state, suite, 0)))
        runs = []
        for tool, argv in variants:
            run = timed(argv, env, scratch, sshd_ports)
            masters_cpu = close_masters(paths)
            if run.exit_code not in (0, 1):
                what = (
                    "fabcheck validate could not check every host"
                    if tool == "fabcheck"
                    else "the naive suite did not run"
                )
                raise SystemExit(f"{what} (exit {run.exit_code}):\n{run.tail}")
            trips = count_round_trips(argv, env, scratch, hosts, scratch) if count else None
            close_masters(paths)
            cpu = run.cpu_s + masters_cpu
            lab_cpu = run.namespace_cpu_s - run.cpu_s - masters_cpu  # the masters were still alive in it
            runs.append(
                Run(tool, hosts, rtt_ms, run.wall_s, cpu, lab_cpu, run.exit_code, run.most_open, trips)
            )
            print(
                f"  {tool:<11} {hosts:>3} hosts RTT {rtt_ms:g} ms: {run.wall_s:.1f} s, CPU {cpu:.1f} s, "
                f"lab CPU {lab_cpu:.1f} s, at most {run.most_open} open, exit {run.exit_code}",
                file=sys.stderr,
                flush=True,
            )
        return runs
    finally:
        lifecycle.down(paths)


def table(runs: list[Run], concurrency: int) -> str:
    rows = [
        f"{'hosts':>5} {'RTT ms':>6} {'tool':<11} {'wall s':>7} {'ms/host':>7} {'CPU s':>6} {'lab CPU s':>9} "
        f"{'open':>4} {'trips/host':>10} {'wall x':>7} {'CPU x':>6} {'exit':>4}"
    ]
    base = {(r.hosts, r.rtt_ms): r for r in runs if r.tool == "fabcheck"}
    for r in runs:
        ref = base[(r.hosts, r.rtt_ms)]
        trips = f"{r.round_trips_per_host:.1f}" if r.round_trips_per_host is not None else "-"
        rows.append(
            f"{r.hosts:>5} {r.rtt_ms:>6g} {r.tool:<11} {r.wall_s:>7.1f} {r.ms_per_host:>7.0f} "
            f"{r.cpu_s:>6.1f} {r.lab_cpu_s:>9.1f} {r.most_open:>4} {trips:>10} {r.wall_s / ref.wall_s:>7.1f} "
            f"{r.cpu_s / ref.cpu_s:>6.1f} {r.exit_code:>4}"
        )
    rows.append(
        f"(open: most ssh connections to the lab at once; fabcheck ran with --concurrency {concurrency})"
    )
    return "\n".join(rows)


def best_naive_lines(runs: list[Run], concurrency: int) -> list[str]:
    """Per (hosts, RTT): the best naive run / fabcheck, and whether fabcheck kept within --concurrency."""
    lines = []
    for r in (r for r in runs if r.tool == "fabcheck"):
        naive = [n for n in runs if n.tool != "fabcheck" and (n.hosts, n.rtt_ms) == (r.hosts, r.rtt_ms)]
        best = min(naive, key=lambda n: n.wall_s)
        bounded = "within" if r.most_open <= concurrency else "OVER"
        line = (
            f"{r.hosts} hosts RTT {r.rtt_ms:g} ms: best naive ({best.tool}) {best.wall_s / r.wall_s:.1f}x "
            f"fabcheck's wall; fabcheck {r.ms_per_host:.0f} ms a host, at most {r.most_open} open "
            f"({bounded} --concurrency {concurrency})"
        )
        if r.hosts == GOAL_HOSTS:
            line += f"; goal {GOAL_RATIO:g}x: {'met' if best.wall_s / r.wall_s >= GOAL_RATIO else 'not met'}"
        lines.append(line)
    return lines


def marginal_lines(runs: list[Run]) -> list[str]:
    """fabcheck's time per added host between lab sizes at one RTT: flat when each host costs the same
    (the fixed start, about a second of Python imports and inventory loading, drops out)."""
    lines = []
    for rtt_ms in dict.fromkeys(r.rtt_ms for r in runs):
        ours = sorted((r for r in runs if r.tool == "fabcheck" and r.rtt_ms == rtt_ms), key=lambda r: r.hosts)
        steps = [
            f"{a.hosts}->{b.hosts} hosts {1000 * (b.wall_s - a.wall_s) / (b.hosts - a.hosts):.0f} ms"
            for a, b in itertools.pairwise(ours)
            if b.hosts > a.hosts
        ]
        if steps:
            lines.append(f"fabcheck per added host, RTT {rtt_ms:g} ms: " + ", ".join(steps))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--rtt-ms", type=float, nargs="+", default=[0.0, 20.0])
    parser.add_argument("--concurrency", type=int, default=16, help="fabcheck validate --concurrency")
    serial_help = "largest lab the one-process naive suite runs on (default 64)"
    parser.add_argument("--naive-serial-max-hosts", type=int, default=64, metavar="HOSTS", help=serial_help)
    count_help = "lab size whose runs are repeated through the counting ssh (0: none)"
    parser.add_argument("--count-round-trips-at", type=int, default=8, metavar="HOSTS", help=count_help)
    args = parser.parse_args(argv)
    if not in_wrapper_namespace():
        raise SystemExit("run inside .ci/lab-wrapper.sh: lab CPU is every other process of its PID namespace")
    options = Options(args.concurrency, args.naive_serial_max_hosts, args.count_round_trips_at)
    paths = lab_paths()  # the lab tests' scratch project: never the checkout's own lab
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="fabcheck-bench-validate-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "test_naive_gate.py").write_text(NAIVE_SUITE)
        (scratch / "pytest.ini").write_text("[pytest]\n")
        for rtt_ms in args.rtt_ms:
            for hosts in args.hosts:
                count = hosts == args.count_round_trips_at and rtt_ms == args.rtt_ms[0]
                runs += one_lab(paths, hosts, rtt_ms, scratch, options, count)
    trips = {r.tool: r.round_trips_per_host for r in runs if r.round_trips_per_host is not None}
    print(table(runs, args.concurrency))
    if trips:
        print("ssh round trips per host: " + ", ".join(f"{tool} {n:.1f}" for tool, n in trips.items()))
    print(f"(wall x and CPU x: that run / fabcheck at the same hosts and RTT; {os.cpu_count()} CPUs)")
    print("\n".join(best_naive_lines(runs, args.concurrency) + marginal_lines(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
