"""Snapshots: what a gate run read is kept by the reader in the one format (DIR/<stage>/<node>.json) and
judged again offline with identical findings (hosts: every section, a host the deadline left out;
switches: every show command in reading order, a lost session and an unreachable switch included); a
version 1 snapshot still replays; a missing or corrupt file is one error naming the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import SWITCHES, desired
from test_switch_stage import Replay, login

from fabcheck.checks.model import Status
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.nic import desired_host
from fabcheck.errors import UsageError
from fabcheck.gate import host_stage, snapshot
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.reader import Reader
from fabcheck.gate.switch_stage import SwitchItem, read_switches
from fabcheck.intent.loader import HostEntry
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


def entry(name: str) -> HostEntry:
    return HostEntry(name, ("gpu_hosts",), INTENT, {"ansible_host": "10.0.0.1"})


def read_hosts(
    collections: list[HostCollection], tape: snapshot.Recording, **reader: Any
) -> list[HostResult]:
    """The host stage over the collections' hosts through the reader, keeping (or replaying) the tape."""
    by_name = {c.host: c for c in collections}

    def collector(target: SshTarget, _priority: int, _limits: TimeLimits) -> HostCollection:
        if tape.replaying:
            raise AssertionError("a replay read a host live")
        return by_name[target.name]

    hosts = [entry(c.host) for c in collections]
    desired = {h.name: desired_host(INTENT, h.name) for h in hosts}
    return host_stage.read_hosts(Reader(tape=tape, concurrency=4, **reader), hosts, collector, desired)


def save_hosts(tmp_path: Path, collections: list[HostCollection]) -> Path:
    recording = snapshot.Recording()
    read_hosts(collections, recording)
    recording.save(tmp_path)
    return tmp_path


def replayed_host(directory: Path, name: str) -> object:
    return snapshot.replay(directory).replayed("host", name, lambda data: host_stage.host_restore(data, name))


def test_hosts_replay_to_the_same_findings(tmp_path: Path) -> None:
    collections = [
        host_collection("gpu01"),
        host_collection("gpu02", complete=False, error="command timeout on the host", expired="command"),
    ]
    recording = snapshot.Recording()
    live = read_hosts(collections, recording)
    recording.save(tmp_path)
    for collection in collections:
        assert replayed_host(tmp_path, collection.host) == collection
    assert read_hosts(collections, snapshot.replay(tmp_path)) == live
    assert [r.findings for r in read_hosts(collections, snapshot.replay(tmp_path))] == [
        r.findings for r in live
    ]
    record = json.loads((tmp_path / "host" / "gpu01.json").read_text())
    assert record["stage"] == "host" and record["node"] == "gpu01"
    assert record["read"]["sections"]["mlnx_qos:ens1np0"]["command"] == "mlnx_qos -i ens1np0"
    assert record["read"]["sections"]["lsmod"]["rc"] is None


def test_a_host_never_collected_replays_as_the_same_error(tmp_path: Path) -> None:
    # A host the deadline left no time for: no round trip, the reader's late NotRead, kept as such.
    recording = snapshot.Recording()
    [late] = read_hosts([host_collection("gpu03")], recording, ends_at=0.0, deadline_s=5)
    recording.save(tmp_path)
    assert late.verdict is Status.ERROR
    assert "not collected before the deadline (--deadline 5 s)" in late.findings[0].actual
    record = json.loads((tmp_path / "host" / "gpu03.json").read_text())
    assert record["not_read"]["late"] is True
    [again] = read_hosts([host_collection("gpu03")], snapshot.replay(tmp_path), deadline_s=5)
    assert again.findings == late.findings


def test_a_version_1_snapshot_still_replays(tmp_path: Path) -> None:
    """Saved before the one format: hosts/ and switches/ hold the reads themselves."""
    collection = host_collection("gpu01")
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "gpu01.json").write_text(json.dumps(host_stage.host_record(collection)))
    manifest = {"format": "fabcheck-snapshot", "version": 1, "hosts": ["gpu01"], "switches": []}
    (tmp_path / "snapshot.json").write_text(json.dumps(manifest))
    assert replayed_host(tmp_path, "gpu01") == collection
    live = read_hosts([collection], snapshot.Recording())
    assert read_hosts([collection], snapshot.replay(tmp_path)) == live


@pytest.mark.parametrize("name", sorted(SWITCHES))
@pytest.mark.parametrize(
    ("state", "die_after"), [("converged", None), ("switch-pfc-prio", None), ("converged", 3)]
)
def test_switches_replay_to_the_same_findings(
    tmp_path: Path, name: str, state: str, die_after: int | None
) -> None:
    wanted = desired(name)
    recording = snapshot.Recording()
    [live] = read_switches(
        Reader(tape=recording),
        [(name, SwitchItem(wanted, login(name)))],
        lambda _login: Replay(name, state, die_after),
    )
    assert live.outputs, "the stand-in answered nothing"
    recording.save(tmp_path)
    [again] = read_switches(
        Reader(tape=snapshot.replay(tmp_path)),
        [(name, SwitchItem(wanted, _credential_free(name)))],
        _no_session,
    )
    assert again.findings == live.findings
    assert [o.text for o in again.outputs] == [o.text for o in live.outputs]
    if die_after is not None:
        assert any(f.status is Status.ERROR for f in live.findings)


def test_an_unreachable_switch_replays_unreachable(tmp_path: Path) -> None:
    def refuse(lg: SwitchLogin) -> Replay:
        raise ConnectError(f"switch {lg.name}: connection refused")

    recording = snapshot.Recording()
    item = [("leaf01", SwitchItem(desired("leaf01"), login("leaf01")))]
    [live] = read_switches(Reader(tape=recording), item, refuse)
    recording.save(tmp_path)
    again_item = [("leaf01", SwitchItem(desired("leaf01"), _credential_free("leaf01")))]
    [again] = read_switches(Reader(tape=snapshot.replay(tmp_path)), again_item, _no_session)
    assert (
        again.findings == live.findings and again.evidence.unreachable == "switch leaf01: connection refused"
    )


def _no_session(_login: SwitchLogin) -> Replay:
    raise AssertionError("a replay opened a session")


def _credential_free(name: str) -> SwitchLogin:
    return SwitchLogin(name, "linux", "127.0.0.1", 22, "admin", "", read_timeout_s=5)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    save_hosts(tmp_path, [host_collection("gpu01")])
    with pytest.raises(UsageError, match=r"host/gpu02\.json is missing \(was this node in the run"):
        read_hosts([host_collection("gpu01"), host_collection("gpu02")], snapshot.replay(tmp_path))
    with pytest.raises(UsageError, match=r"switch/leaf01\.json is missing: this snapshot records no switch"):
        read_switches(
            Reader(tape=snapshot.replay(tmp_path)), [("leaf01", SwitchItem(desired("leaf01"), None))]
        )
    with pytest.raises(UsageError, match=r"snapshot\.json is missing"):
        snapshot.replay(tmp_path / "host")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"gpu01\.json:1: not JSON"),
        ('{"host": "gpu01"}', r"gpu01\.json: \"stage\" and \"node\" are not 'host' and 'gpu01'"),
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
    if content.startswith('{"host"') and "sections" not in content and "gpu09" not in content:
        wrapped = content  # not wrapped: the envelope itself is wrong
    elif content.startswith("{"):
        wrapped = f'{{"stage": "host", "node": "gpu01", "read": {content}}}'
    else:
        wrapped = content
    (tmp_path / "host" / "gpu01.json").write_text(wrapped)
    with pytest.raises(UsageError, match=message):
        read_hosts([host_collection("gpu01")], snapshot.replay(tmp_path))


def test_a_foreign_manifest_is_refused(tmp_path: Path) -> None:
    save_hosts(tmp_path, [host_collection("gpu01")])
    (tmp_path / "snapshot.json").write_text('{"format": "fabcheck-snapshot", "version": 7}')
    with pytest.raises(
        UsageError, match=r"snapshot\.json: \"version\" 7: this fabcheck reads versions 1 and 2"
    ):
        snapshot.replay(tmp_path)
