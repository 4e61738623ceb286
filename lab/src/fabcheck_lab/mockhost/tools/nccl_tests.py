"""Mock nccl-tests (``all_reduce_perf`` and friends) with NCCL INFO lines and real inter-node bytes.

Ranks come from the launcher's environment as the real binaries read it: Open MPI's ``mpirun``
(``OMPI_COMM_WORLD_*``), Slurm's ``srun`` (``SLURM_PROCID``/``SLURM_NTASKS``/``SLURM_LOCALID``) or
``PMI_*``. Where real nccl-tests pass NCCL's unique id over MPI, the mock's processes meet over TCP:
process 0 listens on its node's address at a port derived from the job id every rank of the job sees
(``PMIX_NAMESPACE``, ``SLURM_JOB_ID.SLURM_STEP_ID``); the others look for it on the first node of a
Slurm step, else on every lab node (a connection to a closed port on a lab address is refused at once).
``fabcheck-mpirun`` names the meeting point instead (``FABCHECK_MPI_ROOT:FABCHECK_MPI_PORT``).
Process 0 times a real TCP transfer to every other node and prints the table; bus bandwidth is the
ceiling of the link that bounds the op on the ranks' layout, scaled by that measurement like perftest:
NVLink (every active link's rate) inside one host or one working multi-node NVLink domain (IMEX up and
one clique, tools/imex.mnnvl_domain), else the network per op (NIC line rates, GPUDirect, NIC placement,
MTU): a ring op moves the domain's NIC sum, alltoall and hypercube a rank's NIC share x (n-1)/(n-M),
sendrecv, broadcast and reduce one GPU's NIC share (README "busbw floors per collective"). Every op's
table has its real shape (nccl-tests src/<op>.cu and src/util.cu at
a0b82b2260cf5152b9f8c061bbf7eaf0ba096432): `size` is max(send, receive) bytes per rank, `count` the per-
rank parameter, hypercube's algbw counts c(n-1) elements and it runs on a power-of-two rank count only.
"""

from __future__ import annotations

import getopt
import math
import os
import random
import re
import socket
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Any

from . import imex, pcie, traffic
from .common import Node, ToolError, out
from .nccl_log import (
    RankLog,
    channel_lines,
    comm_lines,
    complete_line,
    gdr_line,
    init_lines,
    nvls_line,
    rank_net,
)
from .nvidia_smi import gpu_fabric, nvlink_state

DEFAULT_PORT = 18600
VERSION_LEVELS = ("VERSION", "WARN", "INFO", "TRACE")  # NCCL_DEBUG levels that print "NCCL version"
CALIBRATION_BYTES = 16 * 1024 * 1024
CALIBRATION_SECONDS = 1.0
NET_EFFICIENCY = 0.92
NO_GDR_FACTOR = 0.8
SOCKET_FACTOR = 0.25
# A NODE path (through the socket's host bridge) costs GDR unless NCCL_NET_GDR_LEVEL allows it, which
# NO_GDR_FACTOR models; no public figure supports a further derate there. SYS crosses sockets.
DISTANCE_FACTOR = {3: 1.0, 4: 1.0, 6: 1.0, 7: 0.6}
NVLINK_EFFICIENCY = 0.85  # of the GPU's NVLink sum (links x per-link GB/s) a collective's busbw reaches
PCIE_GBPS = 22.0
DTYPES = {
    "float": 4,
    "double": 8,
    "half": 2,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
}
OPS = {  # prog -> (redop, root, size is split across ranks); reduce and broadcast run root 0 (-r 0)
    "all_reduce_perf": ("sum", -1, False),
    "all_gather_perf": ("none", -1, True),
    "reduce_scatter_perf": ("sum", -1, True),
    "alltoall_perf": ("none", -1, True),
    "broadcast_perf": ("none", 0, False),
    "sendrecv_perf": ("sum", -1, False),
    "reduce_perf": ("sum", 0, False),
    "hypercube_perf": ("", -1, True),  # src/hypercube.cu passes opName ""
}
RING_OPS = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf")
PEER_OPS = ("alltoall_perf", "hypercube_perf")


def bus_factor(prog: str, nranks: int) -> float:
    if prog == "all_reduce_perf":
        return 2 * (nranks - 1) / nranks
    if prog in ("all_gather_perf", "reduce_scatter_perf", "alltoall_perf"):
        return (nranks - 1) / nranks
    return 1.0


def algbw_bytes(prog: str, shown: int, count: int, esize: int, nranks: int) -> int:
    """The bytes algbw divides by the time: the size column, but for hypercube count x (n-1) elements."""
    return count * esize * (nranks - 1) if prog == "hypercube_perf" else shown


@dataclass
class Params:
    prog: str
    min_bytes: int = 32 * 1024 * 1024
    max_bytes: int = 32 * 1024 * 1024
    step_factor: int = 1
    step_bytes: int = 1024 * 1024
    ngpus: int = 1
    iters: int = 20
    warmup: int = 5
    dtype: str = "float"
    check: int = 1


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    text = text.strip()
    scale = units.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise ValueError(text)
    return int(digits) * scale


USAGE = (
    "USAGE: {prog} \n\t[-t,--nthreads <num threads>] \n\t[-g,--ngpus <gpus per thread>] \n\t"
    "[-b,--minbytes <min size in bytes>] \n\t[-e,--maxbytes <max size in bytes>] \n\t"
    "[-i,--stepbytes <increment size>] \n\t[-f,--stepfactor <increment factor>] \n\t"
    "[-n,--iters <iteration count>] \n\t[-m,--agg_iters <aggregated iteration count>] \n\t"
    "[-w,--warmup_iters <warmup iteration count>] \n\t[-c,--check <0/1>] \n\t"
    "[-d,--datatype <nccltype/all>] \n\t"
    "[-h,--help]\n"
)


def parse_args(prog: str, args: list[str]) -> Params:
    p = Params(prog=prog)
    try:
        opts, _ = getopt.gnu_getopt(
            args,
            "t:g:b:e:i:f:n:m:w:c:d:o:r:z:G:C:a:h",
            [
                "nthreads=",
                "ngpus=",
                "minbytes=",
                "maxbytes=",
                "stepbytes=",
                "stepfactor=",
                "iters=",
                "warmup_iters=",
                "check=",
                "datatype=",
                "help",
            ],
        )
    except getopt.GetoptError as exc:
        letter = exc.opt or "?"
        raise ToolError(f"invalid option '{letter}'\n" + USAGE.format(prog=prog), 0, stdout=True) from None
    try:
        for flag, value in opts:
            apply_option(p, flag, value)
    except ValueError as exc:
        raise ToolError(f"invalid value '{exc}'\n" + USAGE.format(prog=prog), 0, stdout=True) from None
    return p


def apply_option(p: Params, flag: str, value: str) -> None:
    if flag in ("-h", "--help"):
        raise ToolError(USAGE.format(prog=p.prog), 0, stdout=True)
    if flag in ("-b", "--minbytes"):
        p.min_bytes = parse_size(value)
    elif flag in ("-e", "--maxbytes"):
        p.max_bytes = parse_size(value)
    elif flag in ("-i", "--stepbytes"):
        p.step_bytes, p.step_factor = parse_size(value), 1
    elif flag in ("-f", "--stepfactor"):
        p.step_factor = int(value)
    elif flag in ("-g", "--ngpus"):
        p.ngpus = int(value)
    elif flag in ("-n", "--iters"):
        p.iters = int(value)
    elif flag in ("-w", "--warmup_iters"):
        p.warmup = int(value)
    elif flag in ("-c", "--check"):
        p.check = int(value)
    elif flag in ("-d", "--datatype"):
        if value not in DTYPES:
            raise ValueError(value)
        p.dtype = value


def sizes(p: Params) -> list[int]:
    result, size = [], p.min_bytes
    while size <= p.max_bytes:
        result.append(size)
        size = size * p.step_factor if p.step_factor > 1 else size + p.step_bytes
        if size == result[-1]:
            break
    return result


# --- ranks and world --------------------------------------------------------------------------
PORT_RANGE = (20000, 40000)  # meeting ports derived from a job id fall in here
JOB_ID_VARS = ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid")  # same value in every rank of one mpirun job


@dataclass
class World:
    proc: int
    nprocs: int
    local: int
    nlocal: int
    root: str | None  # where process 0 listens; None: look for it on the candidate nodes
    port: int


def job_key(env: dict[str, str]) -> str | None:
    """What every rank of one launch sees alike: the PMIx namespace of an mpirun job, a Slurm step."""
    if "SLURM_JOB_ID" in env:
        return f"slurm:{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '0')}"
    return next((f"pmix:{env[name]}" for name in JOB_ID_VARS if env.get(name)), None)


def meeting_port(key: str) -> int:
    low, high = PORT_RANGE
    return low + zlib.crc32(key.encode()) % (high - low)


def first_slurm_node(env: dict[str, str]) -> str | None:
    """The first host of SLURM_STEP_NODELIST (``gpu[01-02],x`` or ``gpu01,gpu02``): process 0 runs there."""
    nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
    if not nodes:
        return None
    head = re.match(r"([^,\[]+)(?:\[([^\],-]+))?", nodes)
    return (head.group(1) + (head.group(2) or "")) if head else None


def world_from_env(env: dict[str, str], node: Node | None = None) -> World:
    def pick(*names: str, default: str = "0") -> int:
        return int(next((env[n] for n in names if n in env), default))

    key = job_key(env)
    root = env.get("FABCHECK_MPI_ROOT")
    port = int(env.get("FABCHECK_MPI_PORT", DEFAULT_PORT))
    if root is None and key is not None:
        port = meeting_port(key)
        first = first_slurm_node(env)
        if first is not None and node is not None:
            root = node.address if first == node.hostname else node.info.get("peers", {}).get(first)
    return World(
        proc=pick("OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "PMIX_RANK"),
        nprocs=pick("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE", default="1"),
        local=pick("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"),
        nlocal=pick("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", default="1"),
        root=root,
        port=port,
    )


def mnnvl_of(node: Node) -> list[str] | None:
    """The IMEX addresses of this tray's multi-node NVLink domain while NCCL could use it (its GPUs in a
    non-zero cluster; imex.mnnvl_domain asks the daemons), else None: NCCL then uses the network."""
    keys = {f"{f['cluster_uuid']}" for f in (gpu_fabric(node, gpu) for gpu in node.gpus())}
    if not keys or any(str(k).startswith(("00000000-", "N/A")) for k in keys):
        return None
    return imex.mnnvl_domain(node)


def gpu_nvlink_gbytes(node: Node, gpu: dict[str, Any]) -> float:
    """The GPU's NVLink sum: every active link's GB/s (nvidia-smi nvlink -s)."""
    links = nvlink_state(node).get("links", {}).get(str(gpu["index"]), [])
    return float(sum(rate for rate in links if rate is not None))


def my_ranks(node: Node, p: Params, world: World, env: dict[str, str]) -> list[dict[str, Any]]:
    gpus = node.gpus()
    mnnvl = mnnvl_of(node)
    ranks = []
    for g in range(p.ngpus):
        dev = world.local * p.ngpus + g
        if dev >= len(gpus):
            raise ToolError(
                f"{node.hostname}: Test CUDA failure common.cu:1062 'invalid device ordinal'\n"
                f" .. {node.hostname} pid {os.getpid()}: Test failure common.cu:1171\n",
                2,
                stdout=True,
            )
        gpu = gpus[dev]
        net = rank_net(node, gpu, env)
        profile = traffic.nic_profile(node, net["nic"]) if net["nic"] else None
        # The PCIe ceiling of the rank's traffic: GPU to NIC peer-to-peer with GDR, else host memory.
        if net["nic"]:
            profile["pcie_gbps"] = pcie.carried_gbps(node, net["nic"], gpu["index"] if net["gdr"] else None)
        ranks.append(
            {
                "rank": world.proc * p.ngpus + g,
                "dev": dev,
                "gpu": gpu,
                "host": node.hostname,
                "address": node.address,
                "mnnvl": mnnvl,
                "nvlink_gbytes": gpu_nvlink_gbytes(node, gpu),
                "pid": os.getpid(),
                "net": net,
                "profile": profile,
            }
        )
    return ranks


# --- performance model ------------------------------------------------------------------------
def node_bandwidth(ranks: list[dict[str, Any]]) -> float:
    """GB/s one node can push into the fabric with the NICs its ranks use."""
    nics = {r["net"]["nic"]["name"]: r["net"]["nic"] for r in ranks if r["net"]["nic"]}
    if not nics:
        return 400 / 8 * SOCKET_FACTOR
    return sum(n["rate_gbps"] for n in nics.values()) / 8


def rank_penalty(rank: dict[str, Any]) -> float:
    net = rank["net"]
    if net["transport"] != "IB":
        return 1.0
    factor = DISTANCE_FACTOR.get(net["distance"], 0.6) * (1.0 if net["gdr"] else NO_GDR_FACTOR)
    profile = rank["profile"]
    factor *= min(1.0, profile.get("pcie_gbps", math.inf) / profile["rate_gbps"])  # one slow rail paces all
    return (
        factor
        * traffic.payload_efficiency(profile["link_layer"], profile["mtu"])
        / traffic.payload_efficiency(profile["link_layer"], 4096)
    )


def domain_of(rank: dict[str, Any]) -> str:
    """The NVLink domain a rank's bytes stay in: its working MNNVL domain, else its host."""
    members = rank.get("mnnvl")
    return ",".join(members) if members and rank.get("address") in members else str(rank["host"])


def same_mnnvl(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two ranks on different trays that NCCL connects over multi-node NVLink (P2P/MNNVL)."""
    return a["host"] != b["host"] and domain_of(a) == domain_of(b)


def network_ceiling(prog: str, ranks: list[dict[str, Any]]) -> float:
    """GB/s of busbw the NICs allow `prog` on this layout (before efficiency and penalties)."""
    hosts = {r["host"] for r in ranks}
    host_gbytes = {h: node_bandwidth([r for r in ranks if r["host"] == h]) for h in hosts}
    per_host = {h: sum(1 for r in ranks if r["host"] == h) for h in hosts}
    domains: dict[str, set[str]] = {}
    for r in ranks:
        domains.setdefault(domain_of(r), set()).add(r["host"])
    if prog in RING_OPS:  # every ring leaves each domain once: a domain's NICs carry one rank's bytes
        return min(sum(host_gbytes[h] for h in members) for members in domains.values())
    share = min(host_gbytes[h] / per_host[h] for h in hosts)
    if prog in PEER_OPS:
        n = len(ranks)
        m = min(sum(per_host[h] for h in members) for members in domains.values())
        return share * (n - 1) / (n - m)
    return share  # sendrecv, broadcast, reduce: one GPU's NIC


def bus_ceiling(ranks: list[dict[str, Any]], prog: str = "all_reduce_perf") -> tuple[float, float]:
    """(bus bandwidth ceiling in GB/s, base latency in us) of `prog` on this set of ranks."""
    nvlink = min(float(r.get("nvlink_gbytes", 0.0)) for r in ranks) * NVLINK_EFFICIENCY
    if len({domain_of(r) for r in ranks}) == 1:  # one host or one working NVLink domain
        return (nvlink or PCIE_GBPS), 8.0 if len({r["host"] for r in ranks}) == 1 else 12.0
    penalty = min(rank_penalty(r) for r in ranks)
    network = network_ceiling(prog, ranks) * NET_EFFICIENCY * penalty
    return (min(network, nvlink) if nvlink else network), 18.0 + 3 * math.log2(len(ranks))


def table_rows(p: Params, nranks: int, ceiling: float, latency: float) -> list[dict[str, Any]]:
    redop, root, split = OPS[p.prog]
    esize = DTYPES[p.dtype]
    factor = bus_factor(p.prog, nranks)
    algbw_peak = ceiling / factor if factor else 1000.0
    rng = random.Random()
    rows = []
    for size in sizes(p):
        if split:
            count = (size // esize // nranks) & -(16 // esize if esize < 16 else 1)
            shown = count * nranks * esize
        else:
            count = size // esize
            shown = count * esize
        moved = algbw_bytes(p.prog, shown, count, esize, nranks)
        times = []
        for place in (1.0, 0.995):
            t = (
                0.06
                if moved == 0
                else (latency + moved / (algbw_peak * 1e3)) * place * rng.uniform(0.99, 1.01)
            )
            algbw = moved / t / 1e3 if moved else 0.0
            times.append((t, algbw, algbw * factor))
        rows.append(
            {"size": shown, "count": count, "redop": redop, "root": root, "out": times[0], "in": times[1]}
        )
    return rows


def time_text(us: float) -> str:
    if us >= 10000:
        return f"{us:7.0f}"
    return f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


TABLE_HEADER = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)",
)


def render_table(p: Params, rows: list[dict[str, Any]]) -> str:
    lines = ["#", *TABLE_HEADER]
    wrong_in = "N/A" if p.prog == "alltoall_perf" else "0"
    total = 0.0
    for r in rows:
        (to, ao, bo), (ti, ai, bi) = r["out"], r["in"]
        total += bo + bi
        lines.append(
            f"{r['size']:12d}  {r['count']:12d}  {p.dtype:>8}  {r['redop']:>6}  {r['root']:6d}"
            f"  {time_text(to)}  {ao:6.2f}  {bo:6.2f}  {'0':>5}"
            f"  {time_text(ti)}  {ai:6.2f}  {bi:6.2f}  {wrong_in:>5}"
        )
    average = total / (2 * len(rows)) if rows else 0.0
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {average:g}", "#", ""]
    return "\n".join(lines) + "\n"


NCCL_TESTS_VERSION = "2.19.6"  # src/common.h at a0b82b2260cf5152b9f8c061bbf7eaf0ba096432


def version_code(version: str) -> int:
    """NCCL_VERSION_CODE of `2.21.5+cuda12.4`: 22105 (nccl.h: major*10000 + minor*100 + patch)."""
    major, minor, patch = (int(part) for part in version.split("+")[0].split(".")[:3])
    return major * 10000 + minor * 100 + patch


def render_header(node: Node, p: Params, ranks: list[dict[str, Any]]) -> str:
    """writeDeviceReport's lines (src/util.cu): version, the test's banner, the parameters, the devices."""
    code = version_code(str(node.topology.get("nccl_version", "2.21.5")))
    lines = [
        f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers={code} nccl-library={code}",
        f"# Collective test starting: {p.prog}",
        f"# nThread 1 nGpus {p.ngpus} minBytes {p.min_bytes} maxBytes {p.max_bytes} step: "
        + (f"{p.step_factor}(factor)" if p.step_factor > 1 else f"{p.step_bytes}(bytes)")
        + f" warmup iters: {p.warmup} iters: {p.iters} agg iters: 1 validation: {p.check} graph: 0"
        + " unalign: 0",
        "#",
        "# Using devices",
    ]
    for r in ranks:
        domain, bus, dev_fn = r["gpu"]["bus_id"].split(":")
        busid = f"{domain[-4:]}:{bus}:{dev_fn.split('.')[0]}".lower()
        lines.append(
            f"#  Rank {r['rank']:2d} Group  0 Pid {r['pid']:6d} on {r['host']:>10} device {r['dev']:2d} "
            f"[{busid}] {r['gpu']['name']}"
        )
    return "\n".join(lines) + "\n"


# --- rendezvous -------------------------------------------------------------------------------
def gather(world: World, node: Node, mine: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    """Process 0: collect every process's ranks and time a transfer to each other node."""
    listener = traffic.listen(node.address, world.port)
    listener.settimeout(30)
    peers: list[tuple[traffic.Channel, list[dict[str, Any]]]] = []
    try:
        while len(peers) < world.nprocs - 1:
            sock, _ = listener.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            chan = traffic.Channel(sock)
            peers.append((chan, chan.recv_json()["ranks"]))
    except TimeoutError:
        raise ToolError(
            f"{node.hostname}: NCCL WARN Bootstrap : no connection from all ranks after 30s\n", 1
        ) from None
    finally:
        listener.close()
    factor, measured = 1.0, {node.hostname}
    for chan, ranks in sorted(peers, key=lambda item: item[1][0]["rank"]):
        host = ranks[0]["host"]
        if host not in measured:
            measured.add(host)
            chan.send_json({"calibrate": True})
            nbytes, elapsed = chan.send_data(CALIBRATION_BYTES, CALIBRATION_SECONDS)
            factor = min(factor, traffic.wire_factor(nbytes, elapsed))
    everyone = mine + [r for _, ranks in peers for r in ranks]
    everyone.sort(key=lambda r: r["rank"])
    for chan, _ in peers:
        chan.send_json({"done": True, "ranks": everyone, "factor": factor})
        chan.close()
    return everyone, factor


JOIN_WAIT_S = 20.0


def look_for_root(node: Node, port: int) -> socket.socket | None:
    """Process 0 of this job listens at `port` on one of the lab's nodes: try them all until it answers."""
    candidates = [node.address, *dict.fromkeys(node.info.get("peers", {}).values())]
    deadline = time.monotonic() + JOIN_WAIT_S
    while time.monotonic() < deadline:
        for address in candidates:
            sock = traffic.connect(address, port, wait=0.0, source=node.address)
            if sock is not None:
                return sock
        time.sleep(0.05)
    return None


def join(world: World, node: Node, mine: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    sock = (
        traffic.connect(world.root, world.port, wait=JOIN_WAIT_S, source=node.address)
        if world.root
        else look_for_root(node, world.port)
    )
    if sock is None:
        where = world.root or "any lab node"
        raise ToolError(f"{node.hostname}: NCCL WARN Bootstrap : connect to {where}:{world.port} failed\n", 1)
    chan = traffic.Channel(sock)
    chan.send_json({"ranks": mine})
    while True:
        message = chan.recv_json()
        if message.get("calibrate"):
            chan.recv_data()
        elif message.get("done"):
            chan.close()
            return message["ranks"], float(message["factor"])


# --- run --------------------------------------------------------------------------------------
def ring_of(rank: dict[str, Any], everyone: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(everyone)
    prev, nxt = everyone[(rank["rank"] - 1) % n], everyone[(rank["rank"] + 1) % n]
    return {
        "prev": {
            "rank": prev["rank"],
            "dev": prev["dev"],
            "remote": prev["host"] != rank["host"],
            "mnnvl": same_mnnvl(prev, rank),
            "r": prev,
        },
        "next": {
            "rank": nxt["rank"],
            "dev": nxt["dev"],
            "remote": nxt["host"] != rank["host"],
            "mnnvl": same_mnnvl(rank, nxt),
            "r": nxt,
        },
    }


def count_rank_traffic(
    node: Node, rank: dict[str, Any], ring: dict[str, Any], p: Params, nranks: int
) -> None:
    """Advance this node's NIC counters for the bytes the rank's ring hops moved across the fabric."""
    if rank["net"]["transport"] != "IB" or rank["profile"]["link_layer"] != "Ethernet":
        return
    nbytes = int(sum(sizes(p)) * bus_factor(p.prog, nranks) * (p.iters + p.warmup) * 2)
    netdev = rank["net"]["nic"]["netdev"]
    tos = int(os.environ.get("NCCL_IB_TC", rank["profile"]["tos"]))
    for peer, sending in ((ring["next"], True), (ring["prev"], False)):
        other = peer["r"].get("profile")
        if peer["remote"] and not peer["mnnvl"] and other:  # MNNVL bytes never touch a NIC
            sender, receiver = (rank["profile"], other) if sending else (other, rank["profile"])
            traffic.count_flow(
                node, netdev, traffic.flow_outcome(sender, receiver, nbytes, tos), sending=sending
            )


def log_rank(
    node: Node,
    rank: dict[str, Any],
    everyone: list[dict[str, Any]],
    env: dict[str, str],
    log: RankLog,
    comm_id: int,
) -> None:
    hosts = sorted({r["host"] for r in everyone})
    local = [r for r in everyone if r["host"] == rank["host"]]
    mnnvl = any(same_mnnvl(rank, other) for other in everyone)
    comm = comm_lines(
        log, rank["gpu"], len(everyone), len(hosts), (local.index(rank), len(local)), comm_id, mnnvl
    )
    nvls_line(log, rank.get("nvlink_gbytes", 0.0) > 0)
    if rank["rank"] == 0:
        log.info("Channel 00/02 : " + " ".join(f"{r['rank']:4d}" for r in everyone))
    gdr_line(log, rank["net"])
    channel_lines(log, rank["net"], ring_of(rank, everyone), channels=2)
    complete_line(log, rank["gpu"], comm, len(everyone), comm_id)


def main(node: Node, prog: str, args: list[str]) -> int:
    p = parse_args(prog, args)
    env = dict(os.environ)
    world = world_from_env(env, node)
    if node.topology.get("gpus") == []:
        raise ToolError(
            f"{node.hostname}: Test CUDA failure common.cu:892 'no CUDA-capable device is detected'\n",
            2,
            stdout=True,
        )
    mine = my_ranks(node, p, world, env)
    logs = [RankLog(node, r["rank"], r["dev"], env) for r in mine]
    for log, rank in zip(logs, mine, strict=True):
        init_lines(log, rank["net"], int(node.topology.get("cuda_driver", 12040)))
    if world.nprocs > 1 and not world.root and job_key(env) is None:
        raise ToolError(
            "FABCHECK_MPI_ROOT is not set and no launcher job id (PMIX_NAMESPACE, SLURM_JOB_ID) is in the "
            "environment: start multi-process runs with mpirun, srun or fabcheck-mpirun\n",
            1,
        )
    if world.nprocs == 1:
        everyone, factor = mine, 1.0
    elif world.proc == 0:
        everyone, factor = gather(world, node, mine)
    else:
        everyone, factor = join(world, node, mine)
    job = env.get("FABCHECK_MPI_PORT") or (str(world.port) if job_key(env) else "0")
    comm_id = int(job) * 0x9E3779B97F4A7C15 % 2**64 or 0x1234
    text = render_header(node, p, everyone) if world.proc == 0 else ""
    if world.proc == 0 and env.get("NCCL_DEBUG", "").upper() in VERSION_LEVELS:
        text += f"NCCL version {node.topology['nccl_version']}\n"
    for log, rank in zip(logs, mine, strict=True):
        log_rank(node, rank, everyone, env, log, comm_id)
        count_rank_traffic(node, rank, ring_of(rank, everyone), p, len(everyone))
    text += "".join(line + "\n" for log in logs for line in log.lines)
    if world.proc == 0:
        ceiling, latency = bus_ceiling(everyone, p.prog)
        if p.prog == "hypercube_perf" and len(everyone) & (len(everyone) - 1):
            text += f"nRanks {len(everyone)} is not a power of 2, skipping\n"
        else:
            text += render_table(p, table_rows(p, len(everyone), ceiling * factor, latency))
    out(text)
    sys.stdout.flush()
    return 0
