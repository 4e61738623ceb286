"""`fabcheck topology` in process: the cabling map alone (unverified, said so), a validate snapshot
replayed through the gate's reader (its link verdicts decide which nodes count), the three formats,
-o written atomically, and the refusals (no node kept: nothing written; a snapshot without a stage
that judges cables)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from fabcheck.cli import main
from fabcheck.collect import ssh
from fabcheck.gate import switch_stage

REPO = Path(__file__).resolve().parents[2]
HOSTS_YML = """
all:
  children:
    gpu_hosts:
      vars:
        ansible_host: 127.0.0.1
        ansible_port: 1
        ansible_ssh_common_args: -F /dev/null
      hosts:
        gpu01:
          fabric_links: {mlx5_0: "leaf01:swp1"}
        gpu02:
          fabric_links: {mlx5_0: "leaf01:swp2"}
          slurm_node_name: node02
    switches:
      children:
        switches_nvue:
          hosts:
            leaf01:
              switch_address: 127.0.0.1
              switch_port: 1
              switch_username: admin
              switch_password: "{{ lookup('ansible.builtin.env', 'FABCHECK_TEST_SWITCH_PASSWORD') }}"
              switch_ports: [swp1, swp2]
"""


def test_the_cabling_map_alone_is_written_and_marked_unverified(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "-i", str(REPO / "inventory" / "example")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == [
        "# UNVERIFIED: no --snapshot given: every cable of the cabling map counts as cabled.",
        "SwitchName=leaf01 Nodes=gpu[01-04]",  # each host under its first rail's leaf
    ]
    assert err == "topology: 4 node(s) under 1 switch(es)\n"


def test_ib_spines_sit_over_their_leaves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "-i", str(REPO / "inventory" / "example-ib"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "fabcheck-topology" and data["version"] == 1 and data["verified"] is False
    assert [(s["name"], s["tier"], s["nodes"], s["switches"]) for s in data["switches"]] == [
        ("leaf01", "leaf", ["ibgpu01", "ibgpu02"], []),
        ("spine01", "spine", [], ["leaf01"]),
        ("spine02", "spine", [], ["leaf01"]),
    ]
    assert data["blocks"] == [{"name": "leaf01", "nodes": ["ibgpu01", "ibgpu02"]}] and data[
        "block_sizes"
    ] == [2]


@pytest.fixture
def snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """An inventory and a validate snapshot of it; every node listens on 127.0.0.1:1, so the run read
    none of them and every cable's link checks are errors (as tests/gate/test_snapshot_round_trip)."""
    monkeypatch.setenv("FABCHECK_TEST_SWITCH_PASSWORD", "not-a-secret")
    inventory = tmp_path / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {rails: {0: mlx5_0}}\n")
    (inventory / "hosts.yml").write_text(HOSTS_YML)
    run = [
        "validate",
        "-i",
        str(inventory),
        "--json",
        "--connect-timeout",
        "5",
        "--stages",
        "host,switch,link",
    ]
    assert main([*run, "--save-snapshot", str(tmp_path / "snap")]) == 3
    capsys.readouterr()

    def no_ssh(*_args: object, **_kwargs: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError("a replay ran ssh")

    def no_session(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("a replay opened a switch session")

    fake = SimpleNamespace(run=no_ssh, DEVNULL=subprocess.DEVNULL, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(ssh, "subprocess", fake)
    monkeypatch.setattr(switch_stage, "netmiko_connect", no_session)
    return tmp_path


def test_nodes_whose_cables_were_not_judged_are_left_out_and_nothing_is_written(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = snapshot / "topology.conf"
    output.write_text("SwitchName=old Nodes=gpu01\n")
    args = [
        "topology",
        "-i",
        str(snapshot / "inventory"),
        "--snapshot",
        str(snapshot / "snap"),
        "-o",
        str(output),
    ]
    assert main(args) == 1
    assert output.read_text() == "SwitchName=old Nodes=gpu01\n"  # slurmctld keeps a file it can read
    err = capsys.readouterr().err
    assert err.startswith(
        "fabcheck topology: no node kept, nothing written (gpu01: gpu01:mlx5_0 <-> leaf01:swp1: "
    )
    assert "error: not read" in err


def test_include_failed_keeps_them_named_and_writes_atomically(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = snapshot / "topology.conf"
    args = ["topology", "-i", str(snapshot / "inventory"), "--snapshot", str(snapshot / "snap")]
    assert main([*args, "--include-failed", "-o", str(output)]) == 0
    text = output.read_text()
    assert text.splitlines()[-1] == "SwitchName=leaf01 Nodes=gpu01,node02"  # node02: gpu02's slurm_node_name
    assert "# Only cables whose checks passed in that run count." in text
    checks = "link.trust, link.pfc, link.dscp_map, link.mtu, link.lldp, link.health"
    assert (
        f"# kept (--include-failed): node02 (gpu02): gpu02:mlx5_0 <-> leaf01:swp2: {checks} error: not read"
        in text
    )
    assert sorted(p.name for p in snapshot.iterdir()) == [
        "inventory",
        "snap",
        "topology.conf",
    ]  # no temp left
    assert output.stat().st_mode & 0o777 == 0o644
    assert main([*args, "--include-failed", "--format", "slurm-block"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "BlockName=leaf01 Nodes=gpu01,node02",
        "BlockSizes=2",
    ]


def test_a_snapshot_without_a_stage_that_judges_cables_is_refused(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = snapshot / "snap" / "snapshot.json"
    data = json.loads(manifest.read_text())
    data["stages"] = {"host": data["stages"]["host"]}
    manifest.write_text(json.dumps(data))
    args = ["topology", "-i", str(snapshot / "inventory"), "--snapshot", str(snapshot / "snap")]
    assert main(args) == 2
    assert "records no stage that judges cables" in capsys.readouterr().err


def test_a_missing_snapshot_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["topology", "-i", str(REPO / "inventory" / "example"), "--snapshot", str(tmp_path / "none")]
    assert main(args) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_a_planned_leaf_spine_inventory_puts_spines_over_the_leaves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The inventory `fabcheck plan --inventory` writes, read by the real loader: the leaf-spine cables
    are switch fabric_links (Fabric.switch_links), the spines' tier their switch_tier."""
    plan = ["plan", "--fabric", "roce", "--gpus", "32", "--gpus-per-node", "8", "--nics-per-node", "2"]
    plan += ["--nic-gbps", "400", "--switch-ports", "4", "--switch-port-gbps", "400", "--platform", "nvue"]
    assert main([*plan, "--inventory", str(tmp_path)]) == 0
    (tmp_path / "group_vars" / "switches.yml").write_text(
        "switch_address: 192.0.2.1\nswitch_username: admin\n"
    )
    capsys.readouterr()
    assert main(["topology", "-i", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "SwitchName=leaf-01-r0 Nodes=gpu[01-02]",  # rail 1's leaves hold no node: each node under rail 0's
        "SwitchName=leaf-02-r0 Nodes=gpu[03-04]",
        "SwitchName=spine-01 Switches=leaf-01-r0,leaf-02-r0",  # hostlist suffixes are trailing digits only
        "SwitchName=spine-02 Switches=leaf-01-r0,leaf-02-r0",
    ]
    assert main(["topology", "-i", str(tmp_path), "--format", "json"]) == 0
    tiers = {s["name"]: s["tier"] for s in json.loads(capsys.readouterr().out)["switches"]}
    assert tiers == {"leaf-01-r0": "leaf", "leaf-02-r0": "leaf", "spine-01": "spine", "spine-02": "spine"}


def test_a_host_the_snapshot_lacks_is_a_usage_error_naming_its_file(
    snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (snapshot / "snap" / "host" / "gpu02.json").unlink()
    args = ["topology", "-i", str(snapshot / "inventory"), "--snapshot", str(snapshot / "snap")]
    assert main([*args, "--include-failed"]) == 2
    err = capsys.readouterr().err
    assert "gpu02.json is missing (was this node in the run that saved it?)" in err
