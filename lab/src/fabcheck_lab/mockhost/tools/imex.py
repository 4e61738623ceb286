"""Mock NVIDIA IMEX of a GB200-like tray: the ``nvidia-imex`` daemon and ``nvidia-imex-ctl -N`` / ``-q``.

The daemon is the process the ``nvidia-imex`` systemd unit starts (mockhost/prepare.py writes the unit the
package installs). Like the real one it reads ``/etc/nvidia-imex/config.cfg`` and the node list it names
(``IMEX_NODE_CONFIG_FILE``, default ``/etc/nvidia-imex/nodes_config.cfg``) only at start-up, so an edited
list takes effect on restart (kubernetes-sigs/dra-driver-nvidia-gpu issue 1418), refuses to run when none
of the listed addresses is its own (issue 289: "No matching network interface found for any IP addresses in
the node configuration file"), and listens on its own address at ``SERVER_PORT`` (default 50000).

The domain is what the daemons themselves see, never a file the lab writes: ``nvidia-imex-ctl -N`` asks the
local daemon for its node list, then every listed daemon for its row of the connection matrix, which each
daemon measures by connecting to every node of its own list. A node whose daemon does not answer is not
READY and its row is ``I`` (the legend: "Node wasn't reachable"); a peer that cannot be reached is ``D``
when it was connected before, ``N`` when never; a peer whose list does not hold this node is ``!M!`` (node
map mismatch). The output layout is the 570 driver's (tests/data/real/nvlink/nvidia-imex-ctl-N-18-nodes-
gb200-570.txt). Not verified against a real output (no public sample): the word a node that does not answer
shows instead of READY (UNAVAILABLE), the domain state other than UP (DEGRADED), and what the tool prints
when the local daemon is down.

Each answer also carries the node's GPU fabric (ClusterUUID, CliqueId, all GPUs Completed/Success): the mock
NCCL uses MNNVL only while every tray of the domain answers READY, connected, in one clique.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .common import Node, ToolError, err, out

CONFIG_FILE = "/etc/nvidia-imex/config.cfg"
NODES_FILE = "/etc/nvidia-imex/nodes_config.cfg"
SERVER_PORT = 50000
CONNECT_TIMEOUT_S = 1.0
UNIT = "nvidia-imex.service"
STATE_FILE = "imex.json"
READY, NOT_READY = "READY", "UNAVAILABLE"
ROW_REQUEST, HELLO_REQUEST = "ROW", "HELLO"
LEGEND = """Connectivity Table Legend:
I - Invalid - Node wasn't reachable, no connection status available
N - Never Connected
R - Recovering - Connection was lost, but clean up has not yet been triggered.
D - Disconnected - Connection was lost, and clean up has been triggreed.
A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.
!V! - Version mismatch, communication disabled.
!M! - Node map mismatch, communication disabled.
C - Connected - Ready for operation
"""
NO_DAEMON = "Failed to connect to the IMEX daemon: is nvidia-imex running?\n"  # unverified wording


def in_node(node: Node, path: str) -> Path:
    """A path the daemon names in the node; /etc is the node's (its overlay's upper layer in tests)."""
    return node.etc / path.removeprefix("/etc/") if path.startswith("/etc/") else Path(path)


def read_config(node: Node, config: str = CONFIG_FILE) -> dict[str, str]:
    """`KEY=value` lines of config.cfg (`#` comments); a missing file is the package defaults."""
    values = {"SERVER_PORT": str(SERVER_PORT), "IMEX_NODE_CONFIG_FILE": NODES_FILE}
    path = in_node(node, config)
    if path.is_file():
        for raw in path.read_text(errors="replace").splitlines():
            line = raw.split("#", 1)[0].strip()
            if "=" in line:
                key, value = (part.strip() for part in line.split("=", 1))
                values[key] = value
    return values


def read_nodes(node: Node, config: dict[str, str]) -> list[str]:
    path = in_node(node, config["IMEX_NODE_CONFIG_FILE"])
    if not path.is_file():
        raise ToolError(f"Failed to open node configuration file {config['IMEX_NODE_CONFIG_FILE']}\n", 1)
    lines = (line.strip() for line in path.read_text(errors="replace").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def gpu_fabric(node: Node) -> dict[str, Any]:
    """What NCCL's MNNVL needs of this node: every GPU Completed/Success, and the GPUs' (UUID, clique)."""
    from .nvidia_smi import gpu_fabric as fabric_of

    fabrics = [fabric_of(node, gpu) for gpu in node.gpus()]
    keys = sorted({f"{f['cluster_uuid']}.{f['clique_id']}" for f in fabrics})
    return {
        "ready": bool(fabrics)
        and all(f["state"] == "Completed" and f["status"] == "Success" for f in fabrics),
        "keys": keys,
    }


def ask(address: str, port: int, request: str) -> dict[str, Any] | None:
    """One request to the daemon at address; None when none answers."""
    try:
        with socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S) as conn:
            conn.sendall((request + "\n").encode())
            reply = conn.makefile().readline()
        answer: dict[str, Any] = json.loads(reply)
        return answer
    except (OSError, ValueError):
        return None


class Daemon:
    """One running nvidia-imex: the node list it read at start-up and the peers it has ever reached."""

    def __init__(self, node: Node, nodes: list[str], me: str, port: int) -> None:
        self.node, self.nodes, self.me, self.port = node, nodes, me, port
        self.reached: set[str] = set()
        self.lock = threading.Lock()

    def row(self) -> list[str]:
        cells = []
        for peer in self.nodes:
            if peer == self.me:
                cells.append("C")
                continue
            hello = ask(peer, self.port, f"{HELLO_REQUEST} {self.me}")
            if hello is None:
                with self.lock:
                    cells.append("D" if peer in self.reached else "N")
            elif hello.get("nodes") != self.nodes:
                cells.append("!M!")
            else:
                with self.lock:
                    self.reached.add(peer)
                cells.append("C")
        return cells

    def answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10.0)
            try:
                request = conn.makefile().readline().split()
                reply: dict[str, Any] = {
                    "nodes": self.nodes,
                    "address": self.me,
                    "fabric": gpu_fabric(self.node),
                }
                reply["version"] = self.node.topology.get("driver_version", "")
                if request[:1] == [ROW_REQUEST]:
                    reply["row"] = self.row()
                conn.sendall((json.dumps(reply) + "\n").encode())
            except (OSError, IndexError):
                return


def daemon(node: Node, args: list[str]) -> int:
    """`nvidia-imex -c CONFIG`: read the node list once, then answer on this node's address until SIGTERM."""
    config_path = args[args.index("-c") + 1] if "-c" in args[:-1] else CONFIG_FILE
    config = read_config(node, config_path)
    nodes = read_nodes(node, config)
    if node.address not in nodes:
        err("No matching network interface found for any IP addresses in the node configuration file\n")
        return 1
    err(f"Identified this node as ID {nodes.index(node.address)}\n")
    port = int(config["SERVER_PORT"])
    server = socket.create_server((node.address, port))
    running = Daemon(node, nodes, node.address, port)
    node.save(STATE_FILE, {"pid": os.getpid(), "nodes": nodes, "port": port, "started": time.time()})

    def stop(_signum: int, _frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=running.answer, args=(conn,), daemon=True).start()


def local_port(node: Node) -> int:
    return int(read_config(node).get("SERVER_PORT", SERVER_PORT))


def domain_view(node: Node) -> dict[str, Any] | None:
    """The domain as the local daemon's node list and each listed daemon's answer; None: no local daemon."""
    port = local_port(node)
    local = ask(node.address, port, HELLO_REQUEST)
    if local is None:
        return None
    answers = {address: ask(address, port, ROW_REQUEST) for address in local["nodes"]}
    return {"nodes": local["nodes"], "answers": answers, "version": local.get("version", "")}


def row_cells(reply: dict[str, Any], nodes: list[str]) -> list[str]:
    """A daemon's row over the local list's columns: a column its own list lacks is a node map mismatch."""
    own = dict(zip(reply["nodes"], reply.get("row", []), strict=False))
    return [own.get(address, "!M!") for address in nodes]


def render_status(view: dict[str, Any]) -> str:
    """`nvidia-imex-ctl -N` in the 570 layout: legend, time, node rows, matrix, domain state."""
    nodes: list[str] = view["nodes"]
    answers: dict[str, dict[str, Any] | None] = view["answers"]
    now = time.time()
    stamp = time.strftime("%-m/%-d/%Y %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    version = ".".join(str(view.get("version", "")).split(".")[:2])
    lines = [LEGEND, stamp, "Nodes:"]
    for index, address in enumerate(nodes):
        state = READY if answers.get(address) is not None else NOT_READY
        lines.append(f"Node #{index:<3} - {address:<15} - {state:<20} - Version: {version}")
    width = len(str(len(nodes) - 1)) + 2
    lines += ["", " Nodes From\\To  " + "".join(f"{i:<{width}}" for i in range(len(nodes)))]
    healthy = True
    for index, address in enumerate(nodes):
        reply = answers.get(address)
        cells = ["I"] * len(nodes) if reply is None else row_cells(reply, nodes)
        healthy &= reply is not None and all(cell == "C" for cell in cells)
        lines.append(
            f"{index:>8}        "
            + "".join(cell.ljust(width) if len(cell) < width else f"{cell} " for cell in cells)
        )
    lines += ["", f"Domain State: {'UP' if healthy else 'DEGRADED'}"]
    return "\n".join(lines) + "\n"


def imex_ctl(node: Node, args: list[str]) -> int:
    """`nvidia-imex-ctl -N` (domain status) and `-q` (READY when the local daemon answers)."""
    if args not in (["-N"], ["-q"]):
        raise ToolError("usage: nvidia-imex-ctl -N | -q (the lab's mock reads these two)\n", 2)
    view = domain_view(node)
    if view is None:
        raise ToolError(NO_DAEMON, 1)
    out(render_status(view) if args == ["-N"] else f"{READY}\n")
    return 0


def mnnvl_domain(node: Node) -> list[str] | None:
    """The addresses of this node's NVLink domain when NCCL could use MNNVL there: the local daemon's
    every node READY and connected both ways, every GPU registered (Completed/Success) in one non-zero
    (ClusterUUID, CliqueId); else None (NCCL falls back to the network)."""
    view = domain_view(node)
    if view is None or len(view["nodes"]) < 2:
        return None
    keys: set[str] = set()
    for address in view["nodes"]:
        reply = view["answers"].get(address)
        if reply is None or any(cell != "C" for cell in reply.get("row", [])) or not reply["fabric"]["ready"]:
            return None
        keys.update(reply["fabric"]["keys"])
    if len(keys) != 1 or next(iter(keys)).startswith("00000000-0000-0000-0000-000000000000"):
        return None
    nodes: list[str] = view["nodes"]
    return nodes


def main(node: Node, args: list[str]) -> int:
    """The dispatcher's entry for `nvidia-imex` (the daemon)."""
    try:
        return daemon(node, args)
    except ToolError as exc:
        err(exc.message)
        return exc.code
    except OSError as exc:
        err(f"nvidia-imex: {exc}\n")
        return 1
    finally:
        sys.stderr.flush()
