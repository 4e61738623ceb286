"""nccl-tests parser: every recorded sample against its truth file, the quirks, and robustness."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import CORPUS, corpus_samples, corpus_truth
from hostile import hostile_text, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers.nccl_tests import NcclTestsRun, nccl_tests_facts, nccl_tests_rows, parse_nccl_tests

SAMPLES = corpus_samples("nccl-tests")


def _sample(name: str) -> NcclTestsRun:
    path = CORPUS / "nccl-tests" / name
    return parse_nccl_tests(path.read_text(), source=path.name)


def test_corpus_has_nccl_tests_samples() -> None:
    assert len(SAMPLES) >= 8


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_facts_match_truth(sample: Path) -> None:
    truth = corpus_truth(sample)
    assert truth is not None, f"no truth file for {sample.name}"
    expected = {k: v for k, v in truth.items() if k not in ("kind", "note", "verdict", "verdict_reason")}
    assert nccl_tests_facts(parse_nccl_tests(sample.read_text(), source=sample.name)) == expected


# Facts a careful reader takes from each sample (INDEX.tsv) beyond what the truth files record.


def test_all_gather_2node_zero_size_rows() -> None:
    run = _sample("all_gather-dranet-2node-b200-8B-1G.txt")
    assert [(r.bytes, r.count) for r in run.rows[:2]] == [(0, 0), (0, 0)]
    assert (run.nranks, run.hosts, run.gpus) == (
        2,
        ("nccl-gib-test-0", "nccl-gib-test-1"),
        ("NVIDIA B200",) * 2,
    )
    assert (run.nccl_version, run.out_of_bounds, run.wrong_total) == ("2.26.6+cuda12.8", 0, 0)
    assert {(r.type, r.redop, r.root) for r in run.rows} == {("float", "none", -1)}


def test_all_gather_elided_rows_and_wide_columns() -> None:
    run = _sample("all_gather-dranet-b200-1node-2gpu-elided.txt")
    assert run.rows[0].bytes == 67108864
    assert [r.ip_algbw for r in run.rows[-3:]] == [1049.90, 1095.65, 1128.28]
    assert (run.avg_busbw, run.out_of_bounds) == (None, None)
    assert (run.nranks, run.hosts) == (2, ("nccl-gib-test-0",))


def test_skypilot_prefixed_lines() -> None:
    run = _sample("all_gather-skypilot-prefixed-gke-a3ultra-h200-16rank.txt")
    assert run.nranks == 16
    assert run.hosts == ("nc-d87e1263-head", "nc-d87e1263-worker1")
    assert set(run.gpus) == {"NVIDIA H200"}
    assert (run.nccl_version, run.out_of_bounds, run.params["iters"]) == (None, 0, "100")


def test_a100_sharp_run_dip_at_two_megabytes() -> None:
    run = _sample("all_reduce-293-a100pcie-2node-hdr-ib-sharp-gdr-forced.txt")
    by_size = {r.bytes: r for r in run.rows}
    assert (by_size[1048576].oop_busbw, by_size[2097152].oop_busbw) == (0.31, 5.74)
    assert run.nccl_version == "2.21.5+cuda12.4"
    assert run.hosts == ("test1", "test2") and run.gpus == ("NVIDIA A100-PCIE-40GB",) * 2
    assert run.out_of_bounds == 0 and run.wrong_total == 0


def test_h100_16_ranks_named_by_mpi_binary() -> None:
    run = _sample("all_reduce-309-hgx-h100-2node-16rank-16G-xpmem-warn.txt")
    assert (run.op, run.nranks, run.nccl_version) == ("all_reduce", 16, "2.26.2+cuda12.8")
    assert run.hosts == ("bm-h100-01", "bm-h100-02")
    assert run.gpus[0] == "NVIDIA H100 80GB HBM3"
    assert run.params["maxBytes"] == "17179869184" and run.rows[-1].bytes == 17179869184


def test_mpi_operator_run_without_version_line() -> None:
    run = _sample("all_reduce-dranet-mpi-operator-2xh200-openmpi-warnings.txt")
    assert run.nccl_version is None
    assert (run.rows[0].bytes, run.rows[-1].bytes) == (1024, 8589934592)
    assert all(r.oop_algbw == r.oop_busbw for r in run.rows)  # 2 ranks: factor 2(n-1)/n = 1


def test_alltoall_interleaved_info_and_na_in_place() -> None:
    run = _sample("alltoall-321-h20-roce-interleaved-info.txt")
    assert all(r.ip_wrong is None and r.oop_wrong == 0 for r in run.rows)
    assert run.nccl_version == "2.26.5+cuda12.2"
    assert run.params["maxBytes"] == "17179869184" and run.rows[-1].bytes == 4294967296
    assert (run.nranks, run.hosts, run.avg_busbw) == (4, ("vm-host40", "vm-host38"), None)


def test_alltoall_new_format_collapse() -> None:
    run = _sample("alltoall-6kd-rtx6000d-2node-spcx-ar-off-collapse-new-format.txt")
    row = next(r for r in run.rows if r.bytes == 16777216)
    assert (row.oop_time_us, row.oop_algbw, row.oop_busbw) == (10642.5, 1.58, 1.48)
    assert next(r for r in run.rows if r.bytes == 134217728).ip_time_us == 100641
    assert run.nccl_version == "2.30.3+cuda13.0" and run.params["unalign"] == "0"
    assert nccl_tests_rows(run)[-1] == {
        "bytes": 8589934592,
        "oop_time_us": 224292,
        "oop_algbw": 38.30,
        "oop_busbw": 35.90,
        "oop_wrong": 0,
        "ip_time_us": 211843,
        "ip_algbw": 40.55,
        "ip_busbw": 38.01,
        "ip_wrong": None,
    }


# Quirks, on small inline texts.

COLUMNS = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong"
UNITS = "(B) (elements) (us) (GB/s) (GB/s) (us) (GB/s) (GB/s)"


def _comment(cells: str, width: int = 9) -> str:
    """A '#' header line with right-aligned names, as nccl-tests lays them out."""
    return "#" + "".join(" " + cell.rjust(width - 1) for cell in cells.split())


def _rank(rank: int, host: str, device: int, gpu: str = "NVIDIA H100 80GB HBM3") -> str:
    return f"#  Rank {rank:2d} Group  0 Pid {1000 + rank:6d} on {host:>10} device {device:2d} [0x17] {gpu}"


HEADER = "\n".join(
    [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
        _rank(0, "node1", 0),
        _rank(1, "node1", 1),
        _rank(2, "node2", 0),
        _rank(3, "node2", 1),
        "#",
        "#" + " " * 60 + "out-of-place" + " " * 23 + "in-place",
        _comment(COLUMNS),
        _comment(UNITS),
        "",
    ]
)
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n"


def _row(cells: str, widths: tuple[int, ...] = (12, 14, 10, 8, 8, 9, 8, 8, 7, 9, 8, 8, 7)) -> str:
    """A result line padded the way nccl-tests pads it, from whitespace-separated cells."""
    return "".join(cell.rjust(width) for cell, width in zip(cells.split(), widths, strict=True))


def _table(rows: str, header: str = HEADER, footer: str = FOOTER) -> str:
    return header + rows + "\n" + footer


def test_reduce_scatter_inferred_from_bus_factor() -> None:
    rows = _row("1048576 65536 float sum -1 50.00 20.97 15.73 0 50.00 20.97 15.73 0")
    run = parse_nccl_tests(_table(rows))
    assert (run.op, run.nranks, run.hosts) == ("reduce_scatter", 4, ("node1", "node2"))


def test_all_reduce_inferred_from_bus_factor() -> None:
    rows = _row("1048576 262144 float sum -1 50.00 20.97 31.46 0 50.00 20.97 31.46 0")
    assert parse_nccl_tests(_table(rows)).op == "all_reduce"


def test_sendrecv_and_broadcast_inferred() -> None:
    sendrecv = _row("1048576 262144 float sum -1 50.00 20.97 20.97 0 50.00 20.97 20.97 N/A")
    broadcast = _row("1048576 262144 float none 0 50.00 20.97 20.97 0 50.00 20.97 20.97 0")
    assert parse_nccl_tests(_table(sendrecv)).op == "sendrecv"
    assert parse_nccl_tests(_table(broadcast)).op == "broadcast"


def test_op_stays_unknown_without_ranks() -> None:
    header = "\n".join(line for line in HEADER.splitlines() if "Rank" not in line) + "\n"
    rows = _row("1048576 262144 float sum -1 50.00 20.97 31.46 0 50.00 20.97 31.46 0")
    run = parse_nccl_tests(_table(rows, header=header))
    # busbw/algbw = 1.5 > 1: only all_reduce's factor 2(n-1)/n exceeds 1 (here n = 4).
    assert (run.op, run.op_basis, run.nranks) == ("all_reduce", "busbw/algbw", None)


def test_ratio_one_without_ranks_stays_unknown() -> None:
    header = "\n".join(line for line in HEADER.splitlines() if "Rank" not in line) + "\n"
    rows = _row("1048576 262144 float sum -1 50.00 20.97 20.97 0 50.00 20.97 20.97 0")
    # 1.0: all_reduce on 2 ranks, or a test with factor 1: not told apart.
    assert parse_nccl_tests(_table(rows, header=header)).op is None


def test_ratio_below_one_without_ranks_names_all_gather() -> None:
    header = "\n".join(line for line in HEADER.splitlines() if "Rank" not in line) + "\n"
    rows = _row("1048576 16384 float none -1 50.00 20.97 19.66 0 50.00 20.97 19.66 0")
    assert parse_nccl_tests(_table(rows, header=header)).op == "all_gather"


def test_validation_off_all_reduce_named_by_ratio() -> None:
    rows = _row("1048576 262144 float sum -1 50.00 20.97 31.46 N/A 50.00 20.97 31.46 N/A")
    run = parse_nccl_tests(_table(rows))
    assert (run.op, run.op_basis) == ("all_reduce", "busbw/algbw")


def test_file_name_names_op_when_ratio_agrees() -> None:
    header = "\n".join(line for line in HEADER.splitlines() if "Rank" not in line) + "\n"
    rows = _row("1048576 262144 float sum -1 50.00 20.97 20.97 N/A 50.00 20.97 20.97 N/A")
    run = parse_nccl_tests(_table(rows, header=header), source="logs/allreduce-2node.txt")
    assert (run.op, run.op_basis) == ("all_reduce", "file name")
    assert parse_nccl_tests(_table(rows, header=header), source="logs/all_gather.txt").op is None


def test_failure_lines_are_recorded_and_end_the_table() -> None:
    text = HEADER + "gpu01: Test NCCL failure common.cu:959 'internal error'\n"
    text += " .. gpu01 pid 7: Test failure common.cu:844\n"
    run = parse_nccl_tests(text)
    assert run.rows == () and len(run.failures) == 2
    assert run.failures[0].startswith("gpu01: Test NCCL failure common.cu:959")


def test_op_stays_unknown_when_factor_fits_nothing() -> None:
    rows = _row("1048576 262144 float sum -1 50.00 20.97 99.99 0 50.00 20.97 99.99 0")
    assert parse_nccl_tests(_table(rows)).op is None


def test_binary_name_in_command_line_names_op() -> None:
    text = "$ mpirun -np 4 ./build/broadcast_perf -b 8 -e 16\n" + _table(
        _row("8 2 float none 0 10.00 0.00 0.00 0 10.00 0.00 0.00 0")
    )
    assert parse_nccl_tests(text).op == "broadcast"


def test_binary_name_contradicted_by_table_is_not_trusted() -> None:
    text = "for t in all_reduce_perf all_gather_perf; do mpirun ./$t; done\n" + _table(
        _row("1048576 262144 float sum -1 50.00 20.97 31.46 0 50.00 20.97 31.46 0")
    )
    # all_gather_perf printed last, but 31.46/20.97 = 1.5 is all_reduce's 2(n-1)/n on 4 ranks.
    run = parse_nccl_tests(text)
    assert (run.op, run.op_basis) == ("all_reduce", "busbw/algbw")


def test_old_layout_without_root_and_error_column() -> None:
    header = "\n".join(
        [
            "#   Rank  0 Pid 120890 on 10-90-43-152 device  0 [0x07] A100-SXM4-40GB",
            "#   Rank  1 Pid 120890 on 10-90-43-152 device  1 [0x0b] A100-SXM4-40GB",
            "#",
            _comment("size count type redop time algbw busbw error time algbw busbw error"),
            _comment(UNITS),
            "",
        ]
    )
    rows = _row("1048576 262144 float sum 20.10 52.17 52.17 0e+00 20.00 52.43 52.43 0e+00", (12,) * 12)
    run = parse_nccl_tests(_table(rows, header=header))
    row = run.rows[0]
    assert (row.root, row.redop, row.oop_wrong, row.ip_wrong) == (None, "sum", 0, 0)
    assert run.gpus == ("A100-SXM4-40GB",) * 2 and run.op == "all_reduce"


def test_empty_redop_cell() -> None:
    rows = _row(
        "1048576 65536 float -1 50.00 20.97 15.73 0 50.00 20.97 15.73 N/A", (12, 14, 10, 16) + (9,) * 8
    )
    row = parse_nccl_tests(_table(rows)).rows[0]
    assert (row.redop, row.root, row.ip_wrong) == (None, -1, None)


def test_wrong_counts_are_summed() -> None:
    rows = "\n".join(
        [
            _row("1048576 262144 float sum -1 50.00 20.97 31.46 3 50.00 20.97 31.46 4"),
            _row("2097152 524288 float sum -1 90.00 23.30 34.95 0 90.00 23.30 34.95 N/A"),
        ]
    )
    footer = "# Out of bounds values : 7 FAILED\n# Avg bus bandwidth    : 33.2 FAILED\n"
    run = parse_nccl_tests(_table(rows, footer=footer))
    assert (run.wrong_total, run.out_of_bounds, run.avg_busbw) == (7, 7, 33.2)


def test_elided_rows_and_exponent_times() -> None:
    rows = "...\n" + _row("8589934592 2147483648 float sum -1 1.2e+05 71.58 107.37 0 1.1e+05 78.09 117.13 0")
    row = parse_nccl_tests(_table(rows)).rows[0]
    assert (row.oop_time_us, row.ip_time_us) == (120000.0, 110000.0)


def test_openmpi_and_custom_prefixes_are_stripped() -> None:
    rows = _row("1048576 262144 float sum -1 50.00 20.97 31.46 0 50.00 20.97 31.46 0")
    for prefix in ("[1,0]<stdout>:", "0: ", "worker-0 | ", "2024-05-01T10:00:00.123456Z "):
        text = "".join(prefix + line + "\n" for line in _table(rows).splitlines())
        run = parse_nccl_tests(text)
        assert (len(run.rows), run.nranks, run.avg_busbw) == (1, 4, 1.5), prefix


def test_nccl_info_lines_inside_table_are_skipped() -> None:
    rows = "\n".join(
        [
            "node1:1001:1010 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via P2P/IPC",
            _row("1048576 262144 float sum -1 50.00 20.97 31.46 0 50.00 20.97 31.46 0"),
            "node1:1001:1001 [0] NCCL INFO comm 0x55 rank 0 nranks 4 cudaDev 0 - Destroy COMPLETE",
        ]
    )
    assert len(parse_nccl_tests(_table(rows)).rows) == 1


def test_new_columns_bitdiff_and_timestamp() -> None:
    side = "time algbw busbw #wrong #bitdiff"
    columns = f"size count type redop root {side} {side} timestamp"
    header = "\n".join([_rank(0, "node1", 0), _rank(1, "node2", 0), "#", _comment(columns), ""])
    cells = "1048576 262144 float sum -1 50.00 20.97 20.97 0 0 50.00 20.97 20.97 0 0 2025-06-01 10:00:00"
    rows = _row(cells, (12, 14, 10, 8, 8, 9, 8, 8, 8, 10, 9, 8, 8, 8, 10, 12, 9))
    row = parse_nccl_tests(_table(rows, header=header)).rows[0]
    assert (row.oop_busbw, row.ip_busbw, row.ip_wrong) == (20.97, 20.97, 0)


def test_version_from_library_code_when_no_version_line() -> None:
    text = "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n" + _table(
        _row("8 2 float sum -1 10.00 0.00 0.00 0 10.00 0.00 0.00 0")
    )
    assert parse_nccl_tests(text).nccl_version == "2.28.7"


def test_collective_test_starting_names_op() -> None:
    text = "# Collective test starting: reduce_scatter_perf\n" + _table(
        _row("8 2 float sum -1 10.00 0.00 0.00 0 10.00 0.00 0.00 0")
    )
    assert parse_nccl_tests(text).op == "reduce_scatter"


def test_damaged_row_names_its_line() -> None:
    rows = "     1048576        262144     float     sum      -1    50.00   20.97   31.46      0    50.00"
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests(_table(rows), source="run.log")
    assert (caught.value.source, caught.value.line) == ("run.log", 12)


def test_garbage_cell_is_damage() -> None:
    rows = _row("1048576 262144 float sum -1 50.00 2x.97 31.46 0 50.00 20.97 31.46 0")
    with pytest.raises(ParseError, match="damaged"):
        parse_nccl_tests(_table(rows))


def test_text_without_table_is_rejected() -> None:
    with pytest.raises(ParseError, match="no nccl-tests result table"):
        parse_nccl_tests("# nThread 1 nGpus 1\nNCCL version 2.21.5+cuda12.4\n")


def test_second_table_is_rejected() -> None:
    one = _table(_row("8 2 float sum -1 10.00 0.00 0.00 0 10.00 0.00 0.00 0"))
    with pytest.raises(ParseError, match="second"):
        parse_nccl_tests(one + one)


# Robustness: any text gives a record or a ParseError, never another exception.


def _parse_or_reject(text: str) -> None:
    try:
        result = parse_nccl_tests(text)
    except ParseError:
        return
    assert isinstance(result, NcclTestsRun)


def _truncations(text: str) -> list[str]:
    """Every line-boundary prefix, plus a cut in the middle of every line."""
    cuts = []
    offset = 0
    for line in text.splitlines(keepends=True):
        cuts.append(text[: offset + len(line) // 2])
        offset += len(line)
        cuts.append(text[:offset])
    return cuts


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_line_truncation_parses_or_is_rejected(sample: Path) -> None:
    for prefix in _truncations(sample.read_text()):
        _parse_or_reject(prefix)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SAMPLES), st.floats(min_value=0, max_value=1))
def test_any_character_truncation_parses_or_is_rejected(sample: Path, fraction: float) -> None:
    text = sample.read_text()
    _parse_or_reject(text[: int(len(text) * fraction)])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_arbitrary_text_parses_or_is_rejected(text: str) -> None:
    _parse_or_reject(text)


_PIECES = st.sampled_from(
    [HEADER.splitlines()[9], "#  Rank  0 Group  0 Pid 1 on h device 0 [0x1] G", "# Avg bus bandwidth : x",
     "   8  2  float  sum  -1  1.0  0.0  0.0  0  1.0  0.0  0.0  N/A", "   8  2  float",
     "   8  2  float  " + "9 " * 12, "   8  2  float  sum  -1  " + "1e999 " * 8, "   8  2  x  " + "9" * 400,
     "# Out of bounds values : 0 OK", "...", "(h) [1,0]<stdout>:#", ""]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_shuffled_nccl_lines_parse_or_are_rejected(lines: list[str]) -> None:
    _parse_or_reject("\n".join(lines))


# Issue 7: false passes and crashes found by review and by bench/fuzz.py.

H100 = (CORPUS.parent.parent.parent / "examples" / "outputs" / "all_reduce-2node-h100.txt").read_text()
LAST_ROW = "8589934592    2147483648     float     sum      -1    34381  249.84  468.46      0    34365  " + (
    "249.96  468.67"
)


def test_example_last_row_is_where_the_tests_below_edit() -> None:
    assert LAST_ROW in H100


@pytest.mark.parametrize("token", ["nan", "-nan", "inf", "-inf", "1e400"])
def test_non_finite_busbw_is_unreadable_not_a_pass(token: str) -> None:
    text = H100.replace(LAST_ROW, LAST_ROW.replace("468.67", token))
    with pytest.raises(ParseError, match=r"busbw .* is not a finite number") as caught:
        parse_nccl_tests(text, source="nt.txt")
    assert (caught.value.source, caught.value.line) == ("nt.txt", 76)


@pytest.mark.parametrize(
    ("old", "new"), [("8589934592", "８589934592"), ("      0    34365", "      ١    34365")]
)
def test_non_ascii_digits_in_a_row_are_refused_not_skipped(old: str, new: str) -> None:
    # Skipping such a row would drop its '#wrong' count: a corrupted run could then pass.
    with pytest.raises(ParseError, match="not an ASCII") as caught:
        parse_nccl_tests(H100.replace(LAST_ROW, LAST_ROW.replace(old, new, 1)))
    assert caught.value.line == 76


@pytest.mark.parametrize("digits", [21, 4301, 50_000])
def test_huge_numbers_are_parse_errors(digits: int) -> None:
    with pytest.raises(ParseError, match="more than"):
        parse_nccl_tests(H100.replace(LAST_ROW, LAST_ROW.replace("2147483648", "9" * digits)))
    with pytest.raises(ParseError, match="more than"):
        parse_nccl_tests(H100.replace("#  Rank  0", "#  Rank  " + "7" * digits, 1))


def test_unreadable_average_is_none_never_nan() -> None:
    for token in ("nan", "inf", "٣", "9" * 5000):
        run = parse_nccl_tests(
            H100.replace("# Avg bus bandwidth    : 139.56", f"# Avg bus bandwidth    : {token}")
        )
        assert run.avg_busbw is None


def test_library_code_is_read_from_the_version_line() -> None:
    text = "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n" + H100.replace(
        "NCCL version", "NCCL-version"
    )
    assert parse_nccl_tests(text).nccl_version == "2.19.3"
    with pytest.raises(ParseError, match="nccl-library code"):
        parse_nccl_tests("# nccl-tests version 2 nccl-library=" + "2" * 30 + "\n" + H100)


def test_deeply_nested_prefixes_stop_after_a_bound() -> None:
    # Real launchers nest two or three prefixes; a line of 20,000 '1: ' is data, read once.
    run = parse_nccl_tests("1: " * 20_000 + "\n" + H100)
    assert run.rows and run.op == "all_reduce"


def test_too_long_line_is_refused_with_its_number() -> None:
    with pytest.raises(ParseError, match="no nccl-tests output line is longer than 64 KiB") as caught:
        parse_nccl_tests("#\n" + "x" * 70_000 + "\n" + H100)
    assert caught.value.line == 2


# Hostile input (tests/parsers/hostile.py): long digit runs, NULs, '\r', tabs, non-ASCII digits, long lines.


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text)
def test_hostile_text_parses_or_is_rejected(text: str) -> None:
    _parse_or_reject(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated([s.read_text() for s in SAMPLES]))
def test_hostile_mutations_of_samples_parse_or_are_rejected(text: str) -> None:
    try:
        run = parse_nccl_tests(text)
    except ParseError:
        return
    for row in run.rows:
        values = [row.oop_time_us, row.oop_algbw, row.oop_busbw, row.ip_time_us, row.ip_algbw, row.ip_busbw]
        assert all(math.isfinite(v) for v in values if v is not None)
    assert run.avg_busbw is None or math.isfinite(run.avg_busbw)


def test_single_rank_busbw_zero_is_not_judged() -> None:
    # SYNTHESISED shape of NVIDIA/nccl-tests#249 (one rank on one host, every busbw 0.00; the issue's
    # own rows are cut in the quote): nothing crossed a link, so busbw is not judged, never passed.
    from fabcheck.checks.nccl_tests import check_nccl_tests
    from fabcheck.intent.model import default_intent

    header = "\n".join([_rank(0, "node1", 0), "#", *HEADER.splitlines()[-3:]]) + "\n"
    rows = _row("8589934592 2147483648 float sum -1 50000 171.80 0.00 0 50000 171.80 0.00 0")
    run = parse_nccl_tests(_table(rows, header=header))
    busbw = next(f for f in check_nccl_tests(run, default_intent()) if f.check == "nccl_tests.busbw")
    assert busbw.status.value == "error" and "nothing crossed a link" in busbw.actual and run.nranks == 1
