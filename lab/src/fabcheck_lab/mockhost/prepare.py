"""Controller side of the mock hosts: install the tool executables and write a node's factory state."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fabcheck_lab import wire_model

from .layout import CMDLINE_FILE, MOCK_STATE_MOUNT, PCI_DEVICES_DIR, MockNodePaths
from .profiles import HOST_PROFILES, NVL_DEFAULT_TRAYS, fabric_for, nvlinks_for, topology_for
from .tools import CLIENT, DISPATCHER, SERVED_TOOLS, SOCKET_NAME, TOOL_NAMES
from .tools.nvidia_smi import NVLINK_STATE
from .tools.pcie import STATE_FILE as PCIE_STATE_FILE
from .tools.pcie import factory_links, functions_of, link_files

__all__ = ["HOST_PROFILES", "install_tools", "prepare_node"]

SYSTEM_PYTHON = "/usr/bin/python3"
TOOLS_DIR = Path(__file__).parent / "tools"
WIRE_MODEL = Path(__file__).parents[1] / "wire_model.py"
IB_FABRIC = Path(__file__).parents[1] / "ib_fabric.py"
ZIP_PACKAGE = "fabcheck_mock"
BOOTSTRAP = "import sys\nfrom fabcheck_mock.dispatch import main\nsys.exit(main())\n"

IPOIB_BROADCAST = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
NP_DEFAULTS = {"cnp_dscp": 48, "cnp_802p_prio": 6, "min_time_between_cnps": 4}
RP_DEFAULTS = {
    "clamp_tgt_rate": 0,
    "clamp_tgt_rate_ati": 1,
    "rpg_time_reset": 300,
    "rpg_byte_reset": 32767,
    "rpg_threshold": 1,
    "rpg_max_rate": 0,
    "rpg_ai_rate": 5,
    "rpg_hai_rate": 50,
    "rpg_gd": 11,
    "rpg_min_dec_fac": 50,
    "rpg_min_rate": 1,
    "rate_to_set_on_first_cnp": 0,
    "dce_tcp_g": 1019,
    "dce_tcp_rtt": 1,
    "rate_reduce_monitor_period": 4,
    "initial_alpha_value": 1023,
}
OPENSM_DEFAULTS = (
    ("guid", "0x0000000000000000"),
    ("sm_priority", "0"),
    ("lmc", "0"),
    ("sweep_interval", "10"),
    ("routing_engine", "(null)"),
    ("subnet_prefix", "0xfe80000000000000"),
    ("sminfo_polling_timeout", "10000"),
    ("polling_retry_number", "4"),
    ("ignore_other_sm", "FALSE"),
    ("qos", "FALSE"),
    ("qos_policy_file", "/etc/opensm/qos-policy.conf"),
    ("partition_config_file", "/etc/opensm/partitions.conf"),
    ("log_file", "/var/log/opensm.log"),
)


def zipapp_bytes() -> bytes:
    """The tools package as one zip application (runs with ``python3 -IS``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__main__.py", BOOTSTRAP)
        for source in sorted(TOOLS_DIR.glob("*.py")):
            archive.write(source, f"{ZIP_PACKAGE}/{source.name}")
        # The tools run with `python3 -IS` on the node, where fabcheck_lab is not importable: the one lab
        # module they share with the mock switches goes into the package (tools/wire.py imports it).
        archive.write(WIRE_MODEL, f"{ZIP_PACKAGE}/wire_model.py")
        archive.write(IB_FABRIC, f"{ZIP_PACKAGE}/ib_fabric.py")  # tools/ib_diags.py renders the lab's fabric
    return f"#!{SYSTEM_PYTHON} -IS\n".encode() + buffer.getvalue()


CLIENT_SOURCE = Path(__file__).parent / "client.c"
NODE_SOCKET = f"{MOCK_STATE_MOUNT}/{SOCKET_NAME}"
COMPILE_TIMEOUT_S = 120.0  # a loaded 2-core machine; the real cost is ~0.2 s of CPU


def compile_client(target: Path, socket_path: str = NODE_SOCKET) -> str | None:
    """Build the C client of the tool server at target; None when built, else why not."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return "no C compiler (cc) on this machine"
    if '"' in socket_path or "\\" in socket_path:
        return f"socket path {socket_path!r} cannot be compiled in"
    tmp = target.with_name(f".{target.name}.tmp")
    argv = [compiler, "-O2", "-s", f'-DSOCKET_PATH="{socket_path}"', "-o", str(tmp), str(CLIENT_SOURCE)]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{compiler} failed: {err}"
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        return f"{compiler} failed: {(result.stderr or result.stdout).strip()[:300]}"
    os.replace(tmp, target)
    return None


def install_tools(bin_dir: Path, *, client_socket: str | None = None) -> str | None:
    """Write the dispatcher and one symlink per tool name into bin_dir (later /usr/local/bin).

    With client_socket, the served tools are linked to the C client of the tool server listening there
    instead (built here); returns why that could not be done (the tools then all use the dispatcher).
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / DISPATCHER
    tmp = bin_dir / f".{DISPATCHER}.tmp"
    tmp.write_bytes(zipapp_bytes())
    tmp.chmod(0o755)
    os.replace(tmp, target)
    problem = None if client_socket is None else compile_client(bin_dir / CLIENT, client_socket)
    served = client_socket is not None and problem is None
    for name in TOOL_NAMES:
        link = bin_dir / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(CLIENT if served and name in SERVED_TOOLS else DISPATCHER)
    return problem


def write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{value}\n")


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def write_netdev(sys_class: Path, nic: dict[str, Any], ifindex: int) -> None:
    net = sys_class / "net" / nic["netdev"]
    infiniband = nic["link_layer"] == "InfiniBand"
    guid = nic["node_guid"].replace(":", "")
    address = "00:00:10:87:fe:80:00:00:00:00:00:00:" + ":".join(guid[i : i + 2] for i in range(0, 16, 2))
    values = {
        "mtu": 2044 if infiniband else 1500,
        "address": address if infiniband else nic["mac"],
        "broadcast": IPOIB_BROADCAST if infiniband else "ff:ff:ff:ff:ff:ff",
        "operstate": "up",
        "carrier": 1,
        "type": 32 if infiniband else 1,
        "ifindex": ifindex,
        "speed": nic["rate_gbps"] * 1000,
    }
    for name, value in values.items():
        write(net / name, value)
    write(net / "device" / "numa_node", nic["numa"])
    (net / "device" / "infiniband" / nic["name"]).mkdir(parents=True, exist_ok=True)
    if infiniband:
        return
    for point in ("roce_np", "roce_rp"):
        for prio in range(8):
            write(net / "ecn" / point / "enable" / str(prio), 1)
    for name, value in NP_DEFAULTS.items():
        write(net / "ecn" / "roce_np" / name, value)
    for name, value in RP_DEFAULTS.items():
        write(net / "ecn" / "roce_rp" / name, value)


def gid_table(nic: dict[str, Any]) -> list[tuple[str, str]]:
    """(gid, type) per index: link-local v1/v2 then IPv4-mapped v1/v2 on RoCE; one GID on IB."""
    if nic["link_layer"] == "InfiniBand":
        return [(nic["link_local_gid"], "IB/RoCE v1")]
    return [
        (nic["link_local_gid"], "IB/RoCE v1"),
        (nic["link_local_gid"], "RoCE v2"),
        (nic["ipv4_gid"], "IB/RoCE v1"),
        (nic["ipv4_gid"], "RoCE v2"),
    ]


def write_rdma_device(sys_class: Path, nic: dict[str, Any]) -> None:
    dev = sys_class / "infiniband" / nic["name"]
    infiniband = nic["link_layer"] == "InfiniBand"
    for name, value in {
        "node_guid": nic["node_guid"],
        "sys_image_guid": nic["node_guid"],
        "fw_ver": nic["fw"],
        "hca_type": nic["ca_type"],
        "board_id": nic["board_id"],
        "hw_rev": "0x0",
        "node_type": "1: CA",
    }.items():
        write(dev / name, value)
    (dev / "device" / "net" / nic["netdev"]).mkdir(parents=True, exist_ok=True)
    port = dev / "ports" / "1"
    for name, value in {
        "state": "4: ACTIVE",
        "phys_state": "5: LinkUp",
        "rate": f"{nic['rate_gbps']} Gb/sec (4X NDR)",
        "link_layer": nic["link_layer"],
        "lid": f"{nic['lid']:#x}",
        "sm_lid": "0x1" if infiniband else "0x0",
        "lid_mask_count": 0,
        "cap_mask": "0xa751e848" if infiniband else "0x04010000",
    }.items():
        write(port / name, value)
    for index, (gid, gid_type) in enumerate(gid_table(nic)):
        write(port / "gids" / str(index), gid)
        write(port / "gid_attrs" / "types" / str(index), gid_type)
        if not infiniband:
            write(port / "gid_attrs" / "ndevs" / str(index), nic["netdev"])
    # RDMA hw_counters as mlx5 exposes them (host probe rdma_hw_counters); the mock loses nothing.
    for name in (
        "out_of_sequence",
        "packet_seq_err",
        "local_ack_timeout_err",
        "np_ecn_marked_roce_packets",
        "np_cnp_sent",
        "rp_cnp_handled",
    ):
        write(port / "hw_counters" / name, 0)
    if not infiniband:
        write(dev / "tc" / "1" / "traffic_class", "Global tclass=0")


def write_opensm_conf(etc: Path) -> None:
    lines = ["# OpenSM configuration (mock lab factory defaults)"]
    lines += [f"{key} {value}" for key, value in OPENSM_DEFAULTS]
    write(etc / "opensm" / "opensm.conf", "\n".join(lines))


def write_state(paths: MockNodePaths, info: dict[str, Any], topology: dict[str, Any]) -> None:
    has_gpus = bool(topology["gpus"])
    modules = {
        "mlx5_core": True,
        "mlx5_ib": True,
        "ib_core": True,
        "ib_uverbs": True,
        "nvidia": has_gpus,
        "nvidia_peermem": False,
    }
    available = [name for name in modules if has_gpus or not name.startswith("nvidia")]
    write_json(paths.state / "node.json", info)
    write_json(paths.state / "topology.json", topology)
    write_json(paths.state / "modules.json", modules)
    write_json(paths.state / "modules_available.json", available)
    if info["profile"] == "sm":
        write_json(paths.state / "opensm.json", {"enabled": False, "pid": 0, "started": 0.0})
    for nic in topology["nics"]:  # each NIC port's wire (mockhost.tools.wire): a clean link, up from now
        write_json(paths.state / "wire" / f"{nic['netdev']}.json", wire_model.fresh_state())


def prepare_node(
    paths: MockNodePaths,
    *,
    name: str,
    profile: str,
    index: int,
    address: str,
    peers: Mapping[str, str],
    trays: int = NVL_DEFAULT_TRAYS,
) -> None:
    """Write a node's factory state: trust pcp, PFC off, ToS 0, MTU 1500, peermem unloaded, DCQCN on."""
    topology = topology_for(profile, index)
    info = {"name": name, "profile": profile, "index": index, "address": address, "peers": dict(peers)}
    for folder in (paths.state, paths.sys_class):
        if folder.exists():
            shutil.rmtree(folder)
    for folder in (paths.root, paths.upper, paths.state, paths.sys_class):
        folder.mkdir(parents=True, exist_ok=True)
    write_state(paths, info, topology)
    for ifindex, nic in enumerate(topology["nics"], start=2):
        write_netdev(paths.sys_class, nic, ifindex)
        write_rdma_device(paths.sys_class, nic)
    if profile == "sm":
        write_opensm_conf(paths.etc)
    write_pcie_state(paths, topology)
    write_nvlink_state(paths, profile, index, topology, trays)


# The NVLink services' packages as a host has them installed, neither enabled nor started (the role
# `nvlink` does that): the unit file under /usr/lib/systemd/system (never /lib: on a merged-/usr machine
# /lib is a symlink the overlay's upper layer must not shadow) and IMEX's config.cfg with the documented
# defaults (SERVER_PORT 50000, IMEX_NODE_CONFIG_FILE; kubernetes-sigs/dra-driver-nvidia-gpu
# templates/compute-domain-daemon-config.tmpl.cfg). nodes_config.cfg is absent until the role writes it.
# ExecStart names the mock daemon in the node's /usr/local/bin, where the lab mounts its tools.
SYSTEM_UNITS = Path("usr/lib/systemd/system")
IMEX_UNIT = """[Unit]
Description=NVIDIA IMEX service
After=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/bin/nvidia-imex -c /etc/nvidia-imex/config.cfg
Restart=no

[Install]
WantedBy=multi-user.target
"""
IMEX_CONFIG = """# IMEX configuration (package defaults)
SERVER_PORT=50000
IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg
IMEX_WAIT_FOR_QUORUM=RECOVERY
"""
FABRIC_MANAGER_UNIT = """[Unit]
Description=NVIDIA fabric manager service
After=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
Restart=no

[Install]
WantedBy=multi-user.target
"""


def write_nvlink_state(
    paths: MockNodePaths, profile: str, index: int, topology: dict[str, Any], trays: int = NVL_DEFAULT_TRAYS
) -> None:
    """Every GPU's NVLinks all active at the profile's rate and its fabric registered (nvidia-smi
    nvlink -s / -q), and the NVLink service the platform has: IMEX on a tray, fabric manager on HGX."""
    nvlinks, fabric = nvlinks_for(profile), fabric_for(profile, index, trays)
    gpus = [str(gpu["index"]) for gpu in topology["gpus"]]
    state = {
        "links": {gpu: [nvlinks[1]] * nvlinks[0] for gpu in gpus} if nvlinks else {},
        "fabric": {gpu: dict(fabric) for gpu in gpus} if fabric else {},
    }
    write_json(paths.state / NVLINK_STATE, state)
    if profile == "nvl":
        write(paths.upper / SYSTEM_UNITS / "nvidia-imex.service", IMEX_UNIT.rstrip())
        write(paths.etc / "nvidia-imex" / "config.cfg", IMEX_CONFIG.rstrip())
    elif nvlinks:
        write(paths.upper / SYSTEM_UNITS / "nvidia-fabricmanager.service", FABRIC_MANAGER_UNIT.rstrip())


# The AER counters of one function (torvalds/linux Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats
# at 0e7d29a39a546161ea3a49e8e282a43212d7ff68): one `<name> <count>` line each, then the TOTAL line.
AER_CORRECTABLE = (
    "Receiver Error",
    "Bad TLP",
    "Bad DLLP",
    "RELAY_NUM Rollover",
    "Replay Timer Timeout",
    "Advisory Non-Fatal",
    "Corrected Internal Error",
    "Header Log Overflow",
)
AER_UNCORRECTABLE = (
    "Undefined",
    "Data Link Protocol",
    "Surprise Down Error",
    "Poisoned TLP",
    "Flow Control Protocol",
    "Completion Timeout",
    "Completer Abort",
    "Unexpected Completion",
    "Receiver Overflow",
    "Malformed TLP",
    "ECRC",
    "Unsupported Request",
    "ACS Violation",
    "Uncorrectable Internal Error",
    "MC Blocked TLP",
    "AtomicOp Egress Blocked",
    "TLP Prefix Blocked Error",
)
AER_FILES = (
    ("aer_dev_correctable", AER_CORRECTABLE, "TOTAL_ERR_COR"),
    ("aer_dev_fatal", AER_UNCORRECTABLE, "TOTAL_ERR_FATAL"),
    ("aer_dev_nonfatal", AER_UNCORRECTABLE, "TOTAL_ERR_NONFATAL"),
)
# The kernel command line of a GPU host tuned for GPUDirect: the IOMMU on, DMA in passthrough (iommu=pt).
FACTORY_CMDLINE = (
    "BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=/dev/mapper/vg0-root ro intel_iommu=on iommu=pt"
)
# A passthrough group's /sys/kernel/iommu_groups/<n>/type (ABI doc sysfs-kernel-iommu_groups).
FACTORY_IOMMU_TYPE = "identity"


def aer_text(names: tuple[str, ...], total: str) -> str:
    return "".join(f"{name} 0\n" for name in names) + f"{total} 0"


def write_pcie_state(paths: MockNodePaths, topology: dict[str, Any]) -> None:
    """The PCIe tree's state (no changes: factory ACS), every function's link attributes and AER counters,
    the kernel command line, and each RDMA device's IOMMU group type."""
    write_json(paths.state / PCIE_STATE_FILE, {})
    devices = paths.state / PCI_DEVICES_DIR
    functions = functions_of(topology)
    links = factory_links(functions)
    for function in functions:
        folder = devices / function["bdf"]
        for name, value in link_files(function, links[function["bdf"]]).items():
            write(folder / name, value)
        for name, counters, total in AER_FILES:
            write(folder / name, aer_text(counters, total))
        if function["kind"] == "root_port":
            for severity in ("cor", "fatal", "nonfatal"):
                write(folder / f"aer_rootport_total_err_{severity}", 0)
    write(paths.state / CMDLINE_FILE, FACTORY_CMDLINE)
    for nic in topology["nics"]:
        write(
            paths.sys_class / "infiniband" / nic["name"] / "device" / "iommu_group" / "type",
            FACTORY_IOMMU_TYPE,
        )
