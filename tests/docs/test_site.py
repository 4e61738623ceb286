"""The documentation site builds strictly (`mkdocs build --strict`: a broken link or anchor, or a page
missing from the nav, fails), and README.md stays the front door that points into it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 400


def test_mkdocs_builds_strictly_without_a_warning(tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,  # the snippets of README.md are read relative to the repository root
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert not re.search(r"^WARNING", log, re.M), log
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'class="mermaid"' in index, "the flow diagram is a mermaid fence on the front page"
    print(f"mkdocs build --strict: {time.monotonic() - started:.1f} s")


def test_every_page_is_in_the_nav() -> None:
    config = (REPO / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md"))
    assert [page for page in pages if f" {page}\n" not in config] == []


# A repository path in backticks: the folders a page may name files in.
_PATH = re.compile(
    r"`((?:fabcheck|lab|tests|roles|plugins|playbooks|templates|scripts|bench|inventory|examples|vendor|tools|\.ci)"
    r"/[A-Za-z0-9_./-]+)`"
)


def test_every_file_a_page_names_exists() -> None:
    """A page that names `fabcheck/x.py` or `tests/y/test_z.py` names a file of this checkout: a module or
    test that moved is found here, not by a reader (files the lab or a run writes, which git ignores,
    excepted)."""
    named = {
        (page.relative_to(REPO).as_posix(), match)
        for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
        for match in _PATH.findall(page.read_text())
    }
    missing = sorted((page, path) for page, path in named if not (REPO / path.rstrip("/")).exists())
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *(path for _page, path in missing)],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert [(page, path) for page, path in missing if path not in ignored] == []


def test_readme_is_the_front_door() -> None:
    readme = (REPO / "README.md").read_text()
    lines = readme.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; the reference belongs in docs/"
    for heading in ("## Two commands", "## Use it from your own Ansible repository", "## Where to read on"):
        assert heading in readme
    assert "scripts/demo" in readme and "scripts/test" in readme
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / target).is_file(), f"README links to {target}, which does not exist"
