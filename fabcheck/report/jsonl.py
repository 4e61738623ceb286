"""JSON lines: one strict JSON object per subject, in run order (what `--json` prints).

Compatible with the lines of earlier versions: a host is `{host, verdict, findings}`; a file is
`{file, kind, <facts of its kind>, verdict, findings}`, and a file that could not be read adds
`parse_error: true, line, error` (its `findings` hold one `input.readable` error). Switches and subnet
managers are keyed `switch` and `sm`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fabcheck.report.model import Run, Subject


def subject_json(subject: Subject) -> dict[str, Any]:
    data: dict[str, Any] = {subject.kind.value: subject.name}
    if subject.label:
        data["kind"] = subject.label
    data.update(subject.facts)
    data["verdict"] = subject.verdict.value
    data["findings"] = [f.to_json() for f in subject.findings]
    return data


def json_lines(run: Run) -> Iterator[str]:
    """Never NaN or Infinity: a number that is not finite is refused (ValueError), not printed."""
    for subject in run.subjects:
        yield json.dumps(subject_json(subject), allow_nan=False)
