"""The first ten minutes: --help that a user can act on, --version, and what `intent check` says."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from fabcheck import __version__
from fabcheck.cli import main
from fabcheck.cli.analyze import KIND_EXPECTS

REPO = Path(__file__).resolve().parents[2]


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_is_for_users(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys)
    assert "Sub-commands register themselves" not in text and "maps errors" not in text
    assert "fabric intent" in text
    for code in ("0", "1", "2", "3"):
        assert re.search(rf"^  {code}  \S", text, re.MULTILINE), code
    assert "fabcheck intent check -i inventory/example" in text
    for command in ("intent", "analyze", "validate", "lab"):
        assert command in text


def test_version_matches_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fabcheck {__version__}"
    # The version is written once, in fabcheck/__init__.py: pyproject.toml reads it from there.
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'path = "fabcheck/__init__.py"' in pyproject
    assert not re.search(r"^version = ", pyproject, re.MULTILINE)
    assert importlib.metadata.version("fabcheck") == __version__


@pytest.mark.parametrize("argv", [("intent", "check"), ("intent", "show"), ("analyze",)])
def test_command_help_lists_exit_codes_and_an_example(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    text = help_of(capsys, *argv)
    assert "exit codes:" in text and re.search(r"^  2  \S", text, re.MULTILINE)
    assert re.search(rf"^  fabcheck {' '.join(argv)} ", text, re.MULTILINE), text


def test_analyze_help_says_which_tool_each_kind_reads(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "analyze")
    assert set(KIND_EXPECTS) == {"topo", "nccl-log", "perftest", "nccl-tests", "counters", "mlxfwmanager"}
    for kind, tool in KIND_EXPECTS.items():
        assert f"  {kind:<12} {tool}" in text
    for tool in (
        "nvidia-smi topo -m",
        "NCCL_DEBUG=INFO",
        "ib_write_bw",
        "all_reduce_perf",
        "mlxfwmanager --query",
    ):
        assert tool in text


def test_intent_show_help_says_vaulted_values_are_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    assert "<vaulted>" in help_of(capsys, "intent", "show")


def test_intent_check_of_infiniband_prints_subnet_manager_facts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["intent", "check", "-i", str(REPO / "inventory/example-ib")]) == 0
    out = capsys.readouterr().out
    assert "kind ib, link 400 Gb/s InfiniBand" in out
    assert "subnet manager: routing ftree, LMC 0, sweep 10 s, QoS off; priorities sm01=15, sm02=14" in out
    assert "partitions: Default 0x7fff (ALL=full, IPoIB)" in out
    assert "DSCP" not in out and "trust" not in out and "PFC" not in out
    assert "2 GPU host(s) (gpu_hosts); rails per host: ibgpu01=8, ibgpu02=8" in out
    assert "sm01=8" not in out and "0 switch(es), 4 IB switch(es), 2 subnet manager(s), 0 other" in out


def test_intent_check_counts_rails_of_gpu_hosts_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["intent", "check", "-i", str(REPO / "inventory/example")]) == 0
    out = capsys.readouterr().out
    assert "4 GPU host(s) (gpu_hosts); rails per host: gpu01=8, gpu02=8, gpu03=8, gpu04=8" in out
    assert "leaf01=" not in out and "2 switch(es)" in out
    assert "lossless DSCP [26] -> priority 3, PFC on; CNP DSCP 48 -> priority 6; RoCE ToS 106" in out


def test_the_lab_comes_from_its_own_distribution_through_the_commands_entry_point() -> None:
    (lab,) = [ep for ep in importlib.metadata.entry_points(group="fabcheck.commands") if ep.name == "lab"]
    assert lab.value == "fabcheck_lab.cli:register" and lab.dist is not None
    assert lab.dist.metadata["Name"] == "fabcheck-lab"


def test_without_the_lab_fabcheck_lab_says_how_to_install_it_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: ())
    assert main(["lab", "up", "--hosts", "2"]) == 2
    err = capsys.readouterr().err
    assert err == "fabcheck: fabcheck lab needs the lab, a distribution of its own (fabcheck-lab): pip " \
                  "install ./lab from fabcheck's repository, or run scripts/setup there\n"  # fmt: skip
    assert main(["intent", "check", "-i", str(REPO / "inventory" / "example")]) == 0


def test_a_command_that_cannot_load_says_why_and_hides_no_other(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = importlib.metadata.EntryPoint("lab", "fabcheck_lab_missing.cli:register", "fabcheck.commands")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: (broken,))
    assert main(["lab", "status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fabcheck: fabcheck lab could not load (fabcheck_lab_missing.cli:register): ")
    assert "No module named 'fabcheck_lab_missing'" in err
    assert "validate" in help_of(capsys)
