"""How fabcheck reaches a node: one small interface, several backends (local, ssh, recorded snapshot).

Commands are argv lists. The ssh backend quotes them with shlex.join, so nothing user-supplied reaches a
remote shell unquoted. Every call has a timeout; a command that cannot run is reported, never a pass.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CommandResult:
    command: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


class Transport(Protocol):
    name: str

    def run(self, command: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult: ...


def _completed(command: Sequence[str], argv: Sequence[str], timeout: float) -> CommandResult:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(command), 124, "", f"timed out after {timeout:g} s")
    except OSError as err:
        return CommandResult(tuple(command), 127, "", f"cannot run {argv[0]}: {err.strerror or err}")
    return CommandResult(tuple(command), done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class LocalTransport:
    name: str = "localhost"

    def run(self, command: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        return _completed(command, command, timeout)


@dataclass(frozen=True)
class SshTransport:
    """OpenSSH client; host-key checking and multiplexing come from the ssh_config, never disabled here."""

    name: str
    ssh_config: Path | None = None
    user: str | None = None

    def run(self, command: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        argv = ["ssh", "-o", "BatchMode=yes"]
        if self.ssh_config:
            argv += ["-F", str(self.ssh_config)]
        if self.user:
            argv += ["-l", self.user]
        argv += [self.name, "--", shlex.join(command)]
        return _completed(command, argv, timeout)


def snapshot_key(command: Sequence[str]) -> str:
    """File name for one command's recorded output: readable prefix + hash (argv may hold any bytes)."""
    readable = "_".join(command)[:48]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in readable)
    return f"{safe}.{hashlib.sha256(shlex.join(command).encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class SnapshotTransport:
    """Replays outputs saved by `record`: <dir>/<host>/<key>.{out,err,rc}."""

    name: str
    directory: Path

    def run(self, command: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        base = self.directory / self.name / snapshot_key(command)
        if not base.with_suffix(".rc").exists():
            return CommandResult(tuple(command), 127, "", f"no recorded output for {shlex.join(command)}")
        return CommandResult(
            tuple(command),
            int(base.with_suffix(".rc").read_text()),
            base.with_suffix(".out").read_text(),
            base.with_suffix(".err").read_text(),
        )

    def record(self, result: CommandResult) -> None:
        base = self.directory / self.name / snapshot_key(result.command)
        base.parent.mkdir(parents=True, exist_ok=True)
        base.with_suffix(".out").write_text(result.stdout)
        base.with_suffix(".err").write_text(result.stderr)
        base.with_suffix(".rc").write_text(str(result.rc))
