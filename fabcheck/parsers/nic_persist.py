"""What a host keeps to re-apply its NIC settings at boot: the settings file role roce_host wrote, the
state of the boot unit (`systemctl is-enabled`), and which boot files exist (`ls -1d`). Pure."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from fabcheck.errors import ParseError

# The settings file's format (plugins/module_utils/roce_nic_apply.py CONFIG_FORMAT writes it).
CONFIG_FORMAT = "fabcheck-roce-nic/1"
MISSING = "No such file or directory"
UNIT_STATES = (
    "enabled",
    "enabled-runtime",
    "linked",
    "alias",
    "masked",
    "static",
    "indirect",
    "disabled",
    "generated",
    "transient",
    "bad",
)


def parse_boot_settings(text: str, source: str) -> dict[str, Any]:
    """The `settings` object of the boot file; ParseError when it is not that file's JSON."""
    try:
        document = json.loads(text)
    except ValueError as err:
        raise ParseError(f"not JSON: {err}", source=source) from None
    if not isinstance(document, dict) or document.get("format") != CONFIG_FORMAT:
        raise ParseError(
            f'no "format": "{CONFIG_FORMAT}" object (not written by role roce_host)', source=source
        )
    settings = document.get("settings")
    if not isinstance(settings, dict):
        raise ParseError('no "settings" object', source=source)
    return settings


def missing_file(rc: int | None, stderr: str) -> bool:
    """Whether `cat FILE` failed only because FILE does not exist (a definite answer, not unreadable)."""
    return rc not in (0, None) and MISSING in stderr


def parse_unit_state(rc: int, stdout: str, stderr: str, source: str) -> str:
    """`systemctl is-enabled UNIT`: its state word; "absent" when there is no such unit file.

    It exits 1 for disabled units and for missing ones (saying so on stderr): both are answers."""
    word = stdout.strip().splitlines()[-1].strip() if stdout.strip() else ""
    if word in UNIT_STATES:
        return word
    if rc != 0 and MISSING in stderr:
        return "absent"
    detail = (stderr.strip() or stdout.strip() or f"exit {rc}").splitlines()[-1]
    raise ParseError(f"no unit state in the output ({detail[:200]})", source=source)


def parse_present_files(
    rc: int, stdout: str, stderr: str, wanted: Iterable[str], source: str
) -> frozenset[str]:
    """Which of `wanted` `ls -1d -- FILE...` listed; every complaint on stderr must be a missing file."""
    complaints = [line for line in stderr.splitlines() if line.strip()]
    if rc != 0 and (not complaints or any(MISSING not in line for line in complaints)):
        detail = complaints[-1] if complaints else f"exit {rc}"
        raise ParseError(f"cannot list the boot files ({detail[:200]})", source=source)
    listed = {line.strip() for line in stdout.splitlines()}
    return frozenset(path for path in wanted if path in listed)
