"""The recorded lab run (tests/data/report-lab/README.md) as the report model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fabcheck.checks.model import Finding, Status
from fabcheck.report.model import NodeKind, Run, Subject

FAULTS = Path(__file__).parents[1] / "data" / "report-lab" / "validate-faults.jsonl.gz"


def lab_run(path: Path = FAULTS) -> Run:
    subjects = []
    for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines():
        node = json.loads(line)
        kind = NodeKind.SWITCH if "switch" in node else NodeKind.HOST
        findings = tuple(
            Finding(f["check"], Status(f["status"]), f["subject"], f["expected"], f["actual"], f["hint"])
            for f in node["findings"]
        )
        subjects.append(Subject(node[kind.value], kind, findings))
    return Run("validate", tuple(subjects))
