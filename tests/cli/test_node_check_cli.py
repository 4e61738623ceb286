"""`fabcheck node-check` as a command, with its collection replaced by what a node that could not be
collected brings back (the collection itself: tests/lab/test_mock_node_check.py): exit 3, never a pass;
`--textfile` writes the metrics for node_exporter whole, `--slurm` leaves an unjudged node alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import TimeLimits
from fabcheck.gate import node_check

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "gate"))
from fake_scontrol import FakeScontrol  # noqa: E402


@dataclass
class Record:
    path: Path
    asked: list[tuple[str, int, TimeLimits]] = field(default_factory=list)


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Record:
    made = Record(tmp_path / "desired.json")
    argv = [
        "desired-record",
        "-i",
        str(REPO / "inventory" / "example"),
        "--host",
        "gpu02",
        "-o",
        str(made.path),
    ]
    assert main(argv) == 0

    def nothing_collected(host: str, priority: int, limits: TimeLimits) -> HostCollection:
        made.asked.append((host, priority, limits))
        return HostCollection(host, {}, False, "the collection on this node ended early (exit 2)", priority)

    monkeypatch.setattr(node_check, "_collect", nothing_collected)
    return made


def test_a_node_that_could_not_be_collected_is_exit_3_with_the_record_priority_and_bounds(
    record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["node-check", "--desired", str(record.path), "--json", "--timeout", "12"]) == 3
    document = json.loads(capsys.readouterr().out)
    assert document["host"] == "gpu02" and document["verdict"] == "error" and document["exit_code"] == 3
    assert [f["check"] for f in document["findings"]] == ["host.collection"]
    ((host, priority, limits),) = record.asked
    assert (host, priority, limits.command_s, limits.counter_window_s) == ("gpu02", 3, 12, 5)


def test_textfile_holds_the_status_for_node_exporter(
    record: Record, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "textfile"
    folder.mkdir()
    assert main(["node-check", "--desired", str(record.path), "--textfile", str(folder)]) == 3
    assert "gpu02: ERROR" in capsys.readouterr().out
    assert [p.name for p in folder.iterdir()] == ["fabcheck-node-check.prom"]  # no temporary file left
    text = (folder / "fabcheck-node-check.prom").read_text()
    assert 'fabcheck_check_status{node="gpu02",check="host.collection",part=""} -1' in text
    assert "fabcheck_run_status -1" in text
    promtool = shutil.which("promtool")
    if promtool is not None:  # Debian's prometheus package (scripts/setup): the exposition format's linter
        done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    assert main(["node-check", "--desired", str(record.path), "--textfile", str(tmp_path / "absent")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_slurm_leaves_a_node_it_could_not_judge_alone(
    record: Record, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeScontrol(tmp_path / "slurm", "gpu02", "IDLE+DRAIN", "fabcheck: host.pfc mlx5_0: PFC off")
    monkeypatch.setenv("PATH", f"{fake.path.parent}:/usr/bin:/bin")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu02")
    assert main(["node-check", "--desired", str(record.path), "--slurm"]) == 3
    assert "slurm: gpu02 could not be judged: its Slurm state is left as it is" in capsys.readouterr().out
    assert fake.updates() == [] and fake.node["state"] == "IDLE+DRAIN"
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol: the verdict, then a clear error
    assert main(["node-check", "--desired", str(record.path), "--slurm", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["slurm"]["error"].startswith("--slurm needs Slurm's scontrol")
    assert "--slurm needs Slurm's scontrol on this node's PATH" in err
