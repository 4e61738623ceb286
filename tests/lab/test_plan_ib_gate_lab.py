"""An InfiniBand fabric planned by `fabcheck plan`, built by the lab from the plan file alone (issue 39).

The plan: 16 GPUs on two 8-GPU nodes, 400G HCAs, generic 12-port NDR switches, not rail-optimised:
three leaves of six host ports and six uplinks, two spines, 16 host and 16 leaf-spine cables; the lab
adds its two subnet-manager nodes on free leaf ports (34 cables in the intent). site.yml converges
the subnet managers, and the sm and ib stages pass with ib.as_planned "34 of 34". One swap of two
leaf-spine cables (ib-miswire) fails ib.topology on exactly those two cables, each named with where it
reaches, and the summary counts one swapped pair.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from labsupport import REPO, injected, requires_lab, run_playbook, running_lab, validate_json

from fabcheck.checks.as_planned import IB_AS_PLANNED
from fabcheck_lab.fromplan import load_plan
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

PLAN_ARGS = (
    "--fabric", "ib", "--gpus", "16", "--gpus-per-node", "8", "--nic-gbps", "400",
    "--switch-ports", "12", "--switch-port-gbps", "400", "--no-rail-optimised",
)  # fmt: skip


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabPaths]:
    done = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "plan", *PLAN_ARGS, "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = Path(tmp_path_factory.mktemp("plan")) / "plan.json"
    plan.write_text(done.stdout)
    with running_lab(plan=load_plan(plan)) as (paths, _state):
        converged = run_playbook(paths, "--skip-tags", "gate")
        assert converged.rc == 0, converged.output[-4000:]
        yield paths


def findings(subjects: list[dict]) -> list[tuple[str, dict]]:
    return [(s.get("ib_switch") or s.get("host") or "", f) for s in subjects for f in s.get("findings", [])]


def summary(subjects: list[dict]) -> dict:
    (found,) = [f for _node, f in findings(subjects) if f["check"] == IB_AS_PLANNED]
    return found


def test_a_planned_ib_fabric_passes_as_planned(lab: LabPaths) -> None:
    rc, subjects = validate_json(lab, "--stages", "sm,ib")
    found = findings(subjects)
    bad = [(node, f["check"], f["subject"]) for node, f in found if f["status"] in ("fail", "error")]
    assert (rc, bad) == (0, [])
    cables = [f for _node, f in found if f["check"] == "ib.topology"]
    assert len(cables) == 34 and {f["status"] for f in cables} == {"pass"}, cables
    total = summary(subjects)
    assert total["status"] == "pass", total
    assert total["actual"].startswith("34 of 34 planned cables as planned"), total


def test_two_swapped_leaf_spine_cables_fail_ib_topology_on_exactly_those_two(lab: LabPaths) -> None:
    with injected(lab, "ib-miswire", "leaf-01"):
        rc, subjects = validate_json(lab, "--stages", "sm,ib")
    bad = [(node, f) for node, f in findings(subjects) if f["status"] in ("fail", "error")]
    topology = sorted(f["subject"] for _node, f in bad if f["check"] == "ib.topology")
    assert len(topology) == 2 and {f["check"] for _n, f in bad} == {"ib.topology", IB_AS_PLANNED}, bad
    for _node, finding in bad:
        if finding["check"] == "ib.topology":
            (other,) = [s for s in topology if s != finding["subject"]]
            assert finding["actual"].startswith(f"swapped with {other}"), finding
    assert rc == 1
    expected = "32 of 34 planned cables as planned: 0 missing, 2 miswired (1 swapped pairs)"
    assert summary(subjects)["actual"].startswith(expected), summary(subjects)
