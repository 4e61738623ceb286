"""Can this machine run a lab? Each failed check is one clear message naming the fix."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
from collections.abc import Iterable
from pathlib import Path

from fabcheck_lab.nodeinit import SSHD
from fabcheck_lab.nodes import SYSTEM_PYTHON
from fabcheck_lab.state import SHM, LabError


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("fabcheck lab needs root (it creates namespaces, mounts and tc rules); run it as root")


def require_tools() -> None:
    missing = [tool for tool in ("unshare", "tc") if shutil.which(tool) is None]
    missing += [path for path in (SSHD, SYSTEM_PYTHON) if not Path(path).exists()]
    if missing:
        raise LabError(
            f"missing on this machine: {', '.join(missing)} "
            "(install util-linux, iproute2, openssh-server and python3)"
        )
    if not SHM.is_dir() or not os.access(SHM, os.W_OK):
        raise LabError(f"{SHM} is not a writable tmpfs; the lab keeps its run dir there")


def require_namespaces() -> None:
    """One throw-away unshare proves the kernel and seccomp profile allow what nodes need."""
    argv = ["unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "true"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        reason = result.stderr.strip() or f"exit {result.returncode}"
        raise LabError(f"cannot create mount/uts/pid namespaces here ({reason})")


def require_free(listeners: Iterable[tuple[str, int]]) -> None:
    """Every node address:port must be bindable, or the lab would collide with something already there."""
    busy: list[str] = []
    for address, port in listeners:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
            except OSError as err:
                if err.errno != errno.EADDRINUSE:
                    raise LabError(f"cannot bind {address}:{port}: {err.strerror}") from err
                busy.append(f"{address}:{port}")
    if busy:
        shown = ", ".join(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
        raise LabError(f"already in use: {shown} (another lab or sshd?); stop it or run `fabcheck lab down`")


def check_machine(listeners: Iterable[tuple[str, int]]) -> None:
    require_root()
    require_tools()
    require_namespaces()
    require_free(listeners)
