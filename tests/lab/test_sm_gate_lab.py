"""The gate's sm and ib stages and the IB host ports against `fabcheck lab up --profile ib --hosts 4
--switches 4` (gpu01..gpu04, sm01, sm02, and the InfiniBand fabric between them: leaf01, leaf02, spine01,
spine02, found in-band, with as many leaf-spine cables as host cables).

One lab, converged once by site.yml (its gate play skipped: the test runs the stages itself, over a
2 s counter window, and compares every verdict with the converged ones). Converged: both SMs pass every
sm.* check, every host port is ACTIVE at 400 Gb/s, and the ib stage judges every planned cable (ib.topology,
ib.link, ib.errors) and every IB switch (ib.guids, ib.firmware) as passing, in one round trip to one node
(sm01, the intended master: the sm stage's round trip to it reads the fabric too). Each IB fault fails
exactly its check on exactly that cable or HCA, and heals
back; `fabcheck validate` itself passes on the converged lab. sm-stopped on the intended master fails
sm.service/state/master on sm01 alone while sm02 stands in and the host ports stay ACTIVE; stopped on
both, the host ports fall back to INIT, host.port_state fails on each of them and the fabric is
unreadable on every IB switch. link-down and link-speed fail host.port_state, host.port_speed on
gpu01's mlx5_0/1 and nothing else. Each fault heals back to the converged verdicts. The converged run is
saved as a snapshot (hosts, SM nodes, the fabric) and replays offline to the same findings, pass by pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from labsupport import requires_lab, run_playbook, running_lab, validate_json

from fabcheck.checks import host as host_checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.backends.native import collect_host
from fabcheck.collect.ssh import TimeLimits
from fabcheck.gate import fabric, snapshot
from fabcheck.gate.fabric import gate_report as gate_run
from fabcheck.gate.stages import Reads
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck_lab import faults
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

HOSTS, SMS = ("gpu01", "gpu02", "gpu03", "gpu04"), ("sm01", "sm02")
IB_SWITCHES = ("leaf01", "leaf02", "spine01", "spine02")
WINDOW_S = 2  # seconds between the two counter readings: ib.errors judges what grows inside it
PORTS = tuple(f"mlx5_{i}/1" for i in range(8))
# Limits no healthy node misses on a loaded machine; a node meant to fail fails by construction.
LIMITS = TimeLimits(connect_s=60, command_s=120)
Verdicts = frozenset[tuple[str, str, str]]  # (node, check, subject) of every finding that is not a pass


@dataclass(frozen=True)
class Gate:
    paths: LabPaths
    inventory: Inventory
    converged: Verdicts
    snapshot: Path  # the converged run, saved
    findings: list[tuple[str, Finding]]  # every finding of the converged run, passes included

    def judge(self) -> Verdicts:
        return judge(self.inventory)


def plan(inventory: Inventory) -> fabric.GatePlan:
    return fabric.plan_gate(inventory, stages=["host", "sm", "ib"], counter_window_s=WINDOW_S)


def findings(result: fabric.GateResult) -> list[tuple[str, Finding]]:
    run = gate_run(result)
    assert {s.name for s in run.subjects} == {*HOSTS, *SMS, *IB_SWITCHES}
    return [(s.name, f) for s in run.subjects for f in s.findings]


def verdicts(shown: list[tuple[str, Finding]]) -> Verdicts:
    return frozenset((node, f.check, f.subject) for node, f in shown if f.status != Status.PASS)


def judge(inventory: Inventory) -> Verdicts:
    return verdicts(findings(fabric.run_gate(inventory, plan(inventory), LIMITS)))


def recorded(inventory: Inventory, directory: Path) -> fabric.GateResult:
    """A gate run whose host and SM reads are saved into directory, as --save-snapshot does."""
    planned = plan(inventory)
    recording = snapshot.Recording()
    result = fabric.run_gate(inventory, planned, LIMITS, reads=Reads(collect_host), tape=recording)
    recording.save(directory)
    return result


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    with running_lab(profile="ib", hosts=len(HOSTS), switches=len(IB_SWITCHES)) as (paths, _state):
        converged = run_playbook(paths, "--skip-tags", "gate")
        assert converged.rc == 0, converged.output[-4000:]
        inventory = load_inventory(paths.inventory.parent)
        saved = tmp_path_factory.mktemp("snapshot")
        shown = findings(recorded(inventory, saved))
        yield Gate(paths, inventory, verdicts(shown), saved, shown)


def new_verdicts(gate: Gate, *injected: tuple[str, str]) -> tuple[Verdicts, Verdicts]:
    """(what the faults add to the converged verdicts, what they take away), then heal and re-judge."""
    try:
        for fault, node in injected:
            assert faults.inject(gate.paths, fault, node)
        shown = gate.judge()
    finally:
        faults.heal(gate.paths)
    return shown - gate.converged, gate.converged - shown


def test_a_converged_ib_lab_passes_the_sm_stage_and_its_ports(gate: Gate) -> None:
    assert not {v for v in gate.converged if v[0] in SMS}, sorted(gate.converged)
    port_checks = {host_checks.PORT_STATE, host_checks.PORT_SPEED}
    assert not {v for v in gate.converged if v[1] in port_checks}, sorted(gate.converged)


def test_the_converged_run_replays_offline_to_the_same_findings(gate: Gate) -> None:
    planned = plan(gate.inventory)
    assert sorted(p.name for p in (gate.snapshot / "sm").iterdir()) == [f"{sm}.json" for sm in SMS]
    # The whole InfiniBand fabric was one read of one node, the intended master's, inside the sm stage's
    # one round trip to it: sm01's record holds it, and the ib stage kept no read of its own.
    assert not (gate.snapshot / "ib").exists()
    records = {sm: json.loads((gate.snapshot / "sm" / f"{sm}.json").read_text())["read"] for sm in SMS}
    assert "ibnetdiscover" in records["sm01"]["fabric"]["sections"]
    assert "fabric" not in records["sm02"]
    again = fabric.run_gate(gate.inventory, planned, LIMITS, tape=snapshot.replay(gate.snapshot))
    assert findings(again) == gate.findings


def test_stopping_the_master_sm_fails_it_alone_and_the_standby_takes_over(gate: Gate) -> None:
    added, gone = new_verdicts(gate, ("sm-stopped", "sm01"))
    assert added == {
        ("sm01", "sm.service", "opensm service"),
        ("sm01", "sm.state", "opensm"),
        ("sm01", "sm.master", "subnet master"),
    }
    assert not gone
    assert gate.judge() == gate.converged  # healed: sm01 is master again


def test_with_no_sm_left_the_host_ports_stay_init(gate: Gate) -> None:
    added, gone = new_verdicts(gate, ("sm-stopped", "sm01"), ("sm-stopped", "sm02"))
    ports = {(host, host_checks.PORT_STATE, port) for host in HOSTS for port in PORTS}
    sms = {("sm01", "sm.service", "opensm service"), ("sm01", "sm.state", "opensm")}
    sms |= {("sm02", "sm.service", "opensm service"), ("sm02", "sm.state", "opensm")}
    # Without a subnet manager no LID is assigned and no SA answers: the fabric cannot be read, and
    # every IB switch and HCA says so (never a pass).
    fabric_unread = {v for v in added if v[1].startswith("ib.")}
    assert {v[0] for v in fabric_unread} == {*IB_SWITCHES, *HOSTS, *SMS}  # every HCA's ib.guids too
    assert added - fabric_unread == ports | sms | {("sm01", "sm.master", "subnet master")}
    assert not gone
    assert gate.judge() == gate.converged


@pytest.mark.parametrize(
    ("fault", "check"), [("link-down", host_checks.PORT_STATE), ("link-speed", host_checks.PORT_SPEED)]
)
def test_a_port_fault_fails_exactly_its_check_on_exactly_that_port(
    gate: Gate, fault: str, check: str
) -> None:
    added, gone = new_verdicts(gate, (fault, "gpu01"))
    assert added == {("gpu01", check, "mlx5_0/1")}
    assert not gone


# ---- the InfiniBand fabric (issue 37) ---------------------------------------------------------------

IB_CHECKS = ("ib.topology", "ib.link", "ib.errors", "ib.guids", "ib.firmware")


def test_the_ib_stage_judges_every_planned_cable_and_switch_and_passes(gate: Gate) -> None:
    cables = plan(gate.inventory).desired.ib_fabric
    assert cables is not None
    assert len(cables.links) == len(HOSTS) * 8 * 2 + len(SMS) * 2  # as many uplinks as host cables
    assert not {v for v in gate.converged if v[1].startswith("ib.")}, sorted(gate.converged)
    passed: dict[str, set[str]] = {}
    for _node, finding in gate.findings:
        if finding.check.startswith("ib.") and finding.status == Status.PASS:
            passed.setdefault(finding.check, set()).add(finding.subject)
    labels = {link.label for link in cables.links}
    for check in ("ib.topology", "ib.link", "ib.errors"):
        assert passed.get(check, set()) >= labels, (check, sorted(labels - passed.get(check, set()))[:5])
    assert set(IB_CHECKS) <= set(passed)


def ib_failures(gate: Gate, fault: str, node: str) -> dict[tuple[str, str, str], Finding]:
    """(node, check, subject) of every ib.* finding that fails or errors with the fault injected and
    did not in the converged run; healed after, and the healed run is the converged one again. (A
    cable that is not there or not where planned is a named skip of ib.link and ib.errors: nothing to
    judge.)"""
    try:
        assert faults.inject(gate.paths, fault, node)
        shown = findings(fabric.run_gate(gate.inventory, plan(gate.inventory), LIMITS))
    finally:
        faults.heal(gate.paths)
    bad = {
        (n, f.check, f.subject): f
        for n, f in shown
        if f.status in (Status.FAIL, Status.ERROR) and (n, f.check, f.subject) not in gate.converged
    }
    assert gate.judge() == gate.converged
    return bad


@pytest.mark.parametrize(
    ("fault", "check", "subject"),
    [
        ("ib-link-width", "ib.link", "leaf01/33 ↔ spine01/1"),
        ("ib-link-speed", "ib.link", "leaf01/34 ↔ spine02/1"),
        ("ib-link-missing", "ib.topology", "leaf01/49 ↔ spine01/9"),
        ("ib-symbol-errors", "ib.errors", "leaf01/35 ↔ spine01/2"),
    ],
)
def test_an_ib_link_fault_fails_exactly_its_check_on_exactly_that_cable(
    gate: Gate, fault: str, check: str, subject: str
) -> None:
    found = set(ib_failures(gate, fault, "leaf01"))
    # A cable not as planned fails the run's built-vs-planned summary too (issue 39), once.
    summary = {key for key in found if key[1] == "ib.as_planned"}
    assert len(summary) == (1 if check == "ib.topology" else 0), found
    assert found - summary == {("leaf01", check, subject)}


def test_two_uplinks_swapped_at_a_spine_fail_ib_topology_on_both_cables(gate: Gate) -> None:
    found = ib_failures(gate, "ib-miswire", "leaf01")
    summary = [f for (_n, check, _s), f in found.items() if check == "ib.as_planned"]
    bad = {key: f for key, f in found.items() if key[1] != "ib.as_planned"}
    assert {(node, check) for node, check, _s in bad} == {
        ("leaf01", "ib.topology"),
        ("leaf02", "ib.topology"),
    }
    assert len(bad) == 2, bad
    # Each names where its cable should go, and the one swap that fixes both.
    assert all("swap" in f.hint and "spine01" in f.actual for f in bad.values()), list(bad.values())
    # The run's one summary counts them: two miswired cables, one swapped pair (issue 39).
    assert len(summary) == 1 and "2 miswired (1 swapped pairs)" in summary[0].actual, summary


def test_a_duplicate_port_guid_fails_ib_guids_on_that_hca_alone(gate: Gate) -> None:
    assert set(ib_failures(gate, "ib-dup-guid", "leaf01")) == {("gpu01", "ib.guids", "gpu01/mlx5_0")}


def test_fabcheck_validate_passes_the_converged_ib_lab(gate: Gate) -> None:
    rc, subjects = validate_json(gate.paths, "--stages", "host,sm,ib", "--counter-window", str(WINDOW_S))
    assert rc == 0, [s for s in subjects if s.get("verdict") not in (None, "pass")][:5]
    assert {s.get("ib_switch") for s in subjects} >= set(IB_SWITCHES), subjects
