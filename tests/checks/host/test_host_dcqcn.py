"""fabcheck.checks.host.dcqcn: the CNP DSCP and priority, the CNP pacing (min_time_between_cnps) and the
DCQCN reaction-point parameters; one wrong value fails exactly its check, a missing one is an error, and
pfc_only or an intent without rp_params skips them with the reason."""

from __future__ import annotations

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import (
    INTENT,
    Fault,
    ok,
    one_wrong_setting_test,
    only,
    rp_listing,
    run_checks,
    wrong_value_tests,
)

FAULTS: list[Fault] = [
    (
        "cnp-dscp",
        {"cnp_dscp:ens1np0": ok("46\n")},
        checks.CNP,
        "mlx5_0",
        "cnp_dscp=46 cnp_802p_prio=6",
        "echo 48 > /sys/class/net/ens1np0/ecn/roce_np/cnp_dscp",
    ),
    (
        "cnp-prio",
        {"cnp_802p_prio:ens1np0": ok("7\n")},
        checks.CNP,
        "mlx5_0",
        "cnp_dscp=48 cnp_802p_prio=7",
        "echo 6 > /sys/class/net/ens1np0/ecn/roce_np/cnp_802p_prio",
    ),
]


test_one_wrong_setting_fails_exactly_its_check = one_wrong_setting_test(FAULTS)


WRONG = {
    "min_time_between_cnps:ens2np0": (ok("8\n"), checks.MIN_TIME_BETWEEN_CNPS, "mlx5_1"),
    "roce_rp:ens1np0": (ok(rp_listing("ens1np0", rpg_gd=7)), checks.RP_PARAMS, "mlx5_0"),
}
FIXES = {
    checks.MIN_TIME_BETWEEN_CNPS: "`echo 4 > /sys/class/net/ens2np0/ecn/roce_np/min_time_between_cnps`",
    checks.RP_PARAMS: "`echo 11 > /sys/class/net/ens1np0/ecn/roce_rp/rpg_gd`",
}
TAGS = {checks.MIN_TIME_BETWEEN_CNPS: "ecn", checks.RP_PARAMS: "ecn"}  # the role tag whose run fixes each


(
    test_one_wrong_value_fails_exactly_its_check_on_exactly_that_device,
    test_a_missing_record_is_an_error_never_a_pass,
) = wrong_value_tests(WRONG, FIXES, TAGS)


def test_an_rp_param_the_nic_does_not_show_is_an_error() -> None:
    listing = "".join(line for line in rp_listing("ens1np0").splitlines(True) if "rpg_min_rate" not in line)
    findings = run_checks({"roce_rp:ens1np0": ok(listing)})
    error = only(findings, checks.RP_PARAMS, "mlx5_0")
    assert error.status is Status.ERROR and "roce_rp/rpg_min_rate" in error.actual


def test_pfc_only_and_an_intent_without_rp_params_skip_with_the_reason() -> None:
    pfc_only = INTENT.model_copy(update={"congestion_control": "pfc_only"})
    findings = run_checks(intent=pfc_only)
    for check in (checks.MIN_TIME_BETWEEN_CNPS, checks.RP_PARAMS):
        skip = only(findings, check, "host")
        assert skip.status is Status.SKIP and "pfc_only" in skip.actual
    bare = FabricIntent(rails=INTENT.rails)
    skips = [f for f in run_checks(intent=bare) if f.check == checks.RP_PARAMS]
    assert {f.status for f in skips} == {Status.SKIP} and "rp_params is empty" in skips[0].actual
