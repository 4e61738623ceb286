"""Every role a hint names exists in roles/: a hint that names a missing role sends users nowhere."""

from __future__ import annotations

from pathlib import Path

from fabcheck.checks import roles

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"


def test_every_role_a_hint_names_exists() -> None:
    named = {value for key, value in vars(roles).items() if key.endswith("_ROLE")}
    assert named, "fabcheck.checks.roles names no role"
    missing = sorted(name for name in named if not (ROLES_DIR / name / "tasks" / "main.yml").is_file())
    assert missing == []
