"""Helpers for the mock-host tests: nodes on tmp dirs, tools run like in a node (system Python, env).

No namespaces: FABCHECK_MOCK_STATE / FABCHECK_MOCK_SYSCLASS / FABCHECK_MOCK_ETC point the tools at a
node's folders, and every node gets its own loopback address so servers never collide.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Mapping
from pathlib import Path

from fabcheck_lab.mockhost import MockNodePaths, install_tools, prepare_node

SYSTEM_PYTHON = Path("/usr/bin/python3")
BASE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def unique_subnet() -> str:
    """A 127.a.b prefix of our own (the lab itself uses 127.0.x.y and 127.3.x.y)."""
    return f"127.{random.randrange(100, 250)}.{random.randrange(1, 250)}"


class MockNode:
    def __init__(self, paths: MockNodePaths, bin_dir: Path, name: str, address: str) -> None:
        self.paths = paths
        self.bin_dir = bin_dir
        self.name = name
        self.address = address

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin_dir}:{BASE_PATH}",
            "FABCHECK_MOCK_STATE": str(self.paths.state),
            "FABCHECK_MOCK_SYSCLASS": str(self.paths.sys_class),
            "FABCHECK_MOCK_ETC": str(self.paths.etc),
            "LANG": "C.UTF-8",
        }

    def run(
        self, *argv: str, rc: int | None = 0, extra_env: Mapping[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run one mock tool; check its exit code unless rc is None."""
        env = {**self.env, **(extra_env or {})}
        proc = subprocess.run(
            [str(self.bin_dir / argv[0]), *argv[1:]], env=env, capture_output=True, text=True, timeout=timeout
        )
        if rc is not None:
            assert proc.returncode == rc, (argv, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def start(self, *argv: str, extra_env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        env = {**self.env, **(extra_env or {})}
        return subprocess.Popen(
            [str(self.bin_dir / argv[0]), *argv[1:]],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def sys_write(self, rel: str, value: str) -> None:
        (self.paths.sys_class / rel).write_text(value + "\n")

    def sys_read(self, rel: str) -> str:
        return (self.paths.sys_class / rel).read_text().strip()

    def env_file(self) -> str:
        return "".join(f"export {k}='{v}'\n" for k, v in self.env.items())


def make_nodes(
    tmp: Path, bin_dir: Path, specs: list[tuple[str, str]], subnet: str | None = None
) -> list[MockNode]:
    """Prepare nodes (name, profile) that know each other as peers."""
    subnet = subnet or unique_subnet()
    addresses = {name: f"{subnet}.{i + 1}" for i, (name, _) in enumerate(specs)}
    nodes = []
    for index, (name, profile) in enumerate(specs):
        paths = MockNodePaths.under(tmp / name)
        peers = {n: a for n, a in addresses.items() if n != name}
        prepare_node(paths, name=name, profile=profile, index=index, address=addresses[name], peers=peers)
        nodes.append(MockNode(paths, bin_dir, name, addresses[name]))
    return nodes


def installed_bin(tmp: Path) -> Path:
    bin_dir = tmp / "bin"
    install_tools(bin_dir)
    return bin_dir


def configure_lossless(node: MockNode, netdevs: list[str] | None = None) -> None:
    """What the host role does: trust dscp, PFC on 3, ToS 106, MTU 9000, peermem."""
    nics = node.run("ibdev2netdev").stdout.splitlines()
    for line in nics:
        dev, netdev = line.split()[0], line.split()[4]
        if netdevs is not None and netdev not in netdevs:
            continue
        node.run("mlnx_qos", "-i", netdev, "--trust", "dscp")
        node.run("mlnx_qos", "-i", netdev, "--pfc", "0,0,0,1,0,0,0,0")
        node.sys_write(f"infiniband/{dev}/tc/1/traffic_class", "106")
        node.run("cma_roce_tos", "-d", dev, "-t", "106")
        node.run("ip", "link", "set", "dev", netdev, "mtu", "9000")
    node.run("modprobe", "nvidia_peermem")


def fake_ssh(tmp: Path, nodes: list[MockNode]) -> Path:
    """An ssh stand-in for fabcheck-mpirun: `fake-ssh HOST CMD` runs CMD as that node."""
    for node in nodes:
        (tmp / f"{node.name}.env").write_text(node.env_file())
    script = tmp / "fake-ssh"
    script.write_text(f'#!/bin/sh\nhost="$1"; shift\n. "{tmp}/$host.env"\nexec /bin/sh -c "$*"\n')
    script.chmod(0o755)
    return script


def tree_bytes(*roots: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under the roots with its content (for byte-for-byte comparisons)."""
    files = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            rel = f"{root.name}/{path.relative_to(root)}"
            if path.is_file() and not any(rel.endswith(s) for s in skip):
                files[rel] = path.read_bytes()
    return files


def kill_quietly(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


def env_without_mock() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FABCHECK_MOCK_")}
