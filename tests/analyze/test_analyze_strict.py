"""`fabcheck analyze`: non-finite numbers are unreadable evidence (never a pass), --json is strict JSON,
and an unreadable file is named once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import corpus_samples

from fabcheck import analyze as analyze_module
from fabcheck.analyze import Analysis, analyze
from fabcheck.checks.model import passed
from fabcheck.errors import ParseError
from fabcheck.intent.model import default_intent

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "outputs"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "analyze", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def strict_loads(line: str) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(line, parse_constant=refuse)


@pytest.fixture
def damaged(tmp_path: Path) -> dict[str, Path]:
    bw = (EXAMPLES / "ib_write_bw-roce-400g.txt").read_text()
    busbw = (EXAMPLES / "all_reduce-2node-h100.txt").read_text()
    files = {
        "perftest-nan": bw.replace(" 368.48 ", " nan "),
        "perftest-inf": bw.replace(" 368.48 ", " inf "),
        "nccl-tests-nan": busbw.replace("249.96  468.67", "249.96  nan"),
        "nccl-tests-inf": busbw.replace("249.96  468.67", "249.96  inf"),
    }
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text(text)
    return paths


@pytest.mark.parametrize("name", ["perftest-nan", "perftest-inf", "nccl-tests-nan", "nccl-tests-inf"])
def test_non_finite_bandwidth_is_an_unreadable_input(damaged: dict[str, Path], name: str) -> None:
    kind = name.rsplit("-", 1)[0]
    result = run_cli(kind, str(damaged[name]), "--json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report = strict_loads(result.stdout)
    assert (report["verdict"], report["parse_error"]) == ("error", True)
    assert "is not a finite number" in report["error"]
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout


def test_unreadable_file_is_named_once(damaged: dict[str, Path]) -> None:
    path = str(damaged["perftest-nan"])
    result = run_cli("perftest", path, "--json")
    assert result.stderr.count(path) == 1, result.stderr
    report = strict_loads(result.stdout)
    assert path not in report["error"] and report["line"] == 22


def test_nccl_tests_output_given_as_perftest_is_refused() -> None:
    result = run_cli("perftest", str(EXAMPLES / "all_reduce-2node-h100.txt"), "--json")
    assert result.returncode == 2
    assert "no perftest header, result table or failure line" in strict_loads(result.stdout)["error"]


def test_every_corpus_result_is_strict_json() -> None:
    for kind in ("topo", "nccl-log", "perftest", "nccl-tests"):
        paths = [str(p) for p in corpus_samples(kind)]
        result = run_cli(kind, *paths, "--json")
        lines = result.stdout.splitlines()
        assert len(lines) == len(paths)
        for line in lines:
            strict_loads(line)


def test_analyze_refuses_a_result_holding_a_non_finite_number(monkeypatch: pytest.MonkeyPatch) -> None:
    # Defence in depth: even if a parser let a nan through, analyze() reports unreadable input.
    def leaky(lines: object, source: str, intent: object, options: object) -> Analysis:
        finding = passed("x.y", "s", "e", "a")
        return Analysis(
            source, "perftest", {"table": [{"bw_avg": 1.0}, {"bw_avg": float("nan")}]}, (finding,)
        )

    monkeypatch.setitem(analyze_module.ANALYZERS, "perftest", leaky)
    with pytest.raises(ParseError, match=r"perftest\.table\[1\]\.bw_avg is not a finite number"):
        analyze("perftest", [""], "f.txt", default_intent())


def test_the_json_record_is_strict() -> None:
    result = analyze(
        "perftest", [(EXAMPLES / "ib_write_bw-roce-400g.txt").read_text()], "x", default_intent()
    )
    assert strict_loads(json.dumps(result.to_json(), allow_nan=False)) == result.to_json()
