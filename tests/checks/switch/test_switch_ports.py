"""switch.port_speed (fabcheck.checks.switch.ports): a port that is down fails however nominal its
rate, read from napalm's real EOS sample."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from switchjudged import CONVERGED_EOS, REAL_EOS, judged, not_passing, switchfabric

from fabcheck.checks.model import Status


def test_eos_a_notconnect_port_with_its_nominal_bandwidth_fails_port_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: EOS keeps a `notconnect` port's nominal `bandwidth` (napalm's real `show interfaces |
    json`, tests/data/real/eos/show-interfaces-json-napalm-notconnect.json: Ethernet1 notconnect, line
    protocol down, bandwidth 10000000000), so the rate alone read a down link as trained at it."""
    real = json.loads((REAL_EOS / "show-interfaces-json-napalm-notconnect.json").read_text())
    down = real["interfaces"]["Ethernet1"]
    assert (down["interfaceStatus"], down["lineProtocolStatus"], down["bandwidth"]) == (
        "notconnect",
        "down",
        10_000_000_000,
    )
    folder = tmp_path / "down" / "leaf03"
    shutil.copytree(CONVERGED_EOS, folder)
    shown = json.loads((folder / "eos.interfaces.txt").read_text())
    port = shown["interfaces"]["Ethernet1"]
    assert port["bandwidth"] == 400_000_000_000  # the nominal rate the intent cables
    port |= {key: down[key] for key in ("interfaceStatus", "lineProtocolStatus")}
    (folder / "eos.interfaces.txt").write_text(json.dumps(shown))
    monkeypatch.setattr(switchfabric, "DATA", tmp_path)
    findings = judged("down", "leaf03")
    failing = {f for f in not_passing(findings) if f[1] != "skip"}
    assert failing == {("switch.port_speed", "fail", "leaf03:Ethernet1")}
    actual = next(f.actual for f in findings if f.check == "switch.port_speed" and f.status is Status.FAIL)
    assert actual == "link down: not trained at any rate"
