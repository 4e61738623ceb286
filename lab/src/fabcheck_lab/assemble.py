"""Write a lab's run dir before anything starts: keys, mock tools, every node's tree, the switch spec."""

from __future__ import annotations

import multiprocessing
import os
import secrets
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor

from fabcheck_lab import fromplan, ib_lab, nodes
from fabcheck_lab.cabling import lab_links, lldp_neighbors
from fabcheck_lab.inventory import known_host_line
from fabcheck_lab.keys import KeyPair, generate_keypair, write_private, write_secret
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import NODE_SOCKET, install_tools, prepare_node
from fabcheck_lab.mockswitch.spec import SwitchSpec, write_spec
from fabcheck_lab.state import PASSWORD_ENV, LabError, LabPaths, LabState, NodeRecord

PARALLEL_FROM = 32  # below this many hosts a worker pool costs more than it saves


def _peers_of(node: NodeRecord, everyone: Mapping[str, str]) -> dict[str, str]:
    return {name: address for name, address in everyone.items() if name != node.name}


def _prepare_hosts(
    paths: LabPaths,
    hosts: Sequence[NodeRecord],
    addresses: Mapping[str, str],
    client: KeyPair,
    rtt_ms: float,
    trays: int,
) -> dict[str, str]:
    """Write each host's tree (mock state, sshd files); return node name -> known_hosts line."""
    lines: dict[str, str] = {}
    for node in hosts:
        root = paths.node_root(node.name)
        nodes.make_node_dirs(root)
        prepare_node(
            MockNodePaths.under(root),
            name=node.name,
            profile=node.profile,
            index=node.index,
            address=node.address,
            peers=_peers_of(node, addresses),
            trays=trays,
        )
        host_key = generate_keypair(f"root@{node.name}")
        nodes.write_node_files(root, node, host_key, client, nodes.sshd_port(node, rtt_ms))
        lines[node.name] = known_host_line(node, host_key.public_blob)
    return lines


def _prepare_all_hosts(paths: LabPaths, state: LabState, client: KeyPair) -> list[str]:
    """Hundreds of files per host make this CPU-bound: large labs spread it over every core."""
    hosts = state.host_nodes()
    addresses = {n.name: n.address for n in state.nodes}
    trays = sum(1 for node in hosts if node.profile == "nvl")  # split into the nvl lab's NVLink domains
    workers = min(os.cpu_count() or 1, 8)
    if len(hosts) < PARALLEL_FROM or workers == 1:
        lines = _prepare_hosts(paths, hosts, addresses, client, state.rtt_ms, trays)
    else:
        batches = [hosts[i::workers] for i in range(workers)]
        lines = {}
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            jobs = [
                pool.submit(_prepare_hosts, paths, b, addresses, client, state.rtt_ms, trays) for b in batches
            ]
            for job in jobs:
                lines.update(job.result())
    return [lines[node.name] for node in hosts]


# The entry point of the venv role fabcheck_node makes in each host node (its overlay's /opt).
NODE_FABCHECK = "/opt/fabcheck/bin/fabcheck"


def assemble(paths: LabPaths, state: LabState) -> list[str]:
    """Create the run dir for state; return the known_hosts lines of the host nodes.

    Sets state.slow_tools when the tool server's client cannot be built (every tool call then starts
    an interpreter in the node, as before the server existed).
    """
    paths.run_dir.mkdir(mode=0o700, parents=True)
    client = generate_keypair("fabcheck-lab-controller")
    write_private(paths.client_key, client)
    paths.client_key.with_suffix(".pub").write_text(client.public_line + "\n")

    paths.bin_dir.mkdir()
    state.slow_tools = install_tools(paths.bin_dir, client_socket=NODE_SOCKET) or ""
    # A node's /usr/local/bin is this folder, read-only (nodeinit.py), so the link role fabcheck_node makes
    # on a cluster is made here: dangling until the role installs fabcheck in the node's own venv.
    (paths.bin_dir / "fabcheck").symlink_to(NODE_FABCHECK)
    known_hosts = _prepare_all_hosts(paths, state, client)
    ib_lab.prepare(paths, state)  # the ib profile's fabric, on every host node

    switches = state.switch_nodes()
    if switches:
        password = switch_password()
        write_secret(paths.switch_password, password + "\n")
        if state.plan is not None:  # a lab from a plan: hosts and switches heard on every planned cable
            heard, up_ports = fromplan.switch_neighbors(state), fromplan.up_ports(state)
        else:
            heard, up_ports = lldp_neighbors(state, lab_links(state)), {}
        specs = [
            _switch_spec(node, password, heard.get(node.name, []), up_ports.get(node.name, ()))
            for node in switches
        ]
        write_spec(paths.run_dir, specs)
    return known_hosts


def switch_password() -> str:
    """The switches' password: FABCHECK_LAB_SWITCH_PASSWORD when set at `up`, else a fresh random one.

    It is written once to the run dir's 0600 file, which both the switch server and the inventory read.
    """
    chosen = os.environ.get(PASSWORD_ENV, "")
    if chosen.strip() != chosen or "\n" in chosen:
        raise LabError(f"{PASSWORD_ENV} must not start or end with white space nor hold a newline")
    return chosen or secrets.token_urlsafe(18)


def _switch_spec(
    node: NodeRecord, password: str, neighbors: list[tuple[str, str, str]], up_ports: tuple[str, ...] = ()
) -> SwitchSpec:
    return SwitchSpec(
        name=node.name,
        platform=node.profile,
        address=node.address,
        port=node.port,
        username=node.username,
        password=password,
        ports=node.ports,
        neighbors=tuple(sorted(neighbors, key=lambda n: node.ports.index(n[0]))),
        up_ports=up_ports,
    )
