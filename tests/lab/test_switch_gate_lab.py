"""The gate's switch stage against the lab's three mock switches (NVUE, SONiC, EOS) over real netmiko.

One lab; site.yml converges the switches; then: converged switches give no failure and no error and
every skip says why; `switch-pfc-prio` and `switch-ecn-off` fail exactly their check on exactly that
switch and its ports; a switch taken `down` is an error for that switch alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from labsupport import REPO, requires_lab, running_lab
from switchgate import collect_switches

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.switch import switch_login
from fabcheck.gate.plan import desired_of
from fabcheck.intent.fabric import Fabric, inventory_nodes, read_fabric
from fabcheck.intent.loader import load_inventory
from fabcheck_lab import faults

pytestmark = [pytest.mark.lab, requires_lab]

SWITCHES = {"leaf01": "nvue", "leaf02": "sonic", "leaf03": "eos"}  # the lab cycles platforms in this order
# What each platform's probes cannot show, or fabcheck does not set there (skipped with that reason):
# see fabcheck/collect/switch_probes.py. Buffers: SONiC's per-port profiles, NVUE's pools, none on EOS.
SKIPPED = {
    "leaf01": {checks.BUFFERS, checks.QUEUE_MAP},
    "leaf02": {checks.PRIORITY_MAP, checks.LOSSLESS_POOL},
    "leaf03": {checks.PRIORITY_MAP, checks.BUFFERS, checks.LOSSLESS_POOL, checks.QUEUE_MAP},
}


@dataclass
class Story:
    fabric: Fabric | None = None
    converge_rc: int = -1
    converge_output: str = ""
    runs: dict[str, list[Finding]] = field(default_factory=dict)


def converge(inventory: Path) -> subprocess.CompletedProcess[str]:
    playbook = Path(sys.executable).parent / "ansible-playbook"
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    argv = [str(playbook), "-i", str(inventory), str(REPO / "site.yml"), "--limit", "switches"]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def story() -> Iterator[Story]:
    story = Story()
    with running_lab(profile="roce", hosts=2, switches=3) as (paths, _state):
        done = converge(paths.inventory.parent)
        story.converge_rc, story.converge_output = done.returncode, done.stdout + done.stderr
        inventory = load_inventory(paths.inventory.parent)
        fabric = read_fabric(inventory_nodes(inventory.hosts), lambda _value: "")
        story.fabric = fabric
        logins = {
            switch.name: switch_login(
                switch, inventory.host(switch.name).variables, connect_timeout_s=3.0, read_timeout_s=20.0
            )
            for switch in fabric.switches
        }

        # A 1 s counter window: the wire counters are judged over it (window 0 would skip them).
        desired = desired_of(inventory, (), fabric, counter_window_s=1).switches

        def gate() -> list[Finding]:
            results = collect_switches(desired, logins, concurrency=3)
            return [finding for result in results for finding in result.findings]

        story.runs["converged"] = gate()
        for fault, switch in (
            ("switch-pfc-prio", "leaf02"),
            ("switch-ecn-off", "leaf01"),
            ("down", "leaf03"),
        ):
            faults.inject(paths, fault, switch)
            try:
                story.runs[fault] = gate()
            finally:
                faults.heal(paths, switch)
        story.runs["healed"] = gate()
        yield story


def not_passing(findings: list[Finding]) -> set[tuple[str, str, str]]:
    return {(f.check, f.status.value, f.subject) for f in findings if f.status is not Status.PASS}


def skips() -> set[tuple[str, str, str]]:
    return {(check, "skip", name) for name, checked in SKIPPED.items() for check in checked}


def test_the_lab_switches_converge(story: Story) -> None:
    assert story.converge_rc == 0, story.converge_output[-4000:]
    assert story.fabric is not None and [s.name for s in story.fabric.switches] == list(SWITCHES)


def test_converged_switches_pass_and_every_skip_says_why(story: Story) -> None:
    for run in ("converged", "healed"):
        findings = story.runs[run]
        assert not_passing(findings) == skips(), [f for f in findings if f.status is not Status.PASS]
        assert all(f.actual for f in findings if f.status is Status.SKIP)
        assert {f.check for f in findings} == set(checks.SWITCH_CHECK_IDS)


def test_switch_pfc_prio_fails_pfc_on_that_switch_and_port_only(story: Story) -> None:
    assert story.fabric is not None
    port = f"leaf02:{story.fabric.switch('leaf02').host_ports[0]}"
    # The lab's switch counters move only with host traffic and this gate sends none: the drops that
    # follow under load are the incast stage's to prove (tests/lab/test_incast_stage_lab.py).
    expected = {(checks.PFC, "fail", port)}
    assert not_passing(story.runs["switch-pfc-prio"]) == expected | skips()


def test_switch_ecn_off_fails_ecn_on_that_switch_only(story: Story) -> None:
    assert story.fabric is not None
    switch = story.fabric.switch("leaf01")
    ports = {f"leaf01:{port}" for port in switch.host_ports + switch.uplinks}
    assert (
        not_passing(story.runs["switch-ecn-off"]) == {(checks.ECN, "fail", port) for port in ports} | skips()
    )


def test_a_switch_that_is_down_is_an_error_for_it_alone(story: Story) -> None:
    findings = story.runs["down"]
    down = [f for f in findings if f.subject.split(":")[0] == "leaf03"]
    assert down and {f.status for f in down} == {Status.ERROR}
    rest = [f for f in findings if f.subject.split(":")[0] != "leaf03"]
    assert not_passing(rest) == {s for s in skips() if s[2] != "leaf03"}
