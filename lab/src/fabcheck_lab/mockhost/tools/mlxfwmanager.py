"""Mock ``mlxfwmanager --query`` (mstflint's mstfwmanager): every NIC's firmware as printDeviceInfoQuery
prints it (Mellanox/mstflint:mlxfwupdate/mlxfwmanager.cpp@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599), the
line layout of a real query (mwrnd/innova2_flex_xcku15p_notes issue 5): no image to compare against, so
Available is N/A and the status "No matching image found". The running firmware is the Current one."""

from __future__ import annotations

from .common import Node, ToolError, out
from .nic_firmware import DESCRIPTION, DEVICE_TYPE, PART_NUMBER, firmware_state


def main(node: Node, args: list[str]) -> int:
    if args not in (["--query"], ["-q"]):
        raise ToolError("-E- mlxfwmanager (mock): only `mlxfwmanager --query` is served\n", 1, stdout=True)
    text = "Querying Mellanox devices firmware ...\n\n"
    for index, nic in enumerate(sorted(node.all_nics(), key=lambda n: str(n["pci"]))):
        state = firmware_state(node, nic)
        base = ("Base MAC:", str(nic["mac"]).replace(":", ""))
        if nic.get("link_layer") == "InfiniBand":
            base = ("Base GUID:", str(nic["node_guid"]).replace(":", ""))
        rows = [
            ("Device Type:", DEVICE_TYPE),
            ("Part Number:", PART_NUMBER),
            ("Description:", DESCRIPTION),
            ("PSID:", nic["board_id"]),
            ("PCI Device Name:", nic["pci"]),
            base,
            ("Versions:", f"{'Current':<14} {'Available':<14}"),
        ]
        text += f"Device #{index + 1}:\n----------\n\n" + "".join(f"  {k:<16}  {v}\n" for k, v in rows)
        text += f"     FW             {state['running']:<14} {'N/A':<14}\n"
        text += "\n  Status:           No matching image found\n\n"
    out(text)
    return 0
