"""NCCL transport selection and ``NCCL_DEBUG=INFO`` lines, following the node's real state.

The transport follows what NCCL would find: RDMA devices present -> ``NET/IB`` (RoCE or IB per port),
none -> ``NET/Socket``; GPUDirect RDMA needs nvidia_peermem loaded or dma-buf (the open GPU kernel
module on a kernel >= 5.12; NCCL probes both,
NVIDIA/nccl:src/transport/net_ib/gdr.cc@5067397c2676d5aed50042fc39e5c8ee96eb0027) and a NIC close
enough to the GPU (``NCCL_NET_GDR_LEVEL``, default PXB). Each GPU uses the closest NIC from the node's
topology.
"""

from __future__ import annotations

import os
import random
from typing import Any

from .common import Node
from .nvidia_smi import link

# NCCL path types (topo.h) for the nvidia-smi distances the mock topology produces
PATH_TYPES = {"PIX": 3, "PXB": 4, "NODE": 6, "SYS": 7}
GDR_LEVEL_NAMES = {"LOC": 0, "NVL": 1, "NVB": 2, "PIX": 3, "PXB": 4, "PXN": 5, "PHB": 6, "SYS": 7}
DEFAULT_GDR_LEVEL = 4
QUIET_VARS = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}


def hca_filter(nics: list[dict[str, Any]], spec: str | None) -> list[dict[str, Any]]:
    """Apply NCCL_IB_HCA: prefix match, '=' exact, '^' exclude, optional ':port'."""
    if not spec:
        return nics
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    names = [part.split(":")[0] for part in spec.lstrip("=").split(",") if part]

    def matches(name: str) -> bool:
        return any(name == n if exact else name.startswith(n) for n in names)

    return [n for n in nics if matches(n["name"]) != exclude]


def gdr_level(env: dict[str, str]) -> int:
    value = env.get("NCCL_NET_GDR_LEVEL", "")
    if value.isdigit():
        return int(value)
    return GDR_LEVEL_NAMES.get(value.upper(), DEFAULT_GDR_LEVEL)


def net_devices(node: Node, env: dict[str, str]) -> list[dict[str, Any]]:
    if env.get("NCCL_IB_DISABLE", "0") not in ("0", ""):
        return []
    return hca_filter(node.rdma_nics(), env.get("NCCL_IB_HCA"))


def rank_net(node: Node, gpu: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Which network path one GPU's rank takes: transport, NIC index, distance, GDR."""
    nics = net_devices(node, env)
    if not nics:
        return {"transport": "Socket", "hca": 0, "nic": None, "distance": 7, "gdr": False}
    ranked = sorted(range(len(nics)), key=lambda i: (PATH_TYPES[link(gpu, nics[i])], i))
    best = ranked[0]
    distance = PATH_TYPES[link(gpu, nics[best])]
    gdr = node.gdr_ready() and distance <= gdr_level(env)
    return {"transport": "IB", "hca": best, "nic": nics[best], "distance": distance, "gdr": gdr}


def port_kind(node: Node, nic: dict[str, Any]) -> str:
    return "RoCE" if node.link_layer(nic) == "Ethernet" else "IB"


def oob(node: Node, env: dict[str, str]) -> str:
    ifname = env.get("NCCL_SOCKET_IFNAME", "eth0").lstrip("^=").split(",")[0] or "eth0"
    return f"{ifname}:{node.address}<0>"


class RankLog:
    """INFO lines of one rank, prefixed ``host:pid:tid [dev]`` like NCCL does."""

    def __init__(self, node: Node, rank: int, dev: int, env: dict[str, str]) -> None:
        self.node, self.rank, self.dev, self.env = node, rank, dev, env
        self.pid = os.getpid()
        self.tid = self.pid + 13 + dev
        self.lines: list[str] = []
        self.enabled = env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE")

    def info(self, text: str, *, main_thread: bool = False) -> None:
        if self.enabled:
            tid = self.pid if main_thread else self.tid
            self.lines.append(f"{self.node.hostname}:{self.pid}:{tid} [{self.dev}] NCCL INFO {text}")

    def env_lines(self) -> None:
        for name in sorted(self.env):
            if name.startswith("NCCL_") and name not in QUIET_VARS:
                value = self.env[name]
                dot = "." if value.lstrip("-").isdigit() else ""
                self.info(f"{name} set by environment to {value}{dot}")


def init_lines(log: RankLog, net: dict[str, Any], cuda_driver: int) -> None:
    node, env = log.node, log.env
    log.info(f"Bootstrap : Using {oob(node, env)}", main_thread=True)
    log.info(f"cudaDriverVersion {cuda_driver}", main_thread=True)
    log.info(
        "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared "
        "object file: No such file or directory",
        main_thread=True,
    )
    log.info("NET/Plugin : No plugin found, using internal implementation", main_thread=True)
    log.env_lines()
    if net["transport"] == "Socket":
        log.info("NET/IB : No device found.")
        log.info(f"NET/Socket : Using [0]{oob(node, env)}")
        log.info("Using non-device net plugin version 0")
        log.info("Using network Socket")
        return
    nics = net_devices(node, env)
    devices = " ".join(f"[{i}]{n['name']}:1/{port_kind(node, n)}" for i, n in enumerate(nics))
    log.info(f"NET/IB : Using {devices} [RO]; OOB {oob(node, env)}")
    log.info("Using non-device net plugin version 0")
    log.info("Using network IB")


def comm_lines(
    log: RankLog,
    gpu: dict[str, Any],
    nranks: int,
    nnodes: int,
    local: tuple[int, int],
    comm_id: int,
    mnnvl: bool = False,
) -> str:
    comm = f"0x{random.Random(log.pid * 7 + log.dev).randrange(0x550000000000, 0x56FFFFFFFFFF):x}"
    bus = gpu["bus_id"].split(":")[1].lower().lstrip("0") + "000"
    log.info(
        f"ncclCommInitRank comm {comm} rank {log.rank} nranks {nranks} cudaDev {log.dev} nvmlDev "
        f"{gpu['index']} busId {bus} commId 0x{comm_id:016x} - Init START"
    )
    log.info(
        f"comm {comm} rank {log.rank} nRanks {nranks} nNodes {nnodes} localRanks {local[1]} "
        f"localRank {local[0]} MNNVL {int(mnnvl)}"
    )
    return comm


def nvls_line(log: RankLog, nvlink: bool) -> None:
    """NVLS (NVSwitch multicast) as NCCL's probe reports it (NVIDIA/nccl src/transport/nvls.cc): NVLink
    GPUs behind NVSwitches (HGX, NVL trays) have it, PCIe GPUs not."""
    log.info(f"NVLS multicast support is {'' if nvlink else 'not '}available on dev {log.dev}")


def gdr_line(log: RankLog, net: dict[str, Any]) -> None:
    if net["transport"] != "IB":
        log.info(f"NET/Socket : GPU Direct RDMA Disabled for HCA 0 '{oob(log.node, log.env).split(':')[0]}'")
        return
    level = gdr_level(log.env)
    if not log.node.gdr_ready():
        log.info(f"NET/IB : GPU Direct RDMA Disabled for HCA {net['hca']} '{net['nic']['name']}' (no module)")
    elif net["gdr"]:
        log.info(
            f"GPU Direct RDMA Enabled for GPU {log.dev} / HCA {net['hca']} (distance {net['distance']} "
            f"<= {level}), read 0 mode Default"
        )
    else:
        log.info(
            f"GPU Direct RDMA Disabled for GPU {log.dev} / HCA {net['hca']} (distance {net['distance']} "
            f"> {level})"
        )


def channel_lines(log: RankLog, net: dict[str, Any], ring: dict[str, Any], channels: int) -> None:
    """Ring connections of this rank: NET for peers on other nodes, P2P inside the node, and P2P/MNNVL to
    a peer on another tray of the same working multi-node NVLink domain. NCCL's P2P transport prints its
    connection once, on the sending side and without a direction (NVIDIA/nccl src/transport/p2p.cc)."""
    suffix = "/GDRDMA" if net["gdr"] else ""
    via_net = f"NET/{net['transport']}/{net['hca']}{suffix}"
    for channel in range(channels):
        prev, nxt = ring["prev"], ring["next"]
        me = f"{log.rank}[{log.dev}]"
        if not prev.get("mnnvl"):
            recv_via = via_net if prev["remote"] else "P2P/CUMEM"
            log.info(
                f"Channel {channel:02d}/0 : {prev['rank']}[{prev['dev']}] -> {me} [receive] via {recv_via}"
            )
        if nxt.get("mnnvl"):
            log.info(f"Channel {channel:02d}/0 : {me} -> {nxt['rank']}[{nxt['dev']}] via P2P/MNNVL")
        else:
            send_via = via_net if nxt["remote"] else "P2P/CUMEM"
            log.info(f"Channel {channel:02d}/0 : {me} -> {nxt['rank']}[{nxt['dev']}] [send] via {send_via}")
    log.info("Connected all rings")


def complete_line(log: RankLog, gpu: dict[str, Any], comm: str, nranks: int, comm_id: int) -> None:
    bus = gpu["bus_id"].split(":")[1].lower().lstrip("0") + "000"
    log.info(
        f"ncclCommInitRank comm {comm} rank {log.rank} nranks {nranks} cudaDev {log.dev} nvmlDev "
        f"{gpu['index']} busId {bus} commId 0x{comm_id:016x} - Init COMPLETE"
    )
