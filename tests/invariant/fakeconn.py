"""A netmiko-like channel onto an in-process mock switch session: the drivers' channel reads see what
the lab's SSH server would send (echo of the typed line, the session's reply, the next prompt), without
SSH, so a driver's check-mode diff can be taken in-process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fabcheck_lab.mockswitch.device import CliSession
from fabcheck_lab.mockswitch.terminal import LineReader


@dataclass
class _Channel:
    closed: bool = False
    eof_received: bool = False


@dataclass
class SessionConnection:
    session: CliSession
    host: str
    reader: LineReader = field(default_factory=LineReader)
    pending: list[str] = field(default_factory=list)
    remote_conn: _Channel = field(default_factory=_Channel)
    read_timeout_override: float | None = 5.0

    @property
    def base_prompt(self) -> str:
        return self.session.prompt().rstrip().rstrip("$#>")

    def write_channel(self, data: str) -> None:
        echo, lines = self.reader.feed(data)
        out = [echo]
        for line in lines:
            if line is None:
                self.session.cancel()
                out.append("^C\r\n" + self.session.prompt())
                continue
            out.append(self.session.handle(line).replace("\n", "\r\n"))
            out.append(self.session.prompt())
        self.pending.append("".join(out))

    def read_channel(self) -> str:
        text, self.pending[:] = "".join(self.pending), []
        return text

    def normalize_cmd(self, command: str) -> str:
        return command.rstrip("\n") + "\n"

    def strip_command(self, command: str, output: str) -> str:
        """netmiko's: drop the echoed command line from the front of the output."""
        text = output.replace("\r\n", "\n")
        echoed = command.rstrip("\n") + "\n"
        return text[len(echoed) :] if text.startswith(echoed) else text

    def strip_prompt(self, output: str) -> str:
        lines = output.split("\n")
        return "\n".join(lines[:-1]) if lines and self.base_prompt in lines[-1] else output

    def enable(self) -> Any:
        self.write_channel("enable\n")
        return self.read_channel()

    def disconnect(self) -> None:
        self.remote_conn.closed = True
