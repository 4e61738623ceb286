"""A short, seeded run of bench/fuzz.py over every parser and analyzer, bounded by input count (not
time): every input gives a result or ParseError, and every result is strict JSON."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
INPUTS_PER_TARGET = 250  # 14 targets: 3,500 inputs, a few seconds on the CI-class machine
SEED = 7


def _load_fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fabcheck_bench_fuzz", REPO / "bench" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzz()


def test_every_parser_and_analyzer_is_a_target() -> None:
    assert set(fuzz.TARGETS) == {
        "analyze-topo", "analyze-nccl-log", "analyze-perftest", "analyze-nccl-tests",
        "topo", "nccl_log", "perftest", "nccl_tests",
        "mlnx_qos", "ibv_devinfo", "ibstat", "ibstatus", "show_gids", "rdma_link",
    }  # fmt: skip
    for target in fuzz.TARGETS:
        assert fuzz.seed_texts(target), f"{target} has corpus samples to mutate"


@pytest.mark.parametrize("target", sorted(fuzz.TARGETS))
def test_seeded_fuzz_run_finds_no_crash_and_no_invalid_json(target: str) -> None:
    stats = fuzz.run_batch(target, SEED, 0, INPUTS_PER_TARGET)
    assert stats.inputs == INPUTS_PER_TARGET
    details = "\n\n".join(p.detail for p in stats.problems[:3])
    assert stats.problems == [], details
    # The mutations must reach past the parsers' first checks, or the run proves nothing.
    assert 0 < stats.parse_errors < INPUTS_PER_TARGET


def test_inputs_are_reproducible_from_their_number() -> None:
    seeds = fuzz.seed_texts("perftest")
    first = fuzz.make_input("perftest", SEED, 123, seeds)[0]
    assert first == fuzz.make_input("perftest", SEED, 123, seeds)[0]
    assert first != fuzz.make_input("perftest", SEED, 124, seeds)[0]


def test_every_mutation_changes_some_sample() -> None:
    seeds = fuzz.seed_texts("analyze-nccl-tests")
    for name, mutate in fuzz.MUTATIONS.items():
        changed = sum(mutate(text, random.Random(index)) != text for index, text in enumerate(seeds))
        assert changed > 0, name


def test_the_checker_flags_crashes_and_non_strict_json() -> None:
    # The harness itself must be able to fail: a crashing target and a NaN result are findings.
    assert fuzz.strict_json_problem({"bw": float("nan")}) is not None
    assert fuzz.strict_json_problem({"n": 10**5000}) is not None
    assert fuzz.strict_json_problem({"rows": (1, 2.5, None)}) is None
    crashing = fuzz.Target(lambda text, rng: int("²"), ("perftest",))
    fuzz.TARGETS["test-crash"] = crashing
    try:
        kind, detail = fuzz.run_one("test-crash", "x", random.Random(0))
    finally:
        del fuzz.TARGETS["test-crash"]
    assert kind == "ValueError" and "invalid literal" in detail


def test_command_line_run_reports_figures(capsys: pytest.CaptureFixture[str]) -> None:
    status = fuzz.main(["--inputs", "40", "--seed", "3", "--parser", "ibstat", "--workers", "1", "--no-save"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.startswith("ibstat: 40 inputs in ") and "inputs/s" in out and "slowest" in out
    assert "0 other exceptions, 0 invalid JSON" in out
