"""Mock ``mlxconfig`` (mstflint's mstconfig is the same tool): `-d DEV [-e] q [PARAM ...]` and
`-d DEV [-y] set|s K=V ...` over the NIC's firmware state (nic_firmware.py).

What it prints and refuses is mstflint's (Mellanox/mstflint@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599):
mlxconfig/mlxcfg_ui.cpp printOpening, printConfHeader and printSingleParam for the table (`*` where Next
Boot differs from Default or Current, the closing "The '*' shows parameters ..." line), the set flow
(the table with a New column, "Apply new Configuration? (y/n) [n] : y" under -y, "Applying... Done!",
"-I- Please reboot machine to load new configurations." from mlxcfg_generic_commander.cpp), errors as
"-E- <message>" on stdout with exit 3 (MLX_CFG_ERROR, mlxcfg_status.h): "Unknown Parameter NAME"
(mlxcfg_generic_commander.cpp), "Unknown value V" / "The value V is not valid,  as its size is N bits"
(mlxcfg_param.cpp), "Invalid Configuration argument A", "Duplicate parameter, NAME." (mlxcfg_parser.cpp).
The column widths are those of the cited real queries (rows: names padded to 44 after an 8 character
prefix, values to 20 plus one space, sriov-network-device-plugin issue 601; headers: HEADER_WIDTHS). A
set writes Next Boot only: it takes effect at the node's next boot (fabcheck-mock-boot). The usage text
after a parse error is not reproduced.
"""

from __future__ import annotations

from typing import Any

from .common import Node, ToolError, out
from .nic_firmware import (
    DESCRIPTION,
    DEVICE_TYPE,
    PARAMS,
    PART_NUMBER,
    firmware_state,
    parse_value,
    resolve_device,
    save_firmware_state,
    shown,
)

ERROR_EXIT = 3  # MLX_CFG_ERROR
ABORTED_EXIT = 2  # MLX_CFG_ABORTED
NAME_WIDTH, VALUE_WIDTH = 44, 20
REBOOT = "-I- Please reboot machine to load new configurations."
DIFFER = "The '*' shows parameters with next value different from default/current value."


def fail(message: str) -> ToolError:
    return ToolError(f"-E- {message}\n", ERROR_EXIT, stdout=True)


def main(node: Node, args: list[str]) -> int:
    device, verbose, yes, rest = None, False, False, list(args)
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("-d", "--dev"):
            if not rest:
                raise fail("missing device name")
            device = rest.pop(0)
        elif flag in ("-e", "--enable_verbosity"):
            verbose = True
        elif flag in ("-y", "--yes"):
            yes = True
        else:
            raise fail(f"invalid argument: {flag}")
    if not rest:
        raise fail("No command found. For more information please read the help message:")
    command, params = rest[0], rest[1:]
    if command in ("q", "query"):
        return query(node, device, verbose, params)
    if command in ("s", "set"):
        if device is None:
            raise fail("set command expects device to be specified.")
        return set_params(node, device, yes, params)
    raise fail(f"invalid argument: {command}")


def opening(device: str) -> str:
    rows = (("Device type:", DEVICE_TYPE), ("Name:", PART_NUMBER), ("Description:", DESCRIPTION))
    lines = [f"{label:<20}{value:<20}" for label, value in (*rows, ("Device:", device))]
    return "\nDevice #1:\n----------\n\n" + "\n".join(lines) + "\n\n"


# The header pads its column names so (real -e and set headers, tests/data/real/host): it does not line
# up with the rows below it, which the real tool's does not either.
HEADER_WIDTHS = {"Default": 20, "Current": 16, "Next Boot": 16}


def header(columns: list[str]) -> str:
    cells = [f"{column:<{HEADER_WIDTHS[column]}}" for column in columns[:-1]] + [columns[-1]]
    return f"{'Configurations:':<57}" + "".join(cells) + "\n"


def row(name: str, values: list[str], differs: bool) -> str:
    cells = " ".join(f"{value:<{VALUE_WIDTH}}" for value in values)
    return f"{'*' if differs else ' '}       {name:<{NAME_WIDTH}}{cells}\n"


def nic_for(node: Node, device: str | None) -> dict[str, Any]:
    if device is None:
        raise fail("query command expects device to be specified.")  # this mock queries one device
    nic = resolve_device(node, device)
    if nic is None:
        raise fail("Failed to open the device")
    return nic


def query(node: Node, device: str | None, verbose: bool, wanted: list[str]) -> int:
    nic = nic_for(node, device)
    assert device is not None
    state = firmware_state(node, nic)
    text = opening(device)
    text += header(["Default", "Current", "Next Boot"] if verbose else ["Next Boot"])
    unknown = next((name for name in wanted if name not in PARAMS), None)
    if unknown is not None:  # the table's header is out before the device is asked
        out(text)
        raise fail(f"Unknown Parameter {unknown}")
    differs_any = False
    for name in wanted or list(PARAMS):
        values = state["params"][name]
        # printSingleParam: `*` where Next Boot differs from a shown Default or Current (only under -e)
        differs = verbose and (values["next"] != values["default"] or values["next"] != values["current"])
        differs_any |= differs
        columns = ["default", "current", "next"] if verbose else ["next"]
        text += row(name, [shown(name, values[key]) for key in columns], differs)
    if differs_any:
        text += DIFFER + "\n"
    out(text)
    return 0


def set_params(node: Node, device: str, yes: bool, assignments: list[str]) -> int:
    if not assignments:
        raise fail("missing configuration arguments. For more information please run mlxconfig -h|--help.")
    requested: dict[str, str] = {}
    for argument in assignments:
        parts = argument.split("=")
        if len(parts) != 2 or not all(parts):
            raise fail(f"Invalid Configuration argument {argument}")
        if parts[0] in requested:
            raise fail(f"Duplicate parameter, {parts[0]}.")
        requested[parts[0]] = parts[1]
    nic = nic_for(node, device)
    state = firmware_state(node, nic)
    text = opening(device) + header(["Next Boot", "New"])
    parsed: dict[str, int] = {}
    for name, value in requested.items():
        if name not in PARAMS:
            out(text)
            raise fail(f"Unknown Parameter {name}")
        try:
            parsed[name] = parse_value(name, value)
        except ToolError as exc:
            out(text)
            raise fail(exc.message) from None
    for name, value in parsed.items():
        text += row(name, [shown(name, state["params"][name]["next"]), shown(name, value)], False)
    text += "\n Apply new Configuration? (y/n) [n] : "
    if not yes:  # a prompt nobody answers: stdin is not a terminal in the lab's tool calls
        out(text + "\n")
        raise ToolError("-E- Aborted by user.\n", ABORTED_EXIT, stdout=True)
    for name, value in parsed.items():
        state["params"][name]["next"] = value
    save_firmware_state(node, nic, state)
    out(text + "y\nApplying... Done!\n" + REBOOT + "\n")
    return 0
