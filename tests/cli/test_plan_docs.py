"""The worked examples of docs/plan.md and README.md are real: every ```text block that starts with
`$ fabcheck plan ...` shows exactly what that command prints (stdout, then the one error line of a
refusal). `python tests/cli/test_plan_docs.py` rewrites them after a deliberate change."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

from fabcheck.cli import main

REPO = Path(__file__).resolve().parents[2]
PAGES = (REPO / "docs" / "plan.md", REPO / "README.md")
EXAMPLE = re.compile(r"^```text\n\$ (?P<command>fabcheck plan [^\n]*)\n(?P<shown>.*?)^```$", re.S | re.M)


def output_of(command: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(shlex.split(command)[1:])
    return out.getvalue() + err.getvalue()


def examples() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        for match in EXAMPLE.finditer(page.read_text()):
            found.append((page.relative_to(REPO).as_posix(), match.group("command"), match.group("shown")))
    return found


def test_each_page_shows_examples() -> None:
    pages = {page for page, _command, _shown in examples()}
    assert pages == {"docs/plan.md", "README.md"}
    commands = " ".join(command for _page, command, _shown in examples())
    assert "--fabric roce" in commands and "--fabric ib" in commands and "--compare roce,ib" in commands


@pytest.mark.parametrize(
    ("page", "command", "shown"), examples(), ids=[f"{p}: {c}" for p, c, _ in examples()]
)
def test_the_example_shows_what_the_command_prints(page: str, command: str, shown: str) -> None:
    assert output_of(command) == shown, f"{page}: `{command}` prints otherwise (python {__file__})"


def rewrite() -> None:
    for page in PAGES:
        text = page.read_text()
        new = EXAMPLE.sub(
            lambda m: f"```text\n$ {m.group('command')}\n{output_of(m.group('command'))}```", text
        )
        if new != text:
            page.write_text(new)
            print(f"rewrote the examples of {page.relative_to(REPO)}")


if __name__ == "__main__":
    sys.exit(rewrite())
