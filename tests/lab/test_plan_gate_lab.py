"""A RoCE fabric planned by `fabcheck plan`, built by the lab from the plan file alone, configured by
site.yml and proved by the gate, with no hand-typed cabling (issue 39).

The plan: 16 GPUs on two 8-GPU nodes, 400G NICs, generic 8-port 400G switches on NVUE, rail-optimised and
non-blocking: 16 host links need two tiers, so one leaf per rail (leaf-01-r0 .. leaf-01-r7, two host
ports and two uplinks each) and two spines (spine-01, spine-02), 16 host and 16 leaf-spine cables.
`fabcheck lab up --plan FILE` builds those hosts, switches and cables (LLDP heard at both ends of every
planned cable) and writes the plan's fabric_links, switch_tier and uplinks into the lab's inventory.

Converged, the gate passes and its summary says 32 of 32 planned cables as planned. Two faults prove
built vs planned: two uplinks of one leaf swapped (uplink-swap) fail link.switch_lldp on exactly those two
cables, each named with where it reaches; two host cables of one leaf swapped (switch-miswired) fail
link.lldp on exactly those two, each named with the cable it was swapped with. The summary counts both.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from labsupport import REPO, injected, requires_lab, run_playbook, running_lab, validate_json

from fabcheck.checks.as_planned import LINK_AS_PLANNED, LINK_SUBJECT
from fabcheck_lab.fromplan import load_plan
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

PLAN_ARGS = (
    "--fabric", "roce", "--gpus", "16", "--gpus-per-node", "8", "--nic-gbps", "400",
    "--switch-ports", "8", "--switch-port-gbps", "400", "--platform", "nvue",
)  # fmt: skip
LEAVES = tuple(f"leaf-01-r{rail}" for rail in range(8))
SPINES = ("spine-01", "spine-02")
SWITCH_LLDP = "link.switch_lldp"
Failing = frozenset[tuple[str, str, str]]  # (node, check, subject) of every finding that fails or errs


def planned(tmp: Path) -> Path:
    """The plan file, written by the command a user runs."""
    done = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "plan", *PLAN_ARGS, "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    path = tmp / "plan.json"
    path.write_text(done.stdout)
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabPaths]:
    plan = planned(tmp_path_factory.mktemp("plan"))
    with running_lab(plan=load_plan(plan)) as (paths, state):
        assert {n.name for n in state.switch_nodes()} == {*LEAVES, *SPINES}
        assert {n.name for n in state.host_nodes()} == {"gpu01", "gpu02"}
        converged = run_playbook(paths, "--skip-tags", "gate")
        assert converged.rc == 0, converged.output[-4000:]
        yield paths


def validate(paths: LabPaths) -> tuple[int, list[dict]]:
    return validate_json(paths, "--stages", "host,switch,link")


def node_of(subject: dict) -> str:
    return subject.get("host") or subject.get("switch") or ""


def failing(subjects: list[dict]) -> Failing:
    return frozenset(
        (node_of(s), f["check"], f["subject"])
        for s in subjects
        for f in s.get("findings", [])
        if f["status"] in ("fail", "error")
    )


def findings_of(subjects: list[dict], check: str) -> list[dict]:
    return [f for s in subjects for f in s.get("findings", []) if f["check"] == check]


def summary(subjects: list[dict]) -> dict:
    (found,) = findings_of(subjects, LINK_AS_PLANNED)
    assert found["subject"] == LINK_SUBJECT
    return found


def test_a_lab_built_from_a_plan_converges_and_passes_the_gate_as_planned(lab: LabPaths) -> None:
    rc, subjects = validate(lab)
    assert (rc, failing(subjects)) == (0, frozenset())
    uplinks = findings_of(subjects, SWITCH_LLDP)
    assert len(uplinks) == 16 and {f["status"] for f in uplinks} == {"pass"}, uplinks
    assert {f["subject"].split(" -- ")[1].split(":")[0] for f in uplinks} == set(SPINES)
    host_cables = findings_of(subjects, "link.lldp")
    assert len(host_cables) == 16 and {f["status"] for f in host_cables} == {"pass"}
    found = summary(subjects)
    assert found["status"] == "pass"
    assert found["actual"].startswith("32 of 32 planned cables as planned"), found


def test_two_swapped_uplinks_fail_exactly_those_cables_named_with_where_each_reaches(
    lab: LabPaths,
) -> None:
    with injected(lab, "uplink-swap", "leaf-01-r0"):
        rc, subjects = validate(lab)
    bad = failing(subjects)
    cables = {subject for _node, check, subject in bad if check == SWITCH_LLDP}
    assert len(cables) == 2 and all(c.startswith("leaf-01-r0:") for c in cables), bad
    assert bad == {
        *((n, c, s) for n, c, s in bad if c == SWITCH_LLDP),
        (SPINES[0], LINK_AS_PLANNED, LINK_SUBJECT),
    }
    first, second = sorted(cables)
    (shown,) = [f["actual"] for f in findings_of(subjects, SWITCH_LLDP) if f["subject"] == first]
    assert shown.startswith(f"swapped with {second}"), shown
    assert rc == 1
    found = summary(subjects)
    assert found["status"] == "fail"
    assert found["actual"].startswith(
        "30 of 32 planned cables as planned: 0 missing, 2 miswired (1 swapped"
    ), found


def test_two_swapped_host_cables_fail_link_lldp_on_exactly_those_two(lab: LabPaths) -> None:
    with injected(lab, "switch-miswired", "leaf-01-r1"):
        rc, subjects = validate(lab)
    bad = failing(subjects)
    lldp = {(node, subject) for node, check, subject in bad if check == "link.lldp"}
    assert {node for node, _s in lldp} == {"gpu01", "gpu02"} and len(lldp) == 2, bad
    assert all("leaf-01-r1:" in subject for _n, subject in lldp)
    assert bad == {*((n, "link.lldp", s) for n, s in lldp), (SPINES[0], LINK_AS_PLANNED, LINK_SUBJECT)}
    for finding in findings_of(subjects, "link.lldp"):
        if finding["status"] == "fail":
            assert "swapped with" in finding["actual"], finding
    assert rc == 1
    assert summary(subjects)["actual"].startswith("30 of 32 planned cables as planned"), summary(subjects)


def test_healed_the_fabric_is_as_planned_again(lab: LabPaths) -> None:
    rc, subjects = validate(lab)
    assert (rc, failing(subjects)) == (0, frozenset())
    assert summary(subjects)["actual"].startswith("32 of 32"), summary(subjects)
