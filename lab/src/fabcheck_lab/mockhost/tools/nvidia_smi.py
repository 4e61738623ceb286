"""Mock ``nvidia-smi``: ``topo -m``, ``-L``, ``--query-gpu`` and ``-q`` rendered from the node topology.

``-q`` prints the sections host.gpu_health reads in the layout of a real 535 output (NVIDIA/DCGM issue
232, tests/data/real/host/nvidia-smi-q-a10g-535.txt): persistence mode, PCI, ECC mode and errors (SRAM
split into Parity and SEC-DED), retired pages (N/A: an H100 remaps rows instead), remapped rows. Each
GPU's error state is the node's ``gpu_health.json`` (GPU index -> counters; absent: a healthy GPU), which
the gpu-ecc fault writes.
"""

from __future__ import annotations

import time
from typing import Any

from .common import Node, ToolError, out

NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
    "latest NVIDIA driver is installed and running.\n"
)
BAD_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""

# field -> (csv header, unit appended to the value unless nounits)
QUERY_FIELDS: dict[str, tuple[str, str]] = {
    "index": ("index", ""),
    "name": ("name", ""),
    "gpu_name": ("name", ""),
    "pci.bus_id": ("pci.bus_id", ""),
    "gpu_bus_id": ("pci.bus_id", ""),
    "uuid": ("uuid", ""),
    "gpu_uuid": ("uuid", ""),
    "serial": ("serial", ""),
    "driver_version": ("driver_version", ""),
    "memory.total": ("memory.total [MiB]", " MiB"),
    "memory.used": ("memory.used [MiB]", " MiB"),
    "memory.free": ("memory.free [MiB]", " MiB"),
    "temperature.gpu": ("temperature.gpu", ""),
    "utilization.gpu": ("utilization.gpu [%]", " %"),
    "pstate": ("pstate", ""),
    "compute_cap": ("compute_cap", ""),
    "persistence_mode": ("persistence_mode", ""),
}


def link(a: dict[str, Any], b: dict[str, Any]) -> str:
    """PCIe distance between two devices from their switch and NUMA placement."""
    if a["switch"] == b["switch"]:
        return "PIX"
    return "NODE" if a["numa"] == b["numa"] else "SYS"


def gpu_gpu_link(node: Node, a: dict[str, Any], b: dict[str, Any]) -> str:
    nvlink = node.topology.get("nvlink")
    return str(nvlink) if nvlink else link(a, b)


def render_topo(node: Node) -> str:
    gpus, nics = node.gpus(), node.rdma_nics()
    labels = [f"GPU{g['index']}" for g in gpus] + [f"NIC{i}" for i in range(len(nics))]
    lines = ["\t" + "\t".join([*labels, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    devices = [("gpu", g) for g in gpus] + [("nic", n) for n in nics]
    for row, (kind, dev) in enumerate(devices):
        cells = []
        for col, (other_kind, other) in enumerate(devices):
            if row == col:
                cells.append(" X ")
            elif kind == other_kind == "gpu":
                cells.append(gpu_gpu_link(node, dev, other))
            else:
                cells.append(link(dev, other))
        if kind == "gpu":
            affinity = node.topology["cpu_affinity"][str(dev["numa"])]
            tail = f"\t{affinity}\t{dev['numa']}\t\tN/A"
        else:
            tail = "\t\t\t\t"
        lines.append(labels[row] + "".join("\t" + c for c in cells) + tail)
    text = "\n".join(lines) + "\n\n" + LEGEND
    if nics:
        text += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {n['name']}\n" for i, n in enumerate(nics))
    return text


def gpu_value(node: Node, gpu: dict[str, Any], field: str) -> str:
    topo = node.topology
    values = {
        "index": str(gpu["index"]),
        "name": gpu["name"],
        "pci.bus_id": gpu["bus_id"],
        "uuid": gpu["uuid"],
        "serial": gpu["serial"],
        "driver_version": topo["driver_version"],
        "memory.total": str(gpu["memory_mib"]),
        "memory.used": "0",
        "memory.free": str(gpu["memory_mib"] - 1),
        "temperature.gpu": "34",
        "utilization.gpu": "0",
        "pstate": "P0",
        "compute_cap": gpu["compute_cap"],
        "persistence_mode": "Enabled",
    }
    header = QUERY_FIELDS[field][0]
    return values[header.split(" ")[0]]


def query_gpu(node: Node, fields_arg: str, fmt: str | None) -> str:
    fields = [f.strip() for f in fields_arg.split(",") if f.strip()]
    for field in fields:
        if field not in QUERY_FIELDS:
            raise ToolError(f'Field "{field}" is not a valid field to query.\n\n', 2, stdout=True)
    if fmt is None:
        raise ToolError(BAD_ARGS, 2, stdout=True)
    options = {o.strip() for o in fmt.split(",")}
    if "csv" not in options or not options <= {"csv", "noheader", "nounits"}:
        raise ToolError(f'"{fmt}" is not a valid format.\n', 2, stdout=True)
    lines = []
    if "noheader" not in options:
        lines.append(", ".join(QUERY_FIELDS[f][0] for f in fields))
    for gpu in node.gpus():
        cells = []
        for field in fields:
            unit = "" if "nounits" in options else QUERY_FIELDS[field][1]
            cells.append(gpu_value(node, gpu, field) + unit)
        lines.append(", ".join(cells))
    return "\n".join(lines) + "\n"


def list_gpus(node: Node) -> str:
    return "".join(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n" for g in node.gpus())


def box_line(text: str) -> str:
    return "|" + text.ljust(89) + "|"


def gpu_rows(gpu: dict[str, Any]) -> list[str]:
    name = f"  {gpu['index']:>2}  {gpu['name']}"
    mem = f"{0:>8}MiB / {gpu['memory_mib']:>6}MiB "
    return [
        f"|{name}{'On  '.rjust(41 - len(name))}|   {gpu['bus_id']} Off |{'0'.rjust(21)} |",
        f"| N/A   34C    P0{'71W /  700W '.rjust(25)}|{mem}|{'0%'.rjust(8)}      Default |",
        f"|{' ' * 41}|{' ' * 24}|{'Disabled'.rjust(21)} |",
        SEPARATOR,
    ]


SEPARATOR = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
FULL_RULE = "+" + "-" * 89 + "+"


def render_summary(node: Node) -> str:
    """The default ``nvidia-smi`` table (driver/CUDA header, one block per GPU, no processes)."""
    topo = node.topology
    driver = topo["driver_version"]
    cuda = f"{topo['cuda_driver'] // 1000}.{topo['cuda_driver'] % 1000 // 10}"
    lines = [
        time.strftime("%a %b %e %H:%M:%S %Y") + " " * 7,
        FULL_RULE,
        "| "
        + f"NVIDIA-SMI {driver}".ljust(34)
        + f"Driver Version: {driver}".ljust(31)
        + f"CUDA Version: {cuda}".ljust(23)
        + "|",
        "|" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
    ]
    for gpu in node.gpus():
        lines += gpu_rows(gpu)
    lines += [
        "",
        FULL_RULE,
        box_line(" Processes:"),
        box_line("  GPU   GI   CI        PID   Type   Process name                              GPU Memory"),
        box_line("        ID   ID                                                               Usage"),
        "|" + "=" * 89 + "|",
        box_line("  No running processes found"),
        FULL_RULE,
    ]
    return "\n".join(lines) + "\n"


def option_value(args: list[str], name: str) -> tuple[str | None, list[str]]:
    """Take ``--name=value`` or ``--name value`` out of args."""
    rest, value = [], None
    it = iter(args)
    for arg in it:
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        elif arg == name:
            value = next(it, None)
            if value is None:
                raise ToolError(BAD_ARGS, 2, stdout=True)
        else:
            rest.append(arg)
    return value, rest


GPU_HEALTH = "gpu_health.json"
# Each GPU's NVLinks and fabric registration (written by prepare_node, changed by the nvlink-down and
# clique-mismatch faults): {"links": {gpu: [GB/s or null (inactive)]}, "fabric": {gpu: {...}}}.
NVLINK_STATE = "nvlink.json"
# No fabric: every field N/A and Health holding Bandwidth alone, as driver 550 prints it for an H100 NVL
# (tests/data/real/nvlink/nvidia-smi-q-h100-nvl-2gpu-550-fabric-na.txt).
NO_FABRIC = {"state": "N/A", "status": "N/A", "clique_id": "N/A", "cluster_uuid": "N/A", "bandwidth": "N/A"}
FIELD = 42  # the column of ' : ' in -q output: names padded to 38 after the 4-space indent
PRODUCT_ARCHITECTURE = {"9.0": "Hopper", "8.0": "Ampere", "8.6": "Ampere", "8.9": "Ada Lovelace"}


def health_of(node: Node, gpu: dict[str, Any]) -> dict[str, Any]:
    """The GPU's error state: counters since the driver loaded and the row remapper's."""
    state: dict[str, Any] = (node.load(GPU_HEALTH, {}) or {}).get(str(gpu["index"]), {})
    return state


def _tree(lines: list[tuple[int, str, str | None]]) -> list[str]:
    """(level, name, value) -> `-q` lines: four spaces a level, values at column FIELD after ' : '."""
    rendered = []
    for level, name, value in lines:
        label = " " * 4 * level + name
        rendered.append(label if value is None else f"{label.ljust(FIELD)}: {value}")
    return rendered


def gpu_query_block(node: Node, gpu: dict[str, Any]) -> list[str]:
    health = health_of(node, gpu)
    dram_unc = int(health.get("dram_uncorrectable", 0))
    bus = gpu["bus_id"]
    domain, bus_number, device = bus.split(".")[0].split(":")
    yes_no = {True: "Yes", False: "No"}
    ecc = [
        ("SRAM Correctable", "0"),
        ("SRAM Uncorrectable Parity", "0"),
        ("SRAM Uncorrectable SEC-DED", "0"),
        ("DRAM Correctable", "0"),
        ("DRAM Uncorrectable", str(dram_unc)),
    ]
    lines: list[tuple[int, str, str | None]] = [
        (1, "Product Name", gpu["name"]),
        (1, "Product Brand", "NVIDIA"),
        (1, "Product Architecture", PRODUCT_ARCHITECTURE.get(gpu["compute_cap"], "N/A")),
        (1, "Persistence Mode", "Enabled"),
        (1, "MIG Mode", None),
        (2, "Current", "Disabled"),
        (2, "Pending", "Disabled"),
        (1, "Serial Number", gpu["serial"]),
        (1, "GPU UUID", gpu["uuid"]),
        (1, "Minor Number", str(gpu["index"])),
        (1, "GPU Reset Status", None),
        (2, "Reset Required", "No"),
        (2, "Drain and Reset Recommended", "No"),
        (1, "PCI", None),
        (2, "Bus", f"0x{bus_number}"),
        (2, "Device", f"0x{device}"),
        (2, "Domain", f"0x{int(domain, 16):04X}"),
        (2, "Bus Id", bus),
        (1, "ECC Mode", None),
        (2, "Current", "Enabled"),
        (2, "Pending", "Enabled"),
        (1, "ECC Errors", None),
        (2, "Volatile", None),
        *((3, name, value) for name, value in ecc),
        (2, "Aggregate", None),
        *((3, name, value) for name, value in ecc),
        (3, "SRAM Threshold Exceeded", "No"),
        (1, "Retired Pages", None),
        (2, "Single Bit ECC", "N/A"),
        (2, "Double Bit ECC", "N/A"),
        (2, "Pending Page Blacklist", "N/A"),
        (1, "Remapped Rows", None),
        (2, "Correctable Error", "0"),
        (2, "Uncorrectable Error", str(int(health.get("remapped_uncorrectable", 0)))),
        (2, "Pending", yes_no[bool(health.get("remap_pending", False))]),
        (2, "Remapping Failure Occurred", "No"),
        (1, "Temperature", None),
        (2, "GPU Current Temp", "34 C"),
        *fabric_lines(node, gpu),
    ]
    return [f"GPU {bus}", *_tree(lines), ""]


def nvlink_state(node: Node) -> dict[str, Any]:
    state: dict[str, Any] = node.load(NVLINK_STATE, {}) or {}
    return state


def gpu_fabric(node: Node, gpu: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] | None = nvlink_state(node).get("fabric", {}).get(str(gpu["index"]))
    return found if found is not None else dict(NO_FABRIC)


def fabric_lines(node: Node, gpu: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    """The Fabric section, last in the GPU block as real outputs place it (before Processes): State,
    Status, CliqueId, ClusterUUID, Health > [Summary,] Bandwidth. A GB200 prints a Summary
    (kubernetes-sigs/dra-driver-nvidia-gpu issue 626), an HGX H100 on 565 Bandwidth alone
    (tests/data/real/nvlink/nvidia-smi-q-h100-sxm-8gpu-565-zero-uuid.txt): a fabric without
    "health_summary" prints no Summary line."""
    fabric = gpu_fabric(node, gpu)
    summary = fabric.get("health_summary")
    return [
        (1, "Fabric", None),
        (2, "State", str(fabric["state"])),
        (2, "Status", str(fabric["status"])),
        (2, "CliqueId", str(fabric["clique_id"])),
        (2, "ClusterUUID", str(fabric["cluster_uuid"])),
        (2, "Health", None),
        *([(3, "Summary", str(summary))] if summary is not None else []),
        (3, "Bandwidth", str(fabric["bandwidth"])),
    ]


def render_nvlink_status(node: Node) -> str:
    """`nvidia-smi nvlink -s`: per GPU `GPU i: <name> (UUID: ...)`, then one tab-indented line per link,
    `Link n: 26.562 GB/s` or `Link n: <inactive>` (bottlerocket-os/bottlerocket PR 4418,
    Azure/azhpc-diagnostics issue 73). A GPU without NVLink prints its header alone (unverified)."""
    links = nvlink_state(node).get("links", {})
    lines = []
    for gpu in node.gpus():
        lines.append(f"GPU {gpu['index']}: {gpu['name']} (UUID: {gpu['uuid']})")
        for number, rate in enumerate(links.get(str(gpu["index"]), [])):
            shown = "<inactive>" if rate is None else f"{rate:.3f} GB/s"
            lines.append(f"\t Link {number}: {shown}")
    return "".join(line + "\n" for line in lines)


def nvlink_command(node: Node, args: list[str]) -> str:
    """`nvidia-smi nvlink -s|--status`; other nvlink options are not mocked (refused as bad arguments)."""
    if args not in (["-s"], ["--status"]):
        raise ToolError(BAD_ARGS, 2, stdout=True)
    return render_nvlink_status(node)


def render_query(node: Node) -> str:
    """`nvidia-smi -q`: the log header, then one block per GPU in bus order."""
    topo = node.topology
    cuda = f"{topo['cuda_driver'] // 1000}.{topo['cuda_driver'] % 1000 // 10}"
    head = _tree(
        [
            (0, "Timestamp", time.strftime("%a %b %e %H:%M:%S %Y")),
            (0, "Driver Version", topo["driver_version"]),
            (0, "CUDA Version", cuda),
        ]
    )
    lines = ["", "==============NVSMI LOG==============", "", *head, ""]
    lines += _tree([(0, "Attached GPUs", str(len(node.gpus())))])
    for gpu in node.gpus():
        lines += gpu_query_block(node, gpu)
    return "\n".join(lines) + "\n"


def main(node: Node, args: list[str]) -> int:
    if not node.gpus():
        raise ToolError(NO_DRIVER, 9, stdout=True)
    if not args:
        out(render_summary(node))
        return 0
    if args in (["topo", "-m"], ["topo", "--matrix"]):
        out(render_topo(node))
        return 0
    if args in (["-q"], ["--query"]):
        out(render_query(node))
        return 0
    if args[0] == "nvlink":
        out(nvlink_command(node, args[1:]))
        return 0
    if args in (["-L"], ["--list-gpus"]):
        out(list_gpus(node))
        return 0
    fields, rest = option_value(args, "--query-gpu")
    fmt, rest = option_value(rest, "--format")
    if fields is not None and not rest:
        out(query_gpu(node, fields, fmt))
        return 0
    raise ToolError(BAD_ARGS, 2, stdout=True)
