"""Mock perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``, ``ib_write_lat``).

Server and client move real bytes over TCP between the two nodes' addresses (default port 18515),
time them, and print perftest's layout with bandwidth from the model in ``traffic``.
"""

from __future__ import annotations

import getopt
import random
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

from . import pcie, traffic
from .common import Node, ToolError, getopt_message, out
from .rdma_cm import rdma_cm_tos
from .rdma_info import gid_entries

RESULT_LINE = "-" * 87
DEFAULT_PORT = 18515
ALL_SIZES = [2**i for i in range(1, 24)]
PER_SIZE_BYTES = 1024 * 1024
MAX_DURATION_SECONDS = 2.0
MSG_RATE_LIMIT = 3.2e6  # messages per second one QP reaches on a ConnectX-7 (small-message ceiling)
BW_EFFICIENCY = 0.975
LAT_ROUNDS = 200
LAB_BASE_ONE_WAY_US = 250.0  # one-way TCP latency an idle lab loopback stays under
TESTS = {
    "ib_write_bw": ("RDMA_Write BW Test", "bw"),
    "ib_read_bw": ("RDMA_Read BW Test", "bw"),
    "ib_send_bw": ("Send BW Test", "bw"),
    "ib_write_lat": ("RDMA_Write Latency Test", "lat"),
}
SHORT = "d:i:p:Fas:n:D:q:x:RT:m:c:bh"
LONG = [
    "ib-dev=",
    "ib-port=",
    "port=",
    "all",
    "size=",
    "iters=",
    "duration=",
    "qp=",
    "gid-index=",
    "rdma_cm",
    "tclass=",
    "mtu=",
    "connection=",
    "report_gbits",
    "report-gbits",
    "use_cuda=",
    "use_cuda_dmabuf",
    "help",
]


@dataclass
class Params:
    prog: str
    dev: str | None = None
    port: int = DEFAULT_PORT
    sizes: list[int] = field(default_factory=lambda: [65536])
    iters: int = 0
    duration: int = 0
    qps: int = 1
    gid_index: int | None = None
    rdma_cm: bool = False
    tos: int | None = None
    gbits: bool = False
    cuda_device: int | None = None
    cuda_dmabuf: bool = False
    server: str | None = None

    @property
    def kind(self) -> str:
        return TESTS[self.prog][1]

    @property
    def data_from_client(self) -> bool:
        return self.prog != "ib_read_bw"


def parse_args(prog: str, args: list[str]) -> Params:
    try:
        opts, rest = getopt.gnu_getopt(args, SHORT, LONG)
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message(prog, exc) + "\n Parser function exited with Error\n", 1) from None
    p = Params(prog=prog)
    for flag, value in opts:
        apply_option(p, flag, value)
    if p.iters == 0:
        p.iters = 1000 if p.kind == "lat" else 5000
    if len(rest) > 1:
        raise ToolError(f"{prog}: too many arguments\n Parser function exited with Error\n", 1)
    p.server = rest[0] if rest else None
    return p


def apply_option(p: Params, flag: str, value: str) -> None:
    def number(text: str) -> int:
        try:
            return int(text, 0)
        except ValueError:
            raise ToolError(
                f" Invalid value {text} for {flag}\n Parser function exited with Error\n", 1
            ) from None

    if flag in ("-h", "--help"):
        raise ToolError(
            f"Usage:\n  {p.prog}            start a server and wait for connection\n"
            f"  {p.prog} <host>     connect to server at <host>\n",
            0,
            stdout=True,
        )
    if flag in ("-d", "--ib-dev"):
        p.dev = value
    elif flag in ("-p", "--port"):
        p.port = number(value)
    elif flag in ("-a", "--all"):
        p.sizes = list(ALL_SIZES)
    elif flag in ("-s", "--size"):
        p.sizes = [number(value)]
    elif flag in ("-n", "--iters"):
        p.iters = number(value)
    elif flag in ("-D", "--duration"):
        p.duration = number(value)
    elif flag in ("-q", "--qp"):
        p.qps = max(1, number(value))
    elif flag in ("-x", "--gid-index"):
        p.gid_index = number(value)
    elif flag in ("-R", "--rdma_cm"):
        p.rdma_cm = True
    elif flag in ("-T", "--tclass"):
        p.tos = number(value)
    elif flag in ("--report_gbits", "--report-gbits"):
        p.gbits = True
    elif flag == "--use_cuda":
        p.cuda_device = number(value)
    elif flag == "--use_cuda_dmabuf":
        p.cuda_dmabuf = True


def find_device(node: Node, wanted: str | None) -> dict[str, Any]:
    nics = node.rdma_nics()
    if not nics:
        raise ToolError(
            " Did not detect devices \n If device exists, check if driver is up\n"
            " Unable to find the Infiniband/RoCE device\n",
            1,
        )
    nic = nics[0] if wanted is None else node.nic_by_name(wanted)
    if nic is None:
        raise ToolError(f"IB device {wanted} not found\n Unable to find the Infiniband/RoCE device\n", 1)
    state = node.port_value(nic, "state")
    if not state.startswith("4"):
        word = state.split(":")[-1].strip().capitalize() or "Down"
        raise ToolError(f" Port number 1 state is {word}\n Couldn't get context for the device\n", 1)
    return nic


def check_cuda(node: Node, p: Params) -> None:
    """--use_cuda: the buffer lives on that GPU, and the NIC registers it through nvidia_peermem, or
    with --use_cuda_dmabuf through dma-buf (the open GPU kernel module on a kernel >= 5.12). The failure
    lines of a dma-buf registration are the peermem ones (unverified: no real sample of that failure)."""
    if p.cuda_device is None:
        return
    if not any(gpu["index"] == p.cuda_device for gpu in node.gpus()):
        raise ToolError(f"Couldn't find CUDA device {p.cuda_device}\n Couldn't create IB resources\n", 1)
    if not (node.dmabuf_ready() if p.cuda_dmabuf else node.peermem_loaded()):
        raise ToolError(" Couldn't allocate MR\n Failed to create MR\n Couldn't create IB resources\n", 1)


def listen_on(node: Node, port: int) -> Any:
    """The server's socket; a port another process holds fails as perftest's server does."""
    try:
        return traffic.listen(node.address, port)
    except OSError:
        raise ToolError(
            f"Couldn't listen to port {port}\nUnable to open file descriptor for socket connection"
            " Unable to init the socket connection\n",
            1,
        ) from None


def qp_info(node: Node, nic: dict[str, Any], p: Params) -> dict[str, Any]:
    rng = random.Random()
    gid = ""
    if node.link_layer(nic) == "Ethernet":
        gids = {i: g for i, g, t, _ in gid_entries(node, nic)}
        index = p.gid_index if p.gid_index is not None else auto_gid_index(node, nic)
        if index not in gids:
            raise ToolError(
                f"Failed to query GID[{index}] of device {nic['name']}\n"
                " Couldn't get context for the device\n",
                1,
            )
        gid = gids[index]
        p.gid_index = index
    return {
        "lid": int(node.port_value(nic, "lid") or "0x0", 16),
        "qpns": [rng.randrange(0x100, 0x3FFFF) for _ in range(p.qps)],
        "psns": [rng.randrange(0, 0xFFFFFF) for _ in range(p.qps)],
        "rkey": rng.randrange(0x1000, 0xFFFFFF),
        "vaddr": rng.randrange(0x7F0000000000, 0x7FFFFFFFF000) & ~0xFFF,
        "gid": gid,
    }


def auto_gid_index(node: Node, nic: dict[str, Any]) -> int:
    """perftest picks the RoCE v2 IPv4-mapped GID when none is given."""
    for index, gid, gid_type, _ in gid_entries(node, nic):
        if gid_type == "RoCE v2" and gid.startswith("0000:0000:0000:0000:0000:ffff:"):
            return index
    return 0


def header(node: Node, nic: dict[str, Any], p: Params, mtu: int, *, server: bool) -> list[str]:
    ethernet = node.link_layer(nic) == "Ethernet"
    lines = [
        RESULT_LINE,
        f"                    {TESTS[p.prog][0]}",
        f" Dual-port       : OFF\t\tDevice         : {nic['name']}",
        f" Number of qps   : {p.qps}\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
    ]
    if p.kind == "lat":
        lines.append(" TX depth        : 1")
    elif server and p.prog == "ib_send_bw":
        lines.append(" RX depth        : 512")
    elif not server:
        lines.append(" TX depth        : 128")
    if p.prog == "ib_read_bw":
        lines.append(" Outstand reads  : 16")
    if p.kind == "bw":
        lines.append(" CQ Moderation   : 100")
    lines += [f" Mtu             : {mtu}[B]", f" Link type       : {'Ethernet' if ethernet else 'IB'}"]
    if ethernet:
        lines.append(f" GID index       : {p.gid_index}")
    lines.append(f" Max inline data : {220 if p.kind == 'lat' else 0}[B]")
    lines.append(f" rdma_cm QPs\t : {'ON' if p.rdma_cm else 'OFF'}")
    lines.append(f" Data ex. method : {'rdma_cm' if p.rdma_cm else 'Ethernet'}")
    lines.append(RESULT_LINE)
    return lines


def c_hex(value: int, width: int) -> str:
    """C's ``%#0<width>x``: zero prints without the 0x prefix."""
    return f"{value:#0{width}x}" if value else "0" * width


def address_lines(side: str, info: dict[str, Any], p: Params) -> list[str]:
    lines = []
    for qpn, psn in zip(info["qpns"], info["psns"], strict=True):
        text = f" {side} address: LID {c_hex(info['lid'], 4)} QPN {c_hex(qpn, 6)} PSN {c_hex(psn, 6)}"
        if p.prog != "ib_send_bw" and not p.rdma_cm:  # RDMA-CM exchanges keys itself
            text += f" RKey {c_hex(info['rkey'], 8)} VAddr {c_hex(info['vaddr'], 16)}"
        lines.append(text)
        if info["gid"]:
            raw = bytes.fromhex(info["gid"].replace(":", ""))
            lines.append(" GID: " + ":".join(f"{b:02d}" for b in raw))
    return lines


def bw_rows(p: Params, local: dict[str, Any], remote: dict[str, Any], factor: float) -> list[dict[str, Any]]:
    mtu = min(local["mtu"], remote["mtu"])
    rate = min(local["rate_gbps"], remote["rate_gbps"])
    ceiling = rate * traffic.payload_efficiency(local["link_layer"], mtu) * BW_EFFICIENCY * factor
    rng = random.Random()
    rows = []
    for size in p.sizes:
        gbps = min(ceiling, size * 8 * MSG_RATE_LIMIT * p.qps / 1e9) * rng.uniform(0.992, 1.0)
        iters = p.iters if not p.duration else int(gbps * 1e9 / 8 / size * p.duration)
        rows.append(
            {"size": size, "iters": iters, "gbps": gbps, "peak": 0.0 if p.duration else gbps * 1.0012}
        )
    return rows


def format_bw(rows: list[dict[str, Any]], p: Params, *, hide_peak: bool) -> list[str]:
    unit = "Gb/sec" if p.gbits else "MB/sec"
    lines = [f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"]
    for row in rows:
        bytes_per_s = row["gbps"] * 1e9 / 8
        scale = 1.0 if p.gbits else 1e9 / 8 / 2**20
        peak = 0.0 if hide_peak else row["peak"] * scale
        avg = row["gbps"] * scale
        msg_rate = bytes_per_s / row["size"] / 1e6
        lines.append(
            f" {row['size']:<7d}    {row['iters']:<10d}       {peak:<7.2f}"
            f"            {avg:<7.2f}\t\t   {msg_rate:<7.6f}"
        )
    return [*lines, RESULT_LINE]


def lat_rows(p: Params, local: dict[str, Any], extra_us: float) -> list[dict[str, Any]]:
    base = 0.9 if local["link_layer"] != "Ethernet" else 1.6
    rows = []
    for size in p.sizes:
        t = base + size * 8 / (local["rate_gbps"] * 1e3) + extra_us
        rows.append({"size": size, "iters": p.iters, "typical": t})
    return rows


def format_lat(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
        "   99% percentile[usec]   99.9% percentile[usec]"
    ]
    for row in rows:
        t = row["typical"]
        lines.append(
            f" {row['size']:<7d} {row['iters']}          {t * 0.94:<7.2f}        {t * 5.8:<7.2f}"
            f"      {t:<7.2f}"
            f"            {t * 1.03:<7.2f}       {t * 0.12:<7.2f}         {t * 1.21:<7.2f}"
            f"                 {t * 4.9:<7.2f}"
        )
    return [*lines, RESULT_LINE]


def flow_tos(node: Node, nic: dict[str, Any], p: Params) -> int:
    if p.tos is not None:
        return p.tos
    return rdma_cm_tos(node, nic["name"]) if p.rdma_cm else node.traffic_class(nic)


def count_traffic(
    node: Node,
    nic: dict[str, Any],
    sender: dict[str, Any],
    receiver: dict[str, Any],
    p: Params,
    tos: int,
    rows: list[dict[str, Any]],
    *,
    sending: bool,
) -> None:
    if sender["link_layer"] != "Ethernet":
        return
    total = sum(r["size"] * r["iters"] for r in rows)
    outcome = traffic.flow_outcome(sender, receiver, total, tos)
    traffic.count_flow(node, nic["netdev"], outcome, sending=sending)


def transfer(chan: traffic.Channel, p: Params, *, sending: bool) -> float:
    """Calibration plus one capped transfer per size; returns the measured wire factor."""
    seconds = min(MAX_DURATION_SECONDS, p.duration) if p.duration else traffic.CALIBRATION_SECONDS
    if sending:
        nbytes, elapsed = chan.send_data(traffic.CALIBRATION_BYTES, seconds)
        for size in p.sizes:
            chan.send_data(min(size * p.iters, PER_SIZE_BYTES), seconds)
        factor = traffic.wire_factor(nbytes, elapsed)
        chan.send_json({"factor": factor})
        return factor
    chan.recv_data()
    for _ in p.sizes:
        chan.recv_data()
    return float(chan.recv_json()["factor"])


def run_client(node: Node, p: Params) -> int:
    nic = find_device(node, p.dev)
    check_cuda(node, p)
    info = qp_info(node, nic, p)
    local = traffic.nic_profile(node, nic)
    local["rate_gbps"] = min(local["rate_gbps"], pcie.carried_gbps(node, nic, p.cuda_device))  # PCIe ceiling
    sock = traffic.connect(str(p.server), p.port, wait=1.0, source=node.address)
    if sock is None:
        raise ToolError(
            f"Couldn't connect to {p.server}:{p.port}\nUnable to open file descriptor for socket "
            "connection Unable to init the socket connection\n",
            1,
        )
    chan = traffic.Channel(sock)
    tos = flow_tos(node, nic, p)
    chan.send_json(
        {
            "prog": p.prog,
            "sizes": p.sizes,
            "iters": p.iters,
            "duration": p.duration,
            "qps": p.qps,
            "profile": local,
            "qp": info,
            "tos": tos,
            "gbits": p.gbits,
            "rdma_cm": p.rdma_cm,
        }
    )
    hello = chan.recv_json()
    if "error" in hello:
        raise ToolError(hello["error"], 1)
    remote, remote_info = hello["profile"], hello["qp"]
    mtu = min(local["mtu"], remote["mtu"])
    lines = header(node, nic, p, mtu, server=False)
    lines += address_lines("local", info, p) + address_lines("remote", remote_info, p) + [RESULT_LINE]
    out("\n".join(lines) + "\n")
    if p.kind == "lat":
        samples = chan.ping(min(p.sizes[-1], 65536), LAT_ROUNDS)
        extra = max(0.0, statistics.median(samples) - LAB_BASE_ONE_WAY_US)
        rows = lat_rows(p, local, extra)
        chan.send_json({"rows": rows})
        out("\n".join(format_lat(rows)) + "\n")
        chan.close()
        return 0
    factor = transfer(chan, p, sending=p.data_from_client)
    rows = bw_rows(p, local, remote, factor)
    sender, receiver = (local, remote) if p.data_from_client else (remote, local)
    count_traffic(node, nic, sender, receiver, p, tos, rows, sending=p.data_from_client)
    chan.send_json({"rows": rows})
    out("\n".join(format_bw(rows, p, hide_peak=bool(p.duration))) + "\n")
    chan.close()
    return 0


def run_server(node: Node, p: Params) -> int:
    nic = find_device(node, p.dev)
    check_cuda(node, p)
    info = qp_info(node, nic, p)
    local = traffic.nic_profile(node, nic)
    local["rate_gbps"] = min(local["rate_gbps"], pcie.carried_gbps(node, nic, p.cuda_device))  # PCIe ceiling
    listener = listen_on(node, p.port)
    out(
        "\n************************************\n* Waiting for client to connect... *\n"
        "************************************\n"
    )
    sys.stdout.flush()
    sock, _ = listener.accept()
    listener.close()
    chan = traffic.Channel(sock)
    hello = chan.recv_json()
    p.sizes, p.iters, p.duration, p.qps = hello["sizes"], hello["iters"], hello["duration"], hello["qps"]
    p.gbits, p.rdma_cm = hello["gbits"], hello["rdma_cm"]
    remote = hello["profile"]
    chan.send_json({"profile": local, "qp": info})
    mtu = min(local["mtu"], remote["mtu"])
    lines = header(node, nic, p, mtu, server=True)
    lines += address_lines("local", info, p) + address_lines("remote", hello["qp"], p) + [RESULT_LINE]
    out("\n".join(lines) + "\n")
    if p.kind == "lat":
        chan.pong(min(p.sizes[-1], 65536), LAT_ROUNDS)
        rows = chan.recv_json()["rows"]
        out("\n".join(format_lat(rows)) + "\n")
        return 0
    transfer(chan, p, sending=not p.data_from_client)
    rows = chan.recv_json()["rows"]
    sender, receiver = (remote, local) if p.data_from_client else (local, remote)
    count_traffic(node, nic, sender, receiver, p, hello["tos"], rows, sending=not p.data_from_client)
    hide_peak = bool(p.duration) or p.prog == "ib_send_bw"
    out("\n".join(format_bw(rows, p, hide_peak=hide_peak)) + "\n")
    chan.close()
    return 0


def main(node: Node, prog: str, args: list[str]) -> int:
    p = parse_args(prog, args)
    try:
        return run_client(node, p) if p.server else run_server(node, p)
    except (ConnectionError, OSError) as exc:
        raise ToolError(f" Failed to exchange data between server and clients ({exc})\n", 1) from None
