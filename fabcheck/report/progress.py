"""A one-line progress bar while nodes are collected, drawn only when its stream is a terminal.

The runner calls `on_start(n)` once, `on_done(node, verdict)` as each node finishes (from any thread)
and `close()` at the end, which clears the line so the report starts on a clean screen. Off a
terminal (a pipe, a file, CI logs) it writes nothing at all.
"""

from __future__ import annotations

import threading
from typing import TextIO

from fabcheck.checks.model import Status

BAR_WIDTH = 24
NODE_CHARS = 40  # the last node's name is cut to this, so the line fits a terminal
_CLEAR_LINE = "\r\x1b[K"


class Progress:
    def __init__(self, stream: TextIO, noun: str = "hosts") -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self._stream = stream
        self._noun = noun
        self._lock = threading.Lock()
        self._total = 0
        self._done = 0
        self._counts: dict[Status, int] = {}
        self._drawn = False

    def on_start(self, total: int) -> None:
        with self._lock:
            self._total, self._done, self._counts = total, 0, {}
            self._draw("")

    def on_done(self, node: str, verdict: Status) -> None:
        with self._lock:
            self._done += 1
            self._counts[verdict] = self._counts.get(verdict, 0) + 1
            self._draw(node)

    def close(self) -> None:
        with self._lock:
            if self.enabled and self._drawn:
                self._stream.write(_CLEAR_LINE)
                self._stream.flush()
            self._drawn = False

    def line(self, last: str) -> str:
        """The bar as drawn: `[#######.................]  7/24 hosts  1 fail  0 error  gpu07`."""
        filled = BAR_WIDTH * self._done // self._total if self._total else 0
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        width = len(str(self._total))
        fails, errors = self._counts.get(Status.FAIL, 0), self._counts.get(Status.ERROR, 0)
        text = f"[{bar}] {self._done:>{width}}/{self._total} {self._noun}  {fails} fail  {errors} error"
        return f"{text}  {last[:NODE_CHARS]}" if last else text

    def _draw(self, last: str) -> None:
        if not self.enabled:
            return
        self._stream.write(_CLEAR_LINE + self.line(last))
        self._stream.flush()
        self._drawn = True
