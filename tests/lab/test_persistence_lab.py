"""Boot persistence of the host NIC settings on a 2-host RoCE lab, over real ssh, judged by validate.

One class fixture drives the sequence: site.yml converges the GPU hosts (boot files installed, unit
enabled), a rerun changes nothing, a simulated reboot of one host (every NIC to factory values, then
its enabled units) and a driver reload of one NIC (that NIC to factory, then its udev add event) each
bring the intent back without Ansible, and a stale boot file is caught by host.nic_persistence alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from labsupport import REPO, requires_lab, running_lab

from fabcheck.checks import host as checks
from fabcheck.desired.nic import PERSIST_PATHS
from fabcheck_lab import faults, power
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]
HOSTS = ("gpu01", "gpu02")
REBOOTED = "gpu01"
RELOADED = ("gpu02", "mlx5_3")
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass
class Story:
    runs: dict[str, tuple[int, str, dict[str, int]]] = field(default_factory=dict)  # rc, output, changed
    validations: dict[str, tuple[int, dict[str, dict]]] = field(default_factory=dict)
    events: dict[str, power.PowerEvent] = field(default_factory=dict)
    factory: dict[str, dict[str, str]] = field(default_factory=dict)  # what validate saw right after a reset


def run_site(paths: LabPaths, *options: str) -> tuple[int, str, dict[str, int]]:
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    argv = [
        playbook,
        "-i",
        str(paths.inventory.parent),
        str(REPO / "site.yml"),
        "--limit",
        "gpu_hosts",
        *options,
    ]
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    return done.returncode, output, {m.group(1): int(m.group(3)) for m in RECAP.finditer(output)}


def validate(paths: LabPaths, *hosts: str) -> tuple[int, dict[str, dict]]:
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent), "--json"]
    if hosts:
        argv += ["--limit", ",".join(hosts)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    return done.returncode, {r["host"]: r for r in results}


def not_passing(result: dict) -> set[tuple[str, str]]:
    return {(f["check"], f["subject"]) for f in result["findings"] if f["status"] in ("fail", "error")}


@pytest.fixture(scope="class")
def story() -> Iterator[Story]:
    story = Story()
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        story.runs["apply"] = run_site(paths)
        story.validations["applied"] = validate(paths)
        story.runs["again"] = run_site(paths)
        story.events["reboot"] = power.reboot(paths, REBOOTED)
        story.validations["rebooted"] = validate(paths, REBOOTED)
        host, nic = RELOADED
        story.events["reload"] = power.reload_driver(paths, host, nic)
        story.validations["reloaded"] = validate(paths, host)
        faults.inject(paths, "host-persist-stale", REBOOTED)
        try:
            story.validations["stale"] = validate(paths, REBOOTED)
            story.runs["repair"] = run_site(paths, "--tags", "persist", "--diff")
            story.validations["repaired"] = validate(paths, REBOOTED)
        finally:
            faults.heal(paths, REBOOTED, "host-persist-stale")
        node = MockNodePaths.under(paths.node_root(REBOOTED))
        story.factory["boot_file"] = {"text": (node.upper / PERSIST_PATHS["config"].lstrip("/")).read_text()}
        yield story


class TestPersistence:
    def test_site_converges_and_installs_the_boot_files(self, story: Story) -> None:
        rc, output, changed = story.runs["apply"]
        assert rc == 0, output[-4000:]
        assert all(changed.get(host, 0) > 0 for host in HOSTS), output[-4000:]
        vrc, results = story.validations["applied"]
        assert vrc == 0, results
        for host in HOSTS:
            persistence = [f for f in results[host]["findings"] if f["check"] == checks.NIC_PERSISTENCE]
            assert [f["status"] for f in persistence] == ["pass"] * 3, persistence

    def test_rerun_changes_nothing(self, story: Story) -> None:
        rc, output, changed = story.runs["again"]
        assert rc == 0, output[-4000:]
        assert {host: changed.get(host) for host in HOSTS} == dict.fromkeys(HOSTS, 0), output[-4000:]

    def test_a_reboot_brings_the_intent_back_without_ansible(self, story: Story) -> None:
        event = story.events["reboot"]
        assert event.ok, event.output
        assert len(event.reset) == 8  # every rail NIC went back to factory values
        assert "started fabcheck-roce-nic.service: active (exited)" in event.output, event.output
        rc, results = story.validations["rebooted"]
        assert rc == 0 and not_passing(results[REBOOTED]) == set(), results

    def test_a_driver_reload_brings_that_nic_back(self, story: Story) -> None:
        host, nic = RELOADED
        event = story.events["reload"]
        assert event.ok and event.reset == (nic,), event.output
        assert f"{nic}: roce_nic_apply: {nic}: set " in event.output, event.output
        rc, results = story.validations["reloaded"]
        assert rc == 0 and not_passing(results[host]) == set(), results

    def test_a_stale_boot_file_fails_exactly_the_persistence_check(self, story: Story) -> None:
        rc, results = story.validations["stale"]
        assert rc == 1
        assert not_passing(results[REBOOTED]) == {(checks.NIC_PERSISTENCE, PERSIST_PATHS["config"])}
        [finding] = [f for f in results[REBOOTED]["findings"] if f["status"] == "fail"]
        assert finding["actual"] == "stale: roce_tos 0 (desired 106)"
        assert "role roce_host (tag persist)" in finding["hint"]

    def test_tag_persist_repairs_the_boot_file_alone(self, story: Story) -> None:
        rc, output, changed = story.runs["repair"]
        assert rc == 0 and changed.get(REBOOTED) == 1, output[-4000:]
        assert '-    "roce_tos": 0,' in output and '+    "roce_tos": 106,' in output, output[-4000:]
        vrc, results = story.validations["repaired"]
        assert vrc == 0, results
