"""Every generated table of the documentation site (checks, owned fields, intent keys, CLI options) is
the one the code writes today: a page that differs fails, naming the command that rewrites it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools import docs_tables

REPO = Path(__file__).resolve().parents[2]


def test_every_generated_block_is_current() -> None:
    """Regenerate with `scripts/gen_docs` after changing a check, an owned field, an intent key or an
    option. Run in a fresh interpreter: it pins the machine-derived defaults before fabcheck loads."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.docs_tables", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"stale documentation; run scripts/gen_docs:\n{done.stdout}{done.stderr}"


def test_every_intent_key_has_its_meaning_and_every_meaning_its_key() -> None:
    keys = {key: meaning for key, _kind, _default, meaning in docs_tables.intent_keys()}
    assert [key for key, meaning in keys.items() if not meaning] == [], "keys without a meaning"
    assert sorted(set(docs_tables.INTENT_MEANINGS) - set(keys)) == [], "meanings of keys the model lacks"


def test_a_stale_block_is_rewritten_and_an_unknown_one_named() -> None:
    page = "x\n<!-- intent-keys (generated: scripts/gen_docs) -->\nold\n<!-- /intent-keys -->\n"
    page += "<!-- unknown (generated: scripts/gen_docs) -->\nkept\n<!-- /unknown -->\n"
    new, changes = docs_tables.regenerate(page, {"intent-keys": lambda: "| key |\n"}, {})
    assert changes.stale == ["intent-keys"] and changes.unknown == ["unknown"]
    assert "<!-- intent-keys (generated: scripts/gen_docs) -->\n| key |\n<!-- /intent-keys -->" in new
    assert "\nkept\n" in new
    again, changes = docs_tables.regenerate(new, {"intent-keys": lambda: "| key |\n"}, {})
    assert again == new and changes.stale == []


def test_every_command_has_its_options_table() -> None:
    cli = (REPO / "docs" / "cli.md").read_text()
    for command in docs_tables.cli_commands():
        assert f"<!-- cli:{command} (generated" in cli, command
