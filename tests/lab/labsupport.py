"""Lab test support: why lab tests would be skipped, and a context manager that runs one lab.

Only one lab per checkout can run at a time (fixed addresses and run dir), so labs taken through
``running_lab`` are serialised with a file lock, also across pytest-xdist workers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabcheck.lab.state import LabPaths, LabState

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


def lab_paths() -> LabPaths:
    return LabPaths.for_project(REPO)


@contextlib.contextmanager
def running_lab(**shape: object) -> Iterator[tuple[LabPaths, LabState]]:
    """Bring a lab of this shape up for the duration of the block, then take it down."""
    from fabcheck.lab import lifecycle

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
