"""Real TCP transfers between lab nodes, the bandwidth model on top of them, and the counters they move.

Bandwidth a mock tool reports = NIC line rate x protocol efficiency x min(1, measured TCP rate /
LAB_WIRE_RATE_BPS). An unshaped loopback easily exceeds LAB_WIRE_RATE_BPS, so it reads as line rate;
a link the lab slows down with ``tc`` really reads lower.

Congestion model (documented, deterministic): every lab flow runs at line rate into a busy switch. The
model does not count concurrent flows, so a 1->1 flow congests exactly like each flow of an N->1 incast
(fan-in does not scale the numbers; it adds one flow's worth per sender on the receiver's port).

Without switches (no wire view, see below) the receiver pauses the sender once every PAUSE_EVERY packets
when the flow's priority is PFC-enabled on the receiver NIC, drops one packet in DROP_EVERY when it is
not, and marks one in ECN_EVERY when DCQCN is enabled on both ends for that priority.

With switches, the mock switch server writes a wire view for each cabled NIC into the node's state
(``fabric/<netdev>.json``: switch, port and that port's QoS) and the flow crosses the sender's switch
port (ingress) and the receiver's switch port (egress, where the congestion is):

- the switch holds the sender back (sender ``rx_prioP_pause``, ingress port ``pfc_tx``) only when the
  ingress port runs PFC on the priority it classifies the DSCP to, the sender NIC honours PFC on that
  priority and the egress port runs PFC on it too (its queue is lossless); otherwise the congested
  egress queue drops one packet in DROP_EVERY (egress port ``drops``, receiver ``out_of_sequence``,
  sender ``roce_adp_retrans``);
- the receiver pauses the switch (receiver ``tx_prioP_pause``, egress port ``pfc_rx``) when its NIC runs
  PFC on the priority; unless the egress port honours that priority the receiver NIC drops as well
  (``rx_discards_phy``);
- only the switch marks: one packet in ECN_EVERY when the egress queue has ECN; the receiver sends a CNP
  per mark when its NP is on for the priority, the sender handles them when its RP is on.

Each side appends what the flow did to its own switch port to a spool in its state folder
(``fabric/spool/``); the switch server adds the spooled records to its counters before any counters show.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
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
# Where the switch server writes each cabled NIC's wire view and where the node spools counter records.
WIRE_DIR = "fabric"
SPOOL_DIR = "fabric/spool"


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
        "wire": wire_view(node, netdev),
    }


def flow_outcome(sender: dict[str, Any], receiver: dict[str, Any], nbytes: int, tos: int) -> dict[str, Any]:
    """What one flow does to both NICs and to the switch ports it crosses (same result on both ends)."""
    mtu = min(sender["mtu"], receiver["mtu"])
    packets = max(1, math.ceil(nbytes / mtu))
    prio = nic_priority(receiver, tos)
    flow = {"prio": prio, "packets": packets, "bytes": nbytes}
    ingress, egress = sender.get("wire"), receiver.get("wire")
    if ingress and egress:
        return flow | switched_outcome(sender, receiver, ingress, egress, flow, tos)
    lossless = bool(receiver["pfc"][prio])
    marked = packets // ECN_EVERY if receiver["np"][prio] and sender["rp"][prio] else 0
    pauses = packets // PAUSE_EVERY if lossless else 0
    return flow | {
        "sender_prio": prio,
        "pause_prio": prio,
        "sender_pauses": pauses,
        "receiver_pauses": pauses,
        "switch_drops": 0,
        "nic_drops": 0 if lossless else packets // DROP_EVERY,
        "marked": marked,
        "cnp_sent": marked,
        "cnp_handled": marked,
        "ingress": None,
        "egress": None,
    }


def nic_priority(nic: dict[str, Any], tos: int) -> int:
    """The priority a NIC puts a packet of this TOS on (its DSCP map under trust dscp, else 0)."""
    return int(nic["dscp2prio"][tos >> 2]) if nic["trust"] == "dscp" else 0


def switch_class(wire: dict[str, Any], tos: int) -> tuple[int, int]:
    """(priority, egress queue) a switch port gives this TOS. The wire view carries the port's class of
    the RoCE DSCP; any other DSCP falls back to the default map (DSCP >> 3, queue = priority)."""
    dscp = tos >> 2
    if dscp == wire["roce_dscp"]:
        return int(wire["roce_priority"]), int(wire["roce_queue"])
    return dscp >> 3, dscp >> 3


def switched_outcome(
    sender: dict[str, Any],
    receiver: dict[str, Any],
    ingress: dict[str, Any],
    egress: dict[str, Any],
    flow: dict[str, int],
    tos: int,
) -> dict[str, Any]:
    """The rules of the module docstring for a flow from the ingress port to the egress port."""
    packets, prio = flow["packets"], flow["prio"]
    in_prio, in_queue = switch_class(ingress, tos)
    out_prio, queue = switch_class(egress, tos)
    held = (
        in_prio in ingress["pfc_priorities"]
        and bool(sender["pfc"][in_prio])
        and out_prio in egress["pfc_priorities"]
    )
    sender_pauses = packets // PAUSE_EVERY if held else 0
    switch_drops = 0 if held else packets // DROP_EVERY
    receiver_pfc = bool(receiver["pfc"][prio])
    receiver_pauses = packets // PAUSE_EVERY if receiver_pfc else 0
    nic_drops = 0 if receiver_pfc and prio in egress["pfc_priorities"] else packets // DROP_EVERY
    marked = packets // ECN_EVERY if queue in egress["ecn_queues"] else 0
    cnp_sent = marked if receiver["np"][prio] else 0
    sender_prio = nic_priority(sender, tos)
    return {
        "sender_prio": sender_prio,
        "pause_prio": in_prio,
        "sender_pauses": sender_pauses,
        "receiver_pauses": receiver_pauses,
        "switch_drops": switch_drops,
        "nic_drops": nic_drops,
        "marked": marked,
        "cnp_sent": cnp_sent,
        "cnp_handled": cnp_sent if sender["rp"][sender_prio] else 0,
        "ingress": port_record(
            ingress,
            {
                "rx_packets": {in_queue: packets},
                "rx_bytes": {in_queue: flow["bytes"]},
                "pfc_tx": {in_prio: sender_pauses},
            },
        ),
        "egress": port_record(
            egress,
            {
                "tx_packets": {queue: packets},
                "tx_bytes": {queue: flow["bytes"]},
                "drops": {queue: switch_drops},
                "ecn_marked": {queue: marked},
                "pfc_rx": {prio: receiver_pauses},
            },
        ),
    }


def port_record(wire: dict[str, Any], kinds: dict[str, dict[int, int]]) -> dict[str, Any]:
    """A spool record: what to add to one switch port's counters (kind -> {priority or queue: n})."""
    add = {kind: {str(i): n for i, n in by_index.items() if n} for kind, by_index in kinds.items()}
    return {"switch": wire["switch"], "port": wire["port"], "add": {k: v for k, v in add.items() if v}}


def count_flow(node: Node, netdev: str, outcome: dict[str, Any], *, sending: bool) -> None:
    """Advance this node's ethtool counters for its side of a flow, and spool its switch port's share."""
    pkts, nbytes = outcome["packets"], outcome["bytes"]
    side = "tx" if sending else "rx"
    p = outcome["sender_prio"] if sending else outcome["prio"]
    deltas = {
        f"{side}_packets": pkts,
        f"{side}_bytes": nbytes,
        f"{side}_vport_rdma_unicast_packets": pkts,
        f"{side}_vport_rdma_unicast_bytes": nbytes,
        f"{side}_prio{p}_packets": pkts,
        f"{side}_prio{p}_bytes": nbytes,
    }
    lost = outcome["switch_drops"] + outcome["nic_drops"]
    if sending:
        pause = outcome["pause_prio"]
        deltas[f"rx_prio{pause}_pause"] = outcome["sender_pauses"]
        deltas[f"rx_prio{pause}_pause_duration"] = outcome["sender_pauses"] * 2
        deltas["rp_cnp_handled"] = outcome["cnp_handled"]
        deltas["roce_adp_retrans"] = lost
    else:
        deltas[f"tx_prio{p}_pause"] = outcome["receiver_pauses"]
        deltas[f"tx_prio{p}_pause_duration"] = outcome["receiver_pauses"] * 2
        deltas["np_ecn_marked_roce_packets"] = outcome["marked"]
        deltas["np_cnp_sent"] = outcome["cnp_sent"]
        deltas["rx_discards_phy"] = outcome["nic_drops"]
        deltas["out_of_sequence"] = lost
    add_counters(node, netdev, deltas)
    record = outcome["ingress"] if sending else outcome["egress"]
    if record and record["add"]:
        spool_record(node, record)


def wire_view(node: Node, netdev: str) -> dict[str, Any] | None:
    """The switch port this NIC is cabled to, as the mock switch server last wrote it (None: no switch)."""
    view = node.load(f"{WIRE_DIR}/{netdev}.json")
    return view if isinstance(view, dict) else None


def spool_record(node: Node, record: dict[str, Any]) -> None:
    """One file per record, written atomically: the server never sees half a record nor loses one."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.json"
    node.save(f"{SPOOL_DIR}/{name}", record)


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
