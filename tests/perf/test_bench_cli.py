"""`fabcheck bench nccl` end to end with the stand-in launcher in place of mpirun: progress, the run
directory, the exit code, resume, and the usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchfakes import FakeLauncher

from fabcheck.cli import bench as bench_cli
from fabcheck.cli import main
from fabcheck.perf.bench import SUMMARY_NAME
from fabcheck.report.model import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_NOT_CHECKED, EXIT_PASS

INVENTORY = str(Path(__file__).parents[2] / "inventory" / "example")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeLauncher:
    launcher = FakeLauncher()
    monkeypatch.setattr(bench_cli, "InventoryLauncher", lambda config, entries: launcher)
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    monkeypatch.setenv("NCCL_ALGO", "Ring")  # the user's NCCL_* reach every rank
    return launcher


def bench(out: Path, *extra: str) -> int:
    return main(["bench", "nccl", "-i", INVENTORY, "--min", "8M", "--max", "64M", "--out", str(out), *extra])


def test_bench_runs_skips_reports_progress_and_resumes(
    fake: FakeLauncher, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = bench(out, "--ops", "all_reduce,hypercube", "--nodes", "1,2", "--ranks-per-node", "3")
    assert code == EXIT_PASS
    err = capsys.readouterr().err.splitlines()
    assert err[1].startswith("[1/4] all_reduce on 1 node(s): done: ") and "network IB, GDR on" in err[1]
    assert (
        err[3]
        == "[3/4] hypercube on 1 node(s): skipped: 3 ranks (1 x 3) is not a power of two; hypercube needs one"
    )
    assert [len(r.hosts) for r in fake.requests] == [1, 2]
    env = dict(fake.requests[0].env)
    assert (env["NCCL_DEBUG"], env["NCCL_DEBUG_SUBSYS"], env["NCCL_ALGO"]) == ("INFO", "INIT,NET", "Ring")
    assert env["NCCL_IB_GID_INDEX"] == "3"  # the example intent's RoCE GID index
    summary = json.loads((out / SUMMARY_NAME).read_text())
    assert summary["hosts"] == ["gpu01", "gpu02", "gpu03", "gpu04"] and summary["intent"]["kind"] == "roce"
    assert summary["points"]["all_reduce-2n"]["hosts"] == ["gpu01", "gpu02"]
    assert summary["versions"]["launcher"] == "mpirun (mpirun)"
    assert sorted(p.name for p in (out / "raw").iterdir()) == ["all_reduce-1n.txt", "all_reduce-2n.txt"]
    fake.requests.clear()
    assert bench(out, "--ops", "all_reduce,hypercube", "--nodes", "1,2", "--ranks-per-node", "3") == EXIT_PASS
    assert fake.requests == []
    assert "all_reduce on 2 node(s): resumed:" in capsys.readouterr().err
    assert main(["report", str(out)]) == EXIT_PASS


def test_a_failed_point_fails_the_run(fake: FakeLauncher, tmp_path: Path) -> None:
    fake.fail_ops = {"alltoall"}
    assert bench(tmp_path / "run", "--ops", "all_reduce,alltoall", "--nodes", "2") == EXIT_FAIL


def test_a_socket_fallback_fails_the_run(fake: FakeLauncher, tmp_path: Path) -> None:
    fake.network = "Socket"
    assert bench(tmp_path / "run", "--ops", "all_reduce", "--nodes", "2") == EXIT_FAIL


def test_nothing_but_skips_is_not_a_pass(fake: FakeLauncher, tmp_path: Path) -> None:
    code = bench(tmp_path / "run", "--ops", "hypercube", "--nodes", "1", "--ranks-per-node", "3")
    assert code == EXIT_NOT_CHECKED and fake.requests == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--nodes", "2,8"), "--nodes 8: the inventory has 4 GPU host(s) (gpu01, gpu02, gpu03, gpu04)"),
        (("--min", "1G", "--max", "8M"), "is above --max"),
    ],
)
def test_usage_errors(
    fake: FakeLauncher,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    message: str,
) -> None:
    argv = ["bench", "nccl", "-i", INVENTORY, "--out", str(tmp_path / "run"), *extra]
    assert main(argv) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err
    assert fake.requests == []


@pytest.mark.parametrize("option", [("--ops", "all_reduec"), ("--min", "8T"), ("--nodes", "0,2")])
def test_bad_option_values_are_usage_errors(option: tuple[str, str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["bench", "nccl", "-i", INVENTORY, *option])
    assert stop.value.code == EXIT_BAD_INPUT
