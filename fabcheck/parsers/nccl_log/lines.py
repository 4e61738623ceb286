"""How the NCCL log parser reads text: lines cleaned of colours and pasted markers, fed text cut into
blocks of whole lines, and the bounded caches that skip lines seen before."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator
from typing import TypeVar

from fabcheck.parsers._text import strip_ansi

BLOCK_CHARS = 1 << 20
MAX_LINE_CHARS = 1 << 20
CACHE_LIMIT = 50_000  # entries per "seen before" cache; it is emptied when full
_MAX_CACHED_KEY = 512  # longer lines are handled every time instead of being remembered
_Key = TypeVar("_Key", bound=Hashable)
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]")
_CITE = re.compile(r"\[cite_start\]| ?\[cite:[\d, ]*\]")


def clean_line(line: str) -> str:
    """A log line as the parsers read it: no line end, terminal colours or citation markers."""
    text = line.rstrip()
    if "\x1b" in text:
        text = strip_ansi(text)
    if "[cite" in text:
        text = _CITE.sub("", text)
    if "[repeated " in text:
        text = _RAY_REPEATED.sub("", text)
    return text


def first_sighting(seen: set[_Key], key: _Key, size: int) -> bool:
    """Add ``key`` (``size`` characters) to the bounded cache ``seen``; True when it was not there."""
    if size > _MAX_CACHED_KEY:
        return True
    if key in seen:
        return False
    if len(seen) >= CACHE_LIMIT:
        seen.clear()
    seen.add(key)
    return True


class LineBlocks:
    """Collects fed text and hands it out as blocks of whole lines of about BLOCK_CHARS.

    At most one partial line is held; a line longer than MAX_LINE_CHARS is cut to that length.
    A big fed chunk is copied once: its first line (completing the held one) becomes its own block.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._line_open = False
        self._skipping = False

    def add_line(self, line: str) -> list[str]:
        if self._line_open:
            line = "\n" + line
        if not line.endswith("\n"):
            line += "\n"
        return self._add(line)

    def add_text(self, text: str) -> Iterator[str]:
        for start in range(0, len(text), BLOCK_CHARS):
            yield from self._add(text[start : start + BLOCK_CHARS])

    def finish(self) -> str:
        data = "".join(self._parts)
        self._parts, self._size, self._line_open = [], 0, False
        return data if not data or data.endswith("\n") else data + "\n"

    def _add(self, text: str) -> list[str]:
        if self._skipping:
            cut = text.find("\n")
            if cut < 0:
                return []
            text, self._skipping = text[cut:], False
        self._parts.append(text)
        self._size += len(text)
        self._line_open = not text.endswith("\n")
        return self._take() if self._size >= BLOCK_CHARS else []

    def _take(self) -> list[str]:
        parts, last = self._parts, self._parts[-1]
        cut = last.rfind("\n") + 1
        if cut == 0:
            return self._take_joined()
        if cut == len(last):
            self._parts, self._size = [], 0
            return ["".join(parts) if len(parts) > 1 else last]
        first = last.find("\n") + 1 if len(parts) > 1 else 0
        blocks = ["".join(parts[:-1]) + last[:first]] if first else []
        if cut > first:
            blocks.append(last[first:cut])
        self._parts, self._size = [last[cut:]], len(last) - cut
        return blocks

    def _take_joined(self) -> list[str]:
        """The newest piece has no newline: join everything and keep (a bounded) partial line."""
        data = "".join(self._parts)
        cut = data.rfind("\n") + 1
        rest = data[cut:]
        if len(rest) > MAX_LINE_CHARS:
            rest, self._skipping = rest[:MAX_LINE_CHARS], True
        self._parts, self._size = ([rest] if rest else []), len(rest)
        return [data[:cut]] if cut else []
