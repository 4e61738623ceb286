"""An in-process switch of each platform, converged to the desired state, read by the gate (pure).

The lab's mock switch device runs without its SSH server: the platform's own driver pushes the
rendered config to it over an in-process channel (tests/invariant/fakeconn.py: echo, reply, prompt as
the lab's server sends them), its check mode gives the diff `site.yml --check --diff` shows, and the
gate's own probes read it through the same parsers and checks as on a live switch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "checks")]

from switchfabric import PORTS, SWITCHES, desired  # noqa: E402

from fabcheck.checks.model import Finding, Status  # noqa: E402
from fabcheck.checks.switch import check_switch  # noqa: E402
from fabcheck.collect.probes import collect  # noqa: E402
from fabcheck.collect.switch_probes import PROBES, RELEASE_READS  # noqa: E402
from fabcheck.desired.switch import DesiredSwitch  # noqa: E402
from fabcheck.gate.switch_stage import evidence_of  # noqa: E402
from fabcheck.switch.driver import SwitchDriver, driver_for, push  # noqa: E402
from fabcheck.switch.owned import PORT_VARIANTS, REFERENCE_INTENTS  # noqa: E402
from fabcheck.switch.render import render_switch  # noqa: E402
from fabcheck_lab.mockswitch.device import CliSession, SwitchDevice  # noqa: E402
from fabcheck_lab.mockswitch.eos import EosDevice  # noqa: E402
from fabcheck_lab.mockswitch.nvue import NvueDevice  # noqa: E402
from fabcheck_lab.mockswitch.sonic import SonicDevice  # noqa: E402
from fabcheck_lab.mockswitch.spec import SwitchSpec  # noqa: E402
from tests.invariant.fakeconn import SessionConnection  # noqa: E402

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


def _driver(platform: str, device: SwitchDevice) -> SwitchDriver:
    session = device.new_session(USERS[platform])
    return driver_for(platform)(SessionConnection(session, NAMES[platform]))


def desired_of(platform: str, variant: str | None = None) -> DesiredSwitch:
    """The desired state of the platform's test switch, under one of the reference intents or in a
    per-port variant (fabcheck.switch.owned: REFERENCE_INTENTS; PORT_VARIANTS, whose second port,
    the one drifts go to, differs)."""
    if variant in REFERENCE_INTENTS:
        return desired(NAMES[platform], dict(REFERENCE_INTENTS[variant]))
    switch = desired(NAMES[platform])
    return PORT_VARIANTS[variant][0](switch) if variant else switch


def converged(platform: str, variant: str | None = None, unmanaged: tuple[str, ...] = ()) -> SwitchDevice:
    """A factory mock switch of `platform` that the platform's own driver pushed the desired config
    of its test switch to (as `site.yml` does, over an in-process channel instead of SSH); `unmanaged`
    ports exist on the switch beside the test switch's own, and no push touches them."""
    name = NAMES[platform]
    ports = (*PORTS[platform], *unmanaged)
    spec = SwitchSpec(name, platform, "127.0.3.1", 2201, USERS[platform], "pw", ports)
    device = DEVICES[platform](spec)
    push(_driver(platform, device), render_switch(desired_of(platform, variant)), check=False)
    return device


def repush(platform: str, device: SwitchDevice, variant: str | None = None) -> None:
    """A real push of the desired config over what the switch runs now (site.yml without --check)."""
    push(_driver(platform, device), render_switch(desired_of(platform, variant)), check=False)


def check_diff(platform: str, device: SwitchDevice, variant: str | None = None) -> str:
    """What `site.yml --check --diff` shows for the switch: the driver's check-mode diff."""
    result = push(_driver(platform, device), render_switch(desired_of(platform, variant)), check=True)
    return result.diff if result.changed else ""


def judged(platform: str, device: SwitchDevice, variant: str | None = None) -> list[Finding]:
    """The gate's switch checks on the device as its probes read it now."""
    name = NAMES[platform]
    wanted = desired_of(platform, variant)
    session = session_of(device, platform)
    ports = [port.port for port in wanted.ports]
    collected = collect(
        session.handle, PROBES[platform], ports, f"mock {name}", release_read=RELEASE_READS.get(platform)
    )
    return check_switch(evidence_of(name, platform, collected), wanted)


def not_passing(findings: list[Finding]) -> set[tuple[str, str, str]]:
    return {
        (f.check, f.subject, f.status.value) for f in findings if f.status not in (Status.PASS, Status.SKIP)
    }


def running(device: SwitchDevice) -> dict[str, Any]:
    return device.running
