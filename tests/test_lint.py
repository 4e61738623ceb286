"""The codebase stays ruff clean, its import layers hold (import-linter, pyproject.toml), and the Ansible
content stays ansible-lint clean (production profile)."""

from __future__ import annotations

import shutil
import subprocess
import sys
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
