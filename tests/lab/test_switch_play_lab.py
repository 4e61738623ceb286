"""site.yml's switch play over real netmiko against the lab's mock switches (one per platform).

One class fixture drives the sequence and records every run; each test asserts one step: check mode
on factory switches changes nothing, a run converges every platform, a rerun changes nothing, a
drifted switch shows exactly its drift under --check --diff and is repaired alone, a connection cut
mid-push leaves the previous config and fails the play, wrong credentials fail without the secret.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labsupport import REPO, requires_lab, running_lab

from fabcheck.lab import faults
from fabcheck.lab.mockswitch import arm_drop, state_path
from fabcheck.lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

SWITCHES = ("leaf01", "leaf02", "leaf03")  # nvue, sonic, eos: the lab cycles platforms in this order
DRIFTED = "leaf02"
CUT = "leaf03"
WRONG_PASSWORD = "Not-The-Lab-Password-7"
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass(frozen=True)
class PlaybookRun:
    rc: int
    output: str
    changed: dict[str, int]
    failed: dict[str, int]


@dataclass
class Story:
    runs: dict[str, PlaybookRun] = field(default_factory=dict)
    running: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> switch -> running config


def run_switch_play(paths: LabPaths, *options: str) -> PlaybookRun:
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", str(paths.inventory.parent), str(REPO / "site.yml"), "--limit", "switches"]
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run(
        [*argv, *options], cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = done.stdout + done.stderr
    recap = {m.group(1): (int(m.group(3)), int(m.group(5))) for m in RECAP.finditer(output)}
    return PlaybookRun(
        done.returncode, output, {h: c[0] for h, c in recap.items()}, {h: c[1] for h, c in recap.items()}
    )


def running_configs(paths: LabPaths) -> dict[str, Any]:
    return {name: json.loads(state_path(paths.run_dir, name).read_text())["running"] for name in SWITCHES}


@pytest.fixture(scope="class")
def story() -> Iterator[Story]:
    story = Story()
    with running_lab(profile="roce", hosts=2, switches=3) as (paths, _state):
        story.running["factory"] = running_configs(paths)
        story.runs["check"] = run_switch_play(paths, "--check", "--diff")
        story.running["after_check"] = running_configs(paths)
        story.runs["apply"] = run_switch_play(paths)
        story.running["applied"] = running_configs(paths)
        story.runs["again"] = run_switch_play(paths)
        faults.inject(paths, "switch-pfc-prio", DRIFTED)
        story.running["drifted"] = running_configs(paths)
        story.runs["drift_check"] = run_switch_play(paths, "--check", "--diff")
        story.running["after_drift_check"] = running_configs(paths)
        story.runs["repair"] = run_switch_play(paths, "--diff")
        story.running["repaired"] = running_configs(paths)
        story.runs["wrong_password"] = run_switch_play(paths, "-e", f"switch_password={WRONG_PASSWORD}")
        # A cut in the middle of the push: drift leaf03 first so that the push has lines to send.
        faults.inject(paths, "switch-ecn-off", CUT)
        story.running["before_cut"] = running_configs(paths)
        arm_drop(paths.run_dir, CUT, 1)
        story.runs["cut"] = run_switch_play(paths, "--limit", CUT)
        story.running["after_cut"] = running_configs(paths)
        story.runs["after_cut"] = run_switch_play(paths, "--limit", CUT)
        yield story


class TestSwitchPlay:
    def test_check_mode_on_factory_switches_changes_nothing(self, story: Story) -> None:
        run = story.runs["check"]
        assert run.rc == 0, run.output[-4000:]
        assert all(run.changed[name] >= 1 for name in SWITCHES), run.output[-4000:]
        assert story.running["after_check"] == story.running["factory"]

    def test_a_run_converges_every_platform_and_a_rerun_changes_nothing(self, story: Story) -> None:
        apply, again = story.runs["apply"], story.runs["again"]
        assert apply.rc == 0, apply.output[-4000:]
        assert all(apply.changed[name] >= 1 for name in SWITCHES)
        for name in SWITCHES:
            assert story.running["applied"][name] != story.running["factory"][name], name
        assert again.rc == 0, again.output[-4000:]
        assert again.changed == dict.fromkeys(SWITCHES, 0), again.output[-4000:]

    def test_drift_shows_in_check_mode_and_is_repaired_alone(self, story: Story) -> None:
        check, repair = story.runs["drift_check"], story.runs["repair"]
        assert check.rc == 0, check.output[-4000:]
        assert check.changed == {"leaf01": 0, DRIFTED: 1, "leaf03": 0}, check.output[-4000:]
        assert story.running["after_drift_check"] == story.running["drifted"]
        assert repair.rc == 0 and repair.changed == {"leaf01": 0, DRIFTED: 1, "leaf03": 0}, repair.output[
            -4000:
        ]
        assert story.running["repaired"] == story.running["applied"]

    def test_wrong_credentials_fail_without_the_secret(self, story: Story) -> None:
        run = story.runs["wrong_password"]
        assert run.rc != 0
        assert "login refused for user" in run.output and "leaf01" in run.output, run.output[-4000:]
        assert WRONG_PASSWORD not in run.output
        # serial 1 with max_fail_percentage 0: the first failure stops the rollout.
        assert run.failed.get("leaf01") == 1 and "leaf02" not in run.changed and "leaf03" not in run.changed

    def test_a_cut_connection_leaves_the_previous_config(self, story: Story) -> None:
        cut, after = story.runs["cut"], story.runs["after_cut"]
        assert cut.rc != 0 and cut.failed.get(CUT) == 1, cut.output[-4000:]
        assert story.running["after_cut"] == story.running["before_cut"]
        assert after.rc == 0 and after.changed == {CUT: 1}, after.output[-4000:]
