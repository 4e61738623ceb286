"""What a launch is asked to do and what it gave back; the one place that runs a launcher process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.collect.ssh import ConnectionVarError, SshTarget
from fabcheck.errors import FabcheckError
from fabcheck.intent.loader import HostEntry

# A launcher killed at its timeout gets this long after SIGTERM to stop its remote daemons itself.
TERM_GRACE_S = 5.0
# Output kept per stream: a runaway program cannot fill the controller's memory.
MAX_OUTPUT_CHARS = 64 << 20


class LaunchError(FabcheckError):
    """The launch could not be set up or started (no launcher binary, bad inventory value)."""


@dataclass(frozen=True)
class LaunchHost:
    """One host of a launch: its inventory name (what the launcher is told) and how ssh reaches it."""

    name: str
    ssh: SshTarget


def launch_hosts(entries: Sequence[HostEntry]) -> tuple[LaunchHost, ...]:
    hosts = []
    for entry in entries:
        try:
            hosts.append(LaunchHost(entry.name, SshTarget.from_host_vars(entry.name, entry.variables)))
        except ConnectionVarError as err:
            raise LaunchError(f"host {entry.name}: {err}") from None
    return tuple(hosts)


@dataclass(frozen=True)
class LaunchRequest:
    program: str
    args: tuple[str, ...]
    hosts: tuple[LaunchHost, ...]
    ranks_per_host: int
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not self.hosts:
            raise LaunchError("a launch needs at least one host")
        if self.ranks_per_host < 1:
            raise LaunchError(f"ranks_per_host must be >= 1, got {self.ranks_per_host}")
        bad = [name for name in self.env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
        if bad:
            raise LaunchError(f"not environment variable names: {bad}")

    @property
    def nranks(self) -> int:
        return len(self.hosts) * self.ranks_per_host


@dataclass(frozen=True)
class LaunchResult:
    argv: tuple[str, ...]
    rc: int | None  # None: killed at the timeout
    ranks: Mapping[int, tuple[str, ...]]  # rank -> its stdout lines, tag removed
    merged: str  # every stdout line in arrival order, tags removed
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.rc is None


@dataclass(frozen=True)
class Completed:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float


def run_process(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cwd: str | None = None
) -> Completed:
    """Run the launcher in its own process group; at the timeout SIGTERM it (so it can stop its daemons
    on the hosts), then SIGKILL the group. A missing binary is a LaunchError, never a traceback."""
    began = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as start_error:
        raise LaunchError(
            f"cannot start {argv[0]}: {start_error.strerror} (is it installed and on PATH?)"
        ) from None
    try:
        out, err = proc.communicate(timeout=timeout_s)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _stop(proc)
        out, err = proc.communicate()
        rc = None
    return Completed(rc, out[-MAX_OUTPUT_CHARS:], err[-MAX_OUTPUT_CHARS:], time.monotonic() - began)


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def split_tagged(
    text: str, tag: re.Pattern[str], inner_tag: re.Pattern[str] | None = None
) -> tuple[dict[int, tuple[str, ...]], str]:
    """Per-rank lines and the merged text of a launcher's tagged stdout.

    `tag` matches a whole line, with groups `rank` and `line`; lines without a tag (the launcher's own)
    go to the merged text only. `inner_tag` finds tags inside a line: Open MPI forwards output in the
    chunks it read, so a rank's line cut at a chunk end is followed, on the same output line, by another
    rank's tagged chunk, and its rest comes later under its own tag again. Such pieces are joined back.
    """
    ranks: dict[int, list[str]] = {}
    merged: list[str] = []
    pending: dict[int, str] = {}
    for raw in text.splitlines():
        match = tag.match(raw)
        if match is None:
            merged.append(raw)
            continue
        pieces = _pieces(int(match.group("rank")), match.group("line"), inner_tag)
        for index, (rank, piece) in enumerate(pieces):
            if index < len(pieces) - 1:  # cut off by the next tag: the line goes on later
                pending[rank] = pending.get(rank, "") + piece
                continue
            line = pending.pop(rank, "") + piece
            ranks.setdefault(rank, []).append(line)
            merged.append(line)
    for rank, piece in pending.items():  # output that ended without a newline
        ranks.setdefault(rank, []).append(piece)
        merged.append(piece)
    per_rank = {rank: tuple(lines) for rank, lines in sorted(ranks.items())}
    return per_rank, "".join(line + "\n" for line in merged)


def _pieces(rank: int, rest: str, inner_tag: re.Pattern[str] | None) -> list[tuple[int, str]]:
    pieces: list[tuple[int, str]] = []
    while inner_tag is not None and (found := inner_tag.search(rest)) is not None:
        pieces.append((rank, rest[: found.start()]))
        rank, rest = int(found.group("rank")), rest[found.end() :]
    pieces.append((rank, rest))
    return pieces
