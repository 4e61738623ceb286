"""The ib stage's own fabric-read script (fabcheck.collect.ib) run as the SM node would run it, against
the mock infiniband-diags with a running mock opensm (no sshd: the nodes' folders and the system Python,
as tests/lab/test_mockhost.py runs its tools): its sections parse and judge as the lab fabric, and a
fault counted over the window fails ib.errors on its link alone."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from test_mockhost_support import installed_bin, make_nodes

from fabcheck.checks.ib import check_ib_fabric
from fabcheck.collect.ib import IbCollection, ib_caps, remote_command
from fabcheck.collect.script import split_sections
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.ib import desired_ib_fabric
from fabcheck.gate.ib_stage import evidence_of
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck.parsers.ibstat import parse_ibstat
from fabcheck_lab import ib_lab, inventory
from fabcheck_lab.nodes import plan_nodes
from fabcheck_lab.state import LabPaths, LabState

REPO = Path(__file__).resolve().parents[2]


def test_the_stage_script_reads_the_mock_fabric_in_one_run(tmp_path: Path) -> None:
    records = plan_nodes("ib", 2, 4)  # gpu01, gpu02, sm01, sm02 with 2 leaves and 2 spines
    nodes = make_nodes(tmp_path / "nodes", installed_bin(tmp_path), [(n.name, n.profile) for n in records])
    fabric = ib_lab.fabric_of(records, 4)
    for node in nodes:
        (node.paths.state / "ib_fabric.json").write_text(json.dumps(ib_lab.state_document(fabric)))
    shutil.copytree(REPO / "inventory" / "lab", tmp_path / "inventory" / "lab")
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    inventory.write_inventory(paths, LabState(str(tmp_path), str(paths.run_dir), "ib", 2, 4, "lo", records))
    loaded = load_inventory(tmp_path / "inventory" / "lab")
    desired = desired_ib_fabric(
        loaded.intent, fabric_of(loaded).ib, subnet_managers=["sm01", "sm02"], counter_window_s=1
    )
    assert desired is not None and desired.reader == "sm01"
    sm01 = nodes[2]

    def judged() -> list[tuple[str, str, str, str]]:
        token = secrets.token_hex(8)
        command = remote_command(token, desired, TimeLimits(command_s=60, counter_window_s=1))
        done = subprocess.run(command, shell=True, env=sm01.env, capture_output=True, text=True, timeout=120)
        parsed = split_sections(done.stdout, token, ib_caps(desired))
        assert parsed.complete, (done.stdout[-2000:], done.stderr[-2000:])
        assert {name for name in parsed.sections if name.startswith("vendstat:")} == {
            f"vendstat:{s.lid}" for s in fabric.switches
        }
        evidence = evidence_of(IbCollection("sm01", parsed.sections, True), desired)
        findings = check_ib_fabric(evidence, desired)
        return sorted(
            (n, f.check, f.status.value, f.subject)
            for n, fs in findings.items()
            for f in fs
            if f.status.value != "pass"
        )

    sm01.run("systemctl", "start", "opensm")
    try:
        # One SM view: sminfo's master LID is sm01's HCA in the fabric and every host port's SM lid.
        master = int(nodes[0].run("sminfo").stdout.split()[3])
        assert master == next(h.lid for h in fabric.hcas if h.key == "sm01/mlx5_0")
        assert {p.sm_lid for ca in parse_ibstat(nodes[1].run("ibstat").stdout) for p in ca.ports} == {master}
        assert judged() == []
        document = ib_lab.state_document(fabric, [("ib-symbol-errors", "leaf02", time.time())])
        for node in nodes:
            (node.paths.state / "ib_fabric.json").write_text(json.dumps(document))
        assert judged() == [("leaf02", "ib.errors", "fail", "leaf02/35 ↔ spine01/7")]
    finally:
        sm01.run("systemctl", "stop", "opensm")
