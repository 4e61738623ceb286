"""Write a lab's run dir before anything starts: keys, mock tools, every node's tree, the switch spec."""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from fabcheck.lab import nodes
from fabcheck.lab.inventory import known_host_line
from fabcheck.lab.keys import generate_keypair, write_private, write_secret
from fabcheck.lab.mockhost.layout import MockNodePaths
from fabcheck.lab.mockhost.prepare import install_tools, prepare_node
from fabcheck.lab.mockswitch.spec import SwitchSpec, write_spec
from fabcheck.lab.state import LabPaths, LabState, NodeRecord


def _peers_of(node: NodeRecord, everyone: Mapping[str, str]) -> dict[str, str]:
    return {name: address for name, address in everyone.items() if name != node.name}


def assemble(paths: LabPaths, state: LabState) -> list[str]:
    """Create the run dir for state; return the known_hosts lines of the host nodes."""
    paths.run_dir.mkdir(mode=0o700, parents=True)
    client = generate_keypair("fabcheck-lab-controller")
    write_private(paths.client_key, client)
    paths.client_key.with_suffix(".pub").write_text(client.public_line + "\n")

    paths.bin_dir.mkdir()
    install_tools(paths.bin_dir)
    addresses = {n.name: n.address for n in state.nodes}
    known_hosts: list[str] = []
    for node in state.host_nodes():
        root = paths.node_root(node.name)
        nodes.make_node_dirs(root)
        prepare_node(
            MockNodePaths.under(root),
            name=node.name,
            profile=node.profile,
            index=node.index,
            address=node.address,
            peers=_peers_of(node, addresses),
        )
        host_key = generate_keypair(f"root@{node.name}")
        nodes.write_node_files(root, node, host_key, client)
        known_hosts.append(known_host_line(node, host_key.public_blob))

    switches = state.switch_nodes()
    if switches:
        password = secrets.token_urlsafe(18)
        write_secret(paths.switch_password, password + "\n")
        write_spec(paths.run_dir, [_switch_spec(node, password) for node in switches])
    return known_hosts


def _switch_spec(node: NodeRecord, password: str) -> SwitchSpec:
    return SwitchSpec(
        name=node.name,
        platform=node.profile,
        address=node.address,
        port=node.port,
        username=node.username,
        password=password,
        ports=node.ports,
    )
