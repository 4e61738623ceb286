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


def test_readme_is_the_front_door() -> None:
    readme = (REPO / "README.md").read_text()
    lines = readme.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; the reference belongs in docs/"
    for heading in ("## Two commands", "## Use it from your own Ansible repository", "## Where to read on"):
        assert heading in readme
    assert "scripts/demo" in readme and "scripts/test" in readme
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / target).is_file(), f"README links to {target}, which does not exist"
