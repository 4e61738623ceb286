"""Probes bound to releases (fabcheck.collect.probes): the session reads the release once, first, and
sends only the probes of that release; a release it cannot read sends none of them, with an error
naming the release read (which withholds no record)."""

from __future__ import annotations

import pytest

from fabcheck.collect.probes import Probe, ReleaseRead, collect
from fabcheck.errors import FabcheckError, ParseError
from fabcheck.parsers.switch_records import Placed

OLD = (5, 10)
NEW = (5, 15)


def parse_nothing(_text: str, _port: str | None, _source: str) -> list[Placed]:
    return []


def parse_release(text: str, source: str) -> tuple[int, int]:
    major, _, minor = text.strip().partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ParseError(f"no release in {text!r}", source=source)
    return int(major), int(minor)


ALWAYS = Probe("always", "switch", "show always", parse_nothing, ())
OLD_NAME = Probe("old", "switch-port", "show {port} old", parse_nothing, (), releases=(OLD, NEW))
NEW_NAME = Probe("new", "switch-port", "show {port} new", parse_nothing, (), releases=(NEW, None))
READ = ReleaseRead("release", "show release", parse_release)


@pytest.mark.parametrize(
    ("release", "sent"),
    [
        ("5.9", ["show always"]),
        ("5.10", ["show always", "show p1 old"]),
        ("5.14", ["show always", "show p1 old"]),
        ("5.15", ["show always", "show p1 new"]),
        ("6.0", ["show always", "show p1 new"]),
    ],
)
def test_only_the_probes_of_the_switchs_release_are_sent(release: str, sent: list[str]) -> None:
    asked: list[str] = []

    def run(command: str) -> str:
        asked.append(command)
        return release if command == "show release" else ""

    collected = collect(run, (ALWAYS, OLD_NAME, NEW_NAME), ["p1"], "s", release_read=READ)
    assert asked == ["show release", *sent] and collected.errors == []
    assert collected.outputs[0].probe == "release"  # kept, so a replay answers it again


def test_a_table_without_bound_probes_reads_no_release() -> None:
    asked: list[str] = []
    collect(lambda c: asked.append(c) or "", (ALWAYS,), ["p1"], "s", release_read=READ)
    assert asked == ["show always"]


@pytest.mark.parametrize("answer", ["refused", "garbled"])
def test_a_release_not_read_sends_no_bound_probe_and_says_why(answer: str) -> None:
    def run(command: str) -> str:
        if command == "show release":
            if answer == "refused":
                raise FabcheckError("Error: Invalid Command")
            return "no such view"
        return ""

    collected = collect(run, (ALWAYS, OLD_NAME, NEW_NAME), ["p1"], "s", release_read=READ)
    assert [output.command for output in collected.outputs if output.probe != "release"] == ["show always"]
    [error] = collected.errors
    assert error.probe == "release" and error.provides == () and "were not sent" in error.reason


def test_no_release_read_given_is_an_error_not_a_guess() -> None:
    collected = collect(lambda _c: "", (ALWAYS, NEW_NAME), ["p1"], "s")
    assert [output.command for output in collected.outputs] == ["show always"]
    [error] = collected.errors
    assert "no release read given" in error.reason
