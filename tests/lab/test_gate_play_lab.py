"""The gate at the end of site.yml (playbooks/gate.yml).

Without a lab: the play is tagged `gate` (skipped by --skip-tags gate and by concern tags), runs under
--check, passes the run's limit to validate as one argv word and fails with validate's report and exit
meaning. On one lab of 3 GPU hosts (the last one the PCIe server, stating its own GPU-NIC class): site.yml
converges it and ends with a passing gate; validate then passes every host with exit 0 and every skip
says why; a host fault fails the gate with the failing finding shown, and `site.yml --limit
localhost,gpu02` repairs it and gates only gpu02. (Switches under the gate: test_fabric_gate_lab.py,
whose site.yml run now ends with it.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from labsupport import REPO, PlaybookRun, requires_lab, run_playbook, running_lab

from fabcheck.checks import host as host_checks
from fabcheck_lab import faults
from fabcheck_lab.state import LabPaths

PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
GATE_TASK = "Run fabcheck validate on the inventory and limit of this run"
GENEROUS = '{"fabcheck_gate_options": ["--timeout", "120", "--connect-timeout", "60"]}'  # a loaded CI box
PCIE_HOST = "gpu03"  # the last host of a lab with more than 2


def ansible_playbook(*argv: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [str(PLAYBOOK), *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def tasks_listed(*options: str) -> str:
    listed = ansible_playbook("-i", "inventory/example", "site.yml", "--list-tasks", *options)
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


def test_the_gate_is_the_last_play_and_only_tag_gate_or_an_untagged_run_has_it() -> None:
    assert tasks_listed().rstrip().endswith("Fail the run when the gate does not pass\tTAGS: [gate]")
    assert GATE_TASK in tasks_listed("--tags", "gate")
    assert GATE_TASK not in tasks_listed("--skip-tags", "gate")
    assert GATE_TASK not in tasks_listed("--tags", "pfc")


def test_in_check_mode_the_limit_reaches_validate_and_a_failing_gate_shows_its_report(tmp_path: Path) -> None:
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    # Two hosts nobody listens for (port 1 of loopback refuses at once).
    (tmp_path / "hosts.yml").write_text(
        textwrap.dedent("""\
        all:
          children:
            gpu_hosts:
              hosts:
                h1: {ansible_host: 127.0.0.1, ansible_port: 1}
                h2: {ansible_host: 127.0.0.1, ansible_port: 1}
        """)
    )
    run = ansible_playbook("-i", str(tmp_path), "playbooks/gate.yml", "--limit", "localhost,h1", "--check")
    assert run.returncode == 2, run.stdout
    # h2 is outside the limit; a whole word, since the checkout's own path may hold "h2" (/tmp/fresh2/...)
    assert '"ERROR h1"' in run.stdout and re.search(r"\bh2\b", run.stdout) is None, run.stdout
    assert "expected: one ssh round trip" in run.stdout and "Connection refused" in run.stdout
    assert "fabcheck validate exited 3 (nothing failed, but something could not be checked)" in run.stdout


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[LabPaths, PlaybookRun]]:
    with running_lab(profile="roce", hosts=3, switches=0) as (paths, _state):
        yield paths, run_playbook(paths, "-e", GENEROUS)


def validate(paths: LabPaths) -> tuple[int, list[dict]]:
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent), "--json"]
    done = subprocess.run(
        [*argv, "--timeout", "120", "--connect-timeout", "60"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def not_passing(subjects: list[dict]) -> set[tuple[str, str, str]]:
    return {
        (s.get("host") or s.get("switch") or "?", f["check"], f["subject"])
        for s in subjects
        for f in s["findings"]
        if f["status"] in ("fail", "error")
    }


@pytest.mark.lab
@requires_lab
def test_site_yml_converges_the_lab_and_ends_with_a_passing_gate(lab: tuple[LabPaths, PlaybookRun]) -> None:
    _paths, converged = lab
    assert converged.rc == 0, converged.output[-4000:]
    assert converged.failed.get("localhost") == 0
    verdict = converged.output.split("TASK [Show the gate's verdict]")[1]
    # The 3 hosts, judged by the gate inside site.yml.
    assert '"PASS: 3 host(s): 3 pass, 0 fail, 0 could not be checked"' in verdict, verdict[:2000]


@pytest.mark.lab
@requires_lab
def test_every_host_passes_with_exit_0_and_every_skip_says_why(
    lab: tuple[LabPaths, PlaybookRun],
) -> None:
    paths, _converged = lab
    rc, subjects = validate(paths)
    assert rc == 0, not_passing(subjects)
    assert {s.get("host") for s in subjects if "host" in s} == {"gpu01", "gpu02", PCIE_HOST}
    findings = [f for s in subjects for f in s["findings"]]
    assert all(f["actual"].strip() for f in findings if f["status"] == "skip")
    # The PCIe server is judged, at the class its inventory states, on all 8 GPUs.
    [pcie] = [s for s in subjects if s.get("host") == PCIE_HOST]
    affinity = [f for f in pcie["findings"] if f["check"] == host_checks.AFFINITY]
    assert len(affinity) == 8 and all(f["status"] == "pass" for f in affinity)
    assert affinity[0]["expected"] == "GPU0 -> mlx5_0 at NODE or better"


@pytest.mark.lab
@requires_lab
def test_a_host_fault_fails_the_gate_and_a_limited_site_run_repairs_and_gates_that_host(
    lab: tuple[LabPaths, PlaybookRun],
) -> None:
    paths, _converged = lab
    faults.inject(paths, "pfc-off", "gpu02")
    try:
        limited = ("--limit", "localhost,gpu02", "-e", GENEROUS)
        gated = run_playbook(paths, *limited, playbook="playbooks/gate.yml")
        assert gated.rc == 2, gated.output[-4000:]
        report = gated.output.split("TASK [Show the gate's report")[1]
        assert '"FAIL  gpu02"' in report and '"  FAIL  host.pfc [mlx5_0]"' in report, report[:2000]
        assert '"        actual:   PFC off on every priority"' in report and "role roce_host" in report
        assert "fabcheck validate exited 1 (a check failed)" in gated.output
        repaired = run_playbook(paths, *limited)
        assert repaired.rc == 0, repaired.output[-4000:]
        assert repaired.changed.get("gpu02", 0) >= 1
        verdict = repaired.output.split("TASK [Show the gate's verdict]")[1]
        assert '"PASS: 1 host(s): 1 pass, 0 fail, 0 could not be checked"' in verdict, verdict[:1000]
    finally:
        faults.heal(paths, "gpu02", "pfc-off")
