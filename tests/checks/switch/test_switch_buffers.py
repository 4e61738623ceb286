"""switch.buffers (fabcheck.checks.switch.buffers) on SONiC: the push binds only the lossless queue
and priority groups, so only those bindings are judged."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from switchjudged import PORTS, judged, switchfabric

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Status


def sonic_buffers_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[dict], None]
) -> list:
    """leaf02 converged, its CONFIG_DB (running and saved alike) edited, its switch.buffers findings."""
    folder = tmp_path / "edited" / "leaf02"
    shutil.copytree(Path(switchfabric.DATA) / "converged" / "leaf02", folder)
    for name in ("sonic.config_db.txt", "sonic.startup_config.txt"):
        db = json.loads((folder / name).read_text())
        edit(db)
        (folder / name).write_text(json.dumps(db, indent=4))
    monkeypatch.setattr(switchfabric, "DATA", tmp_path)
    return [f for f in judged("edited", "leaf02") if f.check == checks.BUFFERS]


def test_sonic_buffers_judge_the_lossless_queue_binding_and_never_the_switchs_lossy_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The push binds only the lossless queue (its range, stock 3-4); whatever profile the lossy queues
    hold is the switch's own and passes, while a lossy profile on the lossless range fails that port."""

    def edit(db: dict) -> None:
        db["BUFFER_QUEUE"]["Ethernet4|0-2"] = {"profile": "egress_lossy_profile"}  # not ours: passes
        db["BUFFER_QUEUE"]["Ethernet8|3-4"] = {"profile": "q_lossy_profile"}  # the lossless queue: fails

    findings = sonic_buffers_edited(tmp_path, monkeypatch, edit)
    failing = {f.subject: f.actual for f in findings if f.status is not Status.PASS}
    assert failing == {"leaf02:Ethernet8": "PG 3 NULL, queue 3-4 q_lossy_profile"}
    assert len(findings) == len(PORTS["sonic"])
