"""Lab `up` killed halfway, the switch password's one source, the RTT setting and the fast mock tools."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import asyncssh
import pytest
from labsupport import TEST_LOCK, lab_paths, requires_lab, running_lab

from fabcheck_lab import lifecycle, procs
from fabcheck_lab.mockhost.tools import CLIENT, DISPATCHER
from fabcheck_lab.state import PASSWORD_ENV, LabPaths, load_pids

pytestmark = [pytest.mark.lab, requires_lab]


@contextlib.contextmanager
def _lab_slot() -> Iterator[LabPaths]:
    """The test lab's paths, held for this test alone, with nothing left of earlier runs."""
    paths = lab_paths()
    with open(TEST_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lifecycle.down(paths)
        try:
            yield paths
        finally:
            lifecycle.down(paths)


def _up_killed_at(paths: LabPaths, stage: str) -> None:
    """Run `up` in a child process that is SIGKILLed the moment it reports stage."""

    def die_at(name: str) -> None:
        if name == stage:
            os.kill(os.getpid(), signal.SIGKILL)

    child = os.fork()
    if child == 0:  # pragma: no cover - the child never returns to pytest
        try:
            lifecycle.up(paths, hosts=1, switches=1, on_stage=die_at)
        finally:
            os._exit(3)  # reached only if the stage was never reported
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"up was not killed at {stage}"


def _ssh(paths: LabPaths, node: str, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", str(paths.ssh_config), *extra, node, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


FRESH = ("-o", "ControlMaster=no", "-o", "ControlPath=none")


@pytest.mark.parametrize("stage", lifecycle.UP_STAGES[:-1])
def test_an_up_killed_halfway_is_finished_by_the_next_up(stage: str) -> None:
    with _lab_slot() as paths:
        _up_killed_at(paths, stage)
        leftover = load_pids(paths)
        report = lifecycle.status(paths)
        assert report is None or not report.state.complete  # `lab status` says INCOMPLETE
        again = lifecycle.up(paths, hosts=1, switches=1)
        assert not again.already_up, f"killed at {stage}, yet called already up"
        assert again.state.complete and lifecycle.is_complete(paths, again.state)
        for path in (paths.known_hosts, paths.ssh_config, paths.inventory):
            assert path.is_file(), path
        assert _ssh(paths, "gpu01", "hostname", *FRESH).stdout.strip() == "gpu01"
        if leftover is not None:  # the killed run's processes were replaced, not kept beside the new ones
            assert not procs.is_running(leftover.supervisor.pid, leftover.supervisor.start)
        assert lifecycle.up(paths, hosts=1, switches=1).already_up


def test_a_complete_up_is_already_up_the_next_time() -> None:
    with _lab_slot() as paths:
        _up_killed_at(paths, "complete")
        assert lifecycle.up(paths, hosts=1, switches=1).already_up
        paths.inventory.unlink()  # someone removed an access file: the lab is rebuilt with it
        assert not lifecycle.up(paths, hosts=1, switches=1).already_up
        assert paths.inventory.is_file()


async def _switch_login(address: str, port: int, username: str, password: str, known_hosts: str) -> str:
    async with asyncssh.connect(
        address, port, username=username, password=password, known_hosts=known_hosts, client_keys=None
    ) as connection:
        return connection.get_extra_info("username")


def test_a_password_chosen_before_up_is_the_switches_and_the_inventorys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "chosen-before-up")
    with running_lab(hosts=1, switches=1) as (paths, state):
        assert paths.switch_password.read_text() == "chosen-before-up\n"
        inventory = paths.inventory.read_text()
        assert "chosen-before-up" not in inventory and PASSWORD_ENV not in inventory
        assert str(paths.switch_password) in inventory
        leaf = state.node("leaf01")
        login = _switch_login(
            leaf.address, leaf.port, leaf.username, "chosen-before-up", str(paths.known_hosts)
        )
        assert asyncio.run(login) == leaf.username
        with pytest.raises(asyncssh.PermissionDenied):
            asyncio.run(
                _switch_login(leaf.address, leaf.port, leaf.username, "other", str(paths.known_hosts))
            )


def _banner_seconds(address: str, port: int) -> float:
    began = time.monotonic()
    with socket.create_connection((address, port), timeout=30) as connection:
        assert connection.recv(64).startswith(b"SSH-2.0-")
    return time.monotonic() - began


def test_rtt_ms_delays_every_round_trip_to_a_host() -> None:
    with running_lab(hosts=1, switches=0, rtt_ms=20) as (paths, state):
        node = state.node("gpu01")
        assert _banner_seconds(node.address, node.port) >= 0.030  # handshake RTT + half an RTT
        began = time.monotonic()
        result = _ssh(paths, "gpu01", "mlnx_qos -i ens1np0 | head -2", *FRESH)
        assert time.monotonic() - began >= 0.020
        assert result.returncode == 0 and "trust state: pcp" in result.stdout, result.stderr
        # Over one open connection, each command still costs a round trip.
        master = ("-o", "ControlMaster=auto", "-o", f"ControlPath={paths.control_dir}/rtt-test")
        assert _ssh(paths, "gpu01", "true", *master).returncode == 0
        began = time.monotonic()
        assert _ssh(paths, "gpu01", "true", *master).returncode == 0
        assert time.monotonic() - began >= 0.020


def test_a_long_rtt_lab_is_up_and_stays_up() -> None:
    """Probes wait for banners that come 1.5 RTT late, so a slow link is not mistaken for a dead node."""
    with running_lab(hosts=1, switches=0, rtt_ms=400) as (paths, state):
        report = lifecycle.status(paths)
        assert report is not None and report.healthy
        assert lifecycle.up(paths, hosts=1, switches=0, rtt_ms=400).already_up
        node = state.node("gpu01")
        assert _banner_seconds(node.address, node.port) >= 0.6


def test_host_tools_in_a_node_go_to_the_tool_server_and_match_the_interpreter_path() -> None:
    with running_lab(hosts=1, switches=0) as (paths, state):
        if state.slow_tools:
            pytest.skip(f"the fast mock tools need a C compiler: {state.slow_tools}")
        pids = load_pids(paths)
        assert pids is not None and pids.tool_server is not None
        script = (
            "readlink /usr/local/bin/mlnx_qos /usr/local/bin/ib_write_bw; "
            "mlnx_qos -i ens1np0 --trust dscp >/dev/null; echo rc=$?; "
            "for tool in 'mlnx_qos -i ens1np0' 'ibv_devinfo -v' 'rdma link' lsmod 'nvidia-smi topo -m'; do "
            '  $tool > /tmp/fast 2>&1; echo "$?" >> /tmp/fast; '
            '  FABCHECK_MOCK_DIRECT=1 $tool > /tmp/slow 2>&1; echo "$?" >> /tmp/slow; '
            '  cmp -s /tmp/fast /tmp/slow && echo same || echo "differs: $tool"; done'
        )
        lines = _ssh(paths, "gpu01", script).stdout.splitlines()
        assert lines[:2] == [CLIENT, DISPATCHER]
        assert lines[2:] == ["rc=0"] + ["same"] * 5
        qos = (paths.node_root("gpu01") / "state" / "qos" / "ens1np0.json").read_text()
        assert '"trust": "dscp"' in qos  # the server wrote the node's own state file
