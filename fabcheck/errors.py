"""Error types a user can cause. Each one names where the problem is and what was expected."""

from __future__ import annotations


class FabcheckError(Exception):
    """Base class: an error that is reported to the user as one clear message, never a traceback."""


class ParseError(FabcheckError):
    """Tool output that does not have the layout the parser expects.

    ``source`` is a file name (or ``<text>``), ``line`` the 1-based line number when known.
    """

    def __init__(self, message: str, *, source: str = "<text>", line: int | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"


class IntentError(FabcheckError):
    """The fabric intent is invalid. ``problems`` holds one line per bad key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid fabric intent:\n" + "\n".join(f"  - {p}" for p in problems))


class UsageError(FabcheckError):
    """Bad command-line use or unreadable input (exit code 2)."""


class DeadlinePassed(FabcheckError):
    """--deadline ended the run before a stage could start or finish a step: an error, never a pass."""
