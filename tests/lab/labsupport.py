"""Lab test support: why lab tests would be skipped, and a context manager that runs one lab.

Test labs belong to a scratch checkout (the repo's lab intent, groups and ansible.cfg linked in, but its
own .lab/, hosts.yml and run dir), so a test never touches a lab the user has up. Node addresses are
fixed, so labs taken through ``running_lab`` are serialised with a file lock, also across xdist workers.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabcheck_lab.state import LabPaths, LabState

REPO = Path(__file__).resolve().parents[2]
TEST_LOCK = Path("/dev/shm/fabcheck-lab-tests.lock")


def _lab_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "lab tests need root (namespaces, mounts, tc)"
    if not Path("/usr/sbin/sshd").exists():
        return "lab tests need openssh-server (/usr/sbin/sshd)"
    for tool in ("unshare", "tc"):
        if shutil.which(tool) is None:
            return f"lab tests need `{tool}`"
    probe = ["unshare", "--mount", "--uts", "--pid", "--fork", "true"]
    if subprocess.run(probe, capture_output=True, check=False).returncode != 0:
        return "this machine does not allow mount/uts/pid namespaces"
    return None


LAB_UNAVAILABLE = _lab_unavailable()
requires_lab = pytest.mark.skipif(LAB_UNAVAILABLE is not None, reason=LAB_UNAVAILABLE or "")


@functools.cache
def lab_project() -> Path:
    root = Path(tempfile.mkdtemp(prefix="fabcheck-lab-tests-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "inventory" / "lab").mkdir(parents=True)
    for shared in ("ansible.cfg", "inventory/lab/group_vars", "inventory/lab/groups.yml"):
        if (REPO / shared).exists():
            (root / shared).symlink_to(REPO / shared)
    return root


def lab_paths() -> LabPaths:
    return LabPaths.for_project(lab_project())


@contextlib.contextmanager
def running_lab(**shape: object) -> Iterator[tuple[LabPaths, LabState]]:
    """Bring a lab of this shape up for the duration of the block, then take it down."""
    from fabcheck_lab import lifecycle

    paths = lab_paths()
    with open(TEST_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        report = lifecycle.status(paths)
        if report is not None and report.healthy:
            pytest.skip(f"a lab is already up in this checkout ({paths.run_dir}); tests leave it alone")
        lifecycle.down(paths)  # remains of an interrupted run must not leak into this lab
        try:
            result = lifecycle.up(paths, **shape)  # type: ignore[arg-type]
            yield paths, result.state
        finally:
            lifecycle.down(paths)


@contextlib.contextmanager
def converged_lab(*options: str, **shape: object) -> Iterator[LabPaths]:
    """A lab of this shape that site.yml (with these options) converged, for the duration of the block."""
    with running_lab(**shape) as (paths, _state):
        converged = run_playbook(paths, *options)
        assert converged.rc == 0, converged.output[-4000:]
        yield paths


@contextlib.contextmanager
def injected(paths: LabPaths, fault: str, node: str) -> Iterator[None]:
    """The fault on the node for the duration of the block, healed after it whatever happens."""
    from fabcheck_lab import faults

    assert faults.inject(paths, fault, node), f"{fault} was already active on {node}"
    try:
        yield
    finally:
        faults.heal(paths, node, fault)


RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass(frozen=True)
class PlaybookRun:
    rc: int
    output: str
    changed: dict[str, int]  # host -> changed count of the PLAY RECAP
    failed: dict[str, int]


def run_playbook(paths: LabPaths, *options: str, playbook: str = "site.yml") -> PlaybookRun:
    """`ansible-playbook PLAYBOOK` of the repo against the lab's inventory, with the repo's ansible.cfg."""
    command = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(command), "-i", str(paths.inventory.parent), str(REPO / playbook), *options]
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    recap = {m.group(1): (int(m.group(3)), int(m.group(5))) for m in RECAP.finditer(output)}
    return PlaybookRun(
        done.returncode, output, {h: c[0] for h, c in recap.items()}, {h: c[1] for h, c in recap.items()}
    )


GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


def validate_json(paths: LabPaths, *options: str) -> tuple[int, list[dict]]:
    """`fabcheck validate --json` over the lab's inventory: the exit code (0, 1 or 3) and its subjects."""
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent)]
    done = subprocess.run(
        [*argv, "--json", *GENEROUS, *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]
