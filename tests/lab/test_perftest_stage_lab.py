"""The perftest stage on 4 lab hosts that site.yml converged (three 8-NIC hosts and one 2-NIC host):
healthy, every NIC reaches the floor with its peers, and `fabcheck baseline record` stores every link;
with `slow-link` on one node, the stage names that node as the slow host (its drift too) and no other
host fails, and `fabcheck baseline diff` exits 1."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from labsupport import REPO, converged_lab, injected, requires_lab

from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


def fabcheck(paths: LabPaths, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "fabcheck.cli", *args, "-i", str(paths.inventory.parent)]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def perftest_findings(paths: LabPaths) -> dict[str, list[dict]]:
    """host -> its perftest.* findings of `fabcheck validate --stages host,perftest --json`."""
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent)]
    argv += ["--stages", "host,perftest", "--json", *GENEROUS]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1, 3), done.stderr
    subjects = [json.loads(line) for line in done.stdout.splitlines()]
    return {
        s["host"]: [f for f in s["findings"] if f["check"].startswith("perftest.")]
        for s in subjects
        if "host" in s
    }


def not_passing(found: dict[str, list[dict]]) -> set[tuple[str, str, str]]:
    return {
        (host, f["check"], f["subject"])
        for host, fs in found.items()
        for f in fs
        if f["status"] in ("fail", "error")
    }


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with converged_lab("--limit", "gpu_hosts", profile="roce", hosts=4, switches=0) as paths:
        yield paths


def test_a_healthy_fabric_passes_every_nic_and_records_a_baseline(lab: LabPaths) -> None:
    found = perftest_findings(lab)
    assert set(found) == {"gpu01", "gpu02", "gpu03", "gpu04"}
    assert not_passing(found) == set()
    nics = {(h, f["subject"]) for h, fs in found.items() for f in fs if f["check"] == "perftest.nic"}
    assert len(nics) == 3 * 8 + 2  # every rail NIC measured, the 2-NIC host's too
    assert all(f["status"] == "skip" for fs in found.values() for f in fs if f["check"] == "perftest.drift")
    recorded = fabcheck(lab, "baseline", "record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    shown = fabcheck(lab, "baseline", "show").stdout.splitlines()
    assert len(shown) - 1 >= 13  # a header, then at least the survey's links (13 pairs)


def test_slow_link_on_one_node_names_that_node(lab: LabPaths) -> None:
    with injected(lab, "slow-link", "gpu02"):
        found = perftest_findings(lab)
        diff = fabcheck(lab, "baseline", "diff")
    failing = not_passing(found)
    assert {(h, check) for h, check, _subject in failing} <= {
        ("gpu02", "perftest.host"),
        ("gpu02", "perftest.drift"),
    }
    assert ("gpu02", "perftest.host", "gpu02") in failing
    assert diff.returncode == 1 and "DRIFT" in diff.stdout, diff.stdout + diff.stderr
