"""Snapshots of the plugged stages: the sm stage's sections are saved per SM node (DIR/sm/NODE.json, the
one format every read stage's reads take) and replayed offline to identical findings; a missing or
corrupt file is one UsageError naming it, an old snapshot without stages still loads; a traffic stage
(NCCL, perftest, incast) under --from-snapshot is a
usage error naming it, and a replay without --stages runs the default stages that can replay."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_sm_stage import local_desired, run_locally, sm_inventory, sm_node

from fabcheck.checks.model import Status
from fabcheck.cli import main
from fabcheck.collect import ssh
from fabcheck.collect.script import Section
from fabcheck.collect.sm import SmCollection
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.sm import DesiredSubnetManager
from fabcheck.errors import UsageError
from fabcheck.gate import fabric, snapshot
from fabcheck.gate.host_stage import host_restore
from fabcheck.gate.sm_stage import SmItem, SmStage, sm_reads
from fabcheck.gate.stages import StageContext, StageOutcome, default_stage_names, stage_names, stages_named
from fabcheck.intent.loader import Inventory

LIMITS = TimeLimits(connect_s=5, command_s=20)
UNREACHABLE = SmCollection("sm02", {"sminfo": Section(None, "sminfo: sm lid 1")}, False, "ssh ended early")


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    return sm_inventory(tmp_path_factory.mktemp("inventory"))


@dataclasses.dataclass
class Lab:
    """Two SM nodes as local directories read by the real sm script; `broken` answers what it names."""

    root: Path
    stopped: frozenset[str] = frozenset()
    broken: dict[str, SmCollection] = dataclasses.field(default_factory=dict)

    def collector(
        self, target: SshTarget, desired: DesiredSubnetManager, service: str, limits: TimeLimits
    ) -> SmCollection:
        if target.name in self.broken:
            return self.broken[target.name]
        node = self.root / target.name
        if not node.exists():
            sm_node(self.root, target.name, desired, running=target.name not in self.stopped)
        return run_locally(node, local_desired(desired, node), service)


def live_run(
    inventory: Inventory, lab: Lab, directory: Path, plan: fabric.GatePlan | None = None
) -> tuple[fabric.GatePlan, StageOutcome]:
    """The sm stage read through the reader with a recording, its snapshot saved into directory."""
    plan = plan or fabric.plan_gate(inventory, stages=["sm"])
    stage = SmStage(collector=lab.collector)
    recording = snapshot.Recording()
    outcome = stage.run(StageContext(inventory, plan, LIMITS, 2, None, tape=recording))
    recording.save(directory)
    return plan, outcome


def replay(inventory: Inventory, plan: fabric.GatePlan, directory: Path) -> StageOutcome:
    """The sm stage again from the files, with a collector that fails the test if it is used."""

    def live(*_args: object) -> SmCollection:
        raise AssertionError("a replay read a node live")

    tape = snapshot.replay(directory)
    return SmStage(collector=live).run(StageContext(inventory, plan, LIMITS, 2, None, tape=tape))


def not_passed(outcome: StageOutcome) -> set[tuple[str, str]]:
    return {(n.node, f.check) for n in outcome.nodes for f in n.findings if f.status is not Status.PASS}


def test_sm_sections_round_trip_through_the_files(inventory: Inventory, tmp_path: Path) -> None:
    lab = Lab(tmp_path / "nodes")
    kept: dict[str, SmCollection] = {}

    def keeping(target: SshTarget, *args: object) -> SmCollection:
        kept[target.name] = lab.collector(target, *args)  # type: ignore[arg-type]
        return kept[target.name]

    plan = fabric.plan_gate(inventory, stages=["sm"])
    stage = SmStage(collector=keeping)
    recording = snapshot.Recording()
    stage.run(StageContext(inventory, plan, LIMITS, 2, None, tape=recording))
    recording.save(tmp_path / "snap")

    tape = snapshot.replay(tmp_path / "snap")
    for name in ("sm01", "sm02"):
        item = SmItem(SshTarget(name, "127.0.0.1"), plan.desired.subnet_managers[name], "opensm")
        assert (
            tape.replayed("sm", name, lambda data, item=item: sm_reads(keeping).replay(item, data))
            == kept[name]
        )
        assert kept[name].complete and len(kept[name].sections) == 6
    manifest = json.loads((tmp_path / "snap" / "snapshot.json").read_text())
    assert manifest["stages"] == {"sm": ["sm01", "sm02"]} and manifest["version"] == 2
    record = json.loads((tmp_path / "snap" / "sm" / "sm02.json").read_text())["read"]
    assert record["sections"]["is_active"] == {
        "command": "systemctl is-active opensmd",  # sm02's opensm_service
        "rc": 0,
        "stdout": "active\n",
        "stderr": "",
    }
    assert record["sections"]["sminfo"]["command"] == "sminfo"
    assert "SMINFO_MASTER" in record["sections"]["sminfo"]["stdout"]


@pytest.mark.parametrize(
    ("stopped", "broken", "expected"),
    [
        (frozenset(), {}, set()),
        (
            frozenset({"sm01"}),
            {},
            {("sm01", "sm.service"), ("sm01", "sm.state"), ("sm01", "sm.master")},
        ),
        (frozenset(), {"sm02": UNREACHABLE}, None),  # every check of sm02 an error, plus what it hides
    ],
    ids=["converged", "master-stopped", "standby-cut-off"],
)
def test_a_replay_judges_the_sm_stage_as_the_live_run_did(
    inventory: Inventory,
    tmp_path: Path,
    stopped: frozenset[str],
    broken: dict[str, SmCollection],
    expected: set[tuple[str, str]] | None,
) -> None:
    plan, live = live_run(inventory, Lab(tmp_path / "nodes", stopped, broken), tmp_path / "snap")
    again = replay(inventory, plan, tmp_path / "snap")
    assert again == live
    if expected is not None:
        assert not_passed(live) == expected
    else:
        sm02 = next(n for n in live.nodes if n.node == "sm02")
        assert sm02.findings and all(f.status is Status.ERROR for f in sm02.findings)


def test_a_node_with_unusable_connection_variables_replays_as_the_same_error(
    inventory: Inventory, tmp_path: Path
) -> None:
    plan = fabric.plan_gate(inventory, stages=["sm"])
    bad = dataclasses.replace(inventory.host("sm02"), variables={"opensm_service": "-x"})
    plan = dataclasses.replace(plan, chosen=(inventory.host("sm01"), bad))
    _, live = live_run(inventory, Lab(tmp_path / "nodes"), tmp_path / "snap", plan)
    # Never handed to the reader: no file, and the replay stops at the same inventory error.
    assert not (tmp_path / "snap" / "sm" / "sm02.json").exists()
    assert replay(inventory, plan, tmp_path / "snap") == live
    sm02 = [f for n in live.nodes if n.node == "sm02" for f in n.findings]
    assert any(f.status is Status.ERROR and "opensm_service" in f.actual for f in sm02)


def test_the_replayable_stages_are_those_without_traffic() -> None:
    assert set(snapshot.replayable_stages()) == {s.name for s in stages_named(stage_names()) if not s.traffic}
    assert {"host", "switch", "link", "sm"} <= set(snapshot.replayable_stages())
    assert not {"nccl", "perftest", "incast"} & set(snapshot.replayable_stages())


def test_a_missing_sm_file_is_named(inventory: Inventory, tmp_path: Path) -> None:
    plan, _ = live_run(inventory, Lab(tmp_path / "nodes"), tmp_path / "snap")
    (tmp_path / "snap" / "sm" / "sm02.json").unlink()
    with pytest.raises(UsageError, match=r"sm/sm02\.json is missing \(was this node in the run"):
        replay(inventory, plan, tmp_path / "snap")


def test_an_old_snapshot_without_stages_loads_and_names_the_missing_sm_file(
    inventory: Inventory, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    (old / "hosts").mkdir(parents=True)
    (old / "snapshot.json").write_text(
        '{"format": "fabcheck-snapshot", "version": 1, "hosts": ["gpu01"], "switches": []}'
    )
    host = {"host": "gpu01", "priority": 3, "complete": True, "error": None, "expired": None, "sections": {}}
    (old / "hosts" / "gpu01.json").write_text(json.dumps(host))
    tape = snapshot.replay(old)
    assert tape.replayed("host", "gpu01", lambda data: host_restore(data, "gpu01")).complete  # type: ignore[union-attr]
    plan = fabric.plan_gate(inventory, stages=["sm"])
    with pytest.raises(UsageError, match=r"old/sm/sm01\.json is missing: this snapshot records no sm stage"):
        replay(inventory, plan, old)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"sm/sm01\.json:1: not JSON"),
        ('{"node": "sm01"}', r"sm/sm01\.json: \"stage\" and \"node\" are not 'sm' and 'sm01'"),
        ('{"stage": "sm", "node": "sm01"}', r"sm/sm01\.json: missing key 'read'"),
        ('{"node": "sm09"}', r"sm/sm01\.json: \"node\" is not 'sm01'"),
        ('{"node": "sm01", "sections": {}}', r"sm/sm01\.json: missing key 'complete'"),
        (
            '{"node": "sm01", "complete": true, "error": null, '
            '"sections": {"sminfo": {"rc": "zero", "stdout": "", "stderr": ""}}}',
            r"sm/sm01\.json: rc 'zero' is not an exit code",
        ),
        (
            '{"node": "sm01", "complete": true, "error": 7, "sections": {}}',
            r"sm/sm01\.json: 7 is not text",
        ),
    ],
)
def test_a_corrupt_sm_file_is_named(inventory: Inventory, tmp_path: Path, content: str, message: str) -> None:
    plan, _ = live_run(inventory, Lab(tmp_path / "nodes"), tmp_path / "snap")
    envelope = content.startswith(('{"stage"', '{"node": "sm01"}')) or not content.startswith("{")
    wrapped = content if envelope else f'{{"stage": "sm", "node": "sm01", "read": {content}}}'
    (tmp_path / "snap" / "sm" / "sm01.json").write_text(wrapped)
    with pytest.raises(UsageError, match=message):
        replay(inventory, plan, tmp_path / "snap")


def test_a_manifest_with_bad_stages_is_refused(tmp_path: Path) -> None:
    tmp_path.joinpath("snapshot.json").write_text(
        '{"format": "fabcheck-snapshot", "version": 2, "stages": ["sm"]}'
    )
    with pytest.raises(UsageError, match=r"snapshot\.json: \"stages\" is not a mapping"):
        snapshot.replay(tmp_path)


def test_traffic_stages_are_refused_by_name_in_a_replay() -> None:
    with pytest.raises(UsageError, match=r"cannot run stage\(s\) nccl, perftest: they measure live traffic"):
        snapshot.replayed_stages(["host", "nccl", "sm", "perftest"])
    assert snapshot.replayed_stages(["host", "sm"]) == ("host", "sm")


def test_a_replay_without_stages_runs_the_default_stages_that_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    replayed = snapshot.replayed_stages(None)
    assert {"host", "switch", "link", "sm"} <= set(replayed) <= set(default_stage_names())
    monkeypatch.setattr(snapshot, "default_stage_names", lambda: ("host", "switch", "link", "sm", "incast"))
    assert snapshot.replayed_stages(None) == ("host", "switch", "link", "sm")


def test_validate_refuses_a_traffic_stage_with_from_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused before the inventory or the snapshot is read: neither exists here.
    argv = ["validate", "-i", str(tmp_path / "inv"), "--from-snapshot", str(tmp_path / "snap")]
    assert main([*argv, "--stages", "host,nccl"]) == 2
    said = capsys.readouterr().err
    assert "stage(s) nccl: they measure live traffic" in said and "--from-snapshot" in said


def test_validate_saves_the_sm_stage_and_replays_it_with_no_connection(
    inventory: Inventory, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inventory's SM nodes listen on 127.0.0.1:1: the live run reads each one as unreachable.
    base = ["validate", "-i", str(inventory.source), "--json", "--connect-timeout", "5"]
    assert main([*base, "--save-snapshot", str(tmp_path / "snap")]) == 3
    live = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {node["sm"] for node in live} == {"sm01", "sm02"}
    assert all("Connection refused" in f["actual"] for node in live for f in node["findings"])
    assert sorted(p.name for p in (tmp_path / "snap" / "sm").iterdir()) == ["sm01.json", "sm02.json"]

    def no_ssh(*_args: object, **_kwargs: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError("a replay ran ssh")

    fake = SimpleNamespace(run=no_ssh, DEVNULL=subprocess.DEVNULL, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(ssh, "subprocess", fake)
    assert main([*base, "--from-snapshot", str(tmp_path / "snap")]) == 3
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == live


def test_a_replay_of_sm_without_its_file_is_a_usage_error(
    inventory: Inventory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["validate", "-i", str(inventory.source), "--json", "--connect-timeout", "5"]
    assert main([*base, "--save-snapshot", str(tmp_path / "snap")]) == 3
    (tmp_path / "snap" / "sm" / "sm01.json").unlink()
    capsys.readouterr()
    assert main([*base, "--from-snapshot", str(tmp_path / "snap")]) == 2
    assert "sm/sm01.json is missing" in capsys.readouterr().err
