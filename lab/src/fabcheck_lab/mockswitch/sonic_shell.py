"""The bash subset a SONiC mock needs: quoting, ';' '&&' '||', pipes, '>' '>>' '<' '<<<' and heredocs."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

CONTROL = {";", "&&", "||"}


class ShellSyntaxError(Exception):
    """A line bash would refuse to parse; str() is bash's message."""


@dataclass
class Stage:
    argv: list[str] = field(default_factory=list)
    stdout_file: str | None = None
    append: bool = False
    stdin_file: str | None = None
    stdin_text: str | None = None
    heredoc: str | None = None  # delimiter still to be read


@dataclass
class Result:
    out: str = ""
    err: str = ""
    status: int = 0


Pipeline = list[Stage]
Chain = list[tuple[str, Pipeline]]  # (operator before this pipeline, pipeline)


def tokenize(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as exc:
        raise ShellSyntaxError(f"-bash: syntax error: {exc}") from exc


def parse(line: str) -> Chain:
    chain: Chain = []
    operator = ";"
    pipeline: Pipeline = [Stage()]
    words = iter(tokenize(line))
    for word in words:
        if word in CONTROL:
            _close(chain, operator, pipeline, word)
            operator, pipeline = word, [Stage()]
        elif word == "|":
            if not pipeline[-1].argv:
                raise ShellSyntaxError("-bash: syntax error near unexpected token `|'")
            pipeline.append(Stage())
        elif word in (">", ">>", "<", "<<", "<<<"):
            target = next(words, None)
            if target is None or target in CONTROL or target in ("|", ">", "<"):
                raise ShellSyntaxError("-bash: syntax error near unexpected token `newline'")
            _redirect(pipeline[-1], word, target)
        elif re.fullmatch(r"[;&|<>]+", word):
            raise ShellSyntaxError(f"-bash: syntax error near unexpected token `{word}'")
        else:
            pipeline[-1].argv.append(word)
    if pipeline[-1].argv or len(pipeline) > 1:
        _close(chain, operator, pipeline, "newline")
    return chain


def _close(chain: Chain, operator: str, pipeline: Pipeline, token: str) -> None:
    if any(not stage.argv for stage in pipeline):
        raise ShellSyntaxError(f"-bash: syntax error near unexpected token `{token}'")
    chain.append((operator, pipeline))


def _redirect(stage: Stage, op: str, target: str) -> None:
    if op in (">", ">>"):
        stage.stdout_file, stage.append = target, op == ">>"
    elif op == "<":
        stage.stdin_file = target
    elif op == "<<<":
        stage.stdin_text = target + "\n"
    else:
        stage.heredoc = target


def pending_heredoc(chain: Chain) -> tuple[int, Stage] | None:
    """The first pipeline stage still waiting for heredoc lines, with its chain index."""
    for index, (_, pipeline) in enumerate(chain):
        for stage in pipeline:
            if stage.heredoc is not None:
                return index, stage
    return None


class FileSystem:
    """The few files a session writes (patches, notes), kept in the switch state."""

    def __init__(self, files: dict[str, str], home: str) -> None:
        self.files = files
        self.home = home

    def resolve(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            path = self.home + path[1:]
        return posixpath.normpath(path if path.startswith("/") else posixpath.join(self.home, path))

    def read(self, path: str) -> str | None:
        return self.files.get(self.resolve(path))

    def write(self, path: str, text: str, append: bool = False) -> None:
        full = self.resolve(path)
        self.files[full] = (self.files.get(full, "") if append else "") + text

    def remove(self, path: str) -> bool:
        return self.files.pop(self.resolve(path), None) is not None


Command = Callable[[list[str], str | None], Result]


def grep(argv: list[str], stdin: str | None) -> Result:
    flags = {a for a in argv[1:] if a.startswith("-")}
    patterns = [a for a in argv[1:] if not a.startswith("-")]
    if not patterns:
        return Result(err="Usage: grep [OPTION]... PATTERNS [FILE]...", status=2)
    try:
        regex = re.compile(patterns[0], re.IGNORECASE if "-i" in flags else 0)
    except re.error:
        return Result(err="grep: Unmatched ( or \\(", status=2)
    invert = "-v" in flags
    kept = [ln for ln in (stdin or "").splitlines() if bool(regex.search(ln)) != invert]
    return Result(out="".join(f"{ln}\n" for ln in kept), status=0 if kept else 1)
