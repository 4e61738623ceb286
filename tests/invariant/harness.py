"""An in-process switch of each platform, converged to the desired state, read by the gate (pure).

The lab's mock switch device runs without its SSH server: the rendered config is typed into one of
its CLI sessions as an operator (or the driver) would (NVUE `nv set` + `nv config apply -y`, EOS a
configure session + `commit`), SONiC's CONFIG_DB fragment is merged into its running CONFIG_DB the
way `config apply-patch` of the driver's patch leaves it; the gate's own probes then read it through
the same parsers and checks as on a live switch.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "checks")]

from switchfabric import PORTS, SWITCHES, desired  # noqa: E402

from fabcheck.checks.model import Finding, Status  # noqa: E402
from fabcheck.checks.switch import check_switch  # noqa: E402
from fabcheck.collect.probes import collect  # noqa: E402
from fabcheck.collect.switch_probes import PROBES  # noqa: E402
from fabcheck.gate.switch_stage import evidence_of  # noqa: E402
from fabcheck.lab.mockswitch.device import CliSession, SwitchDevice  # noqa: E402
from fabcheck.lab.mockswitch.eos import EosDevice  # noqa: E402
from fabcheck.lab.mockswitch.nvue import NvueDevice  # noqa: E402
from fabcheck.lab.mockswitch.sonic import SonicDevice  # noqa: E402
from fabcheck.lab.mockswitch.spec import SwitchSpec  # noqa: E402
from fabcheck.switch.render import render_switch  # noqa: E402

NAMES = {platform: name for name, platform in SWITCHES.items()}
USERS = {"nvue": "cumulus", "sonic": "admin", "eos": "admin"}
DEVICES: dict[str, Callable[[SwitchSpec], SwitchDevice]] = {
    "nvue": NvueDevice,
    "sonic": SonicDevice,
    "eos": EosDevice,
}


def session_of(device: SwitchDevice, platform: str) -> CliSession:
    session = device.new_session(USERS[platform])
    if platform == "eos":
        session.handle("enable")
    return session


def type_lines(session: CliSession, lines: list[str]) -> str:
    return "".join(session.handle(line) for line in lines)


def converged(platform: str) -> SwitchDevice:
    """A mock switch of `platform` holding the desired config of its test switch."""
    name = NAMES[platform]
    spec = SwitchSpec(name, platform, "127.0.3.1", 2201, USERS[platform], "pw", PORTS[platform])
    device = DEVICES[platform](spec)
    config = render_switch(desired(name))
    session = session_of(device, platform)
    if platform == "nvue":
        type_lines(session, [*config.lines, "nv config apply -y"])
    elif platform == "eos":
        type_lines(session, ["configure session fabcheck-test", *config.lines, "commit"])
    else:
        for table, entries in json.loads(config.text).items():
            for key, fields in entries.items():
                held = device.running.setdefault(table, {})
                # the driver's patch sets PORT fields and replaces the QoS entries it owns
                held[key] = {**held.get(key, {}), **fields} if table == "PORT" else fields
    return device


def judged(platform: str, device: SwitchDevice) -> list[Finding]:
    """The gate's switch checks on the device as its probes read it now."""
    name = NAMES[platform]
    session = session_of(device, platform)
    ports = [port.port for port in desired(name).ports]
    collected = collect(session.handle, PROBES[platform], ports, f"mock {name}")
    return check_switch(evidence_of(name, platform, collected), desired(name))


def not_passing(findings: list[Finding]) -> set[tuple[str, str, str]]:
    return {
        (f.check, f.subject, f.status.value) for f in findings if f.status not in (Status.PASS, Status.SKIP)
    }


def running(device: SwitchDevice) -> dict[str, Any]:
    return device.running
