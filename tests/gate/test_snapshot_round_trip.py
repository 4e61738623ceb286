"""`validate --save-snapshot` then `--from-snapshot` over every read stage of one inventory (hosts,
a switch, the cables between them): the replay opens no connection and prints the live run's JSON
lines, finding by finding. Every node listens on 127.0.0.1:1, so the live run reads each one as
unreachable, by construction; the stages' own tests replay what a node showed (test_snapshot.py,
test_snapshot_stages.py, test_reader.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from fabcheck.cli import main
from fabcheck.collect import ssh
from fabcheck.gate import switch_stage

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


def test_every_read_stage_replays_to_the_live_runs_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FABCHECK_TEST_SWITCH_PASSWORD", "not-a-secret")
    inventory = tmp_path / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {rails: {0: mlx5_0}}\n")
    (inventory / "hosts.yml").write_text(HOSTS_YML)
    base = [
        "validate",
        "-i",
        str(inventory),
        "--json",
        "--connect-timeout",
        "5",
        "--stages",
        "host,switch,link",
    ]
    assert main([*base, "--save-snapshot", str(tmp_path / "snap")]) == 3
    live = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    manifest = json.loads((tmp_path / "snap" / "snapshot.json").read_text())
    assert manifest["stages"] == {"host": ["gpu01", "gpu02"], "switch": ["leaf01"]}
    nodes = {node.get("host") or node.get("switch") for node in live}
    assert {"gpu01", "gpu02", "leaf01"} <= nodes
    assert any(f["check"].startswith("link.") for node in live for f in node["findings"])

    def no_ssh(*_args: object, **_kwargs: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError("a replay ran ssh")

    def no_session(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("a replay opened a switch session")

    fake = SimpleNamespace(run=no_ssh, DEVNULL=subprocess.DEVNULL, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(ssh, "subprocess", fake)
    monkeypatch.setattr(switch_stage, "netmiko_connect", no_session)
    assert main([*base, "--from-snapshot", str(tmp_path / "snap")]) == 3
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == live
