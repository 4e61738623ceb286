"""How fabcheck runs one command on a node: one small interface, two backends (local, ssh).

Recorded outputs are fabcheck.gate.snapshot's (`validate --save-snapshot`/`--from-snapshot`): one
snapshot format, the gate's.

Commands are argv lists. The ssh backend quotes them with shlex.join, so nothing user-supplied reaches a
remote shell unquoted. Every call has a timeout; a command that cannot run is reported, never a pass.
"""

from __future__ import annotations

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
