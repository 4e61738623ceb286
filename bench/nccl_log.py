"""Benchmark the streaming NCCL_DEBUG=INFO log parser against `grep -c NET/`.

Generates a realistic NCCL INFO log (1,024 ranks on 128 hosts by default: bootstrap and init lines,
NET/IB Using lines, ring/tree channel lines with GDRDMA, proxy lines, an nccl-tests table), then times
`grep -c NET/` (best of 3) and the parser over the same file, fed in 1 MiB chunks (best of 2) and
line by line. The parser runs in a child process that reports its own peak RSS (getrusage), so
RSS can be compared across log sizes.

    .venv/bin/python bench/nccl_log.py --size-mb 256 --size-mb 1024
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NCCL_VERSION = "2.21.5+cuda12.4"


def _prefix(host: str, pid: int, tid: int, dev: int) -> str:
    return f"{host}:{pid}:{tid} [{dev}] NCCL INFO "


def _hca_list(gpus: int) -> str:
    return " ".join(f"[{i}]mlx5_{i}:1/RoCE" for i in range(gpus))


def _ring_lines(rank: int, dev: int, host_index: int, hosts: int, gpus: int, channels: int) -> Iterator[str]:
    """Ring connections: P2P inside the node, NET/IB (GDRDMA) on the node's entry and exit GPUs."""
    nranks = hosts * gpus
    for ch in range(channels):
        nic = ch % gpus
        if dev < gpus - 1:
            yield f"Channel {ch:02d}/0 : {rank}[{dev}] -> {rank + 1}[{dev + 1}] via P2P/CUMEM/read"
        else:
            nxt = ((host_index + 1) % hosts) * gpus
            yield f"Channel {ch:02d}/0 : {rank}[{dev}] -> {nxt}[0] [send] via NET/IB/{nic}({rank})/GDRDMA"
            yield f"New proxy send connection {ch} from local rank {dev}, transport 2"
            yield f"Connected to proxy localRank {dev} -> connection 0x7f{rank:04x}{ch:04x}c0"
        if dev == 0:
            prev = ((host_index - 1) % hosts) * gpus + gpus - 1
            src = f"{prev % nranks}[{gpus - 1}]"
            yield f"Channel {ch:02d}/0 : {src} -> {rank}[0] [receive] via NET/IB/{nic}/GDRDMA"
            yield f"New proxy recv connection {ch} from local rank 0, transport 2"
            yield f"Connected to proxy localRank 0 -> connection 0x7f{rank:04x}{ch:04x}e0"


def _tree_lines(rank: int, host_index: int, hosts: int, gpus: int, channels: int) -> Iterator[str]:
    """Tree connections of the node's head GPU to its parent and children nodes."""
    parent = (host_index - 1) // 2 * gpus
    children = [c * gpus for c in (2 * host_index + 1, 2 * host_index + 2) if c < hosts]
    for ch in range(channels):
        nic = ch % gpus
        for child in children:
            yield f"Channel {ch:02d}/0 : {child}[0] -> {rank}[0] [receive] via NET/IB/{nic}/GDRDMA"
            yield f"Channel {ch:02d}/0 : {rank}[0] -> {child}[0] [send] via NET/IB/{nic}/GDRDMA"
        if host_index > 0:
            yield f"Channel {ch:02d}/0 : {parent}[0] -> {rank}[0] [receive] via NET/IB/{nic}/GDRDMA"
            yield f"Channel {ch:02d}/0 : {rank}[0] -> {parent}[0] [send] via NET/IB/{nic}/GDRDMA"


def _init_lines(rank: int, dev: int, host_index: int, hosts: int, gpus: int, channels: int) -> Iterator[str]:
    nranks = hosts * gpus
    ip = f"10.{host_index // 200}.{host_index % 200}.{10 + dev}"
    yield f"Bootstrap : Using eth0:{ip}<0>"
    yield "cudaDriverVersion 12040"
    if rank == 0:
        yield f"NCCL version {NCCL_VERSION}"
    yield (
        "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory"
        " No plugin found (libnccl-net.so), using internal implementation"
    )
    yield "NCCL_IB_HCA set to " + ",".join(f"mlx5_{i}" for i in range(gpus))
    yield f"NET/IB : Using {_hca_list(gpus)} [RO]; OOB eth0:{ip}<0>"
    yield "Using network IB"
    yield f"DMA-BUF is available on GPU device {dev}"
    yield (
        f"ncclCommInitRank comm 0x55d0COMM{rank:04x} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev}"
        f" busId {dev + 1}8000 commId 0xCOMMIDCOMMID - Init START"
    )
    yield "NCCL_NET_GDR_LEVEL set by environment to PIX"
    yield f"Setting affinity for GPU {dev} to ffffffff,ffff0000,00000000"
    yield f"NVLS multicast support is available on dev {dev}"
    yield (
        f"comm 0x55d0COMM{rank:04x} rank {rank} nRanks {nranks} nNodes {hosts} localRanks {gpus}"
        f" localRank {dev} MNNVL 0"
    )
    if rank == 0:
        order = "".join(f" {r:4d}" for r in range(nranks))
        for ch in range(channels):
            yield f"Channel {ch:02d}/{channels} :{order}"
    yield "Trees " + " ".join(
        f"[{ch}] {rank + 1}/-1/-1->{rank}->{max(rank - 1, -1)}" for ch in range(channels)
    )
    yield "P2P Chunksize set to 524288"
    yield f"GPU Direct RDMA Enabled for GPU {dev} / HCA {dev} (distance 4 <= 4), read 1 mode Default"


def _tail_lines(rank: int, dev: int, gpus: int, hosts: int, channels: int) -> Iterator[str]:
    nranks = hosts * gpus
    yield "Connected all rings"
    yield "Connected all trees"
    yield "threadThresholds 8/8/64 | 8192/8/64 | 512 | 512"
    yield (
        f"{channels} coll channels, {channels} collnet channels, {channels} nvls channels,"
        f" {channels} p2p channels, 2 p2p channels per peer"
    )
    yield "CC Off, Multi-GPU CC Off, workFifoBytes 1048576"
    yield (
        f"ncclCommInitRank comm 0x55d0COMM{rank:04x} rank {rank} nranks {nranks} cudaDev {dev}"
        f" nvmlDev {dev} busId {dev + 1}8000 commId 0xCOMMIDCOMMID - Init COMPLETE"
    )
    yield (
        f"Init timings: rank {rank} nranks {nranks} total 2.50 (kernels 0.19, bootstrap 1.38,"
        " allgathers 0.11, topo 0.54, graphs 0.10, connections 0.18, rest 0.00)"
    )


def _perf_table() -> list[str]:
    rows = [
        "#",
        "#                                                              out-of-place"
        "                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)       ",
    ]
    for power in range(3, 34):
        size = 1 << power
        time_us = 40.0 + size / 180e3
        algbw = size / time_us / 1e3
        rows.append(
            f"{size:12d}  {size // 4:12d}     float     sum      -1  {time_us:8.1f}  {algbw:6.2f}  "
            f"{algbw * 1.998:6.2f}      0  {time_us:8.1f}  {algbw:6.2f}  {algbw * 1.998:6.2f}      0"
        )
    return rows


def communicator_block(hosts: int = 128, gpus: int = 8, channels: int = 16) -> str:
    """One communicator's init + connect log for every rank, then rank 0's nccl-tests table."""
    out: list[str] = []
    phases = (
        lambda r, d, h: _init_lines(r, d, h, hosts, gpus, channels),
        lambda r, d, h: _ring_lines(r, d, h, hosts, gpus, channels),
        lambda r, d, h: _tree_lines(r, h, hosts, gpus, channels) if d == 0 else iter(()),
        lambda r, d, h: _tail_lines(r, d, gpus, hosts, channels),
    )
    for phase_index, phase in enumerate(phases):
        for host_index in range(hosts):
            host = f"gpu-node-{host_index:03d}"
            for dev in range(gpus):
                rank = host_index * gpus + dev
                pid = 41000 + dev
                tid = pid if phase_index == 0 else pid + 30 + phase_index
                prefix = _prefix(host, pid, tid, dev)
                out.extend(prefix + line for line in phase(rank, dev, host_index))
    out.extend(_perf_table())
    return "\n".join(out) + "\n"


def write_log(path: Path, size_mb: int) -> int:
    """Write communicator blocks (each with a fresh commId) until the file reaches size_mb MiB."""
    template = communicator_block()
    target = size_mb << 20
    written = 0
    with path.open("w", encoding="ascii") as fh:
        comm = 0
        while written < target:
            block = template.replace("COMMIDCOMMID", f"{0x9CA74FA6E40D0000 + comm:016x}")
            block = block.replace("COMM", f"{comm % 0xFFFF:04x}")
            if written + len(block) > target:
                block = block[: block.rfind("\n", 0, target - written) + 1]
                comm = -1
            fh.write(block)
            written += len(block)
            if comm < 0:
                break
            comm += 1
    return written


def time_grep(path: Path, runs: int = 3) -> tuple[float, int]:
    """Best wall time of ``grep -c NET/`` over a few runs, and its count."""
    best, count = float("inf"), 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(["grep", "-c", "NET/", str(path)], capture_output=True, text=True, check=True)
        best, count = min(best, time.perf_counter() - start), int(done.stdout)
    return best, count


# The child reads the file itself: in 1 MiB chunks (feed_chunk) or line by line (feed).
_CHILD = """
import json, resource, sys, time
from fabcheck.parsers.nccl_log import NcclLogParser, nccl_log_facts
path, mode = sys.argv[1], sys.argv[2]
start = time.perf_counter()
parser = NcclLogParser(source=path)
if mode == "analyze":
    # The whole user-facing command: fabcheck analyze nccl-log FILE --json (parse + checks + JSON).
    import contextlib, io
    from fabcheck.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["analyze", "nccl-log", path, "--json"])
    report = json.loads(out.getvalue())
    keys = ("nccl_version", "network", "rdma", "link_layers", "hcas", "gdr", "errors")
    print(json.dumps({
        "seconds": time.perf_counter() - start,
        "ranks": len(report["ranks"]),
        "facts": {key: report[key] for key in keys},
        "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }))
    sys.exit(0)
if mode == "chunks":
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            parser.feed_chunk(block.decode("utf-8", "replace"))
else:
    with open(path, encoding="utf-8", errors="replace", newline="\\n") as fh:
        for line in fh:
            parser.feed(line)
summary = parser.result()
elapsed = time.perf_counter() - start
print(json.dumps({
    "seconds": elapsed,
    "lines": summary.lines,
    "ranks": len(summary.ranks),
    "facts": nccl_log_facts(summary),
    "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}))
"""


def time_parser(path: Path, mode: str) -> dict:
    """Run the parser in a child process; its report includes its own peak RSS (getrusage SELF).

    RUSAGE_CHILDREN in this process would give the maximum over every child so far, which would
    hide whether RSS grows with the log size, so the child measures itself.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), mode], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(done.stdout)


def run_one(size_mb: int, directory: Path) -> None:
    with tempfile.NamedTemporaryFile(dir=directory, prefix="nccl-bench-", suffix=".log") as tmp:
        path = Path(tmp.name)
        mb = write_log(path, size_mb) / 1e6
        grep_s, net_lines = time_grep(path)
        chunks = min((time_parser(path, "chunks") for _ in range(2)), key=lambda r: r["seconds"])
        lines = time_parser(path, "lines")
        command = time_parser(path, "analyze")
        print(f"size {mb:,.0f} MB, {chunks['lines']:,} lines, {net_lines:,} lines with NET/")
        print(f"  grep -c NET/             : {grep_s:6.2f} s {mb / grep_s:7.0f} MB/s")
        runs = (
            ("parser, 1 MiB chunks", chunks),
            ("parser, line by line", lines),
            ("fabcheck analyze --json", command),
        )
        for name, report in runs:
            seconds = report["seconds"]
            speed = f"{seconds:6.2f} s {mb / seconds:7.0f} MB/s"
            print(
                f"  {name:<25}: {speed}  ratio to grep {grep_s / seconds:.2f}"
                f"  peak RSS {report['peak_kib'] / 1024:.0f} MB"
            )
        assert lines["facts"] == chunks["facts"] == command["facts"] and lines["lines"] == chunks["lines"]
        print(f"  facts: {json.dumps(chunks['facts'])}; ranks seen: {chunks['ranks']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, action="append", help="log size in MiB (repeatable)")
    parser.add_argument("--dir", type=Path, default=Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    args = parser.parse_args(argv)
    for size_mb in args.size_mb or [1024]:
        run_one(size_mb, args.dir or Path(tempfile.gettempdir()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
