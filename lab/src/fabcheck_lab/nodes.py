"""The namespace backend: which nodes a lab has, their files, how one starts, and whether it answers.

A host node is ``unshare --mount --uts --pid --fork --kill-child`` running nodeinit.py as PID 1, which
builds an overlay root of / with the node's mock state bound in and then execs ``sshd -D``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path

from fabcheck_lab import nodeinit
from fabcheck_lab.cabling import ports_needed
from fabcheck_lab.delay import BEHIND_PROXY_PORT
from fabcheck_lab.keys import KeyPair, write_private, write_secret
from fabcheck_lab.mockhost.profiles import rails_for
from fabcheck_lab.state import (
    HOST_PORT,
    MAX_HOST_NODES,
    MAX_SWITCHES,
    SWITCH_PORT,
    LabError,
    LabPaths,
    NodeRecord,
)

SYSTEM_PYTHON = "/usr/bin/python3"
SWITCH_PLATFORM_CYCLE = ("nvue", "sonic", "eos")
SWITCH_USERS = {"nvue": "cumulus", "sonic": "admin", "eos": "admin"}
SWITCH_PORT_COUNT = 32
LAB_PROFILES = {"roce": "rail8", "ib": "ib", "nvl": "nvl"}  # lab profile -> its GPU hosts' profile
# Directories a node needs next to MockNodePaths (upper, state, sys_class).
NODE_DIRS = ("upper", "state", "sys_class", "work", "merged", "home")


def host_address(index: int) -> str:
    """250 hosts a /24 block: 127.0.1.x, 127.0.2.x, then 127.0.4.x on (127.0.3.x is the switches')."""
    block = 1 + index // 250
    return f"127.0.{block if block < 3 else block + 1}.{1 + index % 250}"


def switch_address(index: int) -> str:
    return f"127.0.3.{1 + index}"


def switch_ports(platform: str, count: int = SWITCH_PORT_COUNT) -> tuple[str, ...]:
    """Front-panel port names in each platform's own style."""
    if platform == "nvue":
        return tuple(f"swp{i}" for i in range(1, count + 1))
    if platform == "sonic":
        return tuple(f"Ethernet{8 * i}" for i in range(count))  # 400G ports step by 8 lanes
    return tuple(f"Ethernet{i}/1" for i in range(1, count + 1))


def _numbered(prefix: str, count: int) -> list[str]:
    width = max(2, len(str(count)))
    return [f"{prefix}{i:0{width}d}" for i in range(1, count + 1)]


def plan_nodes(profile: str, hosts: int, switches: int) -> list[NodeRecord]:
    """Nodes of a lab shape. roce: rail8 hosts (the last one pcie when hosts > 2) + cycling switch
    platforms; ib: ib hosts + two subnet-manager nodes, and `switches` InfiniBand switches (half leaves,
    half spines: entries of the lab's fabric model, fabcheck_lab.ib_lab, not nodes); nvl: GB200-like
    trays in two NVLink domains (the first half and the second), on RoCE switches like roce."""
    if profile not in LAB_PROFILES:
        raise LabError(f"unknown lab profile {profile!r}; profiles: {', '.join(LAB_PROFILES)}")
    if hosts < 1:
        raise LabError("a lab needs at least one host (--hosts >= 1)")
    host_profiles = [LAB_PROFILES[profile]] * hosts
    if profile == "roce" and hosts > 2:
        host_profiles[-1] = "pcie"
    host_names = _numbered("gpu", hosts)
    groups = ["gpu_hosts"] * hosts
    if profile == "ib":
        host_names += ["sm01", "sm02"]
        host_profiles += ["sm", "sm"]
        groups += ["subnet_managers"] * 2
    if len(host_names) > MAX_HOST_NODES:
        extra = " including the 2 subnet-manager nodes of the ib profile" if profile == "ib" else ""
        raise LabError(f"--hosts {hosts}: the lab holds at most {MAX_HOST_NODES} host nodes{extra}")
    if not 0 <= switches <= MAX_SWITCHES:
        raise LabError(f"--switches {switches}: out of range, allowed: 0..{MAX_SWITCHES}")
    nodes = [
        NodeRecord(name, "host", prof, group, i, host_address(i), HOST_PORT)
        for i, (name, prof, group) in enumerate(zip(host_names, host_profiles, groups, strict=True))
    ]
    if profile == "ib":
        if switches:
            from fabcheck_lab.ib_lab import fabric_of

            fabric_of(nodes, switches)  # refuses a shape whose HCAs do not fit the leaves
        return nodes
    # Every rail NIC gets its own switch port (the cabling map in the inventory), so large labs get
    # switches with more front-panel ports.
    rail_nics = sum(
        len(set(rails_for(prof).values()))
        for prof, group in zip(host_profiles, groups, strict=True)
        if group == "gpu_hosts"
    )
    port_count = ports_needed(rail_nics, switches, SWITCH_PORT_COUNT)
    for j, name in enumerate(_numbered("leaf", switches)):
        platform = SWITCH_PLATFORM_CYCLE[j % len(SWITCH_PLATFORM_CYCLE)]
        nodes.append(switch_record(name, platform, j, switch_ports(platform, port_count)))
    return nodes


def switch_record(name: str, platform: str, index: int, ports: Sequence[str]) -> NodeRecord:
    """The lab's mock switch `index` of a platform: its address, its platform's login and these ports."""
    return NodeRecord(
        name,
        "switch",
        platform,
        f"switches_{platform}",
        index,
        switch_address(index),
        SWITCH_PORT,
        username=SWITCH_USERS[platform],
        ports=tuple(ports),
    )


def sshd_config(address: str, port: int) -> str:
    return "\n".join(
        [
            "# Written by `fabcheck lab up` for this mock node only.",
            f"Port {port}",
            f"ListenAddress {address}",
            "HostKey /etc/ssh/ssh_host_ed25519_key",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "UseDNS no",
            "PidFile none",
            "PrintMotd no",
            "MaxStartups 200:30:400",
            "MaxSessions 64",
            "AcceptEnv LANG LC_*",
            "Subsystem sftp internal-sftp",
            "",
        ]
    )


def make_node_dirs(root: Path) -> None:
    for name in NODE_DIRS:
        (root / name).mkdir(parents=True, exist_ok=True)


def sshd_port(node: NodeRecord, rtt_ms: float) -> int:
    """Where a host node's sshd listens: its own port, or behind the delay proxy when the lab has an RTT."""
    return BEHIND_PROXY_PORT if rtt_ms > 0 else node.port


def write_node_files(
    root: Path, node: NodeRecord, host_key: KeyPair, authorized: KeyPair, listen_port: int
) -> None:
    """sshd config and host key in the overlay's upper layer, a clean /root with authorized_keys."""
    ssh_dir = root / "upper" / "etc" / "ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    (ssh_dir / "sshd_config").write_text(sshd_config(node.address, listen_port))
    write_private(ssh_dir / "ssh_host_ed25519_key", host_key)
    (ssh_dir / "ssh_host_ed25519_key.pub").write_text(host_key.public_line + "\n")
    home = root / "home"
    home.chmod(0o700)
    write_secret(home / ".ssh" / "authorized_keys", authorized.public_line + "\n")
    (home / ".ssh").chmod(0o700)


def launch_argv(paths: LabPaths, node: NodeRecord, state_mount: str) -> list[str]:
    return [
        "unshare",
        "--mount",
        "--uts",
        "--pid",
        "--fork",
        "--kill-child",
        SYSTEM_PYTHON,
        "-I",
        "-S",
        nodeinit.__file__,
        str(paths.node_root(node.name)),
        node.name,
        str(paths.bin_dir),
        state_mount,
    ]


async def _banner(address: str, port: int, timeout: float) -> bool:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except (OSError, asyncio.TimeoutError):
        return False
    try:
        line = await asyncio.wait_for(reader.readline(), timeout)
        return line.startswith(b"SSH-2.0-")
    except (OSError, asyncio.TimeoutError):
        return False
    finally:
        writer.close()


async def _probe_all(targets: Sequence[tuple[str, int]], timeout: float) -> list[bool]:
    limit = asyncio.Semaphore(128)  # stay well below the default 1024 open files

    async def one(address: str, port: int) -> bool:
        async with limit:
            return await _banner(address, port, timeout)

    return list(await asyncio.gather(*(one(a, p) for a, p in targets)))


def probe_banners(targets: Iterable[tuple[str, int]], timeout: float = 1.0) -> dict[tuple[str, int], bool]:
    """Which (address, port) send an SSH banner within timeout seconds: a node that answers SSH."""
    wanted = list(targets)
    return dict(zip(wanted, asyncio.run(_probe_all(wanted, timeout)), strict=True))
