"""Host faults: change one node's state relative to its current values, and heal exactly.

Each inject records, per changed JSON key or sysfs file, the value it replaced (``faults.json`` in the
node's state dir); heal writes those values back, so faults on different keys compose and a healed
node is byte-for-byte what it was. NIC faults hit one NIC: the first RoCE NIC (mlx5_0 on rail8/pcie).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from fabcheck.desired.nic import PERSIST_PATHS
from fabcheck.errors import UsageError
from fabcheck_lab import wire_model

from .layout import CMDLINE_FILE, PCI_DEVICES_DIR, MockNodePaths
from .tools.common import Node
from .tools.kernel_log import KERNEL_LOG
from .tools.mlnx_qos import apply_buffers, factory_state
from .tools.netdev import STORM_KEY
from .tools.nic_firmware import OTHER_FIRMWARE, firmware_state, state_name
from .tools.nic_firmware import factory_state as firmware_factory
from .tools.nvidia_smi import GPU_HEALTH, NVLINK_STATE
from .tools.pcie import ACS_REDIRECT
from .tools.pcie import STATE_FILE as PCIE_STATE_FILE
from .tools.pcie import sysfs_speed as pcie_sysfs_speed
from .tools.pcie import tree as pcie_tree
from .tools.subnet_manager import read_opensm_conf
from .tools.wire import save_wire_state, wire_state

SLOW_PORT_GBPS = 100
DOWN_LINK = 3  # nvlink-down: the link Azure/azhpc-diagnostics issue 73's V100 shows <inactive>
OTHER_CLIQUE = 32765  # clique-mismatch: a partition next to NVLink's default 32766
# fw-config-drift: ATS turned on in the NIC's firmware (the intent pins ATS_ENABLED false for GPUDirect
# on bare metal: NVIDIA's NIC Configuration Operator sets ATS_ENABLED=0, README of
# Mellanox/nic-configuration-operator@8bfbeb34ba25215dd06402cd01bae0108341a8d4).
DRIFT_PARAM, DRIFT_VALUE = "ATS_ENABLED", 1
HOST_FAULTS: Mapping[str, str] = {
    "pfc-off": "PFC disabled on the lossless priority of one NIC",
    "pfc-storm-off": "PFC storm prevention off on one NIC (ethtool pfc-prevention-tout 0)",
    "trust-pcp": "one NIC trusts PCP instead of DSCP, so RoCE traffic lands on priority 0",
    "dscp-map": "RoCE DSCP 26 mapped to a wrong priority on one NIC",
    "ecn-off": "DCQCN reaction and notification points disabled on priority 3 of one NIC",
    "tos": "wrong RoCE ToS on one NIC (tc/1/traffic_class and the RDMA-CM default)",
    "mtu": "netdev MTU 1500 on one NIC, so its RoCE active_mtu drops to 1024",
    "affinity": "GPU0's rail NIC moved across the CPU socket: topo shows SYS instead of PIX",
    "no-rdma": "RDMA devices gone: /sys/class/infiniband empty, NCCL falls back to Socket",
    "host-persist-stale": "boot file /etc/fabcheck/roce-nic.json holds an old ToS (running state kept)",
    "link-down": "one NIC's port DOWN: a RoCE netdev set down as `ip link set DEV down` does "
    "(PORT_DOWN/DISABLED), an InfiniBand port without link (PORT_DOWN/POLLING)",
    "link-speed": f"one NIC's port trained at {SLOW_PORT_GBPS} Gb/s (4X at 25 Gb/s a lane) instead of its "
    "line rate: ibv_devinfo, ethtool and the mock perftest's bandwidth show that rate",
    "sm-conf-drift": "opensm.conf of an SM node edited by hand (other sm_priority and routing_engine); "
    "the running opensm keeps its config until restarted",
    "link-errors": "one NIC's link counts CRC and symbol errors (rx_crc_errors_phy, rx_symbol_err_phy "
    "rising)",
    "link-flap": "one NIC's link goes down and up again and again (link_down_events_phy rising; the port "
    "reads up between flaps)",
    "optic-rx-low": "one NIC's module receives too little light: RX power under the module's own low alarm",
    "fw-mismatch": f"one NIC runs (and has burned) firmware {OTHER_FIRMWARE} instead of the part's pinned "
    "version: flint, mlxfwmanager, ibv_devinfo and ethtool -i show it",
    "fw-config-drift": f"one NIC's firmware parameter {DRIFT_PARAM} changed to {DRIFT_VALUE} in Current and "
    "Next Boot (mlxconfig -e q)",
    "dmabuf-host": "not a fault, a host variant: NVIDIA's open GPU kernel module and no nvidia_peermem "
    "module installed, so GPUDirect RDMA runs on dma-buf (the lab node's kernel is the machine's); "
    "validate passes",
    "pcie-degraded": "the first rail NIC's PCIe link trained at x8 Gen3 under its Gen5 x16 capability: "
    "lspci shows it downgraded; the mock perftest and NCCL bandwidth through that NIC drop to what x8 Gen3 "
    "carries",
    "acs-on": "ACS redirect (ReqRedir+ CmpltRedir+) on the PCIe bridge above GPU0 and on the one above its "
    "rail NIC: GPUDirect traffic between them goes through the root complex and the NCCL bandwidth drops",
    "iommu-translated": "the IOMMU in translated mode: kernel command line without iommu=pt and every rail "
    "NIC's IOMMU group type DMA-FQ (ATS stays off)",
    "gpu-ecc": "GPU0 with a volatile uncorrectable DRAM ECC error and a row remap pending (nvidia-smi -q)",
    "xid": "an Xid 79 (GPU has fallen off the bus) line for GPU0 in the kernel log (dmesg)",
    "nvlink-down": f"GPU0's NVLink {DOWN_LINK} inactive (`nvidia-smi nvlink -s` prints <inactive>); the "
    "other links and the fabric registration stay",
    "clique-mismatch": f"every GPU of one NVL tray registered in CliqueId {OTHER_CLIQUE} (nvidia-smi -q "
    "Fabric) instead of its domain's: NCCL no longer sees one NVLink domain and falls back to the network",
}
# Faults of the wire (fabcheck_lab.wire_model): no setting changes, the NIC's counters rise from the
# moment of injection or its module's DOM moves; heal stops them and keeps what was counted.
WIRE_FAULTS = frozenset({"link-errors", "link-flap", "optic-rx-low"})
RECORD = "faults.json"
HIDDEN_RDMA = ".fault-no-rdma"
LOSSLESS_PRIO = 3
ROCE_DSCP = 26


class Changes:
    """The edits one fault makes, each with the value it replaced."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.entries: list[dict[str, Any]] = []

    def json_keys(self, name: str, updates: dict[str, Any], default: dict[str, Any] | None = None) -> None:
        existed = (self.node.state / name).exists()
        data = self.node.load(name, default)
        for key, value in updates.items():
            self.entries.append(
                {
                    "type": "json",
                    "file": name,
                    "key": key,
                    "old": data.get(key),
                    "existed": existed,
                    "had_key": key in data,  # a key the fault added goes again on heal
                }
            )
            data[key] = value
        self.node.save(name, data)

    def sys_file(self, rel: str, value: str) -> None:
        path = self.node.sys_class / rel
        self.entries.append({"type": "sys", "file": rel, "old": path.read_text()})
        path.write_text(value + "\n")

    def etc_file(self, rel: str, text: str) -> None:
        path = self.node.etc / rel
        self.entries.append({"type": "etc", "file": rel, "old": path.read_text() if path.exists() else None})
        path.write_text(text)

    def state_file(self, name: str, text: str) -> None:
        path = self.node.state / name
        self.entries.append(
            {"type": "state", "file": name, "old": path.read_text() if path.exists() else None}
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def topology_nic(node: Node, changes: Changes, nic: dict[str, Any], **values: Any) -> None:
    """Change one NIC's entry of the node's topology (what the mock tools render it from), recorded."""
    topology = node.load("topology.json")
    for entry in topology["nics"]:
        if entry["name"] == nic["name"]:
            entry.update(values)
    changes.state_file("topology.json", json.dumps(topology, indent=1, sort_keys=True) + "\n")


def restore(node: Node, entries: list[dict[str, Any]]) -> None:
    json_entries: dict[str, list[dict[str, Any]]] = {}
    for entry in reversed(entries):
        if entry["type"] == "sys":
            (node.sys_class / entry["file"]).write_text(entry["old"])
        elif entry["type"] in ("state", "etc"):
            path = (node.state if entry["type"] == "state" else node.etc) / entry["file"]
            if entry["old"] is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(entry["old"])
        elif entry["type"] == "json":
            json_entries.setdefault(entry["file"], []).append(entry)
        elif entry["type"] == "wire":  # the fault stops; its counts stay, as a cleaned fibre's do
            state = wire_model.stop_fault(wire_state(node, entry["netdev"]), entry["fault"])
            save_wire_state(node, entry["netdev"], state)
    for name, keyed in json_entries.items():
        restore_json_keys(node, name, keyed)


def restore_json_keys(node: Node, name: str, entries: list[dict[str, Any]]) -> None:
    """Put back the keys one fault changed in a file; a file it created goes once it is factory again."""
    firmware = name.startswith("firmware/")  # absent: the NIC's factory firmware state
    data = node.load(name, (_firmware_factory_of(node, name) if firmware else None) or {})
    for entry in entries:
        if entry.get("had_key", True):
            data[entry["key"]] = entry["old"]
        else:
            data.pop(entry["key"], None)
    created = not any(entry["existed"] for entry in entries)
    # A NIC's firmware file at its factory values says what no file says (nic_firmware.firmware_state):
    # it goes, whichever of two firmware faults on that NIC created it.
    if (created and name.startswith("qos/") and data == factory_state()) or (
        firmware and data == _firmware_factory_of(node, name)
    ):
        (node.state / name).unlink(missing_ok=True)
    else:
        node.save(name, data)


def _firmware_factory_of(node: Node, name: str) -> dict[str, Any] | None:
    nic = next((n for n in node.load("topology.json")["nics"] if state_name(n) == name), None)
    return None if nic is None else firmware_factory(nic)


def roce_nic(node: Node, fault: str) -> dict[str, Any]:
    nics = [n for n in node.rdma_nics() if n["link_layer"] == "Ethernet"]
    if not nics:
        raise UsageError(f"host fault {fault!r} needs a RoCE NIC; node {node.hostname} has none")
    return nics[0]


def qos_file(nic: dict[str, Any]) -> str:
    return f"qos/{nic['netdev']}.json"


def inject_pfc_off(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "pfc-off")
    state = node.load(qos_file(nic)) or factory_state()
    state["pfc"] = [0] * 8
    apply_buffers(state, _no_buffer_options())
    keys = {k: state[k] for k in ("pfc", "prio2buffer", "buffer_size")}
    changes.json_keys(qos_file(nic), keys, factory_state())


def _no_buffer_options() -> Any:
    class NoBufferOptions:
        prio2buffer = None
        buffer_size = None

    return NoBufferOptions()


def inject_pfc_storm_off(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "pfc-storm-off")
    changes.json_keys(qos_file(nic), {STORM_KEY: 0}, factory_state())


def inject_trust_pcp(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "trust-pcp")
    changes.json_keys(qos_file(nic), {"trust": "pcp"}, factory_state())


def inject_dscp_map(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "dscp-map")
    state = node.load(qos_file(nic)) or factory_state()
    current = dict(state["dscp_user"]).get(ROCE_DSCP, ROCE_DSCP >> 3)
    wrong = 0 if current != 0 else 1
    entries = [e for e in state["dscp_user"] if e[0] != ROCE_DSCP] + [[ROCE_DSCP, wrong]]
    changes.json_keys(qos_file(nic), {"dscp_user": entries, "trust": "dscp"}, factory_state())


def inject_ecn_off(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "ecn-off")
    for point in ("roce_rp", "roce_np"):
        changes.sys_file(f"net/{nic['netdev']}/ecn/{point}/enable/{LOSSLESS_PRIO}", "0")


def inject_tos(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "tos")
    wrong = 0 if node.traffic_class(nic) != 0 else 32
    changes.sys_file(f"infiniband/{nic['name']}/tc/1/traffic_class", str(wrong))
    table = node.load("rdma_cm.json", {})
    table.setdefault(nic["name"], {}).setdefault("1", {"tos": 0, "mode": 2})["tos"] = wrong
    changes.state_file("rdma_cm.json", json.dumps(table, indent=1, sort_keys=True) + "\n")


def port_nic(node: Node, fault: str) -> dict[str, Any]:
    """The NIC a port fault hits: the first RoCE NIC, else the first InfiniBand HCA."""
    nics = [n for n in node.rdma_nics() if n["link_layer"] == "Ethernet"] or node.rdma_nics()
    if not nics:
        raise UsageError(f"host fault {fault!r} needs an RDMA NIC; node {node.hostname} has none")
    return nics[0]


def inject_link_down(node: Node, changes: Changes) -> None:
    nic = port_nic(node, "link-down")
    port = node.port_dir(nic)
    if nic["link_layer"] == "Ethernet":
        # What `ip link set DEV down` writes, plus the port attributes mlx5 then shows in sysfs.
        changes.sys_file(f"net/{nic['netdev']}/operstate", "down")
        changes.sys_file(f"net/{nic['netdev']}/carrier", "0")
        changes.sys_file(f"{port}/state", "1: DOWN")
        changes.sys_file(f"{port}/phys_state", "3: Disabled")
    else:
        changes.sys_file(f"{port}/state", "1: DOWN")
        changes.sys_file(f"{port}/phys_state", "2: Polling")


def inject_link_speed(node: Node, changes: Changes) -> None:
    """The port's trained rate is lower: sysfs rate and netdev speed, and the NIC's rate in the node's
    topology, which ethtool and the traffic model of the mock perftest and nccl-tests read."""
    nic = port_nic(node, "link-speed")
    if nic["rate_gbps"] <= SLOW_PORT_GBPS:
        raise UsageError(f"host fault 'link-speed': {nic['name']} already runs at {nic['rate_gbps']} Gb/s")
    changes.sys_file(f"{node.port_dir(nic)}/rate", f"{SLOW_PORT_GBPS} Gb/sec (4X EDR)")
    changes.sys_file(f"net/{nic['netdev']}/speed", str(SLOW_PORT_GBPS * 1000))
    topology_nic(node, changes, nic, rate_gbps=SLOW_PORT_GBPS)


def inject_mtu(node: Node, changes: Changes) -> None:
    nic = roce_nic(node, "mtu")
    changes.sys_file(f"net/{nic['netdev']}/mtu", "1500")


def inject_affinity(node: Node, changes: Changes) -> None:
    topology = node.load("topology.json")
    if not topology["gpus"] or not topology["nics"]:
        raise UsageError(f"host fault 'affinity' needs GPUs and NICs; node {node.hostname} has none")
    gpu = topology["gpus"][0]
    nic = min(topology["nics"], key=lambda n: (n["switch"] != gpu["switch"], n["numa"] != gpu["numa"]))
    nic["numa"] = 1 - gpu["numa"]
    nic["switch"] = 1000 + topology["nics"].index(nic)
    changes.state_file("topology.json", json.dumps(topology, indent=1, sort_keys=True) + "\n")
    changes.sys_file(f"net/{nic['netdev']}/device/numa_node", str(nic["numa"]))


def inject_no_rdma(node: Node, changes: Changes) -> None:
    source = node.sys_class / "infiniband"
    hidden = node.state / HIDDEN_RDMA
    if hidden.exists():
        shutil.rmtree(hidden)
    hidden.mkdir(parents=True)
    for device in sorted(source.iterdir()) if source.is_dir() else []:
        device.rename(hidden / device.name)
    changes.entries.append({"type": "moved", "file": HIDDEN_RDMA})
    changes.json_keys("modules.json", {"mlx5_ib": False}, {})


OPENSM_CONF = "opensm/opensm.conf"


def inject_sm_conf_drift(node: Node, changes: Changes) -> None:
    conf = node.etc / OPENSM_CONF
    if node.info.get("profile") != "sm" or not conf.is_file():
        raise UsageError(
            f"host fault 'sm-conf-drift' needs an SM node with /etc/{OPENSM_CONF}; {node.hostname} is none"
        )
    current = read_opensm_conf(node)
    drifted = {"sm_priority": "1" if current.get("sm_priority") == "0" else "0", "routing_engine": "minhop"}
    kept = [
        line for line in conf.read_text().splitlines() if not line.split() or line.split()[0] not in drifted
    ]
    edited = kept + [f"{key} {value}" for key, value in drifted.items()]
    changes.etc_file(OPENSM_CONF, "\n".join(edited) + "\n")


def inject_persist_stale(node: Node, changes: Changes) -> None:
    """The boot file as an older intent left it: a reboot would bring back ToS 0 (or 106)."""
    rel = PERSIST_PATHS["config"].removeprefix("/etc/")
    path = node.etc / rel
    if not path.is_file():
        raise UsageError(
            f"host fault 'host-persist-stale' needs {PERSIST_PATHS['config']} on {node.hostname}: "
            "converge the host first (ansible-playbook site.yml, role roce_host)"
        )
    document = json.loads(path.read_text())
    settings = document["settings"]
    settings["roce_tos"] = 0 if settings.get("roce_tos") != 0 else 106
    changes.etc_file(rel, json.dumps(document, indent=2, sort_keys=True) + "\n")


def inject_wire(node: Node, changes: Changes, fault: str) -> None:
    """The wire fault starts on the first rail NIC (as the port faults): its counters rise from now."""
    nic = port_nic(node, fault)
    save_wire_state(node, nic["netdev"], wire_model.start_fault(wire_state(node, nic["netdev"]), fault))
    changes.entries.append({"type": "wire", "netdev": nic["netdev"], "fault": fault})


def inject_fw_mismatch(node: Node, changes: Changes) -> None:
    """The NIC's firmware is another image: burned and running (no reset pending), so every view of
    the running firmware shows it (flint, mlxfwmanager, sysfs fw_ver, ibv_devinfo, ethtool -i)."""
    nic = port_nic(node, "fw-mismatch")
    if firmware_state(node, nic)["running"] == OTHER_FIRMWARE:
        raise UsageError(f"host fault 'fw-mismatch': {nic['name']} already runs {OTHER_FIRMWARE}")
    update = {"running": OTHER_FIRMWARE, "burned": OTHER_FIRMWARE}
    changes.json_keys(state_name(nic), update, firmware_factory(nic))
    changes.sys_file(f"infiniband/{nic['name']}/fw_ver", OTHER_FIRMWARE)
    topology_nic(node, changes, nic, fw=OTHER_FIRMWARE)


def inject_fw_config_drift(node: Node, changes: Changes) -> None:
    """One firmware parameter of the NIC holds another value in effect and for the next boot, as after
    someone's `mlxconfig set` and a reboot."""
    nic = port_nic(node, "fw-config-drift")
    params = firmware_state(node, nic)["params"]
    value = DRIFT_VALUE if params[DRIFT_PARAM]["current"] != DRIFT_VALUE else 0
    params[DRIFT_PARAM] = {**params[DRIFT_PARAM], "current": value, "next": value}
    changes.json_keys(state_name(nic), {"params": params}, firmware_factory(nic))


def inject_dmabuf_host(node: Node, changes: Changes) -> None:
    """The open GPU kernel module (modinfo says Dual MIT/GPL) and nvidia_peermem neither loaded nor
    installed: role gpu_rdma then loads nothing for `gdr_mechanism: any`, and host.gpudirect passes."""
    if not node.gpus():
        raise UsageError(f"host variant 'dmabuf-host' needs GPUs; node {node.hostname} has none")
    changes.state_file("gpu_module.json", json.dumps({"flavour": "open"}, indent=1, sort_keys=True) + "\n")
    changes.json_keys("modules.json", {"nvidia_peermem": False}, {})
    available = [name for name in node.load("modules_available.json", []) if name != "nvidia_peermem"]
    changes.state_file("modules_available.json", json.dumps(available, indent=1, sort_keys=True) + "\n")


# --- the PCIe bus (issue 36): the tree of mockhost.tools.pcie, its state in pcie.json -----------------
DEGRADED_LINK = [8.0, 8]  # Gen3 x8


def inject_pcie_degraded(node: Node, changes: Changes) -> None:
    """The first rail NIC's link trained at x8 Gen3: the kernel's link attributes of both its ends (the
    NIC and the port above it), which lspci and the traffic model read."""
    nic = port_nic(node, "pcie-degraded")
    parent = next(f["parent"] for f in pcie_tree(node) if f["bdf"] == nic["pci"])
    speed, width = DEGRADED_LINK
    for end in (nic["pci"], parent):
        changes.state_file(f"{PCI_DEVICES_DIR}/{end}/current_link_speed", pcie_sysfs_speed(speed) + "\n")
        changes.state_file(f"{PCI_DEVICES_DIR}/{end}/current_link_width", f"{width}\n")


def inject_acs_on(node: Node, changes: Changes) -> None:
    """ACS redirect on the bridge directly above GPU0 and on the one directly above its rail NIC (the two
    downstream ports of their PCIe switch on rail8/ib), as the kernel enables it with an IOMMU."""
    topology = node.load("topology.json")
    if not topology["gpus"] or not topology["nics"]:
        raise UsageError(f"host fault 'acs-on' needs GPUs and NICs; node {node.hostname} has none")
    gpu = topology["gpus"][0]
    nic = min(topology["nics"], key=lambda n: (n["switch"] != gpu["switch"], n["numa"] != gpu["numa"]))
    functions = pcie_tree(node)
    parents = {f["bdf"]: f["parent"] for f in functions}
    bridges = sorted({parents[gpu["bus_id"].lower()[4:]], parents[nic["pci"]]} - {None})
    changes.json_keys(PCIE_STATE_FILE, {bdf: {"acs_control": list(ACS_REDIRECT)} for bdf in bridges}, {})


def inject_iommu_translated(node: Node, changes: Changes) -> None:
    """DMA through the IOMMU's page tables (lazy flush, the kernel's default domain DMA-FQ)."""
    cmdline = (node.state / CMDLINE_FILE).read_text().split()
    changes.state_file(CMDLINE_FILE, " ".join(word for word in cmdline if word != "iommu=pt") + "\n")
    for nic in node.rdma_nics():
        changes.sys_file(f"infiniband/{nic['name']}/device/iommu_group/type", "DMA-FQ")


def first_gpu(node: Node, fault: str) -> dict[str, Any]:
    if not node.gpus():
        raise UsageError(f"host fault {fault!r} needs a GPU; node {node.hostname} has none")
    return node.gpus()[0]


def inject_gpu_ecc(node: Node, changes: Changes) -> None:
    """An uncorrectable DRAM error since the driver loaded, and the row the remapper marked for it,
    active after a GPU reset (NVIDIA's A100/H100 memory error management)."""
    gpu = first_gpu(node, "gpu-ecc")
    health = node.load(GPU_HEALTH, {}) or {}
    health[str(gpu["index"])] = {"dram_uncorrectable": 1, "remapped_uncorrectable": 1, "remap_pending": True}
    changes.state_file(GPU_HEALTH, json.dumps(health, indent=1, sort_keys=True) + "\n")


def inject_xid(node: Node, changes: Changes) -> None:
    """The driver's Xid 79 line for the GPU (its address domain:bus:device, as NVRM logs it)."""
    gpu = first_gpu(node, "xid")
    address = gpu["bus_id"][4:].rsplit(".", 1)[0].lower()  # 00000000:18:00.0 -> 0000:18:00
    text = "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    line = f"[ 4242.424242] NVRM: Xid (PCI:{address}): 79, {text}"
    path = node.state / KERNEL_LOG
    before = path.read_text() if path.is_file() else ""
    changes.state_file(KERNEL_LOG, before + line + "\n")


def inject_nvlink_down(node: Node, changes: Changes) -> None:
    """One NVLink of GPU0 down: nvidia-smi reads it <inactive> (null in the node's nvlink.json)."""
    gpu = first_gpu(node, "nvlink-down")
    state = node.load(NVLINK_STATE, {}) or {}
    links = state.get("links", {}).get(str(gpu["index"]), [])
    if len(links) <= DOWN_LINK:
        raise UsageError(f"host fault 'nvlink-down' needs NVLinks; node {node.hostname}'s GPUs have none")
    links[DOWN_LINK] = None
    changes.state_file(NVLINK_STATE, json.dumps(state, indent=1, sort_keys=True) + "\n")


def inject_clique_mismatch(node: Node, changes: Changes) -> None:
    """Every GPU of this tray in another NVLink partition (CliqueId) of its cluster."""
    state = node.load(NVLINK_STATE, {}) or {}
    fabrics = state.get("fabric", {})
    if not fabrics or any(f["cluster_uuid"].startswith("00000000-") for f in fabrics.values()):
        raise UsageError(
            f"host fault 'clique-mismatch' needs a multi-node NVLink tray (lab profile nvl); node "
            f"{node.hostname} has none"
        )
    for fabric in fabrics.values():
        fabric["clique_id"] = OTHER_CLIQUE
    changes.state_file(NVLINK_STATE, json.dumps(state, indent=1, sort_keys=True) + "\n")


INJECT: Mapping[str, Callable[[Node, Changes], None]] = {
    "pfc-off": inject_pfc_off,
    "pfc-storm-off": inject_pfc_storm_off,
    "trust-pcp": inject_trust_pcp,
    "dscp-map": inject_dscp_map,
    "ecn-off": inject_ecn_off,
    "tos": inject_tos,
    "mtu": inject_mtu,
    "link-down": inject_link_down,
    "link-speed": inject_link_speed,
    "affinity": inject_affinity,
    "no-rdma": inject_no_rdma,
    "sm-conf-drift": inject_sm_conf_drift,
    "host-persist-stale": inject_persist_stale,
    "fw-mismatch": inject_fw_mismatch,
    "fw-config-drift": inject_fw_config_drift,
    "dmabuf-host": inject_dmabuf_host,
    "gpu-ecc": inject_gpu_ecc,
    "xid": inject_xid,
    **{fault: partial(inject_wire, fault=fault) for fault in sorted(WIRE_FAULTS)},
    "pcie-degraded": inject_pcie_degraded,
    "acs-on": inject_acs_on,
    "iommu-translated": inject_iommu_translated,
    "nvlink-down": inject_nvlink_down,
    "clique-mismatch": inject_clique_mismatch,
}


def node_of(paths: MockNodePaths) -> Node:
    return Node(paths.state, paths.sys_class, paths.etc)


def load_record(node: Node) -> dict[str, Any]:
    """Active faults in injection order (stored as a list: JSON objects are saved with sorted keys)."""
    return {item["fault"]: item["changes"] for item in node.load(RECORD, [])}


def save_record(node: Node, record: dict[str, Any]) -> None:
    if record:
        node.save(RECORD, [{"fault": name, "changes": changes} for name, changes in record.items()])
    else:
        (node.state / RECORD).unlink(missing_ok=True)


def check_name(fault: str) -> None:
    if fault not in HOST_FAULTS:
        raise UsageError(f"unknown host fault {fault!r}; expected one of {', '.join(HOST_FAULTS)}")


def inject(paths: MockNodePaths, fault: str) -> None:
    """Apply one host fault; injecting a fault that is already active changes nothing."""
    check_name(fault)
    node = node_of(paths)
    record = load_record(node)
    if fault in record:
        return
    changes = Changes(node)
    try:
        INJECT[fault](node, changes)
    except BaseException:
        restore_moves(node, changes.entries)
        restore(node, changes.entries)
        raise
    record[fault] = changes.entries
    save_record(node, record)


def restore_moves(node: Node, entries: list[dict[str, Any]]) -> None:
    if not any(e["type"] == "moved" for e in entries):
        return
    hidden = node.state / HIDDEN_RDMA
    target = node.sys_class / "infiniband"
    target.mkdir(parents=True, exist_ok=True)
    for device in sorted(hidden.iterdir()) if hidden.is_dir() else []:
        device.rename(target / device.name)
    shutil.rmtree(hidden, ignore_errors=True)


def heal(paths: MockNodePaths, fault: str | None = None) -> None:
    """Undo one fault, or every host fault on the node when fault is None (newest first)."""
    if fault is not None:
        check_name(fault)
    node = node_of(paths)
    record = load_record(node)
    names = [fault] if fault is not None else list(reversed(list(record)))
    for name in names:
        entries = record.pop(name, None)
        if entries is None:
            continue
        restore_moves(node, entries)
        restore(node, entries)
    save_record(node, record)


def active_faults(paths: MockNodePaths) -> list[str]:
    """Host faults currently injected on a node, oldest first."""
    return list(load_record(node_of(paths)))
