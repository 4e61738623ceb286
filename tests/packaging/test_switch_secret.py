"""The switch password never lands on disk (issue 28): the push is the action plugin
fabcheck.fabric.switch_config, which runs in the controller's process and ships no module payload.

ansible-playbook runs the switch_qos push task against a switch that accepts the TCP connection and
then says nothing (the push hangs in the SSH handshake), and is killed there, as an interrupted push
is; a second run against a switch that closes at once ends normally, failed. Afterwards no file under
the run's ANSIBLE_LOCAL_TEMP, ANSIBLE_REMOTE_TEMP, HOME or TMPDIR holds the password. The password
reaches the play only from the environment, so no file of the test holds it either.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import resource
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging_support import REPO, VENV_BIN, clean_env

PLAYBOOK = """\
- name: Push to one switch
  hosts: leaf01
  gather_facts: false
  tasks:
    - name: Push
      fabcheck.fabric.switch_config:
        name: leaf01
        platform: nvue
        address: 127.0.0.1
        port: {port}
        username: cumulus
        password: "{{{{ lookup('ansible.builtin.env', 'FABCHECK_TEST_SWITCH_PASSWORD') }}}}"
        config: "{{}}"
        connect_timeout: 120
"""


class Switch:
    """A TCP listener standing in for a switch: it either holds every connection silent or closes it."""

    def __init__(self, *, hold: bool) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.hold = hold
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted.set()
            if self.hold:
                self.held.append(conn)
            else:
                conn.close()

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.server.close()


@pytest.fixture
def password() -> str:
    return "Sw1tch-" + secrets.token_hex(12)


def start_play(tmp_path: Path, port: int, password: str) -> tuple[subprocess.Popen[str], dict[str, Path]]:
    dirs = {name: tmp_path / name for name in ("local_tmp", "remote_tmp", "home", "tmpdir", "play")}
    for path in dirs.values():
        path.mkdir()
    (dirs["play"] / "push.yml").write_text(PLAYBOOK.format(port=port))
    (dirs["play"] / "hosts.yml").write_text("all:\n  hosts:\n    leaf01:\n      ansible_host: 127.0.0.1\n")
    env = clean_env(
        HOME=str(dirs["home"]),
        TMPDIR=str(dirs["tmpdir"]),
        ANSIBLE_LOCAL_TEMP=str(dirs["local_tmp"]),
        ANSIBLE_REMOTE_TEMP=str(dirs["remote_tmp"]),
        # The checkout as the collection, as its ansible.cfg finds it (no ansible.cfg is read: none in
        # the play's folder nor in HOME).
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        FABCHECK_TEST_SWITCH_PASSWORD=password,
    )
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "hosts.yml", "push.yml", "-vvv"]
    output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    process = subprocess.Popen(
        argv, cwd=dirs["play"], env=env, start_new_session=True, preexec_fn=allow_core_dumps, **output
    )
    return process, dirs


def allow_core_dumps() -> None:
    """ansible-playbook starts with core dumps allowed where this machine lets them be, so a limit of 0
    in its worker is the plugin's. A container may hold the hard limit at 0 without the capability to
    raise it (CI's does): then every process already has core dumps off and the limit proves nothing."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        return
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def core_limits(root: int) -> dict[int, str]:
    """pid -> "soft hard" core limit of `root` and every process below it (ansible's workers start
    sessions of their own, so the tree is followed through parent ids)."""
    parents, limits = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    tree, grown = {root}, True
    while grown:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grown = bool(below)
    for pid in tree:
        with contextlib.suppress(OSError):
            line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if "core" in x)
            limits[pid] = " ".join(line.split()[4:6])
    return limits


def files_holding(secret: str, roots: Iterator[Path]) -> list[Path]:
    needle = secret.encode()
    return [
        path for root in roots for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()
    ]


def test_an_interrupted_push_leaves_no_password_on_disk(tmp_path: Path, password: str) -> None:
    switch = Switch(hold=True)
    process, dirs = start_play(tmp_path, switch.port, password)
    try:
        deadline = time.monotonic() + 120  # a generous bound: ansible-playbook's start on a loaded machine
        while not switch.accepted.wait(0.2):
            assert process.poll() is None, f"the play ended before its push: {process.communicate()[0]}"
            assert time.monotonic() < deadline, "the push never reached the switch"
        time.sleep(1)  # the push is now in the handshake, its arguments templated in the worker
        assert process.poll() is None, "the play ended before it could be interrupted"
        limits = core_limits(process.pid)
        if limits[process.pid] != "0 0":  # else: this machine forbids core dumps to every process
            assert "0 0" in limits.values(), f"no worker with core dumps off: {limits}"
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate(timeout=60)
    finally:
        switch.close()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert password not in output
    assert files_holding(password, iter(dirs.values())) == []
    assert not list(dirs["local_tmp"].rglob("AnsiballZ_*")), "a module payload was written"


def test_the_push_worker_turns_core_dumps_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's own step, independent of what this machine's limits allow to be observed."""
    monkeypatch.syspath_prepend(
        str(REPO / ".collections")
    )  # the checkout as the collection, as ansible finds it
    spec = importlib.util.spec_from_file_location(
        "switch_config_action", REPO / "plugins/action/switch_config.py"
    )
    assert spec is not None and spec.loader is not None
    switch_config = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(switch_config)
    assert switch_config.FABCHECK_IMPORT_ERROR is None
    calls: list[tuple[int, tuple[int, int]]] = []
    monkeypatch.setattr(
        switch_config.resource, "setrlimit", lambda which, limits: calls.append((which, limits))
    )
    monkeypatch.setattr(switch_config.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(switch_config.ActionModule, "_push", lambda self, params: {"changed": False})
    monkeypatch.setattr(switch_config.ActionModule, "validate_argument_spec", lambda self, **_: (None, {}))
    action = switch_config.ActionModule.__new__(switch_config.ActionModule)
    assert action.run(task_vars={}) == {"changed": False}
    assert calls == [(resource.RLIMIT_CORE, (0, 0))]


def test_a_finished_push_leaves_no_password_on_disk_nor_in_its_output(tmp_path: Path, password: str) -> None:
    switch = Switch(hold=False)
    process, dirs = start_play(tmp_path, switch.port, password)
    try:
        output, _ = process.communicate(timeout=180)
    finally:
        switch.close()
    assert process.returncode == 2, output  # the push failed (the switch hung up), reported as a failure
    assert "leaf01" in output and "rolled_back" in output
    assert password not in output
    assert files_holding(password, iter(dirs.values())) == []
