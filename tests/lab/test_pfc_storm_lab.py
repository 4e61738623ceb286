"""PFC storm prevention end to end on a 2-host RoCE lab, over real ssh: the mock NICs start at mlx5's
8000 ms, site.yml (role roce_host, through the one desired record) sets the intent's 100 ms and
host.pfc_storm_prevention passes on every rail NIC; the fault "pfc-storm-off" (0 on one NIC) fails
exactly that check on exactly that NIC, with the fixing command; site.yml --tags pfc repairs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from labsupport import REPO, injected, requires_lab, run_playbook, running_lab

from fabcheck.checks import host as checks
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]
FAULTED = ("gpu01", "mlx5_0")  # the fault hits a host's first RoCE NIC
GENEROUS = ("--timeout", "120", "--connect-timeout", "60")


def validate(paths: LabPaths) -> tuple[int, dict[str, list[dict]]]:
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent), "--json"]
    done = subprocess.run(
        [*argv, *GENEROUS], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    return done.returncode, {r["host"]: r["findings"] for r in results if "host" in r}


def not_passing(findings: dict[str, list[dict]]) -> set[tuple[str, str, str]]:
    return {
        (host, f["check"], f["subject"])
        for host, found in findings.items()
        for f in found
        if f["status"] in ("fail", "error")
    }


def storm_findings(findings: dict[str, list[dict]]) -> dict[tuple[str, str], dict]:
    return {
        (host, f["subject"]): f
        for host, found in findings.items()
        for f in found
        if f["check"] == checks.PFC_STORM_PREVENTION
    }


def test_storm_prevention_is_set_judged_broken_and_repaired() -> None:
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        _rc, fresh = validate(paths)
        factory = storm_findings(fresh)
        assert FAULTED in factory and len(factory) >= 2, factory
        assert {(f["status"], f["actual"]) for f in factory.values()} == {
            ("fail", "pfc-prevention-tout 8000 ms")
        }

        converged = run_playbook(paths)
        assert converged.rc == 0, converged.output[-4000:]
        _rc, findings = validate(paths)
        judged = storm_findings(findings)
        assert judged.keys() == factory.keys()
        assert {f["status"] for f in judged.values()} == {"pass"}, judged
        before = not_passing(findings)

        with injected(paths, "pfc-storm-off", FAULTED[0]):
            _rc, broken = validate(paths)
            assert not_passing(broken) - before == {(FAULTED[0], checks.PFC_STORM_PREVENTION, FAULTED[1])}
            assert before - not_passing(broken) == set()
            failure = storm_findings(broken)[FAULTED]
            assert failure["status"] == "fail"
            assert failure["expected"] == "pfc-prevention-tout 100 ms"
            assert failure["actual"] == "pfc-prevention-tout 0 (storm prevention off)"
            assert "role roce_host (tag pfc)" in failure["hint"]
            assert "ethtool --set-tunable" in failure["hint"] and "pfc-prevention-tout 100" in failure["hint"]

            repaired = run_playbook(paths, "--tags", "pfc")
            assert repaired.rc == 0, repaired.output[-4000:]
            assert repaired.changed.get(FAULTED[0], 0) >= 1
            _rc, fixed = validate(paths)
            assert storm_findings(fixed)[FAULTED]["status"] == "pass"
            assert not_passing(fixed) == before
