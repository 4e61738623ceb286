"""`fabcheck report` on recorded nccl-tests outputs (tests/data/perf/mixed: copies of corpus samples of
three ops and four rank counts, two of them truncated, one file that is not an output), the numbers
checked against values read from the files by hand."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.errors import UsageError
from fabcheck.perf.analysis import AnomalyKind, Regime
from fabcheck.perf.curves import load_run_dir
from fabcheck.perf.report import CurveReport, Limit, OpReport, PerfReport, build_report
from fabcheck.report.model import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_NOT_CHECKED, EXIT_PASS, exit_code

MIXED = Path(__file__).parents[1] / "data" / "perf" / "mixed"
A100 = "all_reduce-293-a100pcie-2node-hdr-ib-sharp-gdr-forced.txt"
H100 = "all_reduce-309-hgx-h100-2node-16rank-16G-xpmem-warn.txt"
B200_ONE_NODE = "all_gather-dranet-b200-1node-2gpu-elided.txt"
H200_PREFIXED = "all_gather-skypilot-prefixed-gke-a3ultra-h200-16rank.txt"
COLLAPSE = "alltoall-6kd-rtx6000d-2node-spcx-ar-off-collapse-new-format.txt"
H20_CUT = "alltoall-321-h20-roce-interleaved-info.txt"
GIB = 1 << 30


@pytest.fixture(scope="module")
def report() -> PerfReport:
    return build_report(load_run_dir(MIXED), Limit(nics_per_node=8, speed_gbps=400))


def curve_report(report: PerfReport, source: str) -> CurveReport:
    return next(r for op in report.ops for r in op.curves if r.curve.source == source)


def op_report(report: PerfReport, name: str) -> OpReport:
    return next(op for op in report.ops if op.op == name)


def test_op_ranks_and_nodes_come_from_the_outputs(report: PerfReport) -> None:
    keys = {c.source: (c.key.op, c.key.nodes, c.key.ranks) for c in report.data.curves}
    assert keys == {
        A100: ("all_reduce", 2, 2),
        H100: ("all_reduce", 2, 16),
        B200_ONE_NODE: ("all_gather", 1, 2),
        H200_PREFIXED: ("all_gather", 2, 16),  # every line behind SkyPilot and OpenMPI prefixes
        COLLAPSE: ("alltoall", 2, 16),
        H20_CUT: ("alltoall", 2, 4),  # NCCL INFO lines between the table header and the rows
    }


def test_the_file_that_is_no_output_is_named_and_skipped(report: PerfReport) -> None:
    [skipped] = report.data.skipped
    assert skipped.source == "notes.txt"
    assert skipped.reason.startswith("not nccl-tests output: no nccl-tests result table")


def test_truncated_outputs_are_used_and_flagged(report: PerfReport) -> None:
    elided = curve_report(report, B200_ONE_NODE).curve
    assert (elided.points[0].bytes, elided.points[-1].bytes, len(elided.points)) == (64 << 20, 8 * GIB, 8)
    assert elided.truncated == (
        "no footer ('# Out of bounds', '# Avg bus bandwidth'): output stops at 8589934592 B",
        "sizes start at 67108864 B; the run asked from 1024 B",
    )
    cut = curve_report(report, H20_CUT).curve
    assert "sizes stop at 4294967296 B; the run asked up to 17179869184 B" in cut.truncated
    assert not curve_report(report, H100).curve.truncated


def test_representative_sizes_and_busbw_there(report: PerfReport) -> None:
    # all_reduce: the A100 run stops at 1 GiB; all_gather: both reach 8 GiB; alltoall: H20 stops at 4 GiB
    sizes = {op.op: op.size for op in report.ops}
    assert sizes == {"all_reduce": GIB, "all_gather": 8 * GIB, "alltoall": 4 * GIB}
    values = {r.curve.source: r.busbw for op in report.ops for r in op.curves}
    assert values == {
        A100: 6.44,
        H100: 448.90,
        B200_ONE_NODE: 482.71,
        H200_PREFIXED: 325.72,
        COLLAPSE: 29.17,
        H20_CUT: 50.25,
    }


def test_efficiency_against_the_limit_and_the_single_node_run(report: PerfReport) -> None:
    # limit: 8 NICs x 400 Gb/s / 8 = 400 GB/s
    assert curve_report(report, H100).efficiency == pytest.approx(448.90 / 400)
    # 1 rank per node drives one NIC of the 8: the ring bound is 50 GB/s (README "busbw floors ...")
    a100 = curve_report(report, A100)
    assert a100.efficiency == pytest.approx(6.44 / 50) and a100.bound is not None and a100.bound[0] == 50.0
    # alltoall, 2 nodes x 8 ranks: a rank's NIC share x 15/8 = 93.75 GB/s
    collapse = curve_report(report, COLLAPSE)
    assert collapse.bound is not None and collapse.bound[0] == pytest.approx(50 * 15 / 8)
    prefixed = curve_report(report, H200_PREFIXED)
    assert prefixed.efficiency == pytest.approx(0.8143)
    assert prefixed.cross_node == pytest.approx(325.72 / 482.71)  # 67.5% of the one-node B200 run
    one_node = curve_report(report, B200_ONE_NODE)
    assert one_node.efficiency is None and one_node.cross_node is None  # NVLink, not the NICs
    assert op_report(report, "all_gather").single_node == "1 node, 2 ranks"
    assert op_report(report, "all_reduce").single_node is None


def test_regimes_of_the_a100_run(report: PerfReport) -> None:
    # plateau 6.44: latency below 0.644 (8 B..1 MiB, 18 sizes), 5.74 at 2 MiB is under 5.796: transition
    spans = curve_report(report, A100).spans
    assert spans == {
        Regime.LATENCY: (8, 1 << 20, 18),
        Regime.TRANSITION: (2 << 20, 2 << 20, 1),
        Regime.SATURATED: (4 << 20, GIB, 9),
    }


def test_anomalies_of_recorded_runs(report: PerfReport) -> None:
    [a100_dip] = curve_report(report, A100).anomalies
    # 0.31 GB/s at 512 KiB and 1 MiB, 23% below 0.40 GB/s at 32 KiB (0.33 at 256 KiB is 17.5%: not)
    assert (a100_dip.kind, a100_dip.first, a100_dip.last) == (AnomalyKind.DIP, 512 << 10, 1 << 20)
    collapse = [a for a in curve_report(report, COLLAPSE).anomalies if a.kind is AnomalyKind.DIP]
    # 29.86 GB/s at 8 MiB, then 1.48 .. 16.77 up to 2 GiB (below 23.89); 29.17 at 4 GiB is back
    assert [(a.first, a.last) for a in collapse] == [(16 << 20, 2 * GIB)]
    assert "1.41 GB/s at worst, 95% below 29.86 GB/s at 8388608 B" in collapse[0].detail
    one_node = curve_report(report, B200_ONE_NODE).anomalies
    assert (one_node[-1].kind, one_node[-1].first, one_node[-1].last) == (
        AnomalyKind.INPLACE,
        2 * GIB,
        8 * GIB,
    )
    assert not curve_report(report, H100).anomalies


def test_findings_and_exit_code(report: PerfReport) -> None:
    statuses = {
        (s.name, f.check): f.status.value
        for s in report.run.subjects
        for f in s.findings
        if f.status.value != "pass"
    }
    assert statuses[(A100, "perf.dip")] == "fail"
    assert statuses[(B200_ONE_NODE, "perf.complete")] == "error"
    assert statuses[(H20_CUT, "perf.complete")] == "error"
    assert statuses[("notes.txt", "perf.input")] == "skip"
    assert (H100, "perf.dip") not in statuses
    assert exit_code(report.run) == EXIT_FAIL


def test_cli_json_markdown_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    code = main(["report", str(MIXED), "--json", "--markdown", str(md), "--html", str(page)])
    assert code == EXIT_FAIL
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "fail" and document["limit"] is None
    assert document["skipped"] == [{"file": "notes.txt", "reason": document["skipped"][0]["reason"]}]
    reduce = next(op for op in document["ops"] if op["op"] == "all_reduce")
    assert reduce["representative_bytes"] == GIB
    assert {c["file"]: c["busbw_gbytes"] for c in reduce["curves"]} == {A100: 6.44, H100: 448.90}
    text = md.read_text()
    assert "| 2 nodes, 16 ranks | 2 | 16 | 448.90 | 469.21 | not computed (no intent) |" in text
    assert "Regimes by fraction of the plateau: latency-bound below 10%" in text
    html = page.read_text()
    assert html.count("<svg") == 3 and "<script" not in html
    # nothing to fetch: the only URLs are the SVG namespace names
    assert "http" not in re.sub(r'xmlns(:xlink)?="http://www\.w3\.org/[^"]*"', "", html)


def test_cli_intent_gives_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    inventory = Path(__file__).parents[2] / "inventory" / "example"
    assert main(["report", str(MIXED), "-i", str(inventory)]) == EXIT_FAIL
    out = capsys.readouterr().out
    assert "Physical limit per node: 8 NICs x 400 Gb/s = 400.00 GB/s (from the intent)." in out
    assert "112.2%" in out  # 448.90 / 400


def test_cli_compare_two_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "b"
    other.mkdir()
    shutil.copy(MIXED / H100, other / "rerun.txt")
    main(["report", str(MIXED), "--compare", str(other), "--json"])
    comparison = json.loads(capsys.readouterr().out)["comparison"]
    [same] = comparison["curves"]
    assert same["series"] == "2 nodes, 16 ranks" and same["op"] == "all_reduce"
    # the same file on both sides: 0% everywhere, no percentage where B printed 0.00 GB/s (8 B..64 B)
    assert {d["diff_pct"] for d in same["sizes"] if d["b"] > 0} == {0.0}
    assert [d["bytes"] for d in same["sizes"] if d["diff_pct"] is None] == [8, 16, 32, 64]
    assert {w["winner"] for w in same["regime_wins"]} == {"tie"}
    assert "all_gather: 1 node, 2 ranks" in comparison["only_a"] and comparison["only_b"] == []


def test_cli_exit_codes_of_clean_truncated_and_unusable_runs(tmp_path: Path) -> None:
    clean, cut, empty = tmp_path / "clean", tmp_path / "cut", tmp_path / "empty"
    for d in (clean, cut, empty):
        d.mkdir()
    shutil.copy(MIXED / H100, clean / "x.txt")
    shutil.copy(MIXED / H100, cut / "x.txt")
    text = (MIXED / H100).read_text().splitlines()
    (cut / "x.txt").write_text(
        "\n".join(line for line in text if "Out of bounds" not in line and "Avg bus" not in line)
    )
    (empty / "notes.txt").write_text("nothing here\n")
    (empty / "core").write_bytes(b"\x7fELF\x00\x01" * 100)
    with pytest.raises(
        UsageError, match=r"no nccl-tests output in it \(core: binary data, not an nccl-tests"
    ):
        load_run_dir(empty)
    assert main(["report", str(clean)]) == EXIT_PASS
    assert main(["report", str(cut)]) == EXIT_NOT_CHECKED
    assert main(["report", str(empty)]) == EXIT_BAD_INPUT
    assert main(["report", str(tmp_path / "missing")]) == EXIT_BAD_INPUT
    assert main(["report", str(clean), "--html", str(tmp_path / "no" / "r.html")]) == EXIT_BAD_INPUT
