"""The small fabric the switch gate's tests use: one switch per platform, four ports each (three host
ports, one uplink), gpu01's three rail NICs cabled to the first port of each switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabcheck.checks.switch import SwitchEvidence
from fabcheck.collect.probes import Probe, collect
from fabcheck.collect.switch_probes import PROBES, RELEASE_READS
from fabcheck.desired.switch import DesiredSwitch, desired_switch
from fabcheck.gate.switch_stage import evidence_of
from fabcheck.intent.fabric import Fabric, InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent

DATA = Path(__file__).resolve().parents[1] / "data" / "switch"

SWITCHES = {"leaf01": "nvue", "leaf02": "sonic", "leaf03": "eos"}
PORTS = {
    "nvue": ("swp1", "swp2", "swp3", "swp4"),
    "sonic": ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"),
    "eos": ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4"),
}
NICS = ("mlx5_0", "mlx5_1", "mlx5_2")


def nodes() -> list[InventoryNode]:
    switches = [
        InventoryNode(
            name,
            (f"switches_{platform}",),
            {
                "switch_address": "192.0.2.1",
                "switch_username": "admin",
                "switch_password": "{{ lookup('ansible.builtin.env', 'P') }}",
                "switch_ports": list(PORTS[platform][:3]),
                "switch_uplinks": list(PORTS[platform][3:]),
            },
            {},
        )
        for name, platform in SWITCHES.items()
    ]
    cabled = zip(NICS, SWITCHES.items(), strict=True)
    links = {nic: f"{name}:{PORTS[platform][0]}" for nic, (name, platform) in cabled}
    gpu = InventoryNode("gpu01", ("gpu_hosts",), {"fabric_links": links}, dict(enumerate(NICS)))
    return [*switches, gpu]


def fabric() -> Fabric:
    return read_fabric(nodes(), lambda _value: "")


def intent(overrides: dict[str, Any] | None = None) -> FabricIntent:
    return FabricIntent.model_validate(overrides or {})


def desired(name: str, overrides: dict[str, Any] | None = None) -> DesiredSwitch:
    return desired_switch(intent(overrides), fabric(), name)


def snapshot_stem(probe: str, port: str | None) -> str:
    return probe + (f"@{port.replace('/', '_')}" if port else "")


def replayed(state: str, name: str, overrides: dict[str, Any] | None = None) -> SwitchEvidence:
    """The evidence the gate collects from tests/data/switch/<state>/<name>/, through the same probes,
    parsers and collection as on a live session (each command answered from its captured output)."""
    platform = SWITCHES[name]
    folder = DATA / state / name
    probes = {
        probe.command_for(port): (probe.name, probe.counter, port) for probe, port in _calls(platform, name)
    }
    release_read = RELEASE_READS.get(platform)
    if release_read is not None:  # read first where probes are bound to releases
        probes[release_read.command] = (release_read.name, False, None)
    readings: dict[str, int] = {}

    def run(command: str) -> str:
        probe, counter, port = probes[command]
        stem = snapshot_stem(probe, port)
        first = counter and readings.get(command, 0) == 0
        readings[command] = readings.get(command, 0) + 1
        return (folder / (f"{stem}.before.txt" if first else f"{stem}.txt")).read_text()

    ports = [port.port for port in desired(name, overrides).ports]
    # Read as a session with a counter window (the captures hold both readings), without waiting it.
    collected = collect(
        run,
        PROBES[platform],
        ports,
        f"{state}/{name}",
        REPLAY_WINDOW_S,
        lambda _s: None,
        release_read=release_read,
    )
    return evidence_of(name, platform, collected)


REPLAY_WINDOW_S = 5


def _calls(platform: str, name: str) -> list[tuple[Probe, str | None]]:
    ports = [port.port for port in desired(name).ports]
    return [
        (probe, port)
        for probe in PROBES[platform]
        for port in (ports if probe.scope == "switch-port" else [None])
    ]
