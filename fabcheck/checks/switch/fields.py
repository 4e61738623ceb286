"""The fields role switch_qos owns, each with the switch check that judges it.

Each concern module declares the rows of the keys its checks judge (FIELDS: one FieldCheck per key a
push writes, in the platform's own terms); the package lists them (FIELD_CHECKS) and derives the
owned-field table from the renders (fabcheck.switch.owned): docs/checks/switch.md's table is generated from it
(owned_fields_markdown), tests/invariant/test_written_fields.py fails on a written key without a row,
and tests/invariant/test_switch_fields.py drifts each field alone on a mock switch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

PLATFORMS = ("nvue", "sonic", "eos")  # the owned-field table's order
EOS_PROFILE = "qos profile FABCHECK-ROCE:"
EOS_PORT = "interface <port>:"
NOT_DECLARED = "written by a push, but FIELD_CHECKS names no check for it"


@dataclass(frozen=True)
class FieldCheck:
    """The one declaration of an owned-field key (fabcheck.switch.owned): the gate check that judges
    the setting, and the checks a binding carries with it (`also`: they fail with it). check None: no
    gate check reads it yet, and `why` names who is adding one."""

    platform: str
    field: str
    check: str | None
    also: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class OwnedField:
    """One setting role switch_qos pushes, in the platform's own terms, and the check that judges it
    (None: no gate check reads it yet; `why` says so). `scope` port: the field is per port and the
    check fails on that port only; switch: it fails once for the switch or on every port it feeds."""

    platform: str
    field: str
    scope: Literal["port", "switch"]
    check: str | None
    why: str = ""
    also: tuple[str, ...] = ()  # a binding carries other checks' settings: they fail with it


def eos_profile_and_port(field: str, check: str, also: tuple[str, ...] = ()) -> tuple[FieldCheck, ...]:
    """An EOS setting the push writes in its service profile and, where a port needs its own, as the
    interface's line (which applies over the profile on that port)."""
    return tuple(FieldCheck("eos", f"{block} {field}", check, also) for block in (EOS_PROFILE, EOS_PORT))


def derive_owned_fields(field_checks: Sequence[FieldCheck]) -> tuple[OwnedField, ...]:
    """The owned-field table, derived: every key the reference renders and the drivers write
    (fabcheck.switch.owned.reference_fields), with its check from `field_checks` (none: NOT_DECLARED),
    by platform in declaration order, the undeclared last."""
    # Imported on first use: the table renders every reference intent, which judging a switch never needs.
    from fabcheck.switch.owned import reference_fields

    by_platform = sorted(field_checks, key=lambda entry: PLATFORMS.index(entry.platform))
    declared = {(entry.platform, entry.field): entry for entry in by_platform}
    order = {key: index for index, key in enumerate(declared)}
    rows: list[OwnedField] = []
    for platform in PLATFORMS:
        for field in reference_fields(platform):
            entry = declared.get((platform, field)) or FieldCheck(platform, field, None, why=NOT_DECLARED)
            scope: Literal["port", "switch"] = "port" if "<port>" in field else "switch"
            rows.append(OwnedField(platform, field, scope, entry.check, entry.why, entry.also))
    last = len(order)
    return tuple(
        sorted(rows, key=lambda row: (order.get((row.platform, row.field), last), row.platform, row.field))
    )


def owned_fields_table(
    owned: Sequence[OwnedField], tags: Mapping[str, str | None], tests: Mapping[tuple[str, str], str]
) -> str:
    """The owned-field table in markdown: each field, its concern tag (`tags`: check id -> tag), its
    check and the test that drifts it (`tests` maps (platform, field) to a test id)."""
    rows = ["| platform | field | scope | concern tag | check | test |", "|---|---|---|---|---|---|"]
    for row in owned:
        check = ", ".join(f"`{name}`" for name in (row.check, *row.also)) if row.check else f"none: {row.why}"
        tag = f"`{tags[row.check]}`" if row.check else "-"
        test = tests.get((row.platform, row.field), "none")
        rows.append(f"| {row.platform} | `{row.field}` | {row.scope} | {tag} | {check} | {test} |")
    return "\n".join(rows)
