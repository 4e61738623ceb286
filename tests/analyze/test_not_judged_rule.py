"""The rule: pass only when every applicable check judged evidence; a check skipped for lack of evidence
makes the run `error` ("not judged: ...", exit 3) unless the user's --skip-check leaves it out."""

from __future__ import annotations

from pathlib import Path

from fabcheck.analyze import Options, analyze
from fabcheck.checks.evidence import NOT_JUDGED
from fabcheck.cli.analyze import analysis_subject, analyze_run
from fabcheck.intent.model import default_intent
from fabcheck.report.model import exit_code

CORPUS = Path(__file__).resolve().parents[1] / "data/corpus"


def _analyze(kind: str, name: str, *skip: str):
    path = CORPUS / kind / name
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return analyze(kind, lines, path.name, default_intent(), Options(excluded_checks=skip))


def test_unnamed_op_is_not_judged_and_exits_3() -> None:
    result = _analyze("nccl-tests", "nccl-tests-128-2node-no-banner-no-ranks-small-sizes.txt")
    assert result.verdict == "error"
    assert result.not_judged and result.not_judged[0].startswith("nccl_tests.busbw: the collective")
    assert exit_code(analyze_run([analysis_subject(result)])) == 3


def test_skip_check_leaves_the_unjudged_check_out() -> None:
    result = _analyze(
        "nccl-tests", "nccl-tests-128-2node-no-banner-no-ranks-small-sizes.txt", "nccl_tests.busbw"
    )
    assert result.verdict == "pass" and result.not_judged == []
    busbw = next(f for f in result.findings if f.check == "nccl_tests.busbw")
    assert (busbw.status.value, busbw.actual) == ("skip", "left out by --skip-check")


def test_skip_check_prefix_and_a_failure_still_fails() -> None:
    result = _analyze(
        "nccl-tests", "all_reduce-219-2node-a6000-c0-test-nccl-failure-no-table.txt", "nccl_tests.c"
    )
    # 'nccl_tests.c' is no prefix (no trailing dot): nothing is left out, the aborted run fails.
    assert result.verdict == "fail"
    left = _analyze(
        "nccl-tests", "all_reduce-219-2node-a6000-c0-test-nccl-failure-no-table.txt", "nccl_tests."
    )
    assert {f.status.value for f in left.findings} == {"skip"} and left.verdict == "error"


def test_zero_rows_with_failure_lines_fail_never_pass() -> None:
    for name in (
        "all_reduce-219-2node-a6000-c0-test-nccl-failure-no-table.txt",
        "all_reduce-5-nccl1-p100-old-header-nccl-failure-zero-rows.txt",
    ):
        result = _analyze("nccl-tests", name)
        completed = next(f for f in result.findings if f.check == "nccl_tests.completed")
        assert completed.status.value == "fail" and "failure" in completed.actual
        assert all(
            f.actual.startswith(NOT_JUDGED) for f in result.findings if f.check != "nccl_tests.completed"
        )


def test_single_host_run_is_intra_node_not_fabric_proof() -> None:
    result = _analyze("nccl-tests", "all_gather-dranet-b200-1node-2gpu-elided.txt")
    assert result.facts["scope"] == "intra-node"
    busbw = next(f for f in result.findings if f.check == "nccl_tests.busbw")
    assert busbw.status.value == "error" and "no fabric proof" in busbw.actual
    assert "--scope node" in busbw.hint
    assert result.verdict == "error"  # exit 3: never a pass for a fabric intent


def _finding(result, check: str):
    return next(f for f in result.findings if f.check == check)


def test_bidirectional_sum_is_judged_per_direction() -> None:
    gdr = _analyze("perftest", "ib_write_bw-bidir-ionic-rocm-gdr-400g-698-sum-349-per-direction.txt")
    bandwidth = _finding(gdr, "perftest.bandwidth")
    # 697.97 Gb/s summed would pass the 360 Gb/s floor of 400G; each direction carries 348.99.
    assert bandwidth.status.value == "fail" and bandwidth.actual.startswith("348.99 Gb/sec per direction")
    host = _analyze("perftest", "ib_write_bw-bidir-ionic-host-mem-400g-779-sum-390-per-direction.txt")
    assert _finding(host, "perftest.bandwidth").actual.startswith("389.61 Gb/sec per direction")


def test_message_rate_run_is_not_judged_as_bandwidth() -> None:
    result = _analyze("perftest", "ib_write_bw-post-list-128-8b-msgrate-273.txt")
    bandwidth = _finding(result, "perftest.bandwidth")
    assert bandwidth.status.value == "skip" and "--post_list 128" in bandwidth.actual
    assert bandwidth.measure is not None and (bandwidth.measure.value, bandwidth.measure.unit) == (
        7.498617,
        "Mpps",
    )


def test_failed_run_without_table_is_not_called_a_latency_test() -> None:
    result = _analyze("perftest", "ib_write_bw-bidir-cuda-fail-status4-syndrom51.txt")
    bandwidth = _finding(result, "perftest.bandwidth")
    assert "latency" not in bandwidth.actual and bandwidth.actual.startswith(NOT_JUDGED)
    assert result.verdict == "fail"  # the completion error outranks what could not be judged


def test_atomic_bw_is_a_message_rate_run() -> None:
    # SYNTHESISED in perftest's layout (no captured ib_atomic_bw output in the corpus): 8-byte atomics.
    text = "\n".join(
        [
            "                    Atomic FETCH_AND_ADD BW Test",
            " Dual-port       : OFF\t\tDevice         : mlx5_0",
            " Number of qps   : 1\t\tTransport type : IB",
            " Connection type : RC\t\tUsing SRQ      : OFF",
            " TX depth        : 128",
            " Mtu             : 4096[B]",
            " Link type       : Ethernet",
            "-" * 87,
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
            " 8          1000             15.62              15.60              2.044600",
            "-" * 87,
            "",
        ]
    )
    from fabcheck.analyze import analyze as run_analyze

    result = run_analyze("perftest", [text], "atomic.txt", default_intent())
    bandwidth = _finding(result, "perftest.bandwidth")
    assert result.facts["test"] == "ib_atomic_bw"
    assert bandwidth.status.value == "skip" and "ib_atomic_bw" in bandwidth.actual


def test_nccl_log_excerpt_without_hca_list_or_init_complete_is_error_until_left_out() -> None:
    name = "kuberay-gib-a4-b200-annotated-excerpt.txt"
    result = _analyze("nccl-log", name)
    assert result.verdict == "error"
    assert [entry.split(":")[0] for entry in result.not_judged] == ["nccl.link_layer", "nccl.init"]
    assert _analyze("nccl-log", name, "nccl.link_layer", "nccl.init").verdict == "pass"


def test_topo_rail_map_against_unnamed_nics_is_not_judged() -> None:
    from fabcheck.intent.model import FabricIntent

    path = CORPUS / "topo" / "nccl-tests-321-h20-vm-no-legend.txt"
    intent = FabricIntent(rails={0: "mlx5_bond_6"})
    result = analyze("topo", [path.read_text()], path.name, intent)
    assert result.verdict == "error" and result.not_judged[0].startswith(
        "topo.gpu_nic_affinity: topology prints"
    )
