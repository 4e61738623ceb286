"""JUnit XML (`--junit-xml FILE`), in the shape CI systems render (Jenkins, GitLab, GitHub actions).

One <testsuite> per node (or input file), one <testcase> per finding named `check[subject]`, unique
within its suite (a repeat gets ` #2`). A failure is a <failure>, a check that could not run an
<error>, a check that does not apply <skipped>; their text holds expected, actual and hint. A node
with no finding at all gets one error testcase, so CI never shows an unjudged node as green.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from fabcheck.checks.model import Finding, Status
from fabcheck.report.model import Run, Subject
from fabcheck.report.textsafe import xml_text

NOTHING_CHECKED = "node.checked"
_ELEMENT = {Status.FAIL: "failure", Status.ERROR: "error"}


def render(run: Run) -> str:
    root = ET.Element("testsuites", _counts(run.subjects, f"fabcheck {run.command}"))
    root.set("time", _seconds(run.elapsed_s))
    for index, subject in enumerate(run.subjects):
        root.append(_suite(run, index, subject))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _findings(subject: Subject) -> tuple[Finding, ...]:
    if subject.findings:
        return subject.findings
    nothing = Finding(NOTHING_CHECKED, Status.ERROR, subject.name, "at least one check", "no check ran")
    return (nothing,)


def _counts(subjects: tuple[Subject, ...], name: str) -> dict[str, str]:
    findings = [f for s in subjects for f in _findings(s)]
    return {
        "name": xml_text(name),
        "tests": str(len(findings)),
        "failures": str(sum(f.status is Status.FAIL for f in findings)),
        "errors": str(sum(f.status is Status.ERROR for f in findings)),
        "skipped": str(sum(f.status is Status.SKIP for f in findings)),
    }


def _suite(run: Run, index: int, subject: Subject) -> ET.Element:
    suite = ET.Element("testsuite", _counts((subject,), subject.name))
    suite.attrib.update(
        {
            "time": "0",
            "timestamp": run.started_at or "1970-01-01T00:00:00",
            "hostname": xml_text(subject.name),
            "id": str(index),
            "package": f"fabcheck.{run.command}",
        }
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", {"name": "kind", "value": subject.kind.value})
    if subject.label:
        ET.SubElement(properties, "property", {"name": "label", "value": xml_text(subject.label)})
    seen: Counter[str] = Counter()
    for finding in _findings(subject):
        name = f"{finding.check}[{finding.subject}]"
        seen[name] += 1
        unique = name if seen[name] == 1 else f"{name} #{seen[name]}"
        suite.append(_case(subject.name, unique, finding))
    return suite


def _case(classname: str, name: str, finding: Finding) -> ET.Element:
    case = ET.Element("testcase", {"name": xml_text(name), "classname": xml_text(classname), "time": "0"})
    if finding.status is Status.SKIP:
        ET.SubElement(case, "skipped", {"message": xml_text(finding.actual)})
    elif finding.status in _ELEMENT:
        message = f"expected {finding.expected}; actual {finding.actual}"
        outcome = ET.SubElement(
            case, _ELEMENT[finding.status], {"message": xml_text(message), "type": xml_text(finding.check)}
        )
        lines = [f"expected: {finding.expected}", f"actual:   {finding.actual}"]
        if finding.hint:
            lines.append(f"hint:     {finding.hint}")
        outcome.text = xml_text("\n".join(lines))
    return case


def _seconds(value: float) -> str:
    return f"{value:.3f}"
