"""Benchmark `fabcheck report`: a run directory of 7 ops x 11 sizes x 5 node counts (35 synthetic
nccl-tests outputs, written by this script) reported as text, JSON, Markdown and HTML with its 7
matplotlib plots.

    .venv/bin/python bench/report.py [--repeat 5]

Figures are medians of --repeat runs in this process (imports already done), plus one cold
`fabcheck report --html` process (interpreter start and imports included). Ratios are against two
baselines measured the same way: parsing the 35 files alone, and the whole report of one op (5 files).
Goal: the whole report in under 2 s; exits 1 when the median misses it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fabcheck.perf import render
from fabcheck.perf.curves import load_run_dir
from fabcheck.perf.report import build_report
from fabcheck.perf.synthetic import SyntheticRun, doubling_sizes, render_output, saturating_busbw

OPS = ("all_reduce", "all_gather", "alltoall", "sendrecv", "hypercube", "reduce_scatter", "broadcast")
NODE_COUNTS = (1, 2, 4, 8, 16)
SIZES = doubling_sizes(8 << 20, 8 << 30)  # 8 MiB .. 8 GiB: 11 sizes
GPUS_PER_NODE = 8
GOAL_S = 2.0


def write_run(directory: Path, ops: tuple[str, ...]) -> None:
    for op in ops:
        for nodes in NODE_COUNTS:
            peak = 360.0 * (0.97 ** NODE_COUNTS.index(nodes))  # BusBW falls a little as nodes are added
            run = SyntheticRun(
                op,
                [f"gpu{n:02d}" for n in range(1, nodes + 1)],
                GPUS_PER_NODE,
                saturating_busbw(peak, 48 << 20, SIZES),
                in_place_factor=0.99,
            )
            (directory / f"{op}-{nodes}n.txt").write_text(render_output(run), encoding="utf-8")


def whole_report(directory: Path) -> None:
    report = build_report(load_run_dir(directory))
    for reporter in (render.text, render.json_document, render.markdown, render.html):
        reporter(report)


def median_s(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cold_cli_s(directory: Path, html: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "report", str(directory), "--html", str(html)],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench: fabcheck report exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the median is shown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        full, one_op = Path(tmp, "full"), Path(tmp, "one-op")
        full.mkdir()
        one_op.mkdir()
        write_run(full, OPS)
        write_run(one_op, OPS[:1])
        whole_report(full)  # warm: matplotlib's font cache and first-use imports
        parse = median_s(lambda: load_run_dir(full), args.repeat)
        single = median_s(lambda: whole_report(one_op), args.repeat)
        whole = median_s(lambda: whole_report(full), args.repeat)
        html_only = median_s(lambda: render.html(build_report(load_run_dir(full))), args.repeat)
        print_figures(parse, single, html_only, whole)
        cold = cold_cli_s(full, Path(tmp, "report.html"))
    print(f"  cold `fabcheck report --html` process {cold * 1e3:6.1f} ms (interpreter start and imports)")
    verdict = "meets" if whole < GOAL_S else "MISSES"
    print(f"goal: whole report < {GOAL_S:.1f} s: {verdict} ({whole:.2f} s)")
    return 0 if whole < GOAL_S else 1


def print_figures(parse: float, single: float, html_only: float, whole: float) -> None:
    files = len(OPS) * len(NODE_COUNTS)
    print(f"{len(OPS)} ops x {len(SIZES)} sizes x {len(NODE_COUNTS)} node counts = {files} outputs")
    print(f"  parse only ({files} files)          {parse * 1e3:8.1f} ms   1.00x")
    print(f"  one op, whole report (5 files)   {single * 1e3:8.1f} ms   {single / parse:5.2f}x parse")
    print(f"  HTML alone (load + plots + tables) {html_only * 1e3:6.1f} ms   {html_only / parse:5.2f}x parse")
    print(
        f"  whole report (text, JSON, MD, HTML) {whole * 1e3:5.1f} ms   {whole / parse:5.2f}x parse, "
        f"{whole / single:5.2f}x one op"
    )


if __name__ == "__main__":
    sys.exit(main())
