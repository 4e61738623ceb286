"""site.yml on the lab's InfiniBand profile: the opensm role on both SM nodes and the ib_host role.

One class fixture drives the sequence and records every run; each test asserts one step: check mode on
factory SM nodes changes nothing, a run converges both (one master at the intended priority, one standby,
as each running opensm reports through sminfo), IPoIB children appear on the GPU hosts, a rerun changes
nothing and restarts nothing, a hand-edited opensm.conf shows in --check --diff and is repaired by a
normal run that restarts that SM once (its pid changes, the other's does not), a stopped opensm is started.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from labsupport import REPO, PlaybookRun, requires_lab, run_playbook, running_lab

from fabcheck.desired.sm import desired_subnet_manager
from fabcheck.intent.model import FabricIntent
from fabcheck_lab import faults
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

SMS = ("sm01", "sm02")
HOSTS = ("gpu01", "gpu02")
DRIFTED = "sm02"
CONF = "/etc/opensm/opensm.conf"
PARTITIONS = "/etc/opensm/partitions.conf"


def lab_intent() -> dict[str, Any]:
    """The lab's own IB intent plus a partition whose IPoIB child the GPU hosts get on ib0."""
    lab = yaml.safe_load((REPO / "inventory/lab/group_vars/all/fabric.yml").read_text())["lab_intents"]["ib"]
    partitions = [
        *lab["subnet_manager"]["partitions"],
        {"name": "compute", "pkey": "0x0001", "ipoib_parents": ["ib0"]},
    ]
    return lab | {"subnet_manager": lab["subnet_manager"] | {"partitions": partitions}}


@dataclass
class Story:
    runs: dict[str, PlaybookRun] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # step -> SM node -> opensm.conf
    pids: dict[str, dict[str, int]] = field(default_factory=dict)  # step -> SM node -> opensm MainPID
    sminfo: dict[str, dict[str, str]] = field(default_factory=dict)  # step -> SM node -> its sminfo line
    links: dict[str, str] = field(default_factory=dict)  # GPU host -> `ip link show ib0.8001`
    partitions: dict[str, str] = field(default_factory=dict)


def ssh(paths: LabPaths, node: str, command: str, *, check: bool = True) -> str:
    argv = ["ssh", "-F", str(paths.ssh_config), node, command]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 or not check, f"{node}: {command}: {done.stderr}"
    return done.stdout


def run_site(paths: LabPaths, extra_vars: Path, *options: str) -> PlaybookRun:
    return run_playbook(paths, "-e", f"@{extra_vars}", "--skip-tags", "gate", *options)


def observe(story: Story, paths: LabPaths, step: str) -> None:
    """Each SM node's opensm.conf, opensm pid (0: not running) and what sminfo says of it."""
    story.files[step] = {sm: ssh(paths, sm, f"cat {CONF}") for sm in SMS}
    story.pids[step] = {
        sm: int(ssh(paths, sm, "systemctl show opensm -p MainPID").strip().split("=")[1]) for sm in SMS
    }
    story.sminfo[step] = {}
    for sm in SMS:
        if story.pids[step][sm]:
            lid = int(ssh(paths, sm, "cat /sys/class/infiniband/mlx5_0/ports/1/lid").strip(), 16)
            story.sminfo[step][sm] = ssh(paths, HOSTS[0], f"sminfo {lid}").strip()


@pytest.fixture(scope="class")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    story = Story()
    extra_vars = tmp_path_factory.mktemp("opensm") / "intent.json"
    extra_vars.write_text(json.dumps({"fabric_intent": lab_intent()}))
    with running_lab(profile="ib", hosts=2) as (paths, _state):
        observe(story, paths, "factory")
        story.runs["check"] = run_site(paths, extra_vars, "--check", "--diff")
        observe(story, paths, "after_check")
        story.runs["apply"] = run_site(paths, extra_vars)
        observe(story, paths, "applied")
        story.partitions = {sm: ssh(paths, sm, f"cat {PARTITIONS}") for sm in SMS}
        story.links = {host: ssh(paths, host, "ip link show ib0.8001", check=False) for host in HOSTS}
        story.runs["again"] = run_site(paths, extra_vars)
        observe(story, paths, "again")
        faults.inject(paths, "sm-conf-drift", DRIFTED)
        observe(story, paths, "drifted")
        story.runs["drift_check"] = run_site(paths, extra_vars, "--check", "--diff")
        observe(story, paths, "after_drift_check")
        story.runs["repair"] = run_site(paths, extra_vars, "--diff")
        observe(story, paths, "repaired")
        ssh(paths, "sm01", "systemctl stop opensm")
        observe(story, paths, "stopped")
        story.runs["start"] = run_site(paths, extra_vars, "--tags", "sm")
        observe(story, paths, "started")
        yield story


def expected_conf(node: str) -> str:
    desired = desired_subnet_manager(FabricIntent.model_validate(lab_intent()), node)
    return "".join(f"{key} {value}\n" for key, value in desired.conf_pairs)


def body(text: str) -> str:
    return "".join(line + "\n" for line in text.splitlines() if line and not line.startswith("#"))


class TestOpensmRole:
    def test_check_mode_on_factory_sm_nodes_changes_nothing(self, story: Story) -> None:
        run = story.runs["check"]
        assert run.rc == 0, run.output[-4000:]
        assert all(run.changed[sm] >= 1 for sm in SMS), run.output[-4000:]
        assert "+sm_priority 15" in run.output and "+sm_priority 14" in run.output
        assert story.files["after_check"] == story.files["factory"]
        assert story.pids["after_check"] == story.pids["factory"] == dict.fromkeys(SMS, 0)

    def test_a_run_makes_one_master_at_the_intended_priority_and_one_standby(self, story: Story) -> None:
        run = story.runs["apply"]
        assert run.rc == 0, run.output[-4000:]
        assert {sm: body(text) for sm, text in story.files["applied"].items()} == {
            sm: expected_conf(sm) for sm in SMS
        }
        assert all(story.pids["applied"].values())
        assert story.sminfo["applied"]["sm01"].endswith("priority 15 state 3 SMINFO_MASTER")
        assert story.sminfo["applied"]["sm02"].endswith("priority 14 state 2 SMINFO_STANDBY")
        assert body(story.partitions["sm01"]) == (
            "Default=0x7fff, ipoib : ALL=full ;\ncompute=0x0001, ipoib : ALL=full ;\n"
        )

    def test_the_gpu_hosts_get_the_ipoib_child_of_the_partition(self, story: Story) -> None:
        for host in HOSTS:
            assert ": ib0.8001@ib0: <" in story.links[host] and "state UP" in story.links[host], host

    def test_a_rerun_changes_and_restarts_nothing(self, story: Story) -> None:
        run = story.runs["again"]
        assert run.rc == 0, run.output[-4000:]
        # No localhost in the recap: the preflight runs delegated from the fabric's hosts (c64062f).
        assert run.changed == dict.fromkeys((*HOSTS, *SMS), 0), run.output[-4000:]
        assert story.pids["again"] == story.pids["applied"]

    def test_a_drifted_opensm_conf_shows_in_check_mode_and_is_repaired_with_one_restart(
        self, story: Story
    ) -> None:
        check, repair = story.runs["drift_check"], story.runs["repair"]
        assert story.files["drifted"][DRIFTED] != story.files["applied"][DRIFTED]
        assert check.rc == 0, check.output[-4000:]
        assert check.changed["sm01"] == 0 and check.changed[DRIFTED] >= 1, check.output[-4000:]
        assert "-sm_priority 0" in check.output and "+sm_priority 14" in check.output, check.output[-4000:]
        assert "+routing_engine ftree" in check.output
        assert story.files["after_drift_check"] == story.files["drifted"]
        assert story.pids["after_drift_check"] == story.pids["applied"]
        assert repair.rc == 0 and repair.changed["sm01"] == 0 and repair.changed[DRIFTED] >= 1, repair.output[
            -4000:
        ]
        assert story.files["repaired"] == story.files["applied"]
        assert story.pids["repaired"]["sm01"] == story.pids["applied"]["sm01"]
        assert story.pids["repaired"][DRIFTED] != story.pids["applied"][DRIFTED]
        assert repair.output.count("RUNNING HANDLER [fabcheck.fabric.opensm : Restart opensm]") == 1
        assert story.sminfo["repaired"]["sm01"].endswith("priority 15 state 3 SMINFO_MASTER")
        assert story.sminfo["repaired"][DRIFTED].endswith("priority 14 state 2 SMINFO_STANDBY")

    def test_a_stopped_opensm_is_started_and_takes_mastership_back(self, story: Story) -> None:
        run = story.runs["start"]
        assert story.pids["stopped"]["sm01"] == 0
        assert story.sminfo["stopped"][DRIFTED].endswith("priority 14 state 3 SMINFO_MASTER")
        assert run.rc == 0 and run.changed["sm01"] >= 1 and run.changed[DRIFTED] == 0, run.output[-4000:]
        assert "RUNNING HANDLER" not in run.output
        assert (
            story.pids["started"]["sm01"]
            and story.pids["started"][DRIFTED] == story.pids["repaired"][DRIFTED]
        )
        assert story.sminfo["started"]["sm01"].endswith("priority 15 state 3 SMINFO_MASTER")
        assert story.sminfo["started"][DRIFTED].endswith("priority 14 state 2 SMINFO_STANDBY")
