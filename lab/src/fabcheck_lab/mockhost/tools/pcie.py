"""The mock host's PCIe tree, its `lspci`, and what the tree lets GPUDirect traffic carry.

The tree follows from the node's topology (topology.json), so it always agrees with `nvidia-smi topo -m`:
devices that share a `switch` id sit on the downstream ports of one PCIe switch (Broadcom PEX890xx) under
one root port; a device alone on its id sits directly on its own root port. Bus numbers come from the
devices' own buses: a switch over buses m..M has its root port on bus m-3, its upstream port on m-2 and
its downstream ports on m-1 (device 2k for the k-th member); a lone device on bus b has its root port
on bus b-1. Per-function changes (a fault's trained link, ACS control bits) live in pcie.json.

`lspci` prints the pciutils 3.10 format (pciutils/pciutils ls-caps.c, ls-ecaps.c, lspci.c, ls-tree.c at
0f5b941aa5cf8b1b126ff3e4176b1c32b2158289; names from pciutils/pciids pci.ids at
c1c12547d626ebf05fd0223144ad87fab5e95d06), a subset of the capabilities: Express, AER, ACS, ATS.
"""

from __future__ import annotations

import getopt
import os
from typing import Any

from .common import Node, ToolError, out, read_attribute

STATE_FILE = "pcie.json"  # bdf -> {"acs_control": [flag, ...]}: the ACS control a fault changed
# The node's /sys/bus/pci/devices (a folder of its state folder, bound there by nodeinit.py): per function
# the AER counters and the link attributes the kernel keeps, which are the trained links lspci shows.
PCI_DEVICES_DIR = "sys_bus_pci_devices"
LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")

ROOT_PORT = ("PCI bridge", "Intel Corporation Device 352a", "04")
SWITCH_PORT = ("PCI bridge", "Broadcom / LSI PEX890xx PCIe Gen 5 Switch", "b0")
BRIDGE_PROG_IF = " (prog-if 00 [Normal decode])"  # printed with -v only (lspci.c show_terse)
SWITCH_SUBSYSTEM = "Broadcom / LSI PEX89048 PCIe Gen 5 48 port/lane Switch Upstream/Downstream Port"
GPU_NAMES = ("3D controller", "NVIDIA Corporation GH100 [H100 SXM5 80GB]", "a1")
NIC_NAMES = ("Ethernet controller", "Mellanox Technologies MT2910 Family [ConnectX-7]", "")
IB_NAMES = ("Infiniband controller", "Mellanox Technologies MT2910 Family [ConnectX-7]", "")
NIC_SUBSYSTEM = "Mellanox Technologies Device 0051"

GEN5_X16 = (32.0, 16)
# An H100 at idle trains its link down to 2.5 GT/s and back up under load (NVIDIA/open-gpu-kernel-modules
# issue 731); the width stays. The mock shows the idle state: a check must not call it degraded.
GPU_IDLE_SPEED = 2.5
ACS_FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
ACS_CAPABLE = frozenset({"SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd"})
# The kernel enables ACS on root ports when an IOMMU driver is present (pci_request_acs); the switch's
# downstream ports have it off, as NVIDIA's NCCL troubleshooting asks for GPUDirect.
ROOT_PORT_ACS = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd")
ACS_REDIRECT = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd")

# What a link carries, derived (not measured): GT/s x lanes x line coding (8b/10b up to Gen2, 128b/130b
# from Gen3) x TLP efficiency at MaxPayload 256 bytes with 24 bytes of header, sequence, LCRC and framing.
MAX_PAYLOAD = 256
TLP_OVERHEAD = 24
# Peer-to-peer traffic that ACS redirects goes up through the root complex and down again. Lab model
# figure, no public measurement behind it: well below a Gen5 x16 link, so the NCCL stage sees the drop.
ROOT_COMPLEX_P2P_GBPS = 100.0


def bus_of(bdf: str) -> int:
    return int(bdf.split(":")[1], 16)


def bdf(bus: int, device: int = 0, function: int = 0) -> str:
    return f"0000:{bus:02x}:{device:02x}.{function}"


def endpoint(kind: str, device: dict[str, Any], address: str) -> dict[str, Any]:
    return {"bdf": address, "kind": kind, "device": device, "numa": device["numa"], "cap": list(GEN5_X16)}


def endpoints(topology: dict[str, Any]) -> list[dict[str, Any]]:
    found = [endpoint("gpu", gpu, gpu["bus_id"].lower()[4:]) for gpu in topology.get("gpus", [])]
    found += [endpoint("nic", nic, nic["pci"]) for nic in topology.get("nics", [])]
    return found


def functions_of(topology: dict[str, Any]) -> list[dict[str, Any]]:
    """Every PCIe function of the node's factory tree, in BDF order (lspci's order)."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for device in endpoints(topology):
        groups.setdefault(device["device"]["switch"], []).append(device)
    functions: list[dict[str, Any]] = []
    for members in groups.values():
        members.sort(key=lambda d: bus_of(d["bdf"]))
        low, high = bus_of(members[0]["bdf"]), bus_of(members[-1]["bdf"])
        numa = members[0]["numa"]
        if len(members) == 1:
            root = {"bdf": bdf(low - 1, 1), "kind": "root_port", "secondary": low, "subordinate": low}
            functions += [root | {"numa": numa, "cap": list(GEN5_X16)}, members[0]]
            continue
        bridges = [
            {"bdf": bdf(low - 3, 1), "kind": "root_port", "secondary": low - 2, "subordinate": high},
            {"bdf": bdf(low - 2), "kind": "switch_up", "secondary": low - 1, "subordinate": high},
        ]
        for k, member in enumerate(members):
            bus = bus_of(member["bdf"])
            bridges.append(
                {"bdf": bdf(low - 1, 2 * k), "kind": "switch_down", "secondary": bus, "subordinate": bus}
            )
        functions += [b | {"numa": numa, "cap": list(GEN5_X16)} for b in bridges] + members
    functions.sort(key=lambda f: f["bdf"])
    for group, function in enumerate(functions, start=20):
        function["iommu_group"] = group
    return functions


def factory_status(function: dict[str, Any]) -> list[float]:
    speed, width = function["cap"]
    return [GPU_IDLE_SPEED if function["kind"] == "gpu" else speed, width]


def factory_links(functions: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each function's trained link at the factory; the port above a device trains the same link, so it
    shows the device's status (a GPU's idle speed included)."""
    links = {f["bdf"]: factory_status(f) for f in functions}
    ports = {f["secondary"]: f["bdf"] for f in functions if f["kind"] in ("root_port", "switch_down")}
    for function in functions:
        port = ports.get(bus_of(function["bdf"]))
        if port is not None and function["kind"] == "gpu":
            links[port] = list(links[function["bdf"]])
    return links


def sysfs_speed(speed: float) -> str:
    """`current_link_speed` as kernels from 5.7 print it (NVIDIA/nccl src/graph/topo.cc kvDictPciGen at
    069a3d4f95ca488dc63ba7ae659a2db77942a62e reads both spellings: `32.0 GT/s PCIe`, older `32 GT/s`)."""
    return f"{speed:.1f} GT/s PCIe"


def link_files(function: dict[str, Any], status: list[float]) -> dict[str, str]:
    (cap_speed, cap_width), (speed, width) = function["cap"], status
    values = (sysfs_speed(speed), str(width), sysfs_speed(cap_speed), str(cap_width))
    return dict(zip(LINK_FILES, values, strict=True))


def trained_link(node: Node, address: str) -> list[float] | None:
    """The link the node's sysfs says the function trained at (None: no such files)."""
    folder = node.state / PCI_DEVICES_DIR / address
    speed = read_attribute(str(folder / "current_link_speed"))
    width = read_attribute(str(folder / "current_link_width"))
    if speed is None or width is None:
        return None
    return [float(speed.split()[0]), int(width)]


def tree(node: Node) -> list[dict[str, Any]]:
    """The node's functions with their trained links (its sysfs, else the factory's: a function a fault
    moved into the tree has no files) and ACS control (pcie.json over the factory's)."""
    changes = node.load(STATE_FILE, {}) or {}
    functions = functions_of(node.topology)
    factory = factory_links(functions)
    by_bus = {f["secondary"]: f for f in functions if "secondary" in f}
    for function in functions:
        function["parent"] = by_bus.get(bus_of(function["bdf"]), {}).get("bdf")
        function["status"] = trained_link(node, function["bdf"]) or factory[function["bdf"]]
        if function["kind"] in ("root_port", "switch_down"):
            acs = ROOT_PORT_ACS if function["kind"] == "root_port" else ()
            function["acs"] = list(changes.get(function["bdf"], {}).get("acs_control", acs))
    return functions


# --- lspci ---------------------------------------------------------------------------------------------
def flags(names: tuple[str, ...], enabled: Any) -> str:
    return " ".join(f"{name}{'+' if name in enabled else '-'}" for name in names)


def speed_text(speed: float) -> str:
    return f"{speed:g}GT/s"


def compare(kind: str, status: float, capability: float) -> str:
    """pciutils link_compare(): no suffix when equal, and none at all on root and downstream ports."""
    if status > capability:
        return " (overdriven)"
    if status == capability or kind in ("root_port", "switch_down"):
        return ""
    return " (downgraded)"


PORT_TYPES = {
    "root_port": "Root Port (Slot+)",
    "switch_up": "Upstream Port",
    "switch_down": "Downstream Port (Slot+)",
    "gpu": "Endpoint",
    "nic": "Endpoint",
}
DRIVERS = {
    "root_port": ("pcieport", ""),
    "switch_up": ("pcieport", ""),
    "switch_down": ("pcieport", ""),
    "gpu": ("nvidia", "nvidiafb, nouveau, nvidia_drm, nvidia"),
    "nic": ("mlx5_core", "mlx5_core"),
}


def names_of(function: dict[str, Any]) -> tuple[str, str, str]:
    """(class, vendor and device name, revision or "") as pci.ids names them."""
    kind = function["kind"]
    if kind == "root_port":
        return ROOT_PORT
    if kind in ("switch_up", "switch_down"):
        return SWITCH_PORT
    if kind == "gpu":
        return GPU_NAMES
    return IB_NAMES if function["device"].get("link_layer") == "InfiniBand" else NIC_NAMES


def subsystem_of(function: dict[str, Any]) -> str:
    kind = function["kind"]
    if kind == "root_port":
        return "Intel Corporation Device 0000"
    if kind in ("switch_up", "switch_down"):
        return SWITCH_SUBSYSTEM
    if kind == "gpu":
        return "NVIDIA Corporation Device 16c1"
    return NIC_SUBSYSTEM


def express_lines(function: dict[str, Any]) -> list[str]:
    kind = function["kind"]
    (cap_speed, cap_width), (speed, width) = function["cap"], function["status"]
    port = int(function["bdf"][8:10], 16) if kind in ("root_port", "switch_down") else 0
    rcb = " RCB 64 bytes," if kind in ("root_port", "gpu", "nic") else ""
    return [
        f"\tCapabilities: [40] Express (v2) {PORT_TYPES[kind]}, MSI 00",
        f"\t\tDevCap:\tMaxPayload {MAX_PAYLOAD} bytes, PhantFunc 0"
        + (", Latency L0s unlimited, L1 unlimited" if kind in ("gpu", "nic") else ""),
        "\t\t\tExtTag+ RBE+" + (" FLReset+" if kind in ("gpu", "nic") else ""),
        "\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq-",
        "\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+",
        f"\t\t\tMaxPayload {MAX_PAYLOAD} bytes, MaxReadReq 4096 bytes",
        "\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-",
        f"\t\tLnkCap:\tPort #{port}, Speed {speed_text(cap_speed)}, Width x{cap_width}, ASPM not supported",
        "\t\t\tClockPM- Surprise- LLActRep+ BwNot+ ASPMOptComp+",
        f"\t\tLnkCtl:\tASPM Disabled;{rcb} Disabled- CommClk+",
        "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
        f"\t\tLnkSta:\tSpeed {speed_text(speed)}{compare(kind, speed, cap_speed)}, "
        f"Width x{width}{compare(kind, width, cap_width)}",
        "\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-",
    ]


AER_LINES = (
    "\tCapabilities: [100 v2] Advanced Error Reporting",
    "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
    "\t\tUEMsk:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
    "\t\tUESvrt:\tDLP+ SDES+ TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-",
    "\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-",
    "\t\tCEMsk:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr+",
)


def function_lines(function: dict[str, Any], verbose: int, domain: bool, root: bool) -> list[str]:
    kind = function["kind"]
    cls, name, revision = names_of(function)
    address = function["bdf"] if domain else function["bdf"][5:]
    bridge = kind in ("root_port", "switch_up", "switch_down")
    rev = f" (rev {revision})" if revision else ""
    lines = [f"{address} {cls}: {name}{rev}{BRIDGE_PROG_IF if bridge and verbose else ''}"]
    if verbose == 0:
        return lines
    lines += [
        f"\tSubsystem: {subsystem_of(function)}",
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- "
        "DisINTx+",
        "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- "
        "INTx-",
        "\tLatency: 0" + (", Cache Line Size: 32 bytes" if not bridge else ""),
    ]
    if verbose > 1:
        lines += [f"\tNUMA node: {function['numa']}", f"\tIOMMU group: {function['iommu_group']}"]
    if bridge:
        lines.append(
            f"\tBus: primary={bus_of(function['bdf']):02x}, secondary={function['secondary']:02x}, "
            f"subordinate={function['subordinate']:02x}, sec-latency=0"
        )
    if not root:  # pciutils: the capability list is in the config space only root may read
        lines.append("\tCapabilities: <access denied>")
    elif verbose < 2:
        lines.append(f"\tCapabilities: [40] Express {PORT_TYPES[kind]}, MSI 00")
    else:
        lines += express_lines(function) + list(AER_LINES)
        if "acs" in function:
            lines += [
                "\tCapabilities: [180 v1] Access Control Services",
                f"\t\tACSCap:\t{flags(ACS_FLAGS, ACS_CAPABLE)}",
                f"\t\tACSCtl:\t{flags(ACS_FLAGS, function['acs'])}",
            ]
        if kind in ("gpu", "nic"):
            lines += [
                "\tCapabilities: [1c0 v1] Address Translation Service (ATS)",
                "\t\tATSCap:\tInvalidate Queue Depth: 00",
                "\t\tATSCtl:\tEnable-, Smallest Translation Unit: 00",
            ]
    driver, modules = DRIVERS[kind]
    lines.append(f"\tKernel driver in use: {driver}")
    if modules:
        lines.append(f"\tKernel modules: {modules}")
    return lines


def selector(text: str) -> tuple[str | None, str | None, str | None, str | None]:
    """lspci -s [[[[<domain>]:]<bus>]:][<device>][.[<func>]]; an empty part matches anything."""
    head, _, func = text.partition(".")
    parts = head.split(":")
    if len(parts) > 3:
        raise ToolError("lspci: -s: Invalid slot number\n", 1)
    parts = [""] * (3 - len(parts)) + parts
    domain, bus, device = (p or None for p in parts)
    return domain, bus, device, func or None


def matches(address: str, wanted: tuple[str | None, str | None, str | None, str | None]) -> bool:
    domain, bus, rest = address.split(":")
    device, func = rest.split(".")
    have = (int(domain, 16), int(bus, 16), int(device, 16), int(func, 16))
    return all(w is None or int(w, 16) == h for w, h in zip(wanted, have, strict=True))


def lspci(node: Node, args: list[str]) -> int:
    """`lspci [-D] [-v|-vv|-vvv] [-s SLOT]` and `lspci -t[v]`; other options are not modelled and say so."""
    try:
        options, rest = getopt.getopt(args, "Dvs:t")
    except getopt.GetoptError as exc:
        raise ToolError(f"lspci: {exc.msg} (the lab's mock lspci knows -D, -v, -s, -t)\n", 2) from None
    if rest:
        raise ToolError(f"lspci: Unknown argument {rest[0]!r}\n", 2)
    verbose = sum(1 for flag, _ in options if flag == "-v")
    if any(flag == "-t" for flag, _ in options):
        if any(flag == "-s" for flag, _ in options):
            raise ToolError("lspci: -s with -t is not modelled by the lab's mock lspci\n", 2)
        out(tree_text(tree(node), verbose > 0))
        return 0
    domain = any(flag == "-D" for flag, _ in options)
    slots = [selector(value) for flag, value in options if flag == "-s"]
    root = os.geteuid() == 0
    blocks = []
    for function in tree(node):
        if slots and not matches(function["bdf"], slots[-1]):
            continue
        blocks.append("\n".join(function_lines(function, verbose, domain, root)) + "\n")
    if blocks:
        out(("\n" if verbose else "").join(blocks) + ("\n" if verbose else ""))
    return 0


# --- lspci -t (pciutils ls-tree.c: show_forest, show_tree_bridge, show_tree_bus, show_tree_dev) ------
class TreeLine:
    """ls-tree.c's line buffer: text is written at a position; printing a line turns what was printed
    into the prefix of the next one (`+` and `|` become `|`, anything else a space)."""

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.printed: list[str] = []

    def put(self, at: int, text: str) -> int:
        self.chars[at:] = list(text)
        return at + len(text)

    def emit(self, at: int) -> None:
        del self.chars[at:]
        self.printed.append("".join(self.chars))
        self.chars = ["|" if c in "+|" else " " for c in self.chars]


def tree_text(functions: list[dict[str, Any]], verbose: bool) -> str:
    """The forest of one domain (all lab functions are in 0000): its root buses, then each bridge's
    secondary bus with the devices on it, in BDF order."""
    on_bus: dict[int, list[dict[str, Any]]] = {}
    for function in functions:
        on_bus.setdefault(bus_of(function["bdf"]), []).append(function)
    below = {f["secondary"] for f in functions if "secondary" in f}
    roots = sorted(bus for bus in on_bus if bus not in below)
    line = TreeLine()

    def device(function: dict[str, Any], at: int) -> None:
        at = line.put(at, function["bdf"][8:])
        if "secondary" in function:
            low, high = function["secondary"], function["subordinate"]
            at = line.put(at, f"-[{low:02x}]-" if low == high else f"-[{low:02x}-{high:02x}]-")
            at = line.put(at, "-")
            bus(on_bus.get(low, []), at)
            return
        if verbose:
            at = line.put(at, f"  {names_of(function)[1]}")
        line.emit(at)

    def bus(devices: list[dict[str, Any]], at: int) -> None:
        if not devices:
            line.emit(at)
        elif len(devices) == 1:
            device(devices[0], line.put(at, "--"))
        else:
            for index, function in enumerate(devices):
                device(function, line.put(at, "\\-" if index == len(devices) - 1 else "+-"))

    at = line.put(0, "-")
    for index, number in enumerate(roots):
        label = f"[0000:{number:02x}]-"
        prefix = "" if len(roots) == 1 else ("\\-" if index == len(roots) - 1 else "+-")
        bus(on_bus[number], line.put(at, prefix + label))
    return "".join(text + "\n" for text in line.printed)


# --- what the tree carries -----------------------------------------------------------------------------
def link_gbps(speed: float, width: int) -> float:
    coding = 0.8 if speed <= 5.0 else 128 / 130
    return speed * width * coding * MAX_PAYLOAD / (MAX_PAYLOAD + TLP_OVERHEAD)


def function_by(functions: list[dict[str, Any]], address: str | None) -> dict[str, Any] | None:
    return next((f for f in functions if f["bdf"] == address), None)


def upstream(functions: list[dict[str, Any]], address: str) -> list[dict[str, Any]]:
    chain, current = [], function_by(functions, address)
    while current is not None and current["parent"] is not None:
        current = function_by(functions, current["parent"])
        if current is not None:
            chain.append(current)
    return chain


def nic_host_gbps(functions: list[dict[str, Any]], nic: dict[str, Any]) -> float:
    """What the NIC can move to and from host memory: its own link and the switch's uplink."""
    own = function_by(functions, nic["pci"])
    if own is None:
        return float("inf")
    links = [own] + [f for f in upstream(functions, own["bdf"]) if f["kind"] == "switch_up"]
    return min(link_gbps(*f["status"]) for f in links)


def gdr_gbps(functions: list[dict[str, Any]], gpu: dict[str, Any], nic: dict[str, Any]) -> float:
    """What GPUDirect RDMA between the GPU and the NIC can carry: both links (the GPU's at the speed it
    trains to under load), capped by the root complex where ACS redirects peer-to-peer on a bridge."""
    address = gpu["bus_id"].lower()[4:]
    own = function_by(functions, address)
    carried = nic_host_gbps(functions, nic)
    if own is None:
        return carried
    carried = min(carried, link_gbps(own["cap"][0], own["status"][1]))
    redirecting = [
        b
        for b in p2p_path(functions, address, nic["pci"])
        if {"ReqRedir", "CmpltRedir"} & set(b.get("acs", ()))
    ]
    if redirecting:
        carried = min(carried, ROOT_COMPLEX_P2P_GBPS)
    return carried


def p2p_path(functions: list[dict[str, Any]], a: str, b: str) -> list[dict[str, Any]]:
    """The bridges peer-to-peer traffic from a to b crosses below the root complex (as PcieTree.path in
    fabcheck/parsers/bus_records.py): up to the lowest bridge above both, then down. None shared: empty,
    the traffic goes through the root complex whatever ACS says."""
    above_a, above_b = upstream(functions, a), upstream(functions, b)
    shared = [bridge["bdf"] for bridge in above_b]
    for index, bridge in enumerate(above_a):
        if bridge["bdf"] in shared:
            return above_a[: index + 1] + list(reversed(above_b[: shared.index(bridge["bdf"])]))
    return []


def carried_gbps(node: Node, nic: dict[str, Any], gpu_index: int | None = None) -> float:
    """The NIC's PCIe ceiling for one transfer: host memory, or the GPU with that index (GPUDirect)."""
    functions = tree(node)
    gpu = next((g for g in node.gpus() if g["index"] == gpu_index), None)
    return nic_host_gbps(functions, nic) if gpu is None else gdr_gbps(functions, gpu, nic)
