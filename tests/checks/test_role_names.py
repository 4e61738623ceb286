"""Every role a hint names exists in roles/ (a hint that names a missing role sends users nowhere), and
the concern names are the roles' tags: a check's `role R (tag T)` selects a task of R, the switch push's
concerns are role switch_qos's tags and the NIC module's concerns role roce_host's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabcheck.checks import roles
from fabcheck.checks.declared import DECLARED
from fabcheck.switch.concerns import CONCERNS, WHOLE_SWITCH_TAGS
from tests.roles.roce_host_code import apply_code

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"


def test_every_role_a_hint_names_exists() -> None:
    named = {value for key, value in vars(roles).items() if key.endswith("_ROLE")}
    assert named, "fabcheck.checks.roles names no role"
    missing = sorted(name for name in named if not (ROLES_DIR / name / "tasks" / "main.yml").is_file())
    assert missing == []


# -- concern names and role tags: one vocabulary ----------------------------------------------------


def role_tags(role: str) -> set[str]:
    """Every tag a task (or block) of the role's tasks/main.yml carries: what `--tags` can select."""
    found: set[str] = set()

    def visit(tasks: list[dict[str, Any]]) -> None:
        for task in tasks:
            tags = task.get("tags", [])
            found.update([tags] if isinstance(tags, str) else tags)
            visit(task.get("block", []) + task.get("rescue", []) + task.get("always", []))

    visit(yaml.safe_load((ROLES_DIR / role / "tasks" / "main.yml").read_text()) or [])
    return found


def test_every_check_fixed_by_a_role_tag_names_a_tag_of_that_role() -> None:
    """A hint says `role R (tag T)` and prints `--tags T`: T must select a task of R, or the run the hint
    gives fixes nothing."""
    tagged = [check for check in DECLARED if check.role is not None and check.tag is not None]
    assert len(tagged) > 20, "the declarations name no role tags: nothing was tied"
    wrong = sorted(
        (check.id, check.role, check.tag) for check in tagged if check.tag not in role_tags(str(check.role))
    )
    assert wrong == []


def test_the_switch_concerns_are_exactly_the_switch_role_tags_beside_switch() -> None:
    """`--tags pfc` on the switch play scopes the push to the concern pfc (concerns_from_tags): every
    concern is a tag of role switch_qos, and every tag but the whole-switch one is a concern."""
    assert role_tags(roles.SWITCH_QOS_ROLE) == {*CONCERNS, "switch"}
    assert "switch" in WHOLE_SWITCH_TAGS


def test_the_nic_concerns_are_exactly_the_host_role_tags() -> None:
    """The roce_nic module acts on the concerns named in the play's --tags (roce_nic_apply.CONCERNS): its
    one task carries each of them, and the boot files' tag is the one hints name."""
    apply = apply_code()
    # ... and its second task, the firmware parameters (nic_fw_config), its own tag.
    assert role_tags(roles.HOST_QOS_ROLE) == set(apply.CONCERNS) | {roles.HOST_FIRMWARE_TAG}
    assert roles.HOST_FIRMWARE_TAG not in apply.CONCERNS
    assert roles.HOST_PERSIST_TAG == apply.PERSIST
