"""The gate's round trip under faults, without sshd: the remote command runs under the local `sh` (as the
host's login shell would run it), with fake hung tools and a fake `ssh`.

Proves that a hung tool is stopped ON THE HOST (per tool, and the whole script at its limit), that
nothing it started outlives the run even when the client went away, and that each failure says which
limit expired and what ssh itself said. Timings only ever make a hung tool hang longer, never shorter:
no assertion depends on how fast this machine is.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect import ssh
from fabcheck.collect.backends.native import collect_host
from fabcheck.collect.host import remote_command
from fabcheck.collect.script import split_sections, watched
from fabcheck.collect.ssh import SshTarget, TimeLimits

TOKEN = "00c0ffee"
HUNG_TOOL = """#!/bin/sh
echo $$ >> "{pids}"
exec sleep 1000
"""
# What the script needs besides the tools it collects; anything else is "not found" (exit 127) at once.
BASE_COMMANDS = ("sh", "timeout", "cat", "mktemp", "rm", "sleep")


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A PATH with the base commands and no collection tool; `hang()` adds hung ones."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in BASE_COMMANDS:
        found = shutil.which(name)
        assert found, f"{name} is needed for this test"
        (bin_dir / name).symlink_to(found)
    return bin_dir


def hang(bin_dir: Path, *tools: str) -> Path:
    pids = bin_dir.parent / "pids"
    for tool in tools:
        path = bin_dir / tool
        path.write_text(HUNG_TOOL.format(pids=pids))
        path.chmod(0o755)
    return pids


def started(pids: Path) -> list[int]:
    return [int(pid) for pid in pids.read_text().split()] if pids.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def run_remote(bin_dir: Path, limits: TimeLimits) -> subprocess.CompletedProcess[str]:
    # A new session, as sshd gives the remote command; the wall limit only guards a broken test.
    return subprocess.run(
        ["sh", "-c", remote_command(TOKEN, 3, limits)],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
        check=False,
    )


def test_a_hung_tool_is_stopped_on_the_host_and_the_rest_still_collected(host: Path) -> None:
    pids = hang(host, "nvidia-smi")
    # 2 s for each tool and 300 s for the whole script: the hung tool is what stops first, always.
    done = run_remote(host, TimeLimits(command_s=300, per_tool_s=2))
    parsed = split_sections(done.stdout, TOKEN)
    assert done.returncode == 0 and parsed.complete
    topo = parsed.sections["topo"]
    assert topo.rc == 124 and "fabcheck: stopped after 2 s" in topo.stderr
    assert {"lsmod", "ibv_devinfo", "rdma_link"} <= set(parsed.sections)  # later sections still ran
    assert parsed.sections[collect.TIME_LIMIT].rc == 0
    hung = started(pids)  # topo -m and -q: nvidia-smi runs twice
    assert hung and not any(alive(pid) for pid in hung)


def test_the_host_stops_the_whole_collection_at_its_limit(host: Path) -> None:
    pids = hang(host, "nvidia-smi", "lsmod", "ibv_devinfo", "rdma")
    # Four hung tools of at least 1 s each cannot fit in 3 s: the script's own limit always fires.
    done = run_remote(host, TimeLimits(command_s=3))
    assert done.returncode == 124
    assert not split_sections(done.stdout, TOKEN).complete
    assert started(pids) and not any(alive(pid) for pid in started(pids))


def test_nothing_outlives_a_client_that_went_away(host: Path) -> None:
    """The client closes the connection while a tool hangs: the host still stops the tool and the
    script (a remote command without a terminal gets no hangup from sshd)."""
    pids = hang(host, "nvidia-smi", "lsmod", "ibv_devinfo", "rdma")
    remote = subprocess.Popen(
        ["sh", "-c", remote_command(TOKEN, 3, TimeLimits(command_s=300, per_tool_s=2))],
        env={"PATH": str(host)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        give_up = time.monotonic() + 120
        while not started(pids) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert started(pids), "the hung tool never started"
        assert remote.stdout is not None
        remote.stdout.close()  # the client is gone
        remote.wait(timeout=120)
    finally:
        if remote.poll() is None:
            os.killpg(remote.pid, signal.SIGKILL)
    assert not any(alive(pid) for pid in started(pids))
    assert len(started(pids)) == 1  # it stopped at the first write after the hung tool, not later


def test_the_collection_ends_soon_after_the_clients_stdin_closes(host: Path) -> None:
    """The native round trip holds ssh's stdin open and never writes it: when the controller dies (kill
    -9 included) it closes, and the host stops the collection then, not at its own limit (300 s here:
    the per-tool limit of 200 s cannot fire before the test's bound either)."""
    pids = hang(host, "nvidia-smi")
    remote = subprocess.Popen(
        ["sh", "-c", watched(remote_command(TOKEN, 3, TimeLimits(command_s=300, per_tool_s=200)))],
        env={"PATH": str(host)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        give_up = time.monotonic() + 120
        while not started(pids) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert started(pids), "the hung tool never started"
        assert remote.stdin is not None and remote.stdout is not None
        remote.stdin.close()  # the client is gone
        out = remote.stdout.read()  # ends when every process holding it has ended
        assert remote.wait(timeout=120) == 143
    finally:
        if remote.poll() is None:
            os.killpg(remote.pid, signal.SIGKILL)
    assert not any(alive(pid) for pid in started(pids))
    assert b"begin topo" in out and b"complete" not in out


# ---- the client side: which limit expired, and ssh's own words -----------------------------------


def fake_ssh(bin_dir: Path, body: str) -> None:
    """`ssh` that runs `body`; "$remote" is the remote command line (ssh's last argument)."""
    script = bin_dir / "ssh"
    script.write_text(f"#!/bin/sh\nfor remote; do :; done\n{body}\n")
    script.chmod(0o755)


TARGET = SshTarget("gpu01", "10.0.0.1", port=22)


def test_host_limit_expiry_is_a_command_timeout_naming_where_it_stopped(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = hang(host, "nvidia-smi", "lsmod", "ibv_devinfo", "rdma")
    fake_ssh(host, 'exec sh -c "$remote"')
    monkeypatch.setenv("PATH", str(host))
    collection = collect_host(TARGET, 3, TimeLimits(connect_s=5, command_s=3))
    assert collection.expired == ssh.COMMAND and not collection.complete
    assert collection.error is not None
    assert collection.error.startswith(
        "command timeout on the host: the collection did not finish within 3 s"
    )
    assert "output stopped in section" in collection.error
    assert not any(alive(pid) for pid in started(pids))


def test_a_host_that_never_answers_is_a_client_side_command_timeout(
    host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stopped host: ssh connects, says something, then nothing comes back.
    fake_ssh(host, 'echo "debug1: Authenticated to 10.0.0.1" >&2\nexec sleep 1000')
    monkeypatch.setenv("PATH", str(host))
    collection = collect_host(TARGET, 3, TimeLimits(connect_s=1, command_s=1))
    assert collection.expired == ssh.COMMAND
    assert collection.error == (
        "command timeout: no complete answer within 7 s (host limit 1 s, ssh ConnectTimeout 1 s); "
        "nothing was printed; ssh said: debug1: Authenticated to 10.0.0.1"
    )


SSH_FAILURES = [
    (
        "printf 'Connection timed out during banner exchange\\r\\n' >&2\n"
        "printf 'Connection to 10.0.0.1 port 22 timed out\\r\\n' >&2",
        ssh.CONNECT,
        "connect timeout (ssh ConnectTimeout 4 s) to 10.0.0.1:22: "
        "Connection timed out during banner exchange; Connection to 10.0.0.1 port 22 timed out",
    ),
    (
        "echo \"Warning: Permanently added '10.0.0.1' to the list of known hosts.\" >&2\n"
        "echo 'root@10.0.0.1: Permission denied (publickey).' >&2",
        None,
        "ssh to 10.0.0.1:22 failed: root@10.0.0.1: Permission denied (publickey).",
    ),
    ("", None, "ssh to 10.0.0.1:22 failed: exit 255"),
]


@pytest.mark.parametrize(("stderr", "expired", "error"), SSH_FAILURES, ids=["banner", "publickey", "silent"])
def test_ssh_failure_reports_what_ssh_said(
    host: Path, monkeypatch: pytest.MonkeyPatch, stderr: str, expired: str | None, error: str
) -> None:
    fake_ssh(host, f"{stderr}\nexit 255")
    monkeypatch.setenv("PATH", str(host))
    collection = collect_host(TARGET, 3, TimeLimits(connect_s=4, command_s=30))
    assert (collection.expired, collection.error) == (expired, error)


def test_real_ssh_to_a_closed_port_fails_at_once_with_its_own_reason() -> None:
    if shutil.which("ssh") is None:
        pytest.skip("needs the OpenSSH client")
    # Port 1 on loopback: nothing listens, the kernel refuses at once (no timer involved).
    target = SshTarget.from_host_vars(
        "gpu09", {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_ssh_common_args": "-F /dev/null"}
    )
    collection = collect_host(target, 3, TimeLimits(connect_s=60, command_s=60))
    assert collection.expired is None and not collection.sections
    assert (
        collection.error
        == "ssh to 127.0.0.1:1 failed: ssh: connect to host 127.0.0.1 port 1: Connection refused"
    )
