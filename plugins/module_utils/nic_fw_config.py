"""The nic_fw_config module's logic (role roce_host): the intent's mlxconfig parameters for a NIC part
(PSID) against `mlxconfig -d DEV -e q`, what to `set`, and what waits for a firmware reset.

Stdlib only: it runs on the host. What mlxconfig prints and takes is mstflint's
(Mellanox/mstflint:mlxconfig/mlxcfg_ui.cpp@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599): a
`Configurations:` header naming the value columns (`Default  Current  Next Boot` with -e), then per
parameter an optional `*` and `RO`, the name and one value per column, values `NAME(n)` for enums and
booleans or plain numbers; errors are `-E- <message>` lines; `set` writes the Next Boot value only and
ends with "-I- Please reboot machine to load new configurations.". Current is what the NIC runs with:
a parameter set now takes effect after a firmware reset (mlxfwreset) or a reboot. The value rules are
fabcheck.parsers.mlxconfig's (matches, spelled); tests tie the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

HEADER = "Configurations:"
COLUMNS = ("Default", "Current", "Next Boot", "New")
REBOOT_LINE = "-I- Please reboot machine to load new configurations."
PENDING = "takes effect after a firmware reset (mlxfwreset) or reboot"
_ROW = re.compile(r"^\*?\s*(?:RO\s)?\s*(?P<name>[A-Z][A-Za-z0-9_]*(?:\[[0-9]+\])?)\s+(?P<values>\S.*)$")
_NOT_ROWS = ("The ", "Apply new Configuration", "Applying", "-I-", "-W-")
_NAMED = re.compile(r"^(?P<name>.*?)\((?P<number>[0-9]+)\)$")


class FirmwareError(Exception):
    """Something the NIC or mlxconfig answered that the module cannot go on from."""


@dataclass(frozen=True)
class Shown:
    """One parameter as `mlxconfig -e q` shows it: the cell texts of its columns."""

    default: str | None
    current: str | None
    next_boot: str


def parse_query(text: str) -> dict[str, Shown]:
    """`mlxconfig -d DEV -e q`: parameter -> its cells. FirmwareError for `-E-` lines, no table, a row
    that does not fit the columns."""
    columns: list[str] | None = None
    shown: dict[str, Shown] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("-E-"):
            raise FirmwareError(f"mlxconfig: {line}")
        if line.startswith(HEADER):
            columns = re.split(r"\s{2,}", line[len(HEADER) :].strip())
            if not set(columns) <= set(COLUMNS) or "Next Boot" not in columns:
                raise FirmwareError(f"mlxconfig: unknown columns {columns}")
            continue
        if columns is None or not line or line.startswith(_NOT_ROWS):
            continue
        row = _ROW.match(raw.rstrip())
        values = row["values"].split() if row else []
        if row is None or len(values) != len(columns):
            raise FirmwareError(f"mlxconfig: not a parameter row: {line[:80]!r}")
        cells = dict(zip(columns, values, strict=True))
        shown[row["name"]] = Shown(cells.get("Default"), cells.get("Current"), cells["Next Boot"])
    if columns is None:
        raise FirmwareError("mlxconfig printed no Configurations: table")
    return shown


def _cell(text: str) -> tuple[str | None, int | None]:
    """A cell's enum name and number: ETH(2) -> (ETH, 2), 255 -> (None, 255), N/A -> (None, None)."""
    named = _NAMED.match(text)
    if named:
        return named["name"], int(named["number"])
    if text.isdigit():
        return None, int(text)
    if text == "N/A" or text.startswith("Array["):
        return None, None
    return text, None


def matches(want: str | int | bool, text: str | None) -> bool:
    """Whether a cell shows the intent's value: a boolean as True(1)/False(0), a number as the cell's
    number, a name as the enum's name in any case (as fabcheck.parsers.mlxconfig.matches)."""
    if text is None:
        return False
    name, number = _cell(text)
    if isinstance(want, bool):
        return number == int(want)
    if isinstance(want, int):
        return number == want
    if want.isdigit():
        return number == int(want)
    return name is not None and name.lower() == want.lower()


def spelled(want: str | int | bool) -> str:
    """The intent's value as `mlxconfig set` takes it (a boolean as 1/0)."""
    return str(int(want)) if isinstance(want, bool) else str(want)


@dataclass
class DevicePlan:
    """What one NIC needs: the parameters to set (Next Boot differs), those whose value waits for a
    reset (Current differs; after a set, every set one), and the firmware version against the pin."""

    device: str
    psid: str
    running: str
    to_set: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    version_mismatch: dict[str, Any] | None = None
    next_before: dict[str, str] = field(default_factory=dict)


def plan_device(
    device: str, psid: str, running: str, pin: dict[str, Any], shown: dict[str, Shown]
) -> DevicePlan:
    """Pure: the pin for the NIC's part + what mlxconfig shows -> what to do. FirmwareError when the
    firmware does not show a pinned parameter (unsupported, or hidden behind another one such as
    ADVANCED_PCI_SETTINGS)."""
    plan = DevicePlan(device, psid, running)
    version = pin.get("version")
    if version and version != running:
        image = pin.get("image")
        plan.version_mismatch = {
            "device": device,
            "psid": psid,
            "running": running,
            "pinned": version,
            "image": image,
            "msg": f"{device} ({psid}) runs firmware {running}, the intent pins {version}: burn "
            + (f"image {image}" if image else f"a {version} image for {psid}")
            + " with flint or mlxfwmanager and reset the NIC (this module never burns firmware)",
        }
    for name, want in (pin.get("config") or {}).items():
        cells = shown.get(name)
        if cells is None:
            raise FirmwareError(
                f"{device}: mlxconfig does not show {name} (not supported by this firmware, or hidden "
                "until another parameter enables it, e.g. ADVANCED_PCI_SETTINGS)"
            )
        plan.next_before[name] = cells.next_boot
        if not matches(want, cells.next_boot):
            plan.to_set[name] = spelled(want)
        # Not in effect: Current differs (set now or earlier); without a Current column, what is set now.
        if (not matches(want, cells.current)) if cells.current is not None else name in plan.to_set:
            plan.pending.append(name)
    return plan


def diff_of(plan: DevicePlan) -> dict[str, str]:
    """--diff: the parameters' Next Boot values before and after, one `DEV NAME: value` line each."""
    before = "".join(f"{plan.device} {name}: {value}\n" for name, value in sorted(plan.next_before.items()))
    after = "".join(
        f"{plan.device} {name}: {plan.to_set.get(name, value)}\n"
        for name, value in sorted(plan.next_before.items())
    )
    header = f"mlxconfig -d {plan.device} (Next Boot)"
    return {"before": before, "after": after, "before_header": header, "after_header": header}


def set_argv(plan: DevicePlan) -> list[str]:
    return ["mlxconfig", "-d", plan.device, "-y", "set", *(f"{k}={v}" for k, v in plan.to_set.items())]


def pin_for(psid: str, firmware: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((pin for pin in firmware if pin.get("psid") == psid), None)
