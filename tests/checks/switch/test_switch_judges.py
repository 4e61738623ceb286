"""Switch checks over outputs captured from the lab's mock switches (tests/data/switch/), replayed
through the gate's own probes and parsers (judges.run_check over every declaration): converged
switches pass, a platform skips only what it cannot show, a factory switch fails the recipe, and
anything unread is an error, never a pass."""

from __future__ import annotations

import pytest
from switchjudged import EXPECTED_SKIPS, SWITCHES, desired, judged, replayed

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Status
from fabcheck.checks.switch import SWITCH_CHECK_IDS, SwitchEvidence, check_switch
from fabcheck.parsers.switch_records import EcnQueues


@pytest.mark.parametrize("name", SWITCHES)
def test_a_converged_switch_passes_and_every_skip_says_why(name: str) -> None:
    findings = judged("converged", name)
    assert {f.check for f in findings} == set(SWITCH_CHECK_IDS)
    assert not [f for f in findings if f.status in (Status.FAIL, Status.ERROR)]
    skips = [f for f in findings if f.status is Status.SKIP]
    assert all(f.actual and f.actual != "n/a" for f in skips), skips
    assert sum(f.status is Status.PASS for f in findings) >= 20


@pytest.mark.parametrize("name", SWITCHES)
def test_skips_are_only_what_the_platform_cannot_show(name: str) -> None:
    assert {f.check for f in judged("converged", name) if f.status is Status.SKIP} == EXPECTED_SKIPS[name]


@pytest.mark.parametrize("name", SWITCHES)
def test_factory_switches_fail_the_recipe(name: str) -> None:
    failing = {f.check for f in judged("factory", name) if f.status is Status.FAIL}
    assert {checks.PFC, checks.SCHEDULER} <= failing  # NVUE's factory DSCP map already sends 26 to 3


def test_an_unreachable_switch_is_an_error_for_each_check() -> None:
    evidence = SwitchEvidence("leaf02", "sonic", {}, frozenset(), unreachable="no SSH answer within 3 s")
    findings = check_switch(evidence, desired("leaf02"))
    assert {f.status for f in findings} == {Status.ERROR} and len(findings) == len(SWITCH_CHECK_IDS)
    assert all(f.subject == "leaf02" and "no SSH answer" in f.hint for f in findings)


def test_a_failed_probe_is_an_error_naming_its_command_never_a_pass() -> None:
    full = replayed("converged", "leaf01")
    records = {key: r for key, r in full.records.items() if key[0] is not EcnQueues}
    reason = "`nv show interface swp1 qos roce status -o json`: unparsable output"
    broken = SwitchEvidence("leaf01", "nvue", records, full.provided, [((EcnQueues,), "swp1", reason)])
    ecn = [f for f in check_switch(broken, desired("leaf01")) if f.check == checks.ECN]
    assert {f.status for f in ecn} == {Status.ERROR}
    assert any(reason in f.hint for f in ecn)


def test_switch_wide_records_are_judged_once_for_the_switch() -> None:
    findings = [f for f in judged("converged", "leaf01") if f.check in (checks.DSCP_MAP, checks.SCHEDULER)]
    assert [f.subject for f in findings] == ["leaf01", "leaf01"]
    # NVUE's trust is judged per port: the port's roce status shows what its own mapping profile (or
    # default-global) makes it trust.
    trust = [f.subject for f in judged("converged", "leaf01") if f.check == checks.TRUST]
    assert trust == ["leaf01:swp1", "leaf01:swp2", "leaf01:swp3", "leaf01:swp4"]


@pytest.mark.parametrize("name", SWITCHES)
def test_per_port_findings_name_switch_port_and_cabled_nic_as_fields(name: str) -> None:
    findings = judged("switch-pfc-prio", name)
    pfc = next(f for f in findings if f.check == checks.PFC and f.status is Status.FAIL)
    port = next(p for p in desired(name).ports if f"{name}:{p.port}" == pfc.subject)
    assert pfc.where is not None and (pfc.where.node, pfc.where.part) == (name, port.port)
    assert pfc.where.peer == (port.peer or "")
    assert pfc.to_json()["where"]["node"] == name
    whole = [f for f in findings if f.subject == name]
    assert whole and all(f.where is None or f.where.part == "" for f in whole)
