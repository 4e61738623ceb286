"""`fabcheck bench nccl` in the lab through the real launcher (Open MPI mpirun over the lab's ssh, the
mock nccl-tests on 2 hosts): a run killed after its first point resumes without redoing it, hypercube
is skipped off powers of two, the summary holds the transport proof, and `fabcheck report` reads the
run directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import siblings  # noqa: F401  (puts tests/report and tests/lab on sys.path)
from labsupport import REPO, requires_lab, running_lab

from fabcheck.perf.bench import SUMMARY_NAME
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

# 3 ranks per host: 3 and 6 ranks, so hypercube is skipped at both node counts without a launch
ARGS = ("--ops", "all_reduce,alltoall,hypercube", "--nodes", "1,2", "--ranks-per-node", "3")
SIZES = ("--min", "1M", "--max", "4M")
POINT_TIMEOUT_S = 300  # generous: the machine is shared; nothing asserts on speed


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        yield paths


def bench_argv(paths: LabPaths, out: Path) -> list[str]:
    inventory = str(paths.inventory.parent)
    return [
        sys.executable,
        "-m",
        "fabcheck.cli",
        "bench",
        "nccl",
        "-i",
        inventory,
        *ARGS,
        *SIZES,
        "--out",
        str(out),
    ]


def points(out: Path) -> dict:
    summary = out / SUMMARY_NAME
    return json.loads(summary.read_text())["points"] if summary.exists() else {}


def test_killed_run_resumes_and_reports(lab: LabPaths, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = subprocess.Popen(
        bench_argv(lab, out), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + POINT_TIMEOUT_S
    while "all_reduce-1n" not in points(out) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the launcher and whatever it started go with it
    first.wait()
    done_before = {name for name, p in points(out).items() if p["status"] == "done"}
    assert "all_reduce-1n" in done_before, first.stderr.read().decode()[-2000:] if first.stderr else ""
    assert len(done_before) < 4  # killed before the run ended
    kept = (out / "raw" / "all_reduce-1n.txt").stat().st_mtime_ns

    again = subprocess.run(
        bench_argv(lab, out), cwd=REPO, capture_output=True, text=True, timeout=4 * POINT_TIMEOUT_S
    )
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert "all_reduce on 1 node(s): resumed:" in again.stderr
    assert (out / "raw" / "all_reduce-1n.txt").stat().st_mtime_ns == kept
    final = points(out)
    for name, ranks in (("all_reduce-1n", 3), ("all_reduce-2n", 6), ("alltoall-1n", 3), ("alltoall-2n", 6)):
        record = final[name]
        assert record["status"] == "done", record
        assert (record["ranks"], record["sizes"]) == (ranks, 3)
        assert (4 << 20) - 64 <= record["largest_bytes"] <= 4 << 20  # rounded to whole elements per rank
        assert record["transport"]["network"], record["transport"]  # NCCL_DEBUG=INFO reached the ranks
        assert record["argv"][0].endswith("mpirun")
    assert final["hypercube-2n"]["reason"] == "6 ranks (2 x 3) is not a power of two; hypercube needs one"

    report = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "report", str(out), "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    document = json.loads(report.stdout)
    assert sorted(op["op"] for op in document["ops"]) == ["all_reduce", "alltoall"]
    assert {(c["nodes"], c["ranks"]) for op in document["ops"] for c in op["curves"]} == {(1, 3), (2, 6)}
    # 3 and 6 ranks round 4 MiB differently; the report files both under the asked size
    assert {op["representative_bytes"] for op in document["ops"]} == {4 << 20}
    assert [s["file"] for s in document["skipped"]] == [SUMMARY_NAME]
