"""One command runs with fewer cyclic collections, and hands Python's thresholds back as they were."""

from __future__ import annotations

import argparse
import gc

import pytest

from fabcheck import cli


def test_a_command_runs_at_the_run_threshold_and_restores_the_callers() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    with cli.fewer_collections():
        seen.append(gc.get_threshold())
    assert seen == [cli.RUN_GC_THRESHOLD]
    assert gc.get_threshold() == before


def test_the_threshold_is_restored_when_the_command_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), cli.fewer_collections():
        raise RuntimeError("the command failed")
    assert gc.get_threshold() == before


def test_main_runs_the_command_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    during: list[tuple[int, int, int]] = []

    def command(_args: argparse.Namespace) -> int:
        during.append(gc.get_threshold())
        return 0

    class Parser:
        def parse_args(self, _argv: object) -> argparse.Namespace:
            return argparse.Namespace(func=command)

    monkeypatch.setattr(cli, "build_parser", Parser)
    assert cli.main(["any"]) == 0
    assert during == [cli.RUN_GC_THRESHOLD]
