"""fabcheck.checks.host.persistence: a reboot or driver reload brings the NIC settings back only when the
boot file holds exactly the desired record, its unit is enabled and the applier and udev rule are there;
each missing or stale part fails on its own subject with the role run that installs it, and an answer
the host could not give is an error, never a pass."""

from __future__ import annotations

import json

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.collect.host import PERSIST_CONFIG, PERSIST_FILES, PERSIST_UNIT_STATE
from fabcheck.collect.script import Section
from fabcheck.desired.nic import PERSIST_PATHS, PERSIST_UNIT, desired_host
from fabcheck.parsers.nic_persist import CONFIG_FORMAT
from tests.checks.host.hostdata import INTENT, not_passing, ok, only, run_checks

BOOT_FILE, HELPERS = PERSIST_PATHS["config"], "applier and udev rule"


def boot_file(**changes: object) -> Section:
    settings = checks.boot_settings(desired_host(INTENT, "gpu01")) | changes
    return ok(json.dumps({"format": CONFIG_FORMAT, "settings": settings}, indent=2, sort_keys=True) + "\n")


def test_the_boot_files_of_the_desired_state_pass() -> None:
    findings = [f for f in run_checks() if f.check == checks.NIC_PERSISTENCE]
    assert {(f.subject, f.status) for f in findings} == {
        (BOOT_FILE, Status.PASS),
        (PERSIST_UNIT, Status.PASS),
        (HELPERS, Status.PASS),
    }


def test_a_stale_boot_file_names_each_value_a_reboot_would_apply() -> None:
    findings = run_checks({PERSIST_CONFIG: boot_file(roce_tos=98)})
    assert not_passing(findings) == {(checks.NIC_PERSISTENCE, BOOT_FILE): Status.FAIL}
    stale = only(findings, checks.NIC_PERSISTENCE, BOOT_FILE)
    assert stale.actual == "stale: roce_tos 98 (desired 106)"
    assert "--tags persist" in stale.hint


def test_no_boot_file_fails_and_says_the_nics_come_back_lossy() -> None:
    missing = Section(1, "", f"cat: {BOOT_FILE}: No such file or directory\n")
    findings = run_checks({PERSIST_CONFIG: missing})
    assert not_passing(findings) == {(checks.NIC_PERSISTENCE, BOOT_FILE): Status.FAIL}
    assert "no boot file" in only(findings, checks.NIC_PERSISTENCE, BOOT_FILE).actual


def test_a_disabled_unit_and_a_missing_udev_rule_each_fail_on_their_own_subject() -> None:
    listing = "".join(PERSIST_PATHS[key] + "\n" for key in ("config", "applier", "unit"))
    rule_missing = Section(
        2, listing, f"ls: cannot access '{PERSIST_PATHS['rule']}': No such file or directory\n"
    )
    findings = run_checks({PERSIST_UNIT_STATE: Section(1, "disabled\n", ""), PERSIST_FILES: rule_missing})
    assert not_passing(findings) == {
        (checks.NIC_PERSISTENCE, PERSIST_UNIT): Status.FAIL,
        (checks.NIC_PERSISTENCE, HELPERS): Status.FAIL,
    }
    assert only(findings, checks.NIC_PERSISTENCE, PERSIST_UNIT).actual == "disabled"
    assert only(findings, checks.NIC_PERSISTENCE, HELPERS).actual == f"missing: {PERSIST_PATHS['rule']}"


def test_a_unit_state_the_host_cannot_tell_is_an_error() -> None:
    findings = run_checks({PERSIST_UNIT_STATE: Section(1, "", "Failed to connect to bus: No medium found\n")})
    assert not_passing(findings) == {(checks.NIC_PERSISTENCE, PERSIST_UNIT): Status.ERROR}
