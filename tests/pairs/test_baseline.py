"""The stored baseline: history per link, drift against the median, one clear error for a damaged
file, and an atomic replace that a SIGKILL in the middle of a record cannot break."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fabcheck.errors import UsageError
from fabcheck.pairs import baseline as stored
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.verdict import Measurement

A, B = Endpoint("gpu01", "mlx5_0"), Endpoint("gpu02", "mlx5_0")


def _m(gbps: float | None, server: Endpoint = A, client: Endpoint = B) -> Measurement:
    return Measurement(Pair(server, client), gbps, 1)


def test_record_keeps_a_bounded_history_per_link_whichever_end_served() -> None:
    base = None
    for i in range(stored.HISTORY_LIMIT + 5):
        base = stored.recorded(base, [_m(380.0 + i, *((A, B) if i % 2 else (B, A))), _m(None)], f"t{i}")
    assert base is not None
    (link,) = base.links
    assert link == "gpu01/mlx5_0<->gpu02/mlx5_0"
    assert (
        len(base.links[link]) == stored.HISTORY_LIMIT
        and base.links[link][-1].at == f"t{stored.HISTORY_LIMIT + 4}"
    )


def test_drift_is_against_the_median_so_one_odd_sample_does_not_move_it() -> None:
    base = stored.recorded(None, [_m(382.0)], "t0")
    for i, value in enumerate([381.0, 120.0, 383.0]):
        base = stored.recorded(base, [_m(value)], f"t{i + 1}")
    (ok,) = stored.drifts(base, [_m(370.0)])
    assert ok.reference == pytest.approx(381.5) and not ok.drifted
    (slow,) = stored.drifts(base, [_m(330.0)])
    assert slow.drifted and slow.drop == pytest.approx(1 - 330.0 / 381.5)
    assert stored.drifts(base, [_m(None), _m(380.0, A, Endpoint("gpu03", "mlx5_0"))]) == []


def test_round_trip_and_damaged_files_name_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / stored.FILE_NAME
    assert stored.load_baseline(path) is None
    base = stored.recorded(None, [_m(382.5)], "2026-12-02T03:00:00Z")
    stored.write_baseline(path, base)
    assert stored.load_baseline(path) == base
    assert json.loads(path.read_text())["format"] == stored.FORMAT
    for text, said in [
        ("{", "not JSON"),
        ('{"format": "other"}', "key 'format'"),
        (json.dumps({"format": stored.FORMAT, "links": {"x": [{"at": "t", "gbps": -1}]}}), r"links.x\[0\]"),
    ]:
        path.write_text(text)
        with pytest.raises(UsageError, match=said) as caught:
            stored.load_baseline(path)
        assert str(path) in str(caught.value)


KILLED_WRITER = """
import os, sys, time
from pathlib import Path
from fabcheck.pairs import baseline as stored
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.verdict import Measurement

def stall(fd):
    print("written", flush=True)  # the new text is in the temporary file, not yet renamed
    time.sleep(600)

os.fsync = stall
pairs = [Pair(Endpoint(f"h{i}", "mlx5_0"), Endpoint(f"h{i + 1}", "mlx5_0")) for i in range(2000)]
new = stored.recorded(None, [Measurement(p, 100.0, 1) for p in pairs], "new")
stored.write_baseline(Path(sys.argv[1]), new)
"""


def test_a_record_killed_midway_leaves_the_previous_baseline_intact(tmp_path: Path) -> None:
    path = tmp_path / stored.FILE_NAME
    previous = stored.recorded(None, [_m(382.5)], "old")
    stored.write_baseline(path, previous)
    before = path.read_bytes()
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
        (partial,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        assert partial.stat().st_size > len(before)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    assert stored.load_baseline(path) == previous
    # The next record replaces the file cleanly beside the stray temporary file.
    stored.write_baseline(path, stored.recorded(previous, [_m(381.0)], "next"))
    loaded = stored.load_baseline(path)
    assert loaded is not None and [s.at for s in loaded.links["gpu01/mlx5_0<->gpu02/mlx5_0"]] == [
        "old",
        "next",
    ]


def test_the_default_file_is_never_inside_an_inventory_folder(tmp_path: Path) -> None:
    folder = tmp_path / "inventory" / "prod"
    (folder / "group_vars").mkdir(parents=True)
    (folder / "hosts.yml").write_text("all: {}\n")
    # Ansible parses every file of a folder inventory: the baseline goes beside the folder.
    assert stored.default_path(folder) == tmp_path / "inventory" / "prod.perftest-baseline.json"
    assert stored.default_path(folder / "hosts.yml") == tmp_path / "inventory" / "prod.perftest-baseline.json"
    (tmp_path / "lone.yml").write_text("all: {}\n")
    assert stored.default_path(tmp_path / "lone.yml") == tmp_path / "lone.perftest-baseline.json"
