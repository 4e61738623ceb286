"""`fabcheck baseline show`: the history table of a committed file; a missing or damaged file is a
usage error (exit 2) naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.cli.baseline import diff_table
from fabcheck.pairs import baseline as stored
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.verdict import Measurement

PAIR = Pair(Endpoint("gpu01", "mlx5_0"), Endpoint("gpu02", "mlx5_0"))


def test_show_prints_each_link_with_median_and_latest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.json"
    base = None
    for at, gbps in [("t1", 380.0), ("t2", 384.0), ("t3", 300.0)]:
        base = stored.recorded(base, [Measurement(PAIR, gbps, 1)], at)
    assert base is not None
    stored.write_baseline(path, base)
    assert main(["baseline", "show", "--file", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["link", "samples", "median", "Gb/s", "latest", "Gb/s", "latest", "at"]
    assert lines[1].split() == ["gpu01/mlx5_0<->gpu02/mlx5_0", "3", "380.00", "300.00", "t3"]


def test_show_without_a_file_or_with_a_damaged_one_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["baseline", "show", "--file", str(tmp_path / "none.json")]) == 2
    assert "none.json: no baseline yet" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[]")
    assert main(["baseline", "show", "--file", str(tmp_path / "bad.json")]) == 2
    assert "bad.json: key 'format'" in capsys.readouterr().err
    assert main(["baseline", "show"]) == 2
    assert "give -i INVENTORY or --file BASELINE" in capsys.readouterr().err


def test_diff_table_marks_drift() -> None:
    drifted = stored.Drift("a<->b", 300.0, 380.0, 4)
    steady = stored.Drift("c<->d", 379.0, 380.0, 4)
    lines = diff_table([steady, drifted]).splitlines()
    assert lines[1].split() == ["a<->b", "300.00", "380.00", "-21.1%", "DRIFT"]
    assert lines[2].split() == ["c<->d", "379.00", "380.00", "-0.3%", "ok"]
