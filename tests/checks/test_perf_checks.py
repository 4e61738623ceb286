"""perftest and nccl-tests checks against the intent, on recorded outputs."""

from __future__ import annotations

import dataclasses

from conftest import CORPUS

from fabcheck.checks.model import Status, verdict
from fabcheck.checks.nccl_tests import check_nccl_tests
from fabcheck.checks.perftest import check_perftest
from fabcheck.intent.model import FabricIntent, Performance
from fabcheck.parsers.nccl_tests import parse_nccl_tests
from fabcheck.parsers.perftest import parse_perftest


def perftest(name: str):
    return parse_perftest((CORPUS / "perftest" / name).read_text())


def nccl_tests(name: str):
    return parse_nccl_tests((CORPUS / "nccl-tests" / name).read_text())


def by_check(findings: list) -> dict:
    return {f.check: f for f in findings}


def test_400g_roce_write_bw_passes_the_90_percent_floor() -> None:
    findings = by_check(
        check_perftest(perftest("ib_write_bw-gardenlinux-cuda-dmabuf-roce-gbits.txt"), FabricIntent())
    )
    assert findings["perftest.bandwidth"].status is Status.PASS
    assert findings["perftest.bandwidth"].actual.startswith("368.48 Gb/sec average at 65536 B")
    assert findings["perftest.bandwidth"].expected.startswith(">= 360.00 Gb/sec (90% of 400 Gb/s)")


def test_100g_nic_fails_against_400g_intent_and_passes_with_its_line_rate() -> None:
    run = perftest("ib_write_bw-dc-srq-roce-all-sizes-client.txt")
    assert by_check(check_perftest(run, FabricIntent()))["perftest.bandwidth"].status is Status.FAIL
    assert verdict(check_perftest(run, FabricIntent(), line_rate_gbps=100)) is Status.PASS


def test_mbsec_output_is_converted_with_perftest_mebibytes() -> None:
    # 23396.08 MB/sec (MiB/s in perftest) = 196.26 Gb/s on an HDR 200G link: passes at 200, fails at 400.
    run = perftest("ib_send_bw-client-ib-hdr-all-sizes-mbsec.txt")
    ib = FabricIntent(kind="ib", roce_tos=104, link={"speed_gbps": 200})
    assert by_check(check_perftest(run, ib))["perftest.bandwidth"].status is Status.PASS
    assert "196.2" in by_check(check_perftest(run, ib))["perftest.bandwidth"].actual


def test_wrong_link_layer_and_small_mtu_fail() -> None:
    ib_run = perftest("ib_read_bw-mlx4-ib-mbsec-cpufreq-warning-midtable.txt")
    assert by_check(check_perftest(ib_run, FabricIntent()))["perftest.link_layer"].status is Status.FAIL
    lag = by_check(
        check_perftest(perftest("ib_send_bw-roce-lag-bond-mtu1024-single-size-tabs.txt"), FabricIntent())
    )
    assert lag["perftest.mtu"].status is Status.FAIL and lag["perftest.mtu"].actual == "MTU 1024"


def test_failed_runs_fail_with_the_completion_status_explained() -> None:
    findings = check_perftest(perftest("ib_write_bw-gke-a3ultra-roce-fail-status10.txt"), FabricIntent())
    failures = [f for f in findings if f.check == "perftest.completion"]
    assert failures and all(f.status is Status.FAIL for f in failures)
    assert any("IBV_WC_REM_ACCESS_ERR (10)" in f.hint for f in failures)
    only_errors = check_perftest(
        perftest("ib_write_bw-bidir-cuda-fail-status4-syndrom51.txt"), FabricIntent()
    )
    assert verdict(only_errors) is Status.FAIL


def test_latency_run_is_not_judged_on_bandwidth() -> None:
    findings = by_check(
        check_perftest(perftest("ib_write_lat-mlx4-ib-all-sizes.txt"), FabricIntent(kind="ib"))
    )
    assert findings["perftest.bandwidth"].status is Status.SKIP
    assert findings["perftest.completion"].status is Status.PASS


def test_all_reduce_busbw_floor_from_nics_per_node() -> None:
    run = nccl_tests("all_reduce-309-hgx-h100-2node-16rank-16G-xpmem-warn.txt")
    findings = by_check(check_nccl_tests(run, FabricIntent()))  # 8 x 400G -> floor 340 GB/s
    assert findings["nccl_tests.busbw"].status is Status.PASS
    assert findings["nccl_tests.busbw"].actual == "469.21 GB/s at 17179869184 B"
    assert findings["nccl_tests.correctness"].status is Status.PASS
    one_nic = nccl_tests("all_reduce-dranet-mpi-operator-2xh200-openmpi-warnings.txt")
    assert by_check(check_nccl_tests(one_nic, FabricIntent()))["nccl_tests.busbw"].status is Status.FAIL
    one_nic_intent = FabricIntent(performance=Performance(nics_per_node=1))
    assert by_check(check_nccl_tests(one_nic, one_nic_intent))["nccl_tests.busbw"].status is Status.FAIL
    low_floor = FabricIntent(performance=Performance(nics_per_node=1, nccl_busbw_min_fraction=0.6))
    assert verdict(check_nccl_tests(one_nic, low_floor)) is Status.PASS  # 31.89 GB/s >= 0.6 x 50 GB/s


def test_every_op_is_judged_against_its_floor_and_small_runs_fail_it() -> None:
    gather = by_check(check_nccl_tests(nccl_tests("all_gather-dranet-2node-b200-8B-1G.txt"), FabricIntent()))
    assert gather["nccl_tests.busbw"].status is Status.PASS  # 45.14 >= 85% of one 400G NIC (1 rank a host)
    assert "ring: the domain's NIC sum, 1 NICs x 400 Gb/s" in gather["nccl_tests.busbw"].expected
    text = (CORPUS / "nccl-tests" / "all_reduce-309-hgx-h100-2node-16rank-16G-xpmem-warn.txt").read_text()
    small = by_check(
        check_nccl_tests(
            parse_nccl_tests(text), FabricIntent(performance=Performance(nccl_min_bytes=1 << 40))
        )
    )
    assert small["nccl_tests.busbw"].status is Status.FAIL
    assert "-e 8G" in small["nccl_tests.busbw"].hint


def test_wrong_elements_fail_correctness() -> None:
    text = (CORPUS / "nccl-tests" / "all_reduce-dranet-mpi-operator-2xh200-openmpi-warnings.txt").read_text()
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("8589934592"))
    cells = lines[row].rsplit("0", 1)
    lines[row] = cells[0] + "7" + cells[1]  # in-place #wrong 0 -> 7
    findings = by_check(check_nccl_tests(parse_nccl_tests("\n".join(lines) + "\n"), FabricIntent()))
    assert findings["nccl_tests.correctness"].status is Status.FAIL
    assert "7 wrong element(s) at 8589934592 B" in findings["nccl_tests.correctness"].actual


# A record holding a non-finite number (the parsers refuse them; a record built elsewhere might not)
# is an error, never a pass: nan compares False with every floor.


def test_perftest_non_finite_bandwidth_is_an_error() -> None:
    run = perftest("ib_write_bw-gardenlinux-cuda-dmabuf-roce-gbits.txt")
    for bad in (float("nan"), float("inf")):
        rows = tuple(dataclasses.replace(r, bw_avg=bad) for r in run.rows)
        finding = by_check(check_perftest(dataclasses.replace(run, rows=rows), FabricIntent()))
        assert finding["perftest.bandwidth"].status is Status.ERROR
        assert "not a finite number" in finding["perftest.bandwidth"].actual
        assert verdict(check_perftest(dataclasses.replace(run, rows=rows), FabricIntent())) is Status.ERROR


def test_nccl_tests_non_finite_busbw_is_an_error() -> None:
    run = nccl_tests("all_reduce-309-hgx-h100-2node-16rank-16G-xpmem-warn.txt")
    intent = FabricIntent(performance=Performance(nccl_busbw_min_fraction=0.01))
    assert by_check(check_nccl_tests(run, intent))["nccl_tests.busbw"].status is Status.PASS
    for field in ("oop_busbw", "ip_busbw"):
        rows = tuple(dataclasses.replace(r, **{field: float("nan")}) for r in run.rows)
        finding = by_check(check_nccl_tests(dataclasses.replace(run, rows=rows), intent))["nccl_tests.busbw"]
        assert finding.status is Status.ERROR and "not a finite number" in finding.actual


def test_a_line_rate_that_is_not_positive_is_an_error_not_a_pass() -> None:
    run = perftest("ib_write_bw-gardenlinux-cuda-dmabuf-roce-gbits.txt")
    for rate in (float("nan"), -400.0, float("inf")):
        finding = by_check(check_perftest(run, FabricIntent(), line_rate_gbps=rate))["perftest.bandwidth"]
        assert finding.status is Status.ERROR, rate
        assert finding.actual == f"line rate {rate}"


def test_an_unknown_bandwidth_unit_is_an_error_not_zero() -> None:
    run = perftest("ib_write_bw-gardenlinux-cuda-dmabuf-roce-gbits.txt")
    odd = dataclasses.replace(run, bw_unit="KB/sec")
    finding = by_check(check_perftest(odd, FabricIntent()))["perftest.bandwidth"]
    assert finding.status is Status.ERROR and "'KB/sec'" in finding.actual
