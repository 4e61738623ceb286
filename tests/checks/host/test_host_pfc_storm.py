"""host.pfc_storm_prevention: the NIC's PFC storm prevention timeout against the intent.

A host at the intent passes; one NIC at another value (the NIC's own 8000 ms, or 0 = off) fails exactly
that check on exactly that NIC with expected/actual and the one command; an unreadable tunable is an
error naming the command; the check is skipped where it does not apply (IB, no PFC, key null).
"""

from __future__ import annotations

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.collect.script import Section
from fabcheck.desired.nic import desired_host
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import INTENT, not_passing, ok, only, run_checks


def test_a_host_at_the_intent_passes_on_every_rail_nic() -> None:
    findings = run_checks()
    judged = [f for f in findings if f.check == checks.PFC_STORM_PREVENTION]
    assert [(f.subject, f.status) for f in judged] == [("mlx5_0", Status.PASS), ("mlx5_1", Status.PASS)]
    assert judged[0].expected == judged[0].actual == "pfc-prevention-tout 100 ms"


def test_a_nic_at_its_factory_timeout_fails_exactly_this_check_with_the_fix() -> None:
    findings = run_checks({"pfc_storm:ens2np0": ok("pfc-prevention-tout: 8000\n")})
    assert not_passing(findings) == {(checks.PFC_STORM_PREVENTION, "mlx5_1"): Status.FAIL}
    failure = only(findings, checks.PFC_STORM_PREVENTION, "mlx5_1")
    assert (failure.expected, failure.actual) == ("pfc-prevention-tout 100 ms", "pfc-prevention-tout 8000 ms")
    assert failure.hint == (
        "role roce_host (tag pfc) sets it fleet-wide; on this host: "
        "`ethtool --set-tunable ens2np0 pfc-prevention-tout 100`"
    )


def test_storm_prevention_off_is_named_as_off() -> None:
    findings = run_checks({"pfc_storm:ens1np0": ok("pfc-prevention-tout: 0\n")})
    failure = only(findings, checks.PFC_STORM_PREVENTION, "mlx5_0")
    assert failure.status is Status.FAIL and failure.actual == "pfc-prevention-tout 0 (storm prevention off)"


def test_an_unreadable_tunable_is_an_error_never_a_pass() -> None:
    unsupported = Section(255, "", "pfc-prevention-tout: Cannot get tunable\n")
    findings = run_checks(
        {"pfc_storm:ens1np0": unsupported, "pfc_storm:ens2np0": ok("pfc-prevention-tout: x\n")}
    )
    assert not_passing(findings) == {
        (checks.PFC_STORM_PREVENTION, "mlx5_0"): Status.ERROR,
        (checks.PFC_STORM_PREVENTION, "mlx5_1"): Status.ERROR,
    }
    error = only(findings, checks.PFC_STORM_PREVENTION, "mlx5_0")
    assert "ethtool --get-tunable ens1np0 pfc-prevention-tout" in error.actual
    assert "Cannot get tunable" in error.actual


def test_a_missing_section_is_an_error_too() -> None:
    findings = run_checks({"pfc_storm:ens1np0": None})
    assert only(findings, checks.PFC_STORM_PREVENTION, "mlx5_0").status is Status.ERROR


def test_the_intent_value_is_what_is_judged() -> None:
    intent = FabricIntent.model_validate(
        INTENT.model_dump() | {"lossless": {"pfc_storm_prevention_ms": 8000}}
    )
    findings = run_checks({"pfc_storm:ens2np0": ok("pfc-prevention-tout: 8000\n")}, intent)
    assert only(findings, checks.PFC_STORM_PREVENTION, "mlx5_1").status is Status.PASS
    assert only(findings, checks.PFC_STORM_PREVENTION, "mlx5_0").status is Status.FAIL


def test_it_is_skipped_where_it_does_not_apply() -> None:
    decl = next(c for c in checks.HOST_CHECK_DECLS if c.id == checks.PFC_STORM_PREVENTION)

    def not_applicable(intent: FabricIntent) -> str | None:
        return decl.not_applicable(intent, desired_host(intent, "gpu01"))

    assert not_applicable(FabricIntent(kind="ib")) == "RoCE-only check; fabric_intent.kind is ib"
    lossy = FabricIntent(congestion_control="ecn_only", lossless={"pfc": False})
    assert "lossless.pfc is false" in (not_applicable(lossy) or "")
    unmanaged = FabricIntent(lossless={"pfc_storm_prevention_ms": None})
    assert "pfc_storm_prevention_ms is null" in (not_applicable(unmanaged) or "")
    assert not_applicable(INTENT) is None
    ib = FabricIntent(kind="ib")
    findings = checks.check_host(checks.HostEvidence(), desired_host(ib, "gpu01"), ib)
    assert only(findings, checks.PFC_STORM_PREVENTION, "host").status is Status.SKIP
