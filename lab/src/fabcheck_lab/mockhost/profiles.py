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
    "nvl": "GB200-like NVL tray: 4 GPUs (18 NVLinks x 53.125 GB/s each) in a multi-node NVLink domain "
    "of 2 trays (IMEX), 4 RoCE NICs",
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
# NVLink per profile (links per GPU, GB/s per link as `nvidia-smi nvlink -s` prints it): H100 SXM 18 x
# 26.562 (bottlerocket-os/bottlerocket PR 4418), GB200 18 x 53.125 (NVIDIA/k8s-test-infra issue 371),
# both cited in tests/data/real/nvlink/INDEX.tsv. The pcie profile's GPUs have no NVLink.
NVLINK_OF_PROFILE = {"rail8": (18, 26.562), "ib": (18, 26.562), "nvl": (18, 53.125)}
NVL_GPU_NAME = "NVIDIA GB200"
NVL_GPU_MEMORY_MIB = 189471
NVL_GPUS = 4
NVL_NICS = 4
# The nvl lab's trays form two NVLink domains, the first half and the second (a real NVL72 rack has 18
# trays): --hosts 4 gives 2 trays per domain, --hosts 6 three, where one tray in another clique is a
# minority the checks can name (with two trays, two keys are a tie and both trays fail).
NVL_DOMAINS = 2
NVL_DEFAULT_TRAYS = 4  # the lab's default host count


def gpus_for(profile: str, index: int) -> list[dict[str, Any]]:
    if profile == "sm":
        return []
    gpus = []
    tray = profile == "nvl"
    buses = GPU_BUSES[:NVL_GPUS] if tray else GPU_BUSES
    for i, bus in enumerate(buses):
        # rail8/ib: each GPU behind its own PCIe switch (shared with its NIC); pcie: pairs of GPUs share one.
        switch = i if profile != "pcie" else 10 + i // 2
        gpus.append(
            {
                "index": i,
                "name": NVL_GPU_NAME if tray else GPU_NAME,
                "bus_id": f"00000000:{bus.upper()}:00.0",
                "numa": i // (NVL_GPUS // 2) if tray else i // 4,
                "switch": switch,
                "uuid": f"GPU-{index:08x}-{i:04x}-4a5b-8c6d-{index * 8 + i:012x}",
                "serial": f"1652{index:05d}{i:04d}",
                "memory_mib": NVL_GPU_MEMORY_MIB if tray else GPU_MEMORY_MIB,
                "compute_cap": "10.0" if tray else "9.0",
            }
        )
    return gpus


def nvl_domain_of(index: int, trays: int = NVL_DEFAULT_TRAYS) -> int:
    """The NVLink domain (0 or 1) of the nvl profile's tray at this node index, of `trays` trays."""
    return min(index * NVL_DOMAINS // max(trays, 1), NVL_DOMAINS - 1)


ZERO_CLUSTER_UUID = "00000000-0000-0000-0000-000000000000"


def fabric_for(profile: str, index: int, trays: int = NVL_DEFAULT_TRAYS) -> dict[str, Any] | None:
    """The GPUs' `nvidia-smi -q` Fabric section at the factory (every GPU of a host alike); None: no fabric
    (every field N/A). A GB200 tray: Completed/Success in its domain's ClusterUUID and CliqueId
    (kubernetes-sigs/dra-driver-nvidia-gpu issue 626); an HGX board alone: Completed/Success with a zero
    ClusterUUID and CliqueId 0, no multi-node domain (NVIDIA/nccl src/mnnvl.cc reads zero as no MNNVL)."""
    if profile not in NVLINK_OF_PROFILE:
        return None
    if profile != "nvl":  # as tests/data/real/nvlink/nvidia-smi-q-h100-sxm-8gpu-565-zero-uuid.txt
        return {
            "state": "Completed",
            "status": "Success",
            "clique_id": 0,
            "cluster_uuid": ZERO_CLUSTER_UUID,
            "bandwidth": "N/A",
        }
    domain = nvl_domain_of(index, trays)
    return {
        "state": "Completed",
        "status": "Success",
        "clique_id": 32766,  # NVLink's default partition (NMX-Controller: partition 32766 is the default)
        "cluster_uuid": f"6a1c0f3e-{domain:04x}-4e2b-9c7d-5f0a{domain:08x}",
        "health_summary": "Healthy",  # the real sample's word for the unhealthy case is Unhealthy
        "bandwidth": "Full",
    }


def nvlinks_for(profile: str) -> tuple[int, float] | None:
    """(links per GPU, GB/s per link), None: no NVLink."""
    return NVLINK_OF_PROFILE.get(profile)


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
    if profile == "nvl":
        return [nic_entry(profile, index, n, (n // 2, n)) for n in range(NVL_NICS)]
    return [nic_entry(profile, index, n, (n // 4, n)) for n in range(8)]


def topology_for(profile: str, index: int) -> dict[str, Any]:
    if profile not in HOST_PROFILES:
        raise ValueError(f"unknown host profile {profile!r}; expected one of {', '.join(HOST_PROFILES)}")
    return {
        "profile": profile,
        "gpus": gpus_for(profile, index),
        "nics": nics_for(profile, index),
        "nvlink": "NV18" if profile in NVLINK_OF_PROFILE else None,
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
