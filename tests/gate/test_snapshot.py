"""Snapshots: what a gate run read is saved with the probe that produced it and judged again offline
with identical findings (hosts: every section; switches: every show command in reading order, a lost
session and an unreachable switch included); a missing or corrupt file is one error naming the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import SWITCHES, desired
from test_switch_stage import Replay, login

from fabcheck.checks.model import Status
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.errors import UsageError
from fabcheck.gate import host_stage as validate
from fabcheck.gate import snapshot
from fabcheck.gate.switch_stage import judge_switch
from fabcheck.intent.model import FabricIntent
from fabcheck.switch.connect import ConnectError, SwitchLogin

INTENT = FabricIntent.model_validate({})
MLNX_QOS_TEXT = "DCBX mode: OS controlled\nPriority trust state: dscp\n"


def host_collection(name: str, **changes: object) -> HostCollection:
    sections = {
        "time_limit": Section(0, "/usr/bin/timeout"),
        "rdma_link": Section(0, "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0\n"),
        "mlnx_qos:ens1np0": Section(0, MLNX_QOS_TEXT),
        "topo": Section(127, "", "timeout: failed to run command 'nvidia-smi': No such file or directory"),
        "lsmod": Section(None, "Module  Size  Used by\n"),  # cut off: no end marker
    }
    return HostCollection(name, sections, bool(changes.pop("complete", True)), **changes)  # type: ignore[arg-type]


def gate_result(hosts: list[validate.HostResult], switches: list) -> SimpleNamespace:
    return SimpleNamespace(hosts=hosts, switches=switches)


def save_hosts(tmp_path: Path, collections: list[HostCollection]) -> Path:
    recorder = snapshot.Recorder(lambda target, _p, _l: {c.host: c for c in collections}[target.name])
    for collection in collections:
        recorder(SimpleNamespace(name=collection.host), 3, None)  # type: ignore[arg-type]
    results = [validate.judge(c, INTENT) for c in collections]
    snapshot.save(tmp_path, recorder, gate_result(results, []))
    return tmp_path


def test_hosts_replay_to_the_same_findings(tmp_path: Path) -> None:
    collections = [
        host_collection("gpu01"),
        host_collection("gpu02", complete=False, error="command timeout on the host", expired="command"),
    ]
    save_hosts(tmp_path, collections)
    saved = snapshot.load(tmp_path, ["gpu01", "gpu02"], [])
    for collection in collections:
        replayed = saved.collector(SimpleNamespace(name=collection.host), 3, None)  # type: ignore[arg-type]
        assert replayed == collection
        assert validate.judge(replayed, INTENT).findings == validate.judge(collection, INTENT).findings
    record = json.loads((tmp_path / "hosts" / "gpu01.json").read_text())
    assert record["sections"]["mlnx_qos:ens1np0"]["command"] == "mlnx_qos -i ens1np0"
    assert record["sections"]["lsmod"]["rc"] is None


def test_a_host_never_collected_replays_as_the_same_error(tmp_path: Path) -> None:
    # What validate gives a host the deadline left no time for: no round trip, a command timeout.
    late_collection = HostCollection(
        "gpu03", {}, False, "not collected before the deadline", expired="command"
    )
    late = validate.judge(late_collection, INTENT)
    recorder = snapshot.Recorder(lambda *_: None)
    snapshot.save(tmp_path, recorder, gate_result([late], []))
    replayed = snapshot.load(tmp_path, ["gpu03"], []).hosts["gpu03"]
    assert validate.judge(replayed, INTENT).findings == late.findings
    assert late.verdict is Status.ERROR


@pytest.mark.parametrize("name", sorted(SWITCHES))
@pytest.mark.parametrize(
    ("state", "die_after"), [("converged", None), ("switch-pfc-prio", None), ("converged", 3)]
)
def test_switches_replay_to_the_same_findings(
    tmp_path: Path, name: str, state: str, die_after: int | None
) -> None:
    wanted = desired(name)
    live = judge_switch(login(name), wanted, lambda _login: Replay(name, state, die_after))
    assert live.outputs, "the stand-in answered nothing"
    snapshot.save(tmp_path, snapshot.Recorder(lambda *_: None), gate_result([], [live]))
    saved = snapshot.load(tmp_path, [], [name])
    again = judge_switch(_credential_free(name), wanted, saved.connect)
    assert again.findings == live.findings
    assert [o.text for o in again.outputs] == [o.text for o in live.outputs]
    if die_after is not None:
        assert any(f.status is Status.ERROR for f in live.findings)


def test_an_unreachable_switch_replays_unreachable(tmp_path: Path) -> None:
    def refuse(lg: SwitchLogin) -> Replay:
        raise ConnectError(f"switch {lg.name}: connection refused")

    live = judge_switch(login("leaf01"), desired("leaf01"), refuse)
    snapshot.save(tmp_path, snapshot.Recorder(lambda *_: None), gate_result([], [live]))
    again = judge_switch(
        _credential_free("leaf01"), desired("leaf01"), snapshot.load(tmp_path, [], ["leaf01"]).connect
    )
    assert (
        again.findings == live.findings and again.evidence.unreachable == "switch leaf01: connection refused"
    )


def _credential_free(name: str) -> SwitchLogin:
    return SwitchLogin(name, "linux", "127.0.0.1", 22, "admin", "", read_timeout_s=5)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    save_hosts(tmp_path, [host_collection("gpu01")])
    with pytest.raises(UsageError, match=r"hosts/gpu02\.json is missing"):
        snapshot.load(tmp_path, ["gpu01", "gpu02"], [])
    with pytest.raises(UsageError, match=r"switches/leaf01\.json is missing"):
        snapshot.load(tmp_path, ["gpu01"], ["leaf01"])
    with pytest.raises(UsageError, match=r"snapshot\.json is missing"):
        snapshot.load(tmp_path / "hosts", [], [])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"gpu01\.json:1: not JSON"),
        ('{"host": "gpu09"}', r"gpu01\.json: \"host\" is not 'gpu01'"),
        ('{"host": "gpu01", "sections": {}}', r"gpu01\.json: missing key 'priority'"),
        (
            '{"host": "gpu01", "priority": 3, "complete": true, "error": null, "expired": null, '
            '"sections": {"topo": {"rc": "zero", "stdout": "", "stderr": ""}}}',
            r"gpu01\.json: rc 'zero' is not an exit code",
        ),
        (
            '{"host": "gpu01", "priority": 9, "complete": true, "error": null, "expired": null, '
            '"sections": {}}',
            r"gpu01\.json: \"priority\" 9 is not 0\.\.7",
        ),
    ],
)
def test_a_corrupt_host_file_is_named(tmp_path: Path, content: str, message: str) -> None:
    save_hosts(tmp_path, [host_collection("gpu01")])
    (tmp_path / "hosts" / "gpu01.json").write_text(content)
    with pytest.raises(UsageError, match=message):
        snapshot.load(tmp_path, ["gpu01"], [])


def test_a_foreign_manifest_is_refused(tmp_path: Path) -> None:
    save_hosts(tmp_path, [host_collection("gpu01")])
    (tmp_path / "snapshot.json").write_text('{"format": "fabcheck-snapshot", "version": 7}')
    with pytest.raises(UsageError, match=r"snapshot\.json: \"version\" 7"):
        snapshot.load(tmp_path, ["gpu01"], [])
