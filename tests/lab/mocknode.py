"""One mock host node prepared in a temporary folder, for the in-process tests of the mock tools (no
sshd, no namespaces): its paths, its Node, and every file of its state and sysfs (to prove a heal exact)."""

from __future__ import annotations

from pathlib import Path

from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import prepare_node
from fabcheck_lab.mockhost.tools.common import Node


def prepared(tmp_path: Path, profile: str = "rail8") -> MockNodePaths:
    """A factory node `gpu1` of the profile under tmp_path/<profile>."""
    paths = MockNodePaths.under(tmp_path / profile)
    prepare_node(paths, name="gpu1", profile=profile, index=0, address="127.200.1.1", peers={})
    return paths


def node_of(paths: MockNodePaths) -> Node:
    return Node(paths.state, paths.sys_class, paths.etc)


def node_files(paths: MockNodePaths) -> dict[str, bytes]:
    """Every file of the node's state and sysfs, by path under the node's folder."""
    return {
        str(p.relative_to(paths.root)): p.read_bytes()
        for base in (paths.state, paths.sys_class)
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }
