"""promtool (Debian's `prometheus` package, which scripts/setup installs as root) for the tests that check
what fabcheck writes for Prometheus: `promtool check metrics` (the exposition text), `check rules` and
`test rules` (deploy/prometheus). Missing where scripts/setup installs it (root, or CI) is a failure;
elsewhere a named skip."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

MISSING = "promtool is missing: scripts/setup installs Debian's `prometheus` package (run it as root)"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.geteuid() == 0 or os.environ.get("CI"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    return found


def run_promtool(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], input=stdin, capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


def promtool_check_metrics(text: str) -> None:
    """promtool's parser reads the text, and its linter (the Prometheus naming rules) has nothing to say."""
    done = run_promtool("check", "metrics", stdin=text)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
