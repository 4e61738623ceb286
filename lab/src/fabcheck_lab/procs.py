"""Process bookkeeping from /proc: which processes belong to a lab, their trees, and stopping them.

A lab's processes are found by their own pid files and by the lab's unique run dir appearing in their
command line (unshare, node init, switch server, supervisor, ssh ControlPersist masters), never by a
program name shared with the rest of the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")


def start_time(pid: int) -> int | None:
    """Kernel start time of pid (clock ticks since boot), None when it is gone: guards against pid reuse."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; fields after the last ")" are fixed.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


def state_letter(pid: int) -> str | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def parent_pid(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def is_running(pid: int, started: int | None = None) -> bool:
    """Alive and not a zombie; when started is given it must also be the same process."""
    letter = state_letter(pid)
    if letter is None or letter in "ZX":
        return False
    return started is None or start_time(pid) == started


def command_line(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def all_pids() -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def pids_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains text (our run dir path), except this one."""
    me = os.getpid()
    return [pid for pid in all_pids() if pid != me and text in command_line(pid) and is_running(pid)]


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError):
            found.extend(int(p) for p in (task / "children").read_text().split())
    return found


def descendants(pid: int) -> list[int]:
    """Every process below pid, parents before children."""
    order: list[int] = []
    queue = children(pid)
    while queue:
        current = queue.pop(0)
        order.append(current)
        queue.extend(children(current))
    return order


def send(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until no pid is running (zombies count as gone); return those still running."""
    pending = list(pids)
    deadline = time.monotonic() + timeout
    while pending:
        pending = [pid for pid in pending if is_running(pid)]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return pending


def terminate(pids: Iterable[int], grace: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL what is left after grace seconds; return pids that still survive."""
    targets = [pid for pid in pids if is_running(pid)]
    send(targets, signal.SIGTERM)
    left = wait_gone(targets, grace)
    send(left, signal.SIGKILL)
    return wait_gone(left, 2.0)
