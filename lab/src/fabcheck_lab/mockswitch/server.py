"""One asyncssh process serving every mock switch of a lab run, plus its UNIX control socket."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import itertools
import json
import logging
import os
import random
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from fabcheck.intent.platforms import platform_named, resolve
from fabcheck_lab.mockswitch.control import reachable_path
from fabcheck_lab.mockswitch.device import SwitchDevice
from fabcheck_lab.mockswitch.spec import (
    MockSwitchError,
    SwitchSpec,
    control_socket_path,
    host_key_path,
    known_hosts_path,
    read_spec,
    ready_path,
    state_path,
    write_private,
)
from fabcheck_lab.mockswitch.terminal import LineReader
from fabcheck_lab.mockswitch.wire import WireWriter, drain

log = logging.getLogger("fabcheck.mockswitch")
_RANDOM = random.Random()  # where a hostile switch cuts its writes (Timing): any point, any run


def device_class(platform: str) -> type[SwitchDevice]:
    """The mock its platform record names."""
    named = platform_named(platform).mock
    device = resolve(named)
    if not (isinstance(device, type) and issubclass(device, SwitchDevice)) or device.platform != platform:
        raise MockSwitchError(f"platform {platform}: {named} is not the mock SwitchDevice of {platform}")
    return device


def make_device(spec: SwitchSpec, run_dir: Path) -> SwitchDevice:
    """A fresh device, or the one a previous server of this lab run left behind."""
    device = device_class(spec.platform)(spec)
    previous = state_path(run_dir, spec.name)
    if previous.exists():
        with contextlib.suppress(ValueError, OSError):
            device.load(json.loads(previous.read_text()))
    return device


class _PasswordServer(asyncssh.SSHServer):
    def __init__(self, spec: SwitchSpec) -> None:
        self.spec = spec

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return username == self.spec.username and hmac.compare_digest(
            password.encode(), self.spec.password.encode()
        )


@dataclass(frozen=True)
class Timing:
    """How a hostile switch answers (set by a test through the control socket, `timing`): each write
    split into pieces of `chunk_bytes` (0: whole; at most `pieces` of them, the last one the rest), each
    piece sent `delay_s` late; while it waits it reads nothing, so lines typed meanwhile arrive
    together and are echoed together, as a tty echoes typed-ahead lines. After answering
    `silent_after` typed lines of a session (0: from the login on, no greeting either) it sends nothing
    more, while still reading and running what it is sent."""

    delay_s: float = 0.0
    chunk_bytes: int = 0
    silent_after: int | None = None
    pieces: int = 4

    @classmethod
    def from_request(cls, request: dict[str, Any]) -> Timing:
        delay, chunk = float(request.get("delay_s", 0.0)), int(request.get("chunk_bytes", 0))
        silent, pieces = request.get("silent_after"), int(request.get("pieces", 4))
        if not 0 <= delay <= 60 or chunk < 0 or pieces < 1 or (silent is not None and int(silent) < 0):
            raise MockSwitchError(
                f"timing: delay_s 0..60, chunk_bytes >= 0, pieces >= 1, silent_after >= 0: {request}"
            )
        return cls(delay, chunk, None if silent is None else int(silent), pieces)


class SwitchServer:
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.specs = read_spec(run_dir)
        self.devices = {s.name: make_device(s, run_dir) for s in self.specs}
        for device in self.devices.values():
            device.traffic_feed = self.feed_traffic
            device.cable_peers = self.devices
        self.wires = WireWriter(run_dir)
        self.armed: dict[str, int] = {}
        self.timing: dict[str, Timing] = {}
        self.listeners: list[Any] = []

    # -- state ------------------------------------------------------------------------------------
    def dump(self, name: str) -> None:
        """Dump the switch's state, and show its ports' QoS to the host NICs cabled to them."""
        device = self.devices[name]
        device.dump(state_path(self.run_dir, name))
        self.wires.write(device)

    def feed_traffic(self) -> None:
        """Add the hosts' spooled traffic to the switches' counters (every switch: a host's records may
        name any of them)."""
        for name in sorted(drain(self.run_dir, self.devices)):
            self.dump(name)

    def _host_key(self) -> asyncssh.SSHKey:
        path = host_key_path(self.run_dir)
        if path.exists():
            return asyncssh.read_private_key(str(path))
        key = asyncssh.generate_private_key("ssh-ed25519")
        write_private(path, key.export_private_key().decode())
        return key

    def _write_known_hosts(self, key: asyncssh.SSHKey) -> None:
        public = key.export_public_key("openssh").decode().split()[:2]
        lines = []
        for spec in self.specs:
            host = spec.address if spec.port == 22 else f"[{spec.address}]:{spec.port}"
            lines.append(f"{host} {' '.join(public)}\n")
        write_private(known_hosts_path(self.run_dir), "".join(lines))

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        ready_path(self.run_dir).unlink(missing_ok=True)
        key = self._host_key()
        for spec in self.specs:
            self.listeners.append(
                await asyncssh.create_server(
                    functools.partial(_PasswordServer, spec),
                    spec.address,
                    spec.port,
                    server_host_keys=[key],
                    process_factory=functools.partial(self._serve_process, spec.name),
                    line_editor=False,
                    encoding="utf-8",
                    errors="replace",
                    reuse_address=True,
                )
            )
            self.dump(spec.name)
        sock = control_socket_path(self.run_dir)
        sock.unlink(missing_ok=True)
        with reachable_path(sock) as address:
            self.listeners.append(await asyncio.start_unix_server(self._control, path=address))
        os.chmod(sock, 0o600)
        self._write_known_hosts(key)
        ready = {
            "pid": os.getpid(),
            "switches": [s.name for s in self.specs],
            "known_hosts": str(known_hosts_path(self.run_dir)),
        }
        write_private(ready_path(self.run_dir), json.dumps(ready) + "\n")

    async def stop(self) -> None:
        for listener in self.listeners:
            listener.close()
        ready_path(self.run_dir).unlink(missing_ok=True)
        control_socket_path(self.run_dir).unlink(missing_ok=True)

    # -- SSH sessions -----------------------------------------------------------------------------
    async def _serve_process(self, name: str, process: asyncssh.SSHServerProcess) -> None:
        device = self.devices[name]
        user = process.get_extra_info("username") or "?"
        session = device.new_session(user)
        device.record(user, "login", f"from {process.get_extra_info('peername', ('?', 0))[0]}")
        self.dump(name)
        try:
            if process.command is not None:
                output, status = session.run_once(process.command)
                self.dump(name)
                process.stdout.write(output.replace("\n", "\r\n") if process.get_terminal_type() else output)
                process.exit(status)
                return
            await self._interactive(name, process, session)
        except (asyncssh.Error, OSError, ConnectionError):
            pass  # the client went away
        finally:
            device.record(user, "logout", "")
            self.dump(name)
        if not process.is_closing():
            process.exit(0)

    async def _interactive(self, name: str, process: asyncssh.SSHServerProcess, session: Any) -> None:
        reader = LineReader()
        answered = 0
        await self._send(name, process, _crlf(session.greeting() + session.prompt()), answered)
        while not session.closed:
            try:
                data = await process.stdin.read(4096)
            except (asyncssh.TerminalSizeChanged, asyncssh.BreakReceived, asyncssh.SignalReceived):
                continue
            if not data:
                return
            echo, lines = reader.feed(data)
            out = [echo]
            for line in lines:
                answered += 1
                if line is None:  # Ctrl-C
                    session.cancel()
                    out.append("^C\r\n" + session.prompt())
                    continue
                if self._should_drop(name, session, line):
                    await self._send(name, process, "".join(out), answered)
                    process.get_extra_info("connection").abort()
                    return
                text = session.handle(line)
                self.dump(name)
                out.append(_crlf(text))
                if session.closed:
                    break
                out.append(session.prompt())
            await self._send(name, process, "".join(out), answered)

    async def _send(self, name: str, process: asyncssh.SSHServerProcess, text: str, answered: int) -> None:
        """Write to the session, as the switch's Timing says (at once, unless a test made it hostile)."""
        timing = self.timing.get(name)
        if timing is None:
            process.stdout.write(text)
            return
        if timing.silent_after is not None and answered >= timing.silent_after:
            return
        cuts = [0, len(text)]
        if timing.chunk_bytes:  # the first pieces as asked
            size = timing.chunk_bytes
            heads = [i * size for i in range(1, timing.pieces) if i * size < len(text)]
            # and cut at random in the last 40 characters, where the prompt is
            near_end = max(1, len(text) - 40)
            tails = [
                _RANDOM.randrange(near_end, len(text)) for _ in range(timing.pieces - 1) if len(text) > 1
            ]
            cuts = sorted({*cuts, *heads, *tails})
        for start, end in itertools.pairwise(cuts):
            if timing.delay_s:
                await asyncio.sleep(timing.delay_s)
            process.stdout.write(text[start:end])

    def _should_drop(self, name: str, session: Any, line: str) -> bool:
        """Count config lines for arm_drop; True means cut the connection before this line runs."""
        if name not in self.armed or not line.strip() or not session.is_config_line(line):
            return False
        if self.armed[name] > 0:
            self.armed[name] -= 1
            return False
        del self.armed[name]
        self.devices[name].record("lab", "drop", f"connection dropped before: {line.strip()}")
        self.dump(name)
        return True

    # -- control socket ---------------------------------------------------------------------------
    async def _control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await reader.readline())
            reply = self._control_reply(request)
        except (ValueError, MockSwitchError, KeyError, TypeError) as exc:
            reply = {"ok": False, "error": str(exc)}
        writer.write(json.dumps(reply).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    def _control_reply(self, request: dict[str, Any]) -> dict[str, Any]:
        op, name = request["op"], request.get("switch")
        if op == "status":
            return {"ok": True, "switches": sorted(self.devices), "armed": self.armed}
        if name not in self.devices:
            raise MockSwitchError(f"no mock switch named {name!r}")
        device = self.devices[name]
        if op == "inject":
            device.inject(request["fault"])
        elif op == "heal":
            device.heal(request.get("fault"))
        elif op == "counters":
            self.feed_traffic()
            return {"ok": True, "counters": device.counters.to_json()}
        elif op == "timing":
            timing = Timing.from_request(request)
            if timing == Timing():
                self.timing.pop(name, None)
            else:
                self.timing[name] = timing
            device.record("lab", "timing", str(timing))
        elif op == "arm_drop":
            self.armed[name] = int(request["after_lines"])
            device.record("lab", "arm_drop", f"after {self.armed[name]} config lines")
        else:
            raise MockSwitchError(f"unknown control operation {op!r}")
        self.dump(name)
        return {"ok": True}


def _crlf(text: str) -> str:
    """Terminal line ends, as a tty with ONLCR would send them."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


async def serve(run_dir: Path) -> None:
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    server = SwitchServer(run_dir)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    try:
        await stop.wait()
    finally:
        await server.stop()
