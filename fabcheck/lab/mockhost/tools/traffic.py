"""Real TCP transfers between lab nodes, the bandwidth model on top of them, and the counters they move.

Bandwidth a mock tool reports = NIC line rate x protocol efficiency x min(1, measured TCP rate /
LAB_WIRE_RATE_BPS). An unshaped loopback easily exceeds LAB_WIRE_RATE_BPS, so it reads as line rate;
a link the lab slows down with ``tc`` really reads lower.

Congestion model (documented, deterministic): a lab flow runs at line rate into a busy switch, so the
receiver pauses the sender once every PAUSE_EVERY packets when the flow's priority is PFC-enabled,
drops one packet in DROP_EVERY when it is not, and marks one in ECN_EVERY with ECN when DCQCN is enabled
on both ends for that priority. Faults therefore show up in ``ethtool -S`` exactly like on a real fabric.
"""

from __future__ import annotations

import errno
import json
import math
import socket
import struct
import time
from typing import Any

from .common import Node
from .mlnx_qos import factory_state
from .netdev import add_counters

LAB_WIRE_RATE_BPS = 800e6
CALIBRATION_BYTES = 32 * 1024 * 1024
CALIBRATION_SECONDS = 1.5
CHUNK = 256 * 1024
PAUSE_EVERY = 2000
DROP_EVERY = 5000
ECN_EVERY = 1000
# Bytes on the wire per packet besides the payload (preamble/IPG, Ethernet, IP, UDP, BTH, ICRC, FCS).
ROCE_OVERHEAD = 82
IB_OVERHEAD = 26


def payload_efficiency(link_layer: str, mtu: int) -> float:
    overhead = ROCE_OVERHEAD if link_layer == "Ethernet" else IB_OVERHEAD
    return mtu / (mtu + overhead)


def nic_profile(node: Node, nic: dict[str, Any]) -> dict[str, Any]:
    """What a peer must know about this NIC to model a flow between the two."""
    netdev = nic["netdev"]
    qos = node.load(f"qos/{netdev}.json") or factory_state()
    mapping = [d >> 3 for d in range(64)]
    for dscp, prio in qos["dscp_user"]:
        mapping[dscp] = prio
    ecn = f"net/{netdev}/ecn"
    return {
        "name": nic["name"],
        "netdev": netdev,
        "link_layer": node.link_layer(nic),
        "rate_gbps": nic["rate_gbps"],
        "mtu": node.active_mtu(nic)[0],
        "tos": node.traffic_class(nic),
        "trust": qos["trust"],
        "dscp2prio": mapping,
        "pfc": qos["pfc"],
        "np": [node.read_sys_int(f"{ecn}/roce_np/enable/{p}", 0) for p in range(8)],
        "rp": [node.read_sys_int(f"{ecn}/roce_rp/enable/{p}", 0) for p in range(8)],
        "gid": nic.get("ipv4_gid", ""),
        "lid": int(node.port_value(nic, "lid") or "0x0", 16),
        "active": node.port_value(nic, "state").startswith("4"),
    }


def flow_outcome(sender: dict[str, Any], receiver: dict[str, Any], nbytes: int, tos: int) -> dict[str, int]:
    """Packets, priority, pauses, ECN marks and drops of one flow (same result on both ends)."""
    mtu = min(sender["mtu"], receiver["mtu"])
    packets = max(1, math.ceil(nbytes / mtu))
    prio = receiver["dscp2prio"][tos >> 2] if receiver["trust"] == "dscp" else 0
    lossless = bool(receiver["pfc"][prio])
    ecn = bool(receiver["np"][prio] and sender["rp"][prio])
    return {
        "prio": prio,
        "packets": packets,
        "bytes": nbytes,
        "pauses": packets // PAUSE_EVERY if lossless else 0,
        "drops": 0 if lossless else packets // DROP_EVERY,
        "marked": packets // ECN_EVERY if ecn else 0,
    }


def count_flow(node: Node, netdev: str, outcome: dict[str, int], *, sending: bool) -> None:
    """Advance this node's ethtool counters for its side of a flow."""
    p, pkts, nbytes = outcome["prio"], outcome["packets"], outcome["bytes"]
    side = "tx" if sending else "rx"
    deltas = {
        f"{side}_packets": pkts,
        f"{side}_bytes": nbytes,
        f"{side}_vport_rdma_unicast_packets": pkts,
        f"{side}_vport_rdma_unicast_bytes": nbytes,
        f"{side}_prio{p}_packets": pkts,
        f"{side}_prio{p}_bytes": nbytes,
    }
    if sending:
        deltas[f"rx_prio{p}_pause"] = outcome["pauses"]
        deltas[f"rx_prio{p}_pause_duration"] = outcome["pauses"] * 2
        deltas["rp_cnp_handled"] = outcome["marked"]
        deltas["roce_adp_retrans"] = outcome["drops"]
    else:
        deltas[f"tx_prio{p}_pause"] = outcome["pauses"]
        deltas[f"tx_prio{p}_pause_duration"] = outcome["pauses"] * 2
        deltas["np_ecn_marked_roce_packets"] = outcome["marked"]
        deltas["np_cnp_sent"] = outcome["marked"]
        deltas["rx_discards_phy"] = outcome["drops"]
        deltas["out_of_sequence"] = outcome["drops"]
    add_counters(node, netdev, deltas)


class Channel:
    """Control messages (JSON lines) and framed bulk data over one TCP connection."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def send_json(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def recv_json(self) -> dict[str, Any]:
        line = self.reader.readline()
        if not line:
            raise ConnectionError("peer closed the connection")
        return dict(json.loads(line))

    def send_data(self, nbytes: int, seconds: float) -> tuple[int, float]:
        """Send up to nbytes (stop early after `seconds`); return (bytes, seconds until acknowledged)."""
        payload = bytes(CHUNK)
        sent, start = 0, time.perf_counter()
        while sent < nbytes and time.perf_counter() - start < seconds:
            size = min(CHUNK, nbytes - sent)
            self.sock.sendall(struct.pack("!I", size) + payload[:size])
            sent += size
        self.sock.sendall(struct.pack("!I", 0))
        self.recv_json()
        return sent, max(time.perf_counter() - start, 1e-6)

    def recv_data(self) -> int:
        received = 0
        while True:
            header = self.reader.read(4)
            if len(header) < 4:
                raise ConnectionError("peer closed the connection during a transfer")
            (size,) = struct.unpack("!I", header)
            if size == 0:
                break
            chunk = self.reader.read(size)
            if len(chunk) < size:
                raise ConnectionError("peer closed the connection during a transfer")
            received += size
        self.send_json({"received": received})
        return received

    def ping(self, size: int, rounds: int) -> list[float]:
        """Round trips of `size` bytes; returns one-way times in microseconds."""
        payload = bytes(max(1, size))
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            self.sock.sendall(payload)
            self._read_exact(len(payload))
            samples.append((time.perf_counter() - start) * 1e6 / 2)
        return samples

    def pong(self, size: int, rounds: int) -> None:
        for _ in range(rounds):
            self.sock.sendall(self._read_exact(max(1, size)))

    def _read_exact(self, size: int) -> bytes:
        data = self.reader.read(size)
        if len(data) < size:
            raise ConnectionError("peer closed the connection during a latency test")
        return data

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def wire_factor(nbytes: int, seconds: float) -> float:
    """How much of the lab's reference wire rate a measured transfer reached (capped at 1)."""
    return min(1.0, (nbytes * 8 / seconds) / LAB_WIRE_RATE_BPS)


def connect(address: str, port: int, wait: float, source: str | None = None) -> socket.socket | None:
    """Connect, retrying for `wait` seconds while the peer's listener is coming up.

    `source` is the node's own address: traffic then leaves from it, so a rate limit on that address
    (the lab's slow-link fault) slows this node as a client too, not only as a server.
    """
    deadline = time.time() + wait
    bind = (source, 0) if source else None
    while True:
        try:
            sock = socket.create_connection((address, port), timeout=30, source_address=bind)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as err:
            if bind and err.errno == errno.EADDRNOTAVAIL:
                bind = None  # the node's address is not local here (unit tests): use the default source
                continue
            if time.time() >= deadline:
                return None
            time.sleep(0.05)


def listen(address: str, port: int) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port))
    server.listen(8)
    return server
