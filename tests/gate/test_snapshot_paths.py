"""Snapshot files are named by the node's encoded name: whatever an inventory calls a node (`../../x`,
`/abs`, `..`, a NUL, 300 characters), `--save-snapshot DIR` writes only inside DIR, `--from-snapshot
DIR` reads only inside it, a symlink planted there is neither written through nor read, and deeply
nested JSON is one error naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.errors import UsageError
from fabcheck.gate import host_stage, snapshot
from fabcheck.gate.switch_stage import switch_checked
from fabcheck.intent.model import FabricIntent

INTENT = FabricIntent.model_validate({})
HOSTILE = [
    "../../../../tmp/x",
    "../escape",
    "/nonexistent-fabcheck-dir/abs",  # the old naming would have written there
    ".",
    "..",
    ".hidden",
    "a/b",
    "nul\x00byte",
    "gpü01",
    "%2E%2E",
    "x" * 300,
    "x" * 299 + "y",
]


def collection(name: str) -> HostCollection:
    return HostCollection(name, {"rdma_link": Section(0, "link mlx5_0/1 state ACTIVE\n")}, True)


def files_under(root: Path) -> set[Path]:
    return {Path(dirpath) / name for dirpath, _dirs, names in os.walk(root) for name in names}


def save(directory: Path, names: list[str], switches: list[str] = ()) -> None:  # type: ignore[assignment]
    """A run's reads as the reader keeps them: each host's round trip, each switch unreachable."""
    recording = snapshot.Recording()
    for name in names:
        recording.keep("host", name, host_stage.host_record(collection(name)))
    for name in switches:
        unreachable = {"switch": name, "platform": "nvue", "unreachable": f"switch {name}: refused"}
        recording.keep("switch", name, {**unreachable, "outputs": [], "failed": []})
    recording.save(directory)


def replayed_host(directory: Path, name: str) -> object:
    return snapshot.replay(directory).replayed("host", name, lambda data: host_stage.host_restore(data, name))


def test_hostile_node_names_stay_inside_the_snapshot_and_replay(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b" / "c" / "d" / "snap"
    directory.mkdir(parents=True)
    save(directory, HOSTILE, ["../../../../tmp/sw", "..", "sw/../../up"])
    written = files_under(tmp_path)
    assert written and all(directory in path.parents for path in written), sorted(written)
    assert len(files_under(directory / "host")) == len(HOSTILE)  # one file each, none shared
    assert len(files_under(directory / "switch")) == 3
    assert {name: replayed_host(directory, name) for name in HOSTILE} == {n: collection(n) for n in HOSTILE}
    tape = snapshot.replay(directory)
    for name in ("../../../../tmp/sw", "..", "sw/../../up"):
        switch = tape.replayed("switch", name, lambda data, name=name: switch_checked(data, name))
        assert isinstance(switch, dict) and switch["unreachable"] == f"switch {name}: refused"


def test_plain_names_keep_their_file_names() -> None:
    # Snapshots saved before names were encoded still load: ordinary names are unchanged.
    for name in ("gpu01", "leaf-01.example.com", "sm_02"):
        assert snapshot.node_file_name(name) == f"{name}.json"
    assert snapshot.node_file_name("../x") == "%2E.%2Fx.json"
    assert snapshot.node_file_name("..") == "%2E..json"


def test_a_replay_never_reads_the_file_a_name_points_at_outside(tmp_path: Path) -> None:
    directory = tmp_path / "d1" / "d2" / "snap"
    directory.mkdir(parents=True)
    save(directory, ["gpu01"])
    # Where `hosts / f"{name}.json"` led for this name: a valid record planted outside DIR.
    outside = tmp_path / "planted.json"
    outside.write_text((directory / "host" / "gpu01.json").read_text().replace("gpu01", "../../../planted"))
    with pytest.raises(UsageError, match=r"host/%2E\.%2F\.\.%2F\.\.%2Fplanted\.json is missing"):
        replayed_host(directory, "../../../planted")


def test_a_symlink_in_the_snapshot_is_neither_written_through_nor_read(tmp_path: Path) -> None:
    directory = tmp_path / "snap"
    save(directory, ["gpu01"])
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = directory / "host" / "gpu01.json"
    link.unlink()
    link.symlink_to(victim)
    with pytest.raises(UsageError, match=r"gpu01\.json: cannot read: a symlink"):
        replayed_host(directory, "gpu01")
    with pytest.raises(UsageError, match=r"--save-snapshot .*cannot write"):
        save(directory, ["gpu01"])
    assert victim.read_text() == "keep me\n"


def test_deeply_nested_json_is_one_error_naming_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "snap"
    save(directory, ["gpu01"])
    (directory / "host" / "gpu01.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(UsageError, match=r"host/gpu01\.json: JSON nested too deep to read; expected"):
        replayed_host(directory, "gpu01")


def test_a_fifo_in_the_snapshot_is_refused_without_waiting(tmp_path: Path) -> None:
    directory = tmp_path / "snap"
    save(directory, ["gpu01"])
    (directory / "host" / "gpu01.json").unlink()
    os.mkfifo(directory / "host" / "gpu01.json")
    with pytest.raises(UsageError, match=r"gpu01\.json: cannot read: not a regular file"):
        replayed_host(directory, "gpu01")
