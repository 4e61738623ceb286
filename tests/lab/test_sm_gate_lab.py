"""The gate's sm stage and the IB host ports against the lab's --profile ib (gpu01, gpu02, sm01, sm02).

One lab, converged once by site.yml (its gate play skipped: the test runs the stages itself and compares
every verdict with the converged ones). Converged: both SMs pass every sm.* check and every host port is
ACTIVE at 400 Gb/s. sm-stopped on the intended master fails sm.service/state/master on sm01 alone while
sm02 stands in and the host ports stay ACTIVE; stopped on both, the host ports fall back to INIT and
host.port_state fails on each of them. link-down and link-speed fail host.port_state, host.port_speed on
gpu01's mlx5_0/1 and nothing else. Each fault heals back to the converged verdicts. The converged run is
saved as a snapshot (hosts and SM nodes) and replays offline to the same findings, pass by pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from labsupport import requires_lab, run_playbook, running_lab

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

HOSTS, SMS = ("gpu01", "gpu02"), ("sm01", "sm02")
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
    return fabric.plan_gate(inventory, stages=["host", "sm"])


def findings(result: fabric.GateResult) -> list[tuple[str, Finding]]:
    run = gate_run(result)
    assert {s.name for s in run.subjects} == {*HOSTS, *SMS}
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
    with running_lab(profile="ib", hosts=2) as (paths, _state):
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
    assert added == ports | sms | {("sm01", "sm.master", "subnet master")}
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
