"""Start the lab's mock switch server on loopback (no namespaces needed) for push and render tests.

Each test module starts its own server with its own switches, so modules never share switch state.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabcheck.switch.connect import SwitchLogin
from fabcheck_lab.mockswitch import (
    SWITCH_PLATFORMS,
    SwitchSpec,
    known_hosts_path,
    ready_path,
    state_path,
    write_spec,
)

PASSWORDS = {"nvue": "Cumulus-lab-pw-1", "sonic": "Sonic-lab-pw-2", "eos": "Eos-lab-pw-3"}
USERS = {"nvue": "cumulus", "sonic": "admin", "eos": "admin"}
PORTS = {
    "nvue": ("swp1", "swp2", "swp3", "swp4"),
    "sonic": ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"),
    "eos": ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4"),
}
START_TIMEOUT_S = 120.0  # generous: the machine may be loaded; a healthy server is up in well under 1 s


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class MockSwitches:
    run_dir: Path
    specs: dict[str, SwitchSpec]

    def login(self, name: str, *, password: str | None = None) -> SwitchLogin:
        spec = self.specs[name]
        return SwitchLogin(
            name=name,
            device_type=SWITCH_PLATFORMS[spec.platform],
            address=spec.address,
            port=spec.port,
            username=spec.username,
            password=spec.password if password is None else password,
            known_hosts=known_hosts_path(self.run_dir),
        )

    def state(self, name: str) -> dict[str, Any]:
        """The switch's whole state as the server dumps it (running, pending, startup, log, counters)."""
        return json.loads(state_path(self.run_dir, name).read_text())


@contextlib.contextmanager
def mock_switches(
    run_dir: Path,
    names: dict[str, str],
    first_address: int = 100,
    neighbors: dict[str, tuple[tuple[str, str, str], ...]] | None = None,
    releases: dict[str, str] | None = None,
    models: dict[str, str] | None = None,
) -> Iterator[MockSwitches]:
    """names: switch name -> platform. Addresses 127.0.3.<first_address + i>, free ports. neighbors:
    switch -> (port, host, interface) that LLDP hears there. releases / models: what a switch
    reports as its software release and hardware model (else the platform mock's default)."""
    specs = {}
    for index, (name, platform) in enumerate(names.items()):
        address = f"127.0.3.{first_address + index}"
        specs[name] = SwitchSpec(
            name,
            platform,
            address,
            free_port(address),
            USERS[platform],
            PASSWORDS[platform],
            PORTS[platform],
            (neighbors or {}).get(name, ()),
            (releases or {}).get(name, ""),
            (models or {}).get(name, ""),
        )
    write_spec(run_dir, list(specs.values()))
    server = subprocess.Popen(
        [sys.executable, "-m", "fabcheck_lab.mockswitch", "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready_path(run_dir).exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError(f"mock switch server did not come up: {server.communicate()[0]}")
        time.sleep(0.05)
    try:
        yield MockSwitches(run_dir, specs)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
