"""Roles roce_host and gpu_rdma over real ssh on a 2-host RoCE lab, judged by `fabcheck validate`.

One class fixture drives the sequence (check mode, apply, re-apply, fault + repair) and records every
run; each test asserts one step. `--check --diff` writes nothing, one run makes both hosts pass validate,
a second run changes nothing, and a PFC fault on one host is repaired by changing that host only;
an InfiniBand intent leaves the RoCE settings alone; a write that fails half-way through a NIC (a
read-only sysfs attribute) fails the task with changed true, and the NIC reads exactly as before.
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

import pytest
from labsupport import REPO, PlaybookRun, requires_lab, run_playbook, running_lab

from fabcheck.checks import host as checks
from fabcheck.desired import desired_host
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.model import FabricIntent
from fabcheck_lab import faults
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

HOSTS = ("gpu01", "gpu02")
FAULTED = "gpu01"
NICS = tuple(f"mlx5_{i}" for i in range(8))
# PFC in the diff as the record's pfc_bitmap is written (`mlnx_qos --pfc`): off, then priority 3 only.
PFC_OFF, PFC_ON_3 = "0,0,0,0,0,0,0,0", "0,0,0,1,0,0,0,0"


@dataclass(frozen=True)
class Validation:
    rc: int
    results: dict[str, dict]  # host -> JSON result


@dataclass
class Story:
    """Everything the sequence produced, in order."""

    runs: dict[str, PlaybookRun] = field(default_factory=dict)
    validations: dict[str, Validation] = field(default_factory=dict)
    adhoc: dict[str, PlaybookRun] = field(default_factory=dict)


def run_site(paths: LabPaths, *options: str) -> PlaybookRun:
    return run_playbook(paths, *options)


def desired_settings(
    paths: LabPaths, host: str, devices: list[str], intent_changes: dict[str, dict] | None = None
) -> dict:
    """The module's one `settings` argument as the role builds it for `host` (roce_host_desired.roce_nic_args:
    the lab intent with the host's rails, through fabcheck.desired), with `devices` in place of the
    rails. `intent_changes` (intent section -> keys) change the intent first, so the record is derived
    from it as for any intent (e.g. a CNP DSCP moves the DSCP -> priority entry too)."""
    intent = load_inventory(paths.inventory.parent).host(host).intent
    if intent_changes:
        data = intent.model_dump()
        for section, keys in intent_changes.items():
            data[section] = {**data[section], **keys}
        intent = FabricIntent.model_validate(data)
    return desired_host(intent, host).roce_nic_args() | {"devices": devices}


def run_roce_nic(paths: LabPaths, host: str, settings: dict, **options: object) -> PlaybookRun:
    """The module alone, ad hoc, as `ansible HOST -m fabcheck.fabric.roce_nic` would run it."""
    ansible = Path(sys.executable).parent / "ansible"
    args = json.dumps({"settings": settings, **options})
    module = "fabcheck.fabric.roce_nic"
    argv = [str(ansible), "-i", str(paths.inventory.parent), host, "-m", module, "-a", args]
    env = os.environ | {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False)
    return PlaybookRun(rc=done.returncode, output=done.stdout + done.stderr, changed={}, failed={})


def validate(paths: LabPaths) -> Validation:
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent), "--json"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return Validation(rc=done.returncode, results={r["host"]: r for r in results})


def failing(result: dict) -> set[tuple[str, str]]:
    return {(f["check"], f["subject"]) for f in result["findings"] if f["status"] in ("fail", "error")}


@pytest.fixture(scope="class")
def story() -> Iterator[Story]:
    story = Story()
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        story.runs["check"] = run_site(paths, "--check", "--diff", "--skip-tags", "gate")
        story.adhoc["missing"] = run_roce_nic(
            paths, "gpu02", desired_settings(paths, "gpu02", ["mlx5_0", "mlx5_9"])
        )
        story.adhoc["bad_name"] = run_roce_nic(
            paths, "gpu02", desired_settings(paths, "gpu02", ["../mlx5_0"])
        )
        story.validations["after_check"] = validate(paths)
        story.runs["apply"] = run_site(paths)
        story.validations["after_apply"] = validate(paths)
        story.runs["again"] = run_site(paths)
        faults.inject(paths, "pfc-off", FAULTED)
        try:
            story.validations["fault"] = validate(paths)
            story.runs["repair"] = run_site(paths, "--diff")
            story.validations["repaired"] = validate(paths)
        finally:
            faults.heal(paths, FAULTED, "pfc-off")
        yield story


def assert_ran_clean(run: PlaybookRun) -> None:
    assert run.rc == 0, run.output[-4000:]
    assert set(HOSTS) <= set(run.changed), run.output[-4000:]
    assert not any(run.failed.values()), run.output[-4000:]


class TestRoceLab:
    """One sequence on one lab: check mode, apply, re-apply, fault and repair."""

    def test_check_mode_reports_changes_and_writes_nothing(self, story: Story) -> None:
        run = story.runs["check"]
        assert_ran_clean(run)
        assert all(run.changed[host] >= 1 for host in HOSTS)
        # --diff shows before/after per NIC, with the NIC and its netdev in the header.
        assert "mlx5_0 (ens1np0)" in run.output
        for line in (
            "-trust: pcp",
            "+trust: dscp",
            f"-pfc: {PFC_OFF}",
            f"+pfc: {PFC_ON_3}",
            "-mtu: 1500",
            "+mtu: 9000",
        ):
            assert re.search(rf"^{re.escape(line)}$", run.output, re.M), line
        after = story.validations["after_check"]
        assert after.rc == 1
        for host in HOSTS:
            bad = failing(after.results[host])
            assert {(checks.TRUST, nic) for nic in NICS} <= bad
            assert {(checks.PFC, nic) for nic in NICS} <= bad
            assert {(checks.ROCE_TOS, f"{nic}/1") for nic in NICS} <= bad
            assert (checks.GPUDIRECT, "host") in bad

    def test_module_refuses_unknown_and_unsafe_device_names(self, story: Story) -> None:
        missing, bad_name = story.adhoc["missing"], story.adhoc["bad_name"]
        assert missing.rc != 0 and "mlx5_9: no such RDMA device" in missing.output, missing.output
        assert bad_name.rc != 0 and "invalid RDMA device name '../mlx5_0'" in bad_name.output, bad_name.output
        # Every NIC is read before any write: mlx5_0 exists but was left as it was.
        assert (checks.TRUST, "mlx5_0") in failing(story.validations["after_check"].results["gpu02"])

    def test_site_yml_brings_both_hosts_to_the_intent(self, story: Story) -> None:
        assert_ran_clean(story.runs["apply"])
        after = story.validations["after_apply"]
        assert after.rc == 0, {host: failing(result) for host, result in after.results.items()}
        assert sorted(after.results) == sorted(HOSTS)
        for result in after.results.values():
            assert result["verdict"] == "pass"
            # Nothing fails or errors; a check the intent leaves nothing to prove (no DCQCN rp_params
            # set) is a skip that says why.
            assert {f["status"] for f in result["findings"]} <= {"pass", "skip"}
            assert all(f["actual"] for f in result["findings"] if f["status"] == "skip")

    def test_second_run_changes_nothing(self, story: Story) -> None:
        run = story.runs["again"]
        assert_ran_clean(run)
        assert run.changed == dict.fromkeys(run.changed, 0)

    def test_fault_is_caught_and_repaired_on_that_host_only(self, story: Story) -> None:
        fault = story.validations["fault"]
        assert fault.rc == 1
        assert failing(fault.results[FAULTED]) == {(checks.PFC, "mlx5_0")}
        assert failing(fault.results["gpu02"]) == set()
        run = story.runs["repair"]
        assert_ran_clean(run)
        assert run.changed[FAULTED] == 1
        assert all(count == 0 for host, count in run.changed.items() if host != FAULTED)
        assert (
            f"+pfc: {PFC_ON_3}" in run.output.splitlines() and f"-pfc: {PFC_OFF}" in run.output.splitlines()
        )
        assert "mlx5_1 (" not in run.output  # only the faulted NIC has a diff
        repaired = story.validations["repaired"]
        assert repaired.rc == 0, {host: failing(result) for host, result in repaired.results.items()}


def test_infiniband_intent_skips_roce_settings() -> None:
    with running_lab(profile="ib", hosts=1, switches=0) as (paths, _state):
        run = run_site(paths, "--diff", "--limit", "gpu_hosts")
    assert run.rc == 0, run.output[-4000:]
    after = run.output.split("TASK [fabcheck.fabric.roce_host : Bring the rail NICs", 1)[1]
    task = after.split("TASK [", 1)[0]
    assert re.search(r"^skipping: \[\w+\]", task, re.M), task
    assert "changed:" not in task
    assert "--- before: mlx5_0" not in run.output


# ---- a write that fails on a lab node ------------------------------------------------------------

# Everything one RoCE NIC of a lab host shows: the whole mlnx_qos output, every file under its netdev
# (MTU, ECN/CNP attributes...), its RoCE traffic class and its RDMA-CM ToS.
NIC_STATE = (
    "mlnx_qos -i ens1np0 && grep -r . /sys/class/net/ens1np0 | sort && "
    "cat /sys/class/infiniband/mlx5_0/tc/1/traffic_class && cma_roce_tos -d mlx5_0 -p 1"
)
TRAFFIC_CLASS = "/sys/class/infiniband/mlx5_0/tc/1/traffic_class"
# A bind mount of the attribute onto itself, then read-only: root's write fails with EROFS, as a write
# to an attribute the driver refuses fails on real sysfs.
READ_ONLY = f"mount --bind {TRAFFIC_CLASS} {TRAFFIC_CLASS} && mount -o remount,bind,ro {TRAFFIC_CLASS}"
# Writes the module makes on a factory NIC with the record of the lab intent changed so (CNP DSCP 46,
# so its DSCP -> priority entry is 46 -> 6; NP off), in order, before the traffic class: mlnx_qos
# (trust, DSCP 46 -> 6, PFC), sysfs (NP off, CNP DSCP) and `ip link` (MTU).
FAILING_INTENT = {"cnp": {"dscp": 46}, "dcqcn": {"np_enable": False}}
WRITES_BEFORE = ["trust", "dscp2prio", "pfc", "roce_np/enable/3", "roce_np/cnp_dscp", "mtu"]


def on_node(paths: LabPaths, node: str, command: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", str(paths.ssh_config), node, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def nic_state(paths: LabPaths, node: str) -> str:
    done = on_node(paths, node, NIC_STATE)
    assert done.returncode == 0 and "Priority trust state" in done.stdout, done.stdout + done.stderr
    return done.stdout


def module_result(run: PlaybookRun, host: str) -> dict:
    """The JSON result of an ad hoc module run, `failed` from its status (`HOST | FAILED! => {...}`)."""
    # The object ends at the first unindented "}": Python warnings (cryptography's DSA deprecation, printed
    # by ansible-core's ssh-agent import) may follow it in the output.
    match = re.search(rf"^{host} \| (FAILED!|CHANGED|SUCCESS) => (\{{.*?^\}})$", run.output, re.M | re.S)
    assert match, run.output[-4000:]
    return {**json.loads(match.group(2)), "failed": match.group(1) == "FAILED!"}


@dataclass(frozen=True)
class FailedWrite:
    before: str  # the NIC before each run
    after: dict[str, str]  # rollback on / off -> the NIC after the run
    results: dict[str, dict]  # rollback on / off -> module result


@pytest.fixture(scope="module")
def failed_write() -> Iterator[FailedWrite]:
    with running_lab(profile="roce", hosts=1, switches=0) as (paths, _state):
        node = "gpu01"
        before = nic_state(paths, node)
        made = on_node(paths, node, READ_ONLY)
        assert made.returncode == 0, made.stdout + made.stderr
        try:
            probe = on_node(paths, node, f"echo 106 > {TRAFFIC_CLASS}")
            assert probe.returncode != 0 and "Read-only file system" in probe.stderr, "the fault did not take"
            results, after = {}, {}
            settings = desired_settings(paths, node, ["mlx5_0"], FAILING_INTENT)
            for label, rollback in (("rollback", True), ("no_rollback", False)):
                run = run_roce_nic(paths, node, settings, rollback_on_failure=rollback)
                assert run.rc != 0, run.output[-4000:]
                results[label] = module_result(run, node)
                after[label] = nic_state(paths, node)
                if label == "rollback":
                    assert after[label] == before, "the second run must start from the same NIC"
        finally:
            on_node(paths, node, f"umount {TRAFFIC_CLASS}")
        yield FailedWrite(before=before, after=after, results=results)


def test_a_failed_write_reports_changed_and_puts_the_nic_back(failed_write: FailedWrite) -> None:
    result = failed_write.results["rollback"]
    assert result["failed"] is True and result["changed"] is True
    nic = result["nics"]["mlx5_0"]
    assert nic["changed"] == WRITES_BEFORE and nic["failed_write"] == "traffic_class/1"
    assert [w["setting"] for w in result["writes"]] == WRITES_BEFORE
    assert all(w["rolled_back"] for w in result["writes"])
    assert nic["rolled_back"] is True and nic["rollback_ok"] is True, nic["rollback"]
    assert nic["rollback"]["undone"] == WRITES_BEFORE[::-1]
    msg = result["msg"]
    assert f"`echo 106 > {TRAFFIC_CLASS}` failed: Read-only file system" in msg, msg
    assert "Writes made on mlx5_0 before it: trust pcp -> dscp, dscp2prio 46->5 -> 46->6" in msg, msg
    assert "rollback succeeded: mlx5_0 reads as before the run" in msg, msg
    # What every tool shows of the NIC is what it showed before the run.
    assert failed_write.after["rollback"] == failed_write.before


def test_without_rollback_the_nic_keeps_the_writes_made(failed_write: FailedWrite) -> None:
    result = failed_write.results["no_rollback"]
    assert result["failed"] is True and result["changed"] is True
    nic = result["nics"]["mlx5_0"]
    assert nic["changed"] == WRITES_BEFORE and nic["rolled_back"] is False
    assert "Not rolled back (rollback_on_failure: false)" in result["msg"]
    after = failed_write.after["no_rollback"]
    assert "Priority trust state: dscp" in after and "/sys/class/net/ens1np0/mtu:9000" in after
