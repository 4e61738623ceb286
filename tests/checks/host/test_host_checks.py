"""The host wing as a whole (fabcheck.checks.host): a host set to the intent passes every check on every
rail; missing evidence is an ERROR naming the command, never a pass; an InfiniBand intent skips the
RoCE-only checks with the reason. Each concern's own cases are in test_host_<concern>.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.collect.script import Section
from fabcheck.gate import host_stage as validate
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import NETDEVS, RAILS, device, not_passing, ok, only, run_checks
from tests.parsers.renderers import render_ibv_devinfo


def test_host_set_to_the_intent_passes_every_check_on_every_rail() -> None:
    findings = run_checks()
    assert not_passing(findings) == {}
    assert {f.check for f in findings} == set(checks.HOST_CHECKS)
    per_nic = [f for f in findings if f.check == checks.TRUST]
    assert [f.subject for f in per_nic] == ["mlx5_0", "mlx5_1"]


def test_the_new_checks_pass_on_a_host_set_to_the_intent() -> None:
    findings = run_checks()
    for check in (checks.MIN_TIME_BETWEEN_CNPS, checks.RP_PARAMS, checks.CMA_ROCE_TOS, checks.CMA_ROCE_MODE):
        judged = [f for f in findings if f.check == check]
        assert len(judged) == 2 and {f.status for f in judged} == {Status.PASS}, judged
    assert only(findings, checks.RP_PARAMS, "mlx5_0").actual == "rpg_gd=11 rpg_min_rate=10"


def test_infiniband_intent_skips_roce_only_checks_with_a_reason() -> None:
    ib = FabricIntent(kind="ib", roce_tos=104, rails=RAILS)
    ib_ports = render_ibv_devinfo([device(n, i, link_layer="InfiniBand") for i, n in enumerate(NETDEVS)])
    findings = run_checks({"ibv_devinfo": ok(ib_ports)}, intent=ib)
    skipped = {f.check for f in findings if f.status is Status.SKIP}
    # RoCE boot files too; and this intent pins no NIC firmware parameters
    assert skipped == {*checks.ROCE_ONLY_CHECKS, checks.NIC_PERSISTENCE, checks.NIC_FW_CONFIG}
    roce_skips = [f for f in findings if f.status is Status.SKIP and f.check != checks.NIC_FW_CONFIG]
    assert all("RoCE-only" in f.actual for f in roce_skips)
    assert not any(f.status is Status.FAIL for f in findings)


MISSING = [
    (
        "mlnx_qos:ens1np0",
        Section(127, "", "sh: 1: mlnx_qos: not found\n"),
        checks.TRUST,
        "mlnx_qos -i ens1np0",
    ),
    ("mtu:ens2np0", None, checks.NETDEV_MTU, "cat /sys/class/net/ens2np0/mtu"),
    ("ecn_np_enable:ens1np0", Section(1, "", "cat: No such file\n"), checks.ECN_ENABLE, "roce_np/enable/3"),
    ("cnp_dscp:ens1np0", ok("forty-eight\n"), checks.CNP, "cat /sys/class/net/ens1np0/ecn/roce_np/cnp_dscp"),
    ("traffic_class:mlx5_0/1", Section(None, "Glob"), checks.ROCE_TOS, "tc/1/traffic_class"),
    ("lsmod", ok("garbage\n"), checks.GPUDIRECT, "lsmod"),
    ("topo", Section(127, "", "nvidia-smi: not found\n"), checks.AFFINITY, "nvidia-smi topo -m"),
    ("rdma_link", None, checks.RDMA_DEVICE, "rdma link"),
    ("ibv_devinfo", ok("hca_id:\n"), checks.RDMA_DEVICE, "ibv_devinfo -v"),
]


@pytest.mark.parametrize(("section", "replacement", "check", "command"), MISSING, ids=[m[0] for m in MISSING])
def test_unreadable_evidence_is_an_error_never_a_pass(
    section: str, replacement: Section | None, check: str, command: str
) -> None:
    findings = run_checks({section: replacement})
    errors = [f for f in findings if f.check == check and f.status is Status.ERROR]
    assert errors, not_passing(findings)
    assert command in errors[0].actual
    assert validate.verdict(findings) is Status.ERROR
    assert not any(f.status is Status.FAIL for f in findings)


def test_truncated_and_failed_sections_say_why() -> None:
    findings = run_checks({"traffic_class:mlx5_0/1": Section(None, "Glob")})
    assert "output truncated" in only(findings, checks.ROCE_TOS, "mlx5_0/1").actual
    findings = run_checks({"mlnx_qos:ens1np0": Section(127, "", "sh: 1: mlnx_qos: not found\n")})
    assert only(findings, checks.PFC, "mlx5_0").actual == (
        "could not read `mlnx_qos -i ens1np0`: exit 127: sh: 1: mlnx_qos: not found"
    )


# ---- the tests mirror the wing ----------------------------------------------------------------------

WING = Path(checks.__file__).parent
DECLARES_CHECKS = re.compile(r"^\w+ = (?:HostCheck|FleetCheck|host_check|fleet_check)\(", re.MULTILINE)


def test_each_test_file_is_named_after_a_module_of_the_wing_and_each_concern_has_one() -> None:
    """tests/checks/host/test_host_<module>.py tests fabcheck/checks/host/<module>.py (test_host_checks.py:
    the wing as a whole), and every module that declares a check has its own test file."""
    modules = {path.stem for path in WING.glob("*.py")} - {"__init__"}
    tested = {path.stem.removeprefix("test_host_") for path in Path(__file__).parent.glob("test_host_*.py")}
    assert tested - {"checks"} <= modules
    declaring = {path.stem for path in WING.glob("*.py") if DECLARES_CHECKS.search(path.read_text())}
    assert len(declaring) >= 7, declaring  # the wing's concerns were found: the rule judges something
    assert declaring - tested == set()
