"""Topology profiles of mock hosts: GPUs, NICs and their PCIe/NUMA placement, derived from the node index.

Every identifier (MAC, GUID, IP, LID) is a pure function of (profile, node index, NIC index), so two
nodes never collide and a re-prepared node gets the same identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HOST_PROFILES: Mapping[str, str] = {
    "rail8": "8 GPU / 8 NIC rail-optimised RoCE server (H100, 400G Ethernet, each GPU PIX to its own NIC)",
    "pcie": "PCIe server: 8 GPUs, 2 RoCE NICs at NODE/SYS distance from the GPUs",
    "ib": "8 GPU / 8 HCA InfiniBand host (H100, NDR 400 Gb/s, each GPU PIX to its own HCA)",
    "sm": "InfiniBand subnet-manager node: no GPUs, 1 HCA, mocked opensm service",
}

GPU_NAME = "NVIDIA H100 80GB HBM3"
GPU_MEMORY_MIB = 81559
GPU_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
NIC_BUSES = ("1a", "2c", "3c", "5f", "9c", "ad", "bc", "dc")
# The pcie profile's GPU pairs each sit behind one PCIe switch whose bus range (e.g. 16..2a for GPUs 18
# and 2a) would hold bus 1a: its two NICs, each on its own root port, take buses outside those ranges.
PCIE_PROFILE_NIC_BUSES = ("70", "e0")
CPU_AFFINITY = {"0": "0-55,112-167", "1": "56-111,168-223"}
NIC_MODEL = {"ca_type": "MT4129", "vendor_part_id": 4129, "fw": "28.39.1002", "board_id": "MT_0000000838"}
LINE_RATE_GBPS = 400


def gpus_for(profile: str, index: int) -> list[dict[str, Any]]:
    if profile == "sm":
        return []
    gpus = []
    for i, bus in enumerate(GPU_BUSES):
        # rail8/ib: each GPU behind its own PCIe switch (shared with its NIC); pcie: pairs of GPUs share one.
        switch = i if profile != "pcie" else 10 + i // 2
        gpus.append(
            {
                "index": i,
                "name": GPU_NAME,
                "bus_id": f"00000000:{bus.upper()}:00.0",
                "numa": i // 4,
                "switch": switch,
                "uuid": f"GPU-{index:08x}-{i:04x}-4a5b-8c6d-{index * 8 + i:012x}",
                "serial": f"1652{index:05d}{i:04d}",
                "memory_mib": GPU_MEMORY_MIB,
                "compute_cap": "9.0",
            }
        )
    return gpus


def mac_for(index: int, nic: int) -> str:
    return f"a0:88:c2:{(index >> 8) & 0xFF:02x}:{index & 0xFF:02x}:{nic:02x}"


def guid_parts(mac: str) -> list[int]:
    return [int(b, 16) for b in mac.split(":")]


def node_guid(mac: str) -> str:
    b = guid_parts(mac)
    return f"{b[0]:02x}{b[1]:02x}:{b[2]:02x}03:00{b[3]:02x}:{b[4]:02x}{b[5]:02x}"


def eui64(mac: str) -> str:
    """The interface id of a MAC as used in link-local GIDs (U/L bit flipped, ff:fe inserted)."""
    b = guid_parts(mac)
    return f"{b[0] ^ 2:02x}{b[1]:02x}:{b[2]:02x}ff:fe{b[3]:02x}:{b[4]:02x}{b[5]:02x}"


def ipv4_gid(ipv4: str) -> str:
    o = [int(x) for x in ipv4.split(".")]
    return f"0000:0000:0000:0000:0000:ffff:{o[0]:02x}{o[1]:02x}:{o[2]:02x}{o[3]:02x}"


def nic_entry(profile: str, index: int, nic: int, placement: tuple[int, int]) -> dict[str, Any]:
    infiniband = profile in ("ib", "sm")
    buses = PCIE_PROFILE_NIC_BUSES if profile == "pcie" else NIC_BUSES
    mac = mac_for(index, nic)
    guid = node_guid(mac)
    ipv4 = f"10.{nic}.{index // 250}.{1 + index % 250}"
    entry = {
        "name": f"mlx5_{nic}",
        "netdev": f"ib{nic}" if infiniband else f"ens{nic + 1}np0",
        "link_layer": "InfiniBand" if infiniband else "Ethernet",
        "rate_gbps": LINE_RATE_GBPS,
        "numa": placement[0],
        "switch": placement[1],
        "pci": f"0000:{buses[nic % len(buses)]}:00.0",
        "mac": mac,
        "node_guid": guid,
        "port_guid": "0x" + guid.replace(":", "") if infiniband else "0x" + eui64(mac).replace(":", ""),
        "ipv4": ipv4,
        "ipv4_gid": "" if infiniband else ipv4_gid(ipv4),
        "link_local_gid": "fe80:0000:0000:0000:" + (guid if infiniband else eui64(mac)),
        "lid": 1 + index * 8 + nic if infiniband else 0,
        **NIC_MODEL,
    }
    return entry


def nics_for(profile: str, index: int) -> list[dict[str, Any]]:
    if profile == "sm":
        return [nic_entry(profile, index, 0, (0, 100))]
    if profile == "pcie":
        return [nic_entry(profile, index, n, (n, 20 + n)) for n in range(2)]
    return [nic_entry(profile, index, n, (n // 4, n)) for n in range(8)]


def topology_for(profile: str, index: int) -> dict[str, Any]:
    if profile not in HOST_PROFILES:
        raise ValueError(f"unknown host profile {profile!r}; expected one of {', '.join(HOST_PROFILES)}")
    return {
        "profile": profile,
        "gpus": gpus_for(profile, index),
        "nics": nics_for(profile, index),
        "nvlink": "NV18" if profile in ("rail8", "ib") else None,
        "cpu_affinity": dict(CPU_AFFINITY),
        "driver_version": "550.90.07",
        "cuda_driver": 12040,
        "nccl_version": "2.21.5+cuda12.4",
    }


def rails_for(profile: str) -> dict[int, str]:
    """GPU index -> the NIC NCCL should use: the NIC on the GPU's NUMA node (own PCIe switch on rail8/ib)."""
    nics = nics_for(profile, 0)
    rails = {}
    for gpu in gpus_for(profile, 0):
        same_switch = [n for n in nics if n["switch"] == gpu["switch"]]
        same_numa = [n for n in nics if n["numa"] == gpu["numa"]]
        nearest = (same_switch or same_numa or nics)[0]
        rails[gpu["index"]] = nearest["name"]
    return rails


def pcie_tree_for(profile: str, index: int) -> list[dict[str, Any]]:
    """The host's factory PCIe functions (root ports, switch ports, GPUs, NICs), derived from the same
    switch/NUMA placement that `nvidia-smi topo -m` shows (mockhost.tools.pcie.functions_of)."""
    from .tools.pcie import functions_of

    return functions_of(topology_for(profile, index))
