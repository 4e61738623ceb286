"""Text clean-up shared by the parsers (ANSI escapes, the line-length cap)."""

from __future__ import annotations

import re

from fabcheck.errors import ParseError

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")

# No line of a real tool output comes near this (the longest corpus line is about 1 KiB); a longer
# one is damage or a binary file, and refusing it keeps every per-line step bounded.
MAX_LINE_CHARS = 64 * 1024


def strip_ansi(text: str) -> str:
    """Remove ANSI/VT100 escape sequences (colour codes pasted from terminals)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def check_line_lengths(lines: list[str], source: str, what: str) -> None:
    """Raise ParseError naming the first line longer than MAX_LINE_CHARS (``what``: the tool's name)."""
    if not lines or max(map(len, lines)) <= MAX_LINE_CHARS:
        return
    number = next(i for i, line in enumerate(lines, start=1) if len(line) > MAX_LINE_CHARS)
    raise ParseError(
        f"line is {len(lines[number - 1]):,} characters long; no {what} output line is longer than "
        f"{MAX_LINE_CHARS // 1024} KiB",
        source=source,
        line=number,
    )


def split_checked_lines(text: str, source: str, what: str) -> list[str]:
    """The text's lines (ANSI colours removed), after the line-length cap."""
    lines = strip_ansi(text).splitlines()
    check_line_lengths(lines, source, what)
    return lines
