"""The bench loop with a stand-in launcher: what each point runs, what the summary records (raw output,
transport proof, versions), hypercube skipped off powers of two, failures retried, and a run killed
mid-way resumed without redoing the finished points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchfakes import FakeLauncher

from fabcheck.errors import UsageError
from fabcheck.intent.model import default_intent
from fabcheck.perf import render
from fabcheck.perf.bench import SUMMARY_NAME, BenchPlan, parse_size, run_bench, validate_plan
from fabcheck.perf.curves import load_run_dir
from fabcheck.perf.report import build_report
from fabcheck.report.model import EXIT_FAIL, EXIT_PASS, exit_code

HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")
ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}


def plan(
    ops: tuple[str, ...] = ("all_reduce", "all_gather"), nodes: tuple[int, ...] = (1, 2, 4)
) -> BenchPlan:
    return BenchPlan(
        ops, nodes, HOSTS, 8, 8 << 20, 64 << 20, ENV, "/opt/nccl-tests/build", {"hosts": list(HOSTS)}
    )


def test_each_point_runs_its_binary_on_the_first_n_hosts(tmp_path: Path) -> None:
    launcher = FakeLauncher()
    summary = run_bench(plan(), launcher, tmp_path, default_intent())
    got = [(r.program, r.hosts, r.ranks_per_host) for r in launcher.requests]
    assert got[:3] == [
        ("/opt/nccl-tests/build/all_reduce_perf", ("gpu01",), 8),
        ("/opt/nccl-tests/build/all_reduce_perf", ("gpu01", "gpu02"), 8),
        ("/opt/nccl-tests/build/all_reduce_perf", HOSTS, 8),
    ]
    assert launcher.requests[0].args == ("-b", "8388608", "-e", "67108864", "-f", "2", "-g", "1")
    assert dict(launcher.requests[0].env) == ENV
    record = summary["points"]["all_gather-4n"]
    assert (record["status"], record["ranks"], record["sizes"], record["largest_bytes"]) == (
        "done",
        32,
        4,
        64 << 20,
    )
    assert record["transport"]["network"] == "IB" and record["transport"]["gdr"] is True
    assert {f["check"]: f["status"] for f in record["transport"]["findings"]}["nccl.transport"] == "pass"
    assert json.loads((tmp_path / SUMMARY_NAME).read_text()) == summary
    # the run directory is a report input as it stands: 6 curves, the summary named and skipped
    data = load_run_dir(tmp_path)
    assert sorted((c.key.op, c.key.nodes) for c in data.curves) == [
        (op, nodes) for op in ("all_gather", "all_reduce") for nodes in (1, 2, 4)
    ]
    assert [s.source for s in data.skipped] == [SUMMARY_NAME]


def test_socket_transport_fails_the_proof(tmp_path: Path) -> None:
    summary = run_bench(plan(nodes=(2,)), FakeLauncher(network="Socket"), tmp_path, default_intent())
    findings = {f["check"]: f["status"] for f in summary["points"]["all_reduce-2n"]["transport"]["findings"]}
    assert findings["nccl.transport"] == "fail"


def test_hypercube_is_skipped_when_the_ranks_are_not_a_power_of_two(tmp_path: Path) -> None:
    three = BenchPlan(("hypercube",), (2, 3), HOSTS, 8, 8 << 20, 64 << 20, ENV)
    launcher = FakeLauncher()
    summary = run_bench(three, launcher, tmp_path, default_intent())
    assert [r.hosts for r in launcher.requests] == [("gpu01", "gpu02")]  # 16 ranks run
    skipped = summary["points"]["hypercube-3n"]
    assert skipped["status"] == "skipped"
    assert skipped["reason"] == "24 ranks (3 x 8) is not a power of two; hypercube needs one"


def test_a_failed_point_is_recorded_and_retried_on_resume(tmp_path: Path) -> None:
    first = run_bench(plan(nodes=(2,)), FakeLauncher(fail_ops={"all_gather"}), tmp_path, default_intent())
    failed = first["points"]["all_gather-2n"]
    assert failed["status"] == "failed" and failed["reason"] == "exit status 1: mpirun: orted died on gpu02"
    [unproven] = failed["transport"]["findings"]  # no NCCL line at all: an error, never a pass
    assert (unproven["check"], unproven["status"]) == ("nccl.transport", "error")
    again = FakeLauncher()
    second = run_bench(plan(nodes=(2,)), again, tmp_path, default_intent())
    assert [r.program.rsplit("/", 1)[-1] for r in again.requests] == ["all_gather_perf"]
    assert second["points"]["all_gather-2n"]["status"] == "done"
    assert second["points"]["all_reduce-2n"]["resumed"] is True


def test_a_killed_run_resumes_without_redoing_finished_points(tmp_path: Path) -> None:
    # A child process runs the loop and is SIGKILLed by its launcher at the 4th of 6 launches.
    script = (
        "import sys; from pathlib import Path; from benchfakes import FakeLauncher; "
        "from test_bench import plan; from fabcheck.intent.model import default_intent; "
        "from fabcheck.perf.bench import run_bench; "
        "run_bench(plan(), FakeLauncher(kill_at=4), Path(sys.argv[1]), default_intent())"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, timeout=120
    )
    assert done.returncode == -9, done.stderr.decode()[-1000:]
    before = json.loads((tmp_path / SUMMARY_NAME).read_text())["points"]
    assert sorted(before) == ["all_reduce-1n", "all_reduce-2n", "all_reduce-4n"]
    kept = {name: (tmp_path / "raw" / f"{name}.txt").stat().st_mtime_ns for name in before}
    launcher = FakeLauncher()
    summary = run_bench(plan(), launcher, tmp_path, default_intent())
    assert [(r.program.rsplit("/", 1)[-1], len(r.hosts)) for r in launcher.requests] == [
        ("all_gather_perf", 1), ("all_gather_perf", 2), ("all_gather_perf", 4),
    ]  # fmt: skip
    assert all(p["status"] == "done" for p in summary["points"].values()) and len(summary["points"]) == 6
    assert {name: (tmp_path / "raw" / f"{name}.txt").stat().st_mtime_ns for name in before} == kept


def test_a_changed_raw_output_is_run_again(tmp_path: Path) -> None:
    run_bench(plan(nodes=(1,)), FakeLauncher(), tmp_path, default_intent())
    (tmp_path / "raw" / "all_reduce-1n.txt").write_text("damaged\n")
    launcher = FakeLauncher()
    run_bench(plan(nodes=(1,)), launcher, tmp_path, default_intent())
    assert [r.program.rsplit("/", 1)[-1] for r in launcher.requests] == ["all_reduce_perf"]


def test_resume_with_another_sweep_is_refused(tmp_path: Path) -> None:
    run_bench(plan(nodes=(1,)), FakeLauncher(), tmp_path, default_intent())
    other = BenchPlan(("all_reduce",), (1,), HOSTS, 8, 1 << 20, 64 << 20, ENV)
    with pytest.raises(UsageError, match="resume with the same sizes"):
        run_bench(other, FakeLauncher(), tmp_path, default_intent())


def test_sizes_and_plan_checks() -> None:
    assert [parse_size(t) for t in ("8M", "8G", "512k", "1024")] == [8 << 20, 8 << 30, 512 << 10, 1024]
    for bad in ("", "0", "8T", "-1M", "8.5M"):
        with pytest.raises(ValueError, match="not a size"):
            parse_size(bad)
    with pytest.raises(UsageError, match="unknown all_reduec"):
        validate_plan(["all_reduec"], [2], HOSTS)
    with pytest.raises(UsageError, match="--nodes 8: the inventory has 4 GPU host"):
        validate_plan(["all_reduce"], [2, 8], HOSTS)


def test_the_report_of_a_bench_run_carries_its_transport_proof(tmp_path: Path) -> None:
    good, socket = tmp_path / "good", tmp_path / "socket"
    run_bench(plan(nodes=(2,)), FakeLauncher(), good, default_intent())
    run_bench(plan(nodes=(2,)), FakeLauncher(network="Socket"), socket, default_intent())
    report = build_report(load_run_dir(good))
    assert sorted(report.data.transport) == ["raw/all_gather-2n.txt", "raw/all_reduce-2n.txt"]
    text = render.text(report)
    assert "Transport (NCCL_DEBUG=INFO of each run)" in text and "mlx5_0, mlx5_1" in text
    assert exit_code(report.run) == EXIT_PASS
    bad = build_report(load_run_dir(socket))
    assert exit_code(bad.run) == EXIT_FAIL  # the socket fallback fails the report as it failed the bench
    assert "nccl.transport fail: network Socket (no RDMA)" in render.text(bad)


def test_an_unreadable_bench_summary_is_named(tmp_path: Path) -> None:
    run_bench(plan(nodes=(1,)), FakeLauncher(), tmp_path, default_intent())
    (tmp_path / SUMMARY_NAME).write_text("{not json")
    data = load_run_dir(tmp_path)
    assert data.transport == {}
    [summary] = data.skipped
    assert summary.reason.startswith("a fabcheck bench summary that cannot be read (JSONDecodeError")
