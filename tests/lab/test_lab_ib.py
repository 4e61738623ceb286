"""The InfiniBand lab profile: IB hosts plus two subnet-manager nodes running the mocked opensm."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from labsupport import requires_lab, running_lab

from fabcheck.parsers.ibstat import parse_ibstat
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]


def _out(paths: LabPaths, node: str, command: str) -> str:
    argv = ["ssh", "-F", str(paths.ssh_config), node, command]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"{node}: {command}: {result.stderr}"
    return result.stdout


def test_ib_lab_elects_the_highest_priority_subnet_manager() -> None:
    with running_lab(profile="ib", hosts=2) as (paths, state):
        assert [n.name for n in state.nodes] == ["gpu01", "gpu02", "sm01", "sm02"]
        groups = yaml.safe_load(paths.inventory.read_text())["all"]["children"]
        assert set(groups) == {"gpu_hosts", "subnet_managers"}

        ansible = Path(sys.executable).parent / "ansible"
        env = os.environ | {"ANSIBLE_DEPRECATION_WARNINGS": "False"}
        ping = [str(ansible), "subnet_managers", "-i", "inventory/lab", "-m", "ansible.builtin.ping", "-o"]
        pinged = subprocess.run(ping, capture_output=True, text=True, cwd=paths.project, env=env, timeout=120)
        assert pinged.returncode == 0 and pinged.stdout.count("SUCCESS") == 2, pinged.stdout + pinged.stderr

        for node, priority in (("sm01", 15), ("sm02", 14)):
            conf = "/etc/opensm/opensm.conf"
            _out(
                paths,
                node,
                f"sed -i 's/^sm_priority .*/sm_priority {priority}/' {conf} && systemctl start opensm",
            )
        assert _out(paths, "sm02", "systemctl is-active opensm") == "active\n"
        assert _out(paths, "gpu01", "sminfo").endswith("priority 15 state 3 SMINFO_MASTER\n")

        _out(paths, "sm01", "systemctl stop opensm")
        assert _out(paths, "gpu02", "sminfo").endswith("priority 14 state 3 SMINFO_MASTER\n")

        cas = parse_ibstat(_out(paths, "gpu01", "ibstat"))
        assert len(cas) == 8
        assert {port.link_layer for ca in cas for port in ca.ports} == {"InfiniBand"}
