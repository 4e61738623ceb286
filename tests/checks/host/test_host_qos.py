"""fabcheck.checks.host.qos on a host set to the intent but one value: trust, PFC, the DSCP map, the NIC
ECN enables, the RoCE ToS (traffic_class) and the RDMA-CM ToS and mode; each wrong value fails exactly
its check with the command that fixes it, and what the intent does not ask for is skipped with the reason."""

from __future__ import annotations

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import (
    DEFAULT_DSCP_MAP,
    INTENT,
    NETDEVS,
    RAILS,
    Fault,
    not_passing,
    ok,
    one_wrong_setting_test,
    only,
    qos,
    run_checks,
    wrong_value_tests,
)
from tests.parsers.renderers import render_mlnx_qos

FAULTS: list[Fault] = [
    (
        "trust",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(trust="pcp", dscp2prio={}, dscp2prio_shown=False)))},
        checks.TRUST,
        "mlx5_0",
        "trust pcp",
        "mlnx_qos -i ens1np0 --trust dscp",
    ),
    (
        "pfc-off",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(pfc_enabled=())))},
        checks.PFC,
        "mlx5_0",
        "PFC off on every priority",
        "mlnx_qos -i ens1np0 --pfc 0,0,0,1,0,0,0,0",
    ),
    (
        "pfc-extra",
        {"mlnx_qos:ens2np0": ok(render_mlnx_qos(qos(pfc_enabled=(3, 4))))},
        checks.PFC,
        "mlx5_1",
        "PFC on priority 3,4 only",
        "mlnx_qos -i ens2np0 --pfc 0,0,0,1,0,0,0,0",
    ),
    (
        "dscp-map",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(dscp2prio=DEFAULT_DSCP_MAP | {26: 0})))},
        checks.DSCP2PRIO,
        "mlx5_0",
        "DSCP 26 -> prio 0, DSCP 48 -> prio 6",
        "mlnx_qos -i ens1np0 --dscp2prio set,26,3",
    ),
    (
        "cnp-map",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(dscp2prio=DEFAULT_DSCP_MAP | {48: 3})))},
        checks.DSCP2PRIO,
        "mlx5_0",
        "DSCP 26 -> prio 3, DSCP 48 -> prio 3",
        "mlnx_qos -i ens1np0 --dscp2prio set,48,6",
    ),
    (
        "ecn-np-off",
        {"ecn_np_enable:ens1np0": ok("0\n")},
        checks.ECN_ENABLE,
        "mlx5_0",
        "roce_np/enable/3=0 roce_rp/enable/3=1",
        "echo 1 > /sys/class/net/ens1np0/ecn/roce_np/enable/3",
    ),
    (
        "ecn-rp-off",
        {"ecn_rp_enable:ens2np0": ok("0\n")},
        checks.ECN_ENABLE,
        "mlx5_1",
        "roce_np/enable/3=1 roce_rp/enable/3=0",
        "echo 1 > /sys/class/net/ens2np0/ecn/roce_rp/enable/3",
    ),
    (
        "tos",
        {"traffic_class:mlx5_1/1": ok("Global tclass=0\n")},
        checks.ROCE_TOS,
        "mlx5_1/1",
        "traffic_class 0",
        "echo 106 > /sys/class/infiniband/mlx5_1/tc/1/traffic_class",
    ),
]


test_one_wrong_setting_fails_exactly_its_check = one_wrong_setting_test(FAULTS)


WRONG = {
    "cma_roce_tos:mlx5_1/1": (ok("0\n"), checks.CMA_ROCE_TOS, "mlx5_1/1"),
    "cma_roce_mode:mlx5_0/1": (ok("IB/RoCE v1\n"), checks.CMA_ROCE_MODE, "mlx5_0/1"),
}
FIXES = {
    checks.CMA_ROCE_TOS: "`cma_roce_tos -d mlx5_1 -p 1 -t 106`",
    checks.CMA_ROCE_MODE: "`cma_roce_mode -d mlx5_0 -p 1 -m 2`",
}
# The role tag whose run fixes each (None: roce_host does not write the RDMA-CM mode).
TAGS = {checks.CMA_ROCE_TOS: "dscp", checks.CMA_ROCE_MODE: None}


(
    test_one_wrong_value_fails_exactly_its_check_on_exactly_that_device,
    test_a_missing_record_is_an_error_never_a_pass,
) = wrong_value_tests(WRONG, FIXES, TAGS)


def test_traffic_class_accepts_the_plain_upstream_form() -> None:
    findings = run_checks({"traffic_class:mlx5_0/1": ok("106\n")})
    assert only(findings, checks.ROCE_TOS, "mlx5_0/1").status is Status.PASS


def test_nic_trusting_pcp_skips_its_dscp_map_with_the_reason() -> None:
    pcp = ok(render_mlnx_qos(qos(trust="pcp", dscp2prio={}, dscp2prio_shown=False)))
    skipped = only(run_checks({"mlnx_qos:ens1np0": pcp}), checks.DSCP2PRIO, "mlx5_0")
    assert skipped.status is Status.SKIP
    assert skipped.actual == "the NIC trusts pcp: its DSCP map is not in use (host.trust)"


def test_pfc_must_be_off_everywhere_when_the_intent_is_lossy() -> None:
    lossy = FabricIntent(rails=RAILS, congestion_control="ecn_only", lossless={"pfc": False})
    findings = run_checks(intent=lossy)
    pfc = only(findings, checks.PFC, "mlx5_0")
    assert pfc.status is Status.FAIL
    assert pfc.expected == "PFC off on every priority"
    assert "--pfc 0,0,0,0,0,0,0,0" in pfc.hint


def test_pfc_only_intent_wants_nic_dcqcn_off() -> None:
    pfc_only = FabricIntent(rails=RAILS, congestion_control="pfc_only")
    ecn = only(run_checks(intent=pfc_only), checks.ECN_ENABLE, "mlx5_0")
    assert ecn.status is Status.FAIL
    assert ecn.expected == "roce_np/enable/3=0 roce_rp/enable/3=0"
    disabled = {f"ecn_{p}_enable:{n}": ok("0\n") for p in ("np", "rp") for n in NETDEVS.values()}
    assert only(run_checks(disabled, intent=pfc_only), checks.ECN_ENABLE, "mlx5_0").status is Status.PASS


def test_trust_pcp_intent_skips_the_dscp_map() -> None:
    pcp = INTENT.model_copy(update={"trust": "pcp"})
    findings = run_checks(
        {
            f"mlnx_qos:{n}": ok(render_mlnx_qos(qos(trust="pcp", dscp2prio={}, dscp2prio_shown=False)))
            for n in ("ens1np0", "ens2np0")
        },
        intent=pcp,
    )
    assert not_passing(findings) == {
        (checks.DSCP2PRIO, "mlx5_0"): Status.SKIP,
        (checks.DSCP2PRIO, "mlx5_1"): Status.SKIP,
    }


def test_an_infiniband_intent_skips_the_rdma_cm_checks() -> None:
    ib = FabricIntent(kind="ib", rails=INTENT.rails)
    findings = run_checks(intent=ib)
    for check in (checks.CMA_ROCE_TOS, checks.CMA_ROCE_MODE, checks.MIN_TIME_BETWEEN_CNPS):
        assert only(findings, check, "host").status is Status.SKIP
