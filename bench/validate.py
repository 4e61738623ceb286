"""Benchmark the gate: `fabcheck validate` against a naive testinfra suite, on lab hosts behind an RTT.

Run as root inside the CI wrapper (it brings labs up and down in this checkout):

    .ci/lab-wrapper.sh .venv/bin/python bench/validate.py [--hosts 8 64] [--rtt-ms 0 2 20]

For every (hosts, RTT): one lab (`lab up --rtt-ms`, no switches), its hosts configured to the lab intent
(so both sides judge mostly passing hosts; the last host is the pcie profile and fails GPU affinity in
both), then three runs, each cold (no ssh ControlMaster left from the one before):

- fabcheck: `fabcheck validate -i inventory/lab` (one ssh round trip per host, 16 hosts at a time);
- naive -n 2: a pytest-testinfra suite that runs one ssh command per probe (the same probes as the
  gate: 4 per host plus 7 per rail NIC), with xdist over 2 workers;
- naive: the same suite in one process.

Figures: wall time, controller CPU (user + system of the run and all its children, plus the ssh
ControlMaster processes it left behind, which are not its children any more) and ssh round trips per
host (ssh invocations, counted in a separate untimed pass through a counting `ssh` on PATH, so the
counter's own cost never enters the timed runs). Ratios are naive / fabcheck from the same lab.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fabcheck.lab import lifecycle, procs
from fabcheck.lab.state import LabPaths, LabState, project_root

VENV_BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 1800.0
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
    exit_code: int
    round_trips_per_host: float | None = None


def children_cpu_s(usage: resource.struct_rusage) -> float:
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


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the process tree, exit code, output tail)."""
    with tempfile.TemporaryFile() as output:
        began = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        tail = output.read()[-2000:].decode(errors="replace")
    return wall, children_cpu_s(usage), proc.returncode, tail


def fabcheck_argv(paths: LabPaths) -> list[str]:
    return [str(VENV_BIN / "fabcheck"), "validate", "-i", str(paths.inventory.parent), "--timeout", "300"]


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


def one_lab(paths: LabPaths, hosts: int, rtt_ms: float, scratch: Path, count: bool) -> list[Run]:
    result = lifecycle.up(paths, profile="roce", hosts=hosts, switches=0, rtt_ms=rtt_ms)
    state = result.state
    try:
        configure_hosts(paths, state)
        suite = scratch / "test_naive_gate.py"
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        env.pop("PYTEST_ADDOPTS", None)
        variants = [
            ("fabcheck", fabcheck_argv(paths)),
            ("naive -n 2", naive_argv(paths, state, suite, 2)),
            ("naive", naive_argv(paths, state, suite, 0)),
        ]
        runs = []
        for tool, argv in variants:
            wall, cpu, code, tail = timed(argv, env, scratch)
            cpu += close_masters(paths)
            if tool == "fabcheck" and code not in (0, 1):
                raise SystemExit(f"fabcheck validate could not check every host (exit {code}):\n{tail}")
            if tool != "fabcheck" and code not in (0, 1):
                raise SystemExit(f"the naive suite did not run (exit {code}):\n{tail}")
            trips = count_round_trips(argv, env, scratch, hosts, scratch) if count else None
            close_masters(paths)
            runs.append(Run(tool, hosts, rtt_ms, wall, cpu, code, trips))
            progress = f"{tool:<11} {hosts:>3} hosts RTT {rtt_ms:g} ms: {wall:.1f} s, CPU {cpu:.1f} s"
            print(f"  {progress}, exit {code}", file=sys.stderr, flush=True)
        return runs
    finally:
        lifecycle.down(paths)


def table(runs: list[Run]) -> str:
    rows = [
        f"{'hosts':>5} {'RTT ms':>6} {'tool':<11} {'wall s':>7} {'CPU s':>6} {'trips/host':>10} "
        f"{'wall x':>7} {'CPU x':>6} {'exit':>4}"
    ]
    base = {(r.hosts, r.rtt_ms): r for r in runs if r.tool == "fabcheck"}
    for r in runs:
        ref = base[(r.hosts, r.rtt_ms)]
        trips = f"{r.round_trips_per_host:.1f}" if r.round_trips_per_host is not None else "-"
        rows.append(
            f"{r.hosts:>5} {r.rtt_ms:>6g} {r.tool:<11} {r.wall_s:>7.1f} {r.cpu_s:>6.1f} {trips:>10} "
            f"{r.wall_s / ref.wall_s:>7.1f} {r.cpu_s / ref.cpu_s:>6.1f} {r.exit_code:>4}"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--rtt-ms", type=float, nargs="+", default=[0.0, 2.0, 20.0])
    count_help = "lab size whose runs are repeated through the counting ssh (0: none)"
    parser.add_argument("--count-round-trips-at", type=int, default=8, metavar="HOSTS", help=count_help)
    args = parser.parse_args(argv)
    paths = LabPaths.for_project(project_root())
    if lifecycle.status(paths) is not None:
        raise SystemExit("a lab is up in this checkout (the bench would replace it); run `fabcheck lab down`")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="fabcheck-bench-validate-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "test_naive_gate.py").write_text(NAIVE_SUITE)
        (scratch / "pytest.ini").write_text("[pytest]\n")
        for rtt_ms in args.rtt_ms:
            for hosts in args.hosts:
                count = hosts == args.count_round_trips_at and rtt_ms == args.rtt_ms[0]
                runs += one_lab(paths, hosts, rtt_ms, scratch, count)
    trips = {r.tool: r.round_trips_per_host for r in runs if r.round_trips_per_host is not None}
    print(table(runs))
    if trips:
        print("ssh round trips per host: " + ", ".join(f"{tool} {n:.1f}" for tool, n in trips.items()))
    print(f"(wall x and CPU x: that run / fabcheck at the same hosts and RTT; {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
