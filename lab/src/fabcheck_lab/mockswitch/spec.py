"""What the lab asks the mock switch server to serve, and where the server keeps its files."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fabcheck.errors import FabcheckError
from fabcheck.intent.platforms import DEVICE_TYPES, PLATFORMS

# Mocked platform name -> the netmiko device_type that drives it: every platform has a mock (its
# record names the device class), and the lab drives each with the platform's own device type.
SWITCH_PLATFORMS: Mapping[str, str] = DEVICE_TYPES
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,62}")


class MockSwitchError(FabcheckError):
    """A mock switch request that cannot be carried out (bad spec, unknown switch, server down)."""


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    platform: str
    address: str
    port: int
    username: str
    password: str
    ports: tuple[str, ...]
    # (port, neighbour system, neighbour port): what each cabled port hears over LLDP (the lab's hosts
    # send their host name and interface name, as lldpd does with `portidsubtype ifname`).
    neighbors: tuple[tuple[str, str, str], ...] = ()
    # The software release and hardware model the switch reports ('' = the platform mock's default:
    # Cumulus Linux 5.11.0 on an SN5600, SONiC 202411.0-mock with hwsku ACS-MSN4700, the cited factory
    # CONFIG_DB's, EOS 4.31.2F on a 7060CX). SONiC's release and hwsku decide GCU's PFC_WD validator.
    release: str = ""
    model: str = ""
    # The ports that face the tier above (a leaf's uplinks to its spines, a spine's to its cores): the
    # cables the `uplink-swap` fault swaps. Empty on a switch of one tier (a lab without a plan).
    up_ports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise MockSwitchError(f"switch name {self.name!r} is not a valid hostname")
        if self.platform not in SWITCH_PLATFORMS:
            raise MockSwitchError(
                f"switch {self.name}: platform {self.platform!r} is not one of {sorted(SWITCH_PLATFORMS)}"
            )
        if not 1 <= self.port <= 65535:
            raise MockSwitchError(f"switch {self.name}: TCP port {self.port} out of range")
        if not self.ports:
            raise MockSwitchError(f"switch {self.name}: no front-panel ports")
        style = PLATFORMS[self.platform].port_name
        bad = [p for p in self.ports if not style.fullmatch(p)]
        if bad:
            raise MockSwitchError(f"switch {self.name}: port names {bad} do not match {self.platform} style")
        if len(set(self.ports)) != len(self.ports):
            raise MockSwitchError(f"switch {self.name}: duplicate port names")
        strangers = [n[0] for n in self.neighbors if n[0] not in self.ports]
        if strangers:
            raise MockSwitchError(f"switch {self.name}: LLDP neighbours on unknown ports {strangers}")
        unknown_up = [p for p in self.up_ports if p not in self.ports]
        if unknown_up:
            raise MockSwitchError(f"switch {self.name}: up-facing ports {unknown_up} are not among its ports")


def switches_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "switches"


def spec_path(run_dir: Path) -> Path:
    return switches_dir(run_dir) / "spec.json"


def state_path(run_dir: Path, switch: str) -> Path:
    return switches_dir(run_dir) / f"{switch}.json"


def ready_path(run_dir: Path) -> Path:
    return switches_dir(run_dir) / "ready"


def control_socket_path(run_dir: Path) -> Path:
    return switches_dir(run_dir) / "control.sock"


def host_key_path(run_dir: Path) -> Path:
    return switches_dir(run_dir) / "ssh_host_ed25519_key"


def known_hosts_path(run_dir: Path) -> Path:
    """known_hosts lines for every switch listener, written by the server once its key exists."""
    return switches_dir(run_dir) / "known_hosts"


def write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only, replacing it atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def write_spec(run_dir: Path, switches: Sequence[SwitchSpec]) -> Path:
    """Write run_dir/switches/spec.json (mode 0600: it holds the login passwords)."""
    _check_unique(switches)
    folder = switches_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "switches": [asdict(s) | {"ports": list(s.ports), "up_ports": list(s.up_ports)} for s in switches]
    }
    path = spec_path(run_dir)
    write_private(path, json.dumps(payload, indent=2) + "\n")
    return path


def read_spec(run_dir: Path) -> list[SwitchSpec]:
    path = spec_path(run_dir)
    try:
        payload = json.loads(path.read_text())
        switches = [
            SwitchSpec(
                **(
                    raw
                    | {
                        "ports": tuple(raw["ports"]),
                        "neighbors": tuple(tuple(n) for n in raw.get("neighbors", ())),
                        "up_ports": tuple(raw.get("up_ports", ())),
                    }
                )
            )
            for raw in payload["switches"]
        ]
    except FileNotFoundError as exc:
        raise MockSwitchError(f"{path}: no switch spec (write_spec was not called)") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise MockSwitchError(f"{path}: malformed switch spec: {exc}") from exc
    _check_unique(switches)
    return switches


def _check_unique(switches: Sequence[SwitchSpec]) -> None:
    names = [s.name for s in switches]
    if len(set(names)) != len(names):
        raise MockSwitchError(f"duplicate switch names in {names}")
    listeners = [(s.address, s.port) for s in switches]
    if len(set(listeners)) != len(listeners):
        raise MockSwitchError("two switches share one address:port")
