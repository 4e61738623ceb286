"""One asyncssh process serving every mock switch of a lab run, plus its UNIX control socket."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

import asyncssh

from fabcheck.intent.platforms import platform_named, resolve
from fabcheck.lab.mockswitch.control import reachable_path
from fabcheck.lab.mockswitch.device import SwitchDevice
from fabcheck.lab.mockswitch.spec import (
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
from fabcheck.lab.mockswitch.terminal import LineReader
from fabcheck.lab.mockswitch.wire import WireWriter, drain

log = logging.getLogger("fabcheck.mockswitch")


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


class SwitchServer:
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.specs = read_spec(run_dir)
        self.devices = {s.name: make_device(s, run_dir) for s in self.specs}
        for device in self.devices.values():
            device.traffic_feed = self.feed_traffic
        self.wires = WireWriter(run_dir)
        self.armed: dict[str, int] = {}
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
        process.stdout.write(_crlf(session.greeting() + session.prompt()))
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
                if line is None:  # Ctrl-C
                    session.cancel()
                    out.append("^C\r\n" + session.prompt())
                    continue
                if self._should_drop(name, session, line):
                    process.stdout.write("".join(out))
                    process.get_extra_info("connection").abort()
                    return
                text = session.handle(line)
                self.dump(name)
                out.append(_crlf(text))
                if session.closed:
                    break
                out.append(session.prompt())
            process.stdout.write("".join(out))

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
