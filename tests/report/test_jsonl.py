"""`--json` lines stay what earlier versions printed: HostResult.to_json, Analysis.to_json as strict JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabcheck.analyze import analyze
from fabcheck.checks.model import Status, errored, passed
from fabcheck.cli.analyze import analysis_subject, analyze_run, unreadable_subject
from fabcheck.gate.fabric import GateResult, gate_report
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.stages import StageOutcome
from fabcheck.intent.model import default_intent
from fabcheck.report.jsonl import json_lines
from fabcheck.report.model import NodeKind, Run, Subject

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "outputs"


def test_host_lines_equal_the_host_result_json() -> None:
    results = [
        HostResult("gpu01", (passed("host.pfc", "mlx5_0", "3", "3"),)),
        HostResult("gpu02", (errored("host.collection", "gpu02", "ssh", "refused", "check ssh"),)),
    ]
    lines = list(json_lines(gate_report(GateResult((StageOutcome("host", tuple(results)),)))))
    assert [json.loads(line) for line in lines] == [r.to_json() for r in results]


def test_file_lines_equal_the_analysis_json_text() -> None:
    analysis = analyze("topo", [(EXAMPLES / "topo-dgxa100.txt").read_text()], "t.txt", default_intent())
    [line] = json_lines(analyze_run([analysis_subject(analysis)]))
    assert line == json.dumps(analysis.to_json(), allow_nan=False)  # strict JSON: never NaN


def test_unreadable_file_line_keeps_the_parse_error_fields() -> None:
    subject = unreadable_subject("x.txt", "perftest", "perftest output", "no perftest header", 3)
    [line] = json_lines(analyze_run([subject]))
    data = json.loads(line)
    assert {k: data[k] for k in ("file", "kind", "verdict", "parse_error", "line", "error")} == {
        "file": "x.txt",
        "kind": "perftest",
        "verdict": "error",
        "parse_error": True,
        "line": 3,
        "error": "no perftest header",
    }
    assert [f["check"] for f in data["findings"]] == ["input.readable"]


def test_switches_are_keyed_by_their_kind_and_numbers_stay_strict() -> None:
    switch = Subject("leaf01", NodeKind.SWITCH, (passed("switch.mtu", "swp1", "9216", "9216"),))
    assert json.loads(next(json_lines(Run("validate", (switch,))))) == {
        "switch": "leaf01",
        "verdict": Status.PASS.value,
        "findings": [switch.findings[0].to_json()],
    }
    nan = Subject("f", NodeKind.FILE, (), label="perftest", facts={"bw": float("nan")})
    with pytest.raises(ValueError):
        list(json_lines(Run("analyze", (nan,))))
