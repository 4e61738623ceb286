"""The one exit-code policy and the ordering every reporter shares."""

from __future__ import annotations

import pytest

from fabcheck.checks.model import Status, errored, failed, passed, skipped
from fabcheck.cli.analyze import unreadable_subject
from fabcheck.report.model import (
    EXIT_CODES_HELP,
    NodeKind,
    Run,
    Subject,
    by_severity,
    exit_code,
    subjects_by_severity,
)

PASS = passed("c.a", "x", "1", "1")
FAIL = failed("c.b", "x", "1", "2", "fix it")
ERROR = errored("c.c", "x", "1", "?", "look")
SKIP = skipped("c.d", "x", "not applicable")


def host(name: str, *findings) -> Subject:  # type: ignore[no-untyped-def]
    return Subject(name, NodeKind.HOST, tuple(findings))


BAD_FILE = unreadable_subject("core", "topo", "the output of `nvidia-smi topo -m`", "binary data", None)


@pytest.mark.parametrize(
    ("subjects", "code"),
    [
        ((host("a", PASS), host("b", PASS, SKIP)), 0),
        ((host("a", PASS), host("b", PASS, FAIL)), 1),
        ((host("a", ERROR), host("b", FAIL)), 1),  # a definite failure outranks "could not tell"
        ((host("a", PASS), host("b", ERROR)), 3),
        ((host("a", SKIP),), 3),  # only skips: nothing was checked, never a pass
        ((host("a"),), 3),  # no finding at all
        ((), 3),  # an empty run
        ((host("a", PASS), BAD_FILE), 2),
        ((host("a", FAIL), BAD_FILE), 2),  # unreadable input outranks a failure: not all was judged
    ],
)
def test_exit_code_policy(subjects: tuple[Subject, ...], code: int) -> None:
    assert exit_code(Run("analyze", subjects)) == code


def test_help_text_lists_every_code_once() -> None:
    lines = [line for line in EXIT_CODES_HELP.splitlines() if line[:3] in ("  0", "  1", "  2", "  3")]
    assert [line.split()[0] for line in lines] == ["0", "1", "2", "3"]


def test_failures_first_then_errors_skips_passes_keeping_order_within_each() -> None:
    items = [PASS, SKIP, FAIL, ERROR, failed("c.e", "y", "1", "3", "h")]
    assert [f.check for f in by_severity(items, lambda f: f.status)] == ["c.b", "c.e", "c.c", "c.d", "c.a"]
    subjects = [host("ok", PASS), host("down", ERROR), host("bad", FAIL), host("bad2", PASS, FAIL)]
    assert [s.name for s in subjects_by_severity(subjects)] == ["bad", "bad2", "down", "ok"]


def test_run_counts_and_noun() -> None:
    run = Run("validate", (host("a", PASS, FAIL), host("b", ERROR, SKIP)))
    assert run.verdict is Status.FAIL
    assert [run.count(s) for s in (Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP)] == [1, 1, 1, 1]
    assert run.noun == "host(s)"
    assert Run("analyze", (BAD_FILE,)).noun == "file(s)"
    assert Run("validate", (host("a"), Subject("leaf1", NodeKind.SWITCH, ()))).noun == "node(s)"


def test_unreadable_input_is_an_error_finding_with_the_line() -> None:
    subject = unreadable_subject("t.txt", "topo", "the output of `nvidia-smi topo -m`", "no header", 7)
    [finding] = subject.findings
    assert subject.input_error and subject.verdict is Status.ERROR
    assert (finding.check, finding.subject, finding.actual) == ("input.readable", "t.txt:7", "no header")
    assert dict(subject.facts) == {"parse_error": True, "line": 7, "error": "no header"}
