"""Lab bring-up and tear-down: idempotent up, complete down, crashed labs, the tc and down faults."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from labsupport import lab_paths, requires_lab, running_lab

from fabcheck_lab import faults, lifecycle, net, procs
from fabcheck_lab.state import LabError, LabPaths, LabPids, load_pids

pytestmark = [pytest.mark.lab, requires_lab]


def _running(pids: LabPids) -> list[str]:
    refs = [pids.supervisor, *pids.nodes.values(), *pids.servers().values()]
    return [f"pid {r.pid}" for r in refs if procs.is_running(r.pid, r.start)]


def _lab_traces(paths: LabPaths, pids: LabPids) -> list[str]:
    """Everything of a lab that must be gone after `down`."""
    traces = _running(pids)
    traces += [f"process {p}: {procs.command_line(p)}" for p in procs.pids_mentioning(str(paths.run_dir))]
    with open("/proc/self/mounts") as mounts:
        traces += [f"mount {line.split()[1]}" for line in mounts if str(paths.run_dir) in line]
    if net.tree_installed():
        traces.append(f"qdisc {net.root_qdisc()}")
    traces += [f"file {p}" for p in (paths.run_dir, paths.inventory, paths.marker_dir) if p.exists()]
    return traces


def _wait_no_traces(paths: LabPaths, pids: LabPids, seconds: float = 5.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while (traces := _lab_traces(paths, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return traces


def _ssh(paths: LabPaths, node: str, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", str(paths.ssh_config), *extra, node, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def _fresh(seconds: int) -> tuple[str, ...]:
    """ssh options for a new connection that gives up quickly (no ControlPersist master reuse)."""
    return ("-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", f"ConnectTimeout={seconds}")


def test_down_removes_every_process_mount_qdisc_and_file() -> None:
    with running_lab(hosts=2, switches=1) as (paths, _state):
        pids = load_pids(paths)
        assert pids is not None and len(pids.nodes) == 2 and pids.switch_server is not None
        assert faults.inject(paths, "slow-link", "gpu02")
        assert net.tree_installed()
        assert _ssh(paths, "gpu01", "true").returncode == 0  # leaves a ControlPersist master behind
        assert procs.pids_mentioning(str(paths.control_dir)), "expected an ssh ControlMaster process"
        result = lifecycle.down(paths)
        assert result.found and not result.leftovers
        assert _wait_no_traces(paths, pids) == []
        assert lifecycle.status(paths) is None


def test_up_is_idempotent_and_refuses_a_different_shape() -> None:
    with running_lab(hosts=2, switches=1) as (paths, state):
        before = load_pids(paths)
        again = lifecycle.up(paths, hosts=2, switches=1)
        assert again.already_up and again.state.shape == state.shape
        assert load_pids(paths) == before
        with pytest.raises(LabError, match="a different lab is up"):
            lifecycle.up(paths, hosts=3, switches=1)


def test_a_crashed_lab_is_restarted_by_up_and_cleaned_by_down() -> None:
    with running_lab(hosts=2, switches=1) as (paths, _state):
        first = load_pids(paths)
        assert first is not None
        os.kill(first.supervisor.pid, signal.SIGKILL)
        assert procs.wait_gone([first.supervisor.pid], 5.0) == []
        report = lifecycle.status(paths)
        assert report is not None and not report.supervisor_alive and not report.healthy
        assert all(h.answers for h in report.nodes)  # the nodes outlive their supervisor

        restarted = lifecycle.up(paths, hosts=2, switches=1)
        assert not restarted.already_up
        assert _running(first) == []
        second = load_pids(paths)
        assert second is not None and second.supervisor != first.supervisor

        os.kill(second.supervisor.pid, signal.SIGKILL)
        lifecycle.down(paths)
        assert _wait_no_traces(paths, second) == []


def _throughput_gbps(source: str, destination: str, port: int, total: int) -> float:
    """Real TCP bytes from source to destination address (both on lo), in Gb/s."""
    with socket.create_server((destination, port)) as server:

        def sink() -> None:
            peer, _ = server.accept()
            with peer:
                while peer.recv(1 << 20):
                    pass

        reader = threading.Thread(target=sink)
        reader.start()
        chunk = b"\0" * (1 << 18)
        began = time.monotonic()
        with socket.create_connection((destination, port), source_address=(source, 0)) as client:
            for _ in range(total // len(chunk)):
                client.sendall(chunk)
        reader.join()
        return total * 8 / (time.monotonic() - began) / 1e9


def test_slow_link_limits_only_that_nodes_traffic_until_healed() -> None:
    with running_lab(hosts=3, switches=0) as (paths, state):
        gpu01, gpu02, gpu03 = (state.node(n).address for n in ("gpu01", "gpu02", "gpu03"))
        faults.inject(paths, "slow-link", "gpu02")
        slow = _throughput_gbps(gpu01, gpu02, 18000, 4 << 20)
        other = _throughput_gbps(gpu01, gpu03, 18001, 64 << 20)
        assert slow < 0.3, f"slow link still carries {slow:.2f} Gb/s"
        assert other > 1.0, f"an unaffected pair only gets {other:.2f} Gb/s"
        assert [(f.fault, f.node) for f in faults.heal(paths, node_name="gpu02")] == [("slow-link", "gpu02")]
        assert not net.tree_installed()
        healed = _throughput_gbps(gpu01, gpu02, 18002, 64 << 20)
        assert healed > 1.0, f"healed link only carries {healed:.2f} Gb/s"


def test_down_fault_silences_a_host_until_healed() -> None:
    with running_lab(hosts=2, switches=0) as (paths, _state):
        assert _ssh(paths, "gpu02", "hostname").stdout.strip() == "gpu02"
        faults.inject(paths, "down", "gpu02")
        failed = _ssh(paths, "gpu02", "true", *_fresh(2))
        assert failed.returncode == 255, failed.stderr
        report = lifecycle.status(paths)
        assert report is not None and report.healthy  # a node taken down on purpose is not a broken lab
        silent = {h.node.name: (h.answers, h.faults) for h in report.nodes}
        assert silent == {"gpu01": (True, ()), "gpu02": (False, ("down",))}
        faults.heal(paths, "gpu02", "down")
        assert _ssh(paths, "gpu02", "hostname", *_fresh(5)).stdout.strip() == "gpu02"


def test_lab_down_takes_a_stopped_host_with_it() -> None:
    with running_lab(hosts=1, switches=0) as (paths, _state):
        pids = load_pids(paths)
        assert pids is not None
        faults.inject(paths, "down", "gpu01")
        lifecycle.down(paths)
        assert _wait_no_traces(paths, pids) == []


def test_node_root_is_an_overlay_that_keeps_writes_away_from_the_machine() -> None:
    with running_lab(hosts=1, switches=0) as (paths, _state):
        marker = Path("/etc/fabcheck-lab-overlay-probe")
        script = (
            f"echo inside > {marker} && cat {marker} && ls /dev/shm | wc -l && "
            "(echo 1 > /proc/sys/net/ipv4/ip_forward) 2>&1; "
            "(touch /sys/class/net/new-file) 2>&1; hostname"
        )
        result = _ssh(paths, "gpu01", script)
        assert not marker.exists()
        upper = paths.node_root("gpu01") / "upper" / marker.relative_to("/")
        assert upper.read_text() == "inside\n"
        lines = result.stdout.splitlines()
        assert lines[0] == "inside" and lines[1] == "0"  # own empty /dev/shm: no controller key in sight
        assert "Read-only file system" in lines[2] and "Read-only file system" in lines[3]
        assert lines[4] == "gpu01"


def test_mock_sysfs_is_strict_like_the_real_one() -> None:
    """Attributes can be written in place (echo, cp) but not replaced (mv, Ansible copy's rename)."""
    with running_lab(hosts=1, switches=0) as (paths, _state):
        mtu = "/sys/class/net/ens1np0/mtu"
        script = (
            f"echo 9000 > {mtu} && cat {mtu} && ip link show ens1np0 | head -1; "
            f"echo 4200 > /tmp/mtu && cp /tmp/mtu {mtu} && cat {mtu}; "
            f"(mv /tmp/mtu {mtu}) 2>&1 | grep -c -e 'Read-only file system' -e 'busy'; cat {mtu}"
        )
        lines = _ssh(paths, "gpu01", script).stdout.splitlines()
        assert lines[0] == "9000" and "mtu 9000" in lines[1]
        assert lines[2] == "4200"
        assert lines[3] == "1" and lines[4] == "4200"
        assert (paths.node_root("gpu01") / "sys_class" / "net" / "ens1np0" / "mtu").read_text() == "4200\n"
        # Kernel-only attributes refuse every writer (hardware: no store method); `ethtool -s` retrains
        # the link, in the tool server and in the node's own interpreter path (the dispatcher the client
        # falls back to).
        speed, rate = "/sys/class/net/ens1np0/speed", "/sys/class/infiniband/mlx5_0/ports/1/rate"
        script = (
            f"(echo 1 > {speed}) 2>&1 | grep -c 'Read-only file system'; "
            f"(echo x > {rate}) 2>&1 | grep -c 'Read-only file system'; cat {speed}; "
            "ethtool -s ens1np0 speed 100000 && cat " + speed + " " + rate + "; "
            "/usr/local/bin/fabcheck-mock ethtool -s ens1np0 speed 200000 && cat " + speed + " " + rate
        )
        lines = _ssh(paths, "gpu01", script).stdout.splitlines()
        assert lines[:3] == ["1", "1", "400000"], lines
        assert lines[3:5] == ["100000", "100 Gb/sec (4X EDR)"], lines
        assert lines[5:] == ["200000", "200 Gb/sec (4X HDR)"], lines


def test_a_node_that_cannot_start_is_named_with_its_log_and_nothing_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("fabcheck_lab.nodes.sshd_config", lambda address, port: "NoSuchOption yes\n")
    paths = lab_paths()
    with pytest.raises(LabError, match=r"lab node gpu01 failed to start: .*NoSuchOption"):  # noqa: SIM117
        with running_lab(hosts=1, switches=0):
            pass
    assert not paths.run_dir.exists() and not paths.inventory.exists()
    assert procs.pids_mentioning(str(paths.run_dir)) == []


def test_a_taken_address_is_refused_before_anything_starts() -> None:
    paths = lab_paths()
    with socket.create_server(("127.0.1.2", 2222)), pytest.raises(LabError, match=r"127\.0\.1\.2:2222"):  # noqa: SIM117
        with running_lab(hosts=2, switches=0):
            pass
    assert not paths.run_dir.exists()


@pytest.mark.scale
def test_a_64_host_lab_comes_up_with_a_key_per_node_and_goes_away() -> None:
    with running_lab(hosts=64, switches=3) as (paths, state):
        pids = load_pids(paths)
        assert pids is not None
        report = lifecycle.status(paths)
        assert report is not None and report.healthy and all(h.answers for h in report.nodes)
        keys = [line.split()[2] for line in paths.known_hosts.read_text().splitlines()]
        assert len(keys) == 64 + 3 and len(set(keys[:64])) == 64  # one key per node
        assert len(set(keys[64:])) == 1  # one switch server key, listed for each switch address
        last = state.host_nodes()[-1]
        assert _ssh(paths, last.name, "hostname").stdout.strip() == last.name == "gpu64"
        assert last.profile == "pcie"
        lifecycle.down(paths)
        assert _wait_no_traces(paths, pids) == []
