"""The output options `validate` and `analyze` share, and writing a run through the chosen reporters."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from fabcheck.errors import UsageError
from fabcheck.report import html, junit, markdown, text
from fabcheck.report.jsonl import json_lines
from fabcheck.report.model import Run, exit_code

# option destination -> (flag, reporter): each writes one file besides what stdout shows.
FILE_REPORTS: dict[str, tuple[str, Callable[[Run], str]]] = {
    "junit_xml": ("--junit-xml", junit.render),
    "markdown": ("--markdown", markdown.render),
    "html": ("--html", html.render),
}


def add_output_arguments(parser: argparse.ArgumentParser, json_help: str) -> None:
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument(
        "--group-by",
        choices=text.GROUP_BY,
        default="node",
        help="text report: findings grouped by node or by check, failures first (default: node)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="text report: also list passing checks")
    parser.add_argument(
        "--junit-xml", metavar="FILE", help="also write JUnit XML: a testsuite per node, a testcase per check"
    )
    parser.add_argument("--markdown", metavar="FILE", help="also write a Markdown report")
    parser.add_argument(
        "--html", metavar="FILE", help="also write a self-contained HTML report (affinity pictures, tables)"
    )


def check_report_paths(args: argparse.Namespace) -> None:
    """Refuse, before any work, a report file that could not be written (exit 2)."""
    for dest, (flag, _) in FILE_REPORTS.items():
        name = getattr(args, dest)
        if name is None:
            continue
        check_file_path(flag, name)


def emit(run: Run, args: argparse.Namespace) -> int:
    """Print the run (JSON lines or the text report), write the requested files; the exit code."""
    if args.json:
        for line in json_lines(run):
            print(line)
    else:
        print(text.render(run, group_by=args.group_by, verbose=args.verbose))
    for dest, (flag, reporter) in FILE_REPORTS.items():
        name = getattr(args, dest)
        if name is None:
            continue
        try:
            Path(name).write_text(reporter(run), encoding="utf-8")
        except OSError as err:
            raise UsageError(f"{flag} {name}: cannot write it: {err.strerror or err}") from None
    return exit_code(run)


def check_file_path(flag: str, name: str) -> None:
    """Refuse, before any work, a path no file could be written to (exit 2)."""
    path = Path(name)
    if name.strip() == "" or path.is_dir():
        raise UsageError(f"{flag} {name!r}: is a directory or empty; expected a file path to write")
    if not path.parent.is_dir():
        raise UsageError(f"{flag} {name}: no directory {path.parent}; expected a file in an existing one")


def write_atomically(flag: str, name: str, text: str) -> None:
    """Write the file whole or not at all: a temporary file in the same directory, then a rename over
    the old one, so a reader (node_exporter's textfile collector, a scrape) never sees half a file."""
    path = Path(name)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, 0o644)  # mkstemp makes it 0600: the collector runs as another user
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise UsageError(f"{flag} {name}: cannot write it: {err.strerror or err}") from None
