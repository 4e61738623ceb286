"""Text clean-up shared by the parsers (ANSI escapes, shell prompts, blank-line handling)."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """Remove ANSI/VT100 escape sequences (colour codes pasted from terminals)."""
    return _ANSI.sub("", text)


def parse_number(token: str) -> float | int:
    """Parse a numeric cell: int when it has no fraction, else float. Raises ValueError."""
    if re.fullmatch(r"[+-]?\d+", token):
        return int(token)
    return float(token)
