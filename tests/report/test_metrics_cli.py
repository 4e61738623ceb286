"""`validate --metrics FILE`: a path no file can be written to is refused before any work (exit 2), and
the file is replaced whole or not at all (a temporary file in its directory, then a rename)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.errors import UsageError
from fabcheck.report import outputs
from fabcheck.report.outputs import write_atomically


@pytest.mark.parametrize("where", ["a-directory", "missing/fabcheck.prom", " "])
def test_a_metrics_path_that_cannot_be_written_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    (tmp_path / "a-directory").mkdir()
    monkeypatch.chdir(tmp_path)

    def no_inventory(_path: str) -> None:
        raise AssertionError("the inventory was read before the --metrics path was checked")

    monkeypatch.setattr("fabcheck.cli.validate.load_inventory", no_inventory)
    assert main(["validate", "-i", "nowhere", "--metrics", where]) == 2
    assert "--metrics" in capsys.readouterr().err


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "fabcheck.prom"
    write_atomically("--metrics", str(target), "old 1\n")
    assert target.read_text() == "old 1\n" and target.stat().st_mode & 0o777 == 0o644

    def refused(_src: str, _dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs.os, "replace", refused)
    with pytest.raises(UsageError, match="cannot write it: No space left on device"):
        write_atomically("--metrics", str(target), "new 2\n")
    assert target.read_text() == "old 1\n"
    assert sorted(os.listdir(tmp_path)) == ["fabcheck.prom"]
