"""Mock ``flint -d DEV q`` (mstflint's mstflint): the NIC's firmware image as QuerySubCommand::printInfo
prints it (Mellanox/mstflint:flint/subcommands.cpp@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599): labels
padded to column 23, `FW Version` the burned image and `FW Version(Running)` only while the running
firmware differs (a reset or reboot pending), the UIDs, `PSID`. The line order is that of the cited real
query (MrBr-github/lshca issue 54). Not rendered: FW Release Date and Rom Info (the mock knows neither);
errors print "-E- " on stdout (SubCommand::reportErr) with exit 1."""

from __future__ import annotations

from .common import Node, ToolError, out
from .nic_firmware import firmware_state, resolve_device

GUIDS = 16  # GUIDs and MACs the image reserves, as the cited real ConnectX query shows


def main(node: Node, args: list[str]) -> int:
    if len(args) < 3 or args[0] != "-d" or args[2] not in ("q", "query"):
        raise ToolError("-E- flint (mock): only `flint -d DEV q` is served\n", 1, stdout=True)
    device = args[1]
    nic = resolve_device(node, device)
    if nic is None:
        raise ToolError(f"-E- Failed to open device: {device}\n", 1, stdout=True)
    state = firmware_state(node, nic)
    guid = str(nic["node_guid"]).replace(":", "")
    mac = str(nic["mac"]).replace(":", "")
    lines = [("Image type:", "FS4"), ("FW Version:", state["burned"])]
    if state["running"] != state["burned"]:
        lines.append(("FW Version(Running):", state["running"]))
    lines += [
        ("Product Version:", state["burned"]),
        ("Description:", "UID                GuidsNumber"),
        ("Base GUID:", f"{guid}        {GUIDS}"),
        ("Base MAC:", f"{mac}            {GUIDS}"),
        ("Image VSD:", "N/A"),
        ("Device VSD:", "N/A"),
        ("PSID:", nic["board_id"]),
        ("Security Attributes:", "N/A"),
    ]
    out("".join(f"{label:<23}{value}\n" for label, value in lines))
    return 0
