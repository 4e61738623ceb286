"""Mock ``cma_roce_tos`` and ``cma_roce_mode``: RDMA-CM defaults per device port (configfs in real life)."""

from __future__ import annotations

import getopt
from typing import Any

from .common import Node, ToolError, getopt_message, out

MODES = {1: "IB/RoCE v1", 2: "RoCE v2"}
DEFAULT_MODE = 2


def port_entry(node: Node, dev: str, port: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if node.nic_by_name(dev) is None:
        raise ToolError(f"Device {dev} not found\n", 1)
    if port != "1":
        raise ToolError(f"Port {port} of device {dev} not found\n", 1)
    table = node.load("rdma_cm.json", {})
    entry = table.setdefault(dev, {}).setdefault(port, {"tos": 0, "mode": DEFAULT_MODE})
    return table, entry


def parse(args: list[str], letters: str, usage: str) -> dict[str, str]:
    try:
        opts, rest = getopt.getopt(args, letters)
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message(usage.split()[1], exc) + "\n" + usage, 1) from None
    if rest:
        raise ToolError(usage, 1)
    return {flag: value for flag, value in opts}


def roce_tos(node: Node, args: list[str]) -> int:
    usage = "Usage: cma_roce_tos -d <ib device> -t <tos> [-p port]\n"
    opts = parse(args, "d:p:t:h", usage)
    if "-h" in opts:
        out(usage)
        return 0
    table, entry = port_entry(node, opts.get("-d", "mlx5_0"), opts.get("-p", "1"))
    if "-t" in opts:
        value = opts["-t"]
        if not value.isdigit() or int(value) > 255:
            raise ToolError(f"Invalid ToS value: {value} (0..255)\n", 1)
        entry["tos"] = int(value)
        node.save("rdma_cm.json", table)
    out(f"{entry['tos']}\n")
    return 0


def roce_mode(node: Node, args: list[str]) -> int:
    usage = "Usage: cma_roce_mode -d <ib device> -p <port> -m <1|2>\n"
    opts = parse(args, "d:p:m:h", usage)
    if "-h" in opts:
        out(usage)
        return 0
    table, entry = port_entry(node, opts.get("-d", "mlx5_0"), opts.get("-p", "1"))
    if "-m" in opts:
        if opts["-m"] not in ("1", "2"):
            raise ToolError(f"Invalid RoCE mode: {opts['-m']} (1 or 2)\n", 1)
        entry["mode"] = int(opts["-m"])
        node.save("rdma_cm.json", table)
    out(MODES[entry["mode"]] + "\n")
    return 0


def rdma_cm_tos(node: Node, dev: str) -> int:
    """The ToS RDMA-CM applies to new connections on dev (for perftest -R)."""
    return int(node.load("rdma_cm.json", {}).get(dev, {}).get("1", {}).get("tos", 0))
