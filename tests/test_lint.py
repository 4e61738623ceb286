"""The codebase stays ruff clean, its import layers hold (import-linter, pyproject.toml), the product type
checks (mypy, pyproject.toml), and the Ansible content stays ansible-lint clean (production profile)."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_ruff_clean() -> None:
    result = subprocess.run(
        [str(BIN / "ruff"), "check", "."], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    formatted = subprocess.run(
        [str(BIN / "ruff"), "format", "--check", "."], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_import_layers_hold() -> None:
    result = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_types_check() -> None:
    """mypy, as [tool.mypy] configures it (strict on intent, desired, parsers, checks, gate): 0 errors.
    Its cache lives outside the checkout, one per checkout (a warm rerun takes about a second)."""
    checkout = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"fabcheck-mypy-{checkout}"
    result = subprocess.run(
        [str(BIN / "mypy"), "--cache-dir", str(cache)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    checked = re.search(r"no issues found in (\d+) source files", result.stdout)
    assert checked and int(checked[1]) > 100, result.stdout  # it read the product, not an empty list


def test_ansible_lint_clean() -> None:
    lint = BIN / "ansible-lint"
    assert lint.exists() or shutil.which("ansible-lint"), "ansible-lint is part of the test extras"
    result = subprocess.run(
        [str(lint) if lint.exists() else "ansible-lint", "--offline", "-q", "site.yml", "playbooks", "roles"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
