"""What the switch check tests share: a replayed switch judged by every declared check, the findings
that did not pass, and the converged EOS switch with its running and saved config edited alike."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# The small fabric of tests/checks/switchfabric.py (one switch per platform, four ports each), replayed
# from the captured mock outputs under tests/data/switch. Not through a conftest.py: tests import
# tests/conftest.py by its module name, which a second conftest would shadow.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import switchfabric
from switchfabric import PORTS, SWITCHES, desired, replayed

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.switch import check_switch, wire
from fabcheck.collect.switch_probes import PROBES as SWITCH_PROBES

__all__ = [
    "CONVERGED_EOS",
    "ETHERNET2",
    "EXPECTED_SKIPS",
    "FIRST_PORT",
    "GUARANTEE",
    "PORTS",
    "REAL_EOS",
    "SWITCHES",
    "desired",
    "eos_edited",
    "judged",
    "not_passing",
    "replayed",
    "switchfabric",
]

FIRST_PORT = {name: f"{name}:{PORTS[platform][0]}" for name, platform in SWITCHES.items()}
# What each platform cannot show. Buffers: SONiC's per-port profiles (switch.buffers), NVUE's pools
# (switch.lossless_pool), none on EOS.
# The wire checks (issue 35): skipped on a platform whose probes yield no LinkDelta / ModuleOptics yet.
WIRE_UNSHOWN = {
    platform: {c.id for c in wire.CHECKS if c.judge and not any(c.judge.needs in p.provides for p in probes)}
    for platform, probes in SWITCH_PROBES.items()
}
EXPECTED_SKIPS = {
    "leaf01": {checks.BUFFERS, checks.QUEUE_MAP} | WIRE_UNSHOWN["nvue"],
    "leaf02": {checks.PRIORITY_MAP, checks.LOSSLESS_POOL} | WIRE_UNSHOWN["sonic"],
    "leaf03": {checks.PRIORITY_MAP, checks.BUFFERS, checks.LOSSLESS_POOL, checks.QUEUE_MAP}
    | WIRE_UNSHOWN["eos"],
}
GUARANTEE = "      bandwidth guaranteed percent 50\n"
ETHERNET2 = "interface Ethernet2\n   mtu 9214\n   service-profile FABCHECK-ROCE\n"
CONVERGED_EOS = switchfabric.DATA / "converged" / "leaf03"
REAL_EOS = Path(__file__).resolve().parents[2] / "data" / "real" / "eos"


def judged(state: str, name: str, overrides: dict | None = None) -> list[Finding]:
    return check_switch(replayed(state, name, overrides), desired(name, overrides))


def not_passing(findings: list[Finding]) -> set[tuple[str, str, str]]:
    return {(f.check, f.status.value, f.subject) for f in findings if f.status is not Status.PASS}


def eos_edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[str], str]) -> set:
    """leaf03 converged, its running and startup config edited alike (a saved hand edit), judged."""
    folder = tmp_path / "edited" / "leaf03"
    shutil.copytree(CONVERGED_EOS, folder)
    for name in ("eos.running_config.txt", "eos.startup_config.txt"):
        text = (folder / name).read_text()
        assert GUARANTEE in text and ETHERNET2 in text
        (folder / name).write_text(edit(text))
    monkeypatch.setattr(switchfabric, "DATA", tmp_path)
    return {f for f in not_passing(judged("edited", "leaf03")) if f[1] != "skip"}
