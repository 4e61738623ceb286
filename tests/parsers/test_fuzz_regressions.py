"""Every input the fuzzer (bench/fuzz.py) ever crashed on stays here: each now gives a result or
ParseError, never another exception, and its result is strict JSON."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fabcheck.errors import ParseError

REPO = Path(__file__).resolve().parents[2]
REGRESSIONS = REPO / "tests" / "data" / "fuzz-regressions"


def _load_fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fabcheck_bench_fuzz", REPO / "bench" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzz()
SAMPLES = sorted(REGRESSIONS.glob("*/*.txt"))


def test_regression_samples_exist_for_known_targets() -> None:
    assert SAMPLES, "the fuzz regressions folder holds the crashers found so far"
    assert {path.parent.name for path in SAMPLES} <= set(fuzz.TARGETS)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_regression_sample_gives_a_result_or_parse_error(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    target = fuzz.TARGETS[path.parent.name]
    try:
        result = target.run(text, random.Random(0))
    except ParseError as error:
        assert error.message  # a real message, with the source and (mostly) the line
        return
    assert fuzz.strict_json_problem(result) is None
