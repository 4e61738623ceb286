"""switch.watchdog (fabcheck.checks.switch.watchdog) on EOS, whose PFC watchdog watches only PFC
queues with guaranteed bandwidth: the converged leaf03 with its running and saved config edited
alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from switchjudged import ETHERNET2, GUARANTEE, PORTS, eos_edited, judged


def test_eos_watchdog_fails_every_port_whose_lossless_queue_has_no_guaranteed_bandwidth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Arista's watchdog watches only PFC queues with guaranteed bandwidth: without it, it watches none.
    failing = eos_edited(tmp_path, monkeypatch, lambda text: text.replace(GUARANTEE, ""))
    assert failing == {("switch.watchdog", "fail", f"leaf03:{port}") for port in PORTS["eos"]}
    findings = judged("edited", "leaf03")
    actual = next(f.actual for f in findings if f.check == "switch.watchdog")
    assert actual == "PFC watchdog enabled, but tx-queue 3 guaranteed nothing: EOS watches no such queue"


def test_eos_interface_tx_queue_lines_apply_over_the_profile_on_that_port_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = ETHERNET2 + "   uc-tx-queue 3\n      bandwidth guaranteed percent 20\n"
    failing = eos_edited(tmp_path, monkeypatch, lambda text: text.replace(ETHERNET2, own))
    assert failing == {("switch.watchdog", "fail", "leaf03:Ethernet2")}
    # The profile loses its guarantee and one port keeps its own: the other ports fail.
    own = ETHERNET2 + "   uc-tx-queue 3\n      bandwidth guaranteed percent 50\n"
    failing = eos_edited(
        tmp_path / "second", monkeypatch, lambda text: text.replace(GUARANTEE, "").replace(ETHERNET2, own)
    )
    ports = [port for port in PORTS["eos"] if port != "Ethernet2"]
    assert failing == {("switch.watchdog", "fail", f"leaf03:{port}") for port in ports}
