"""nccl-tests output text for a curve given as numbers, in the layout nccl-tests 2.13+ prints.

For the report benchmark (bench/report.py), tests, and stand-in launchers: the text goes through the
same parser as a real output, so nothing downstream can tell it from one by its form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.desired.collectives import BUSBW_FACTORS

_REDUCING = {"all_reduce", "reduce_scatter", "reduce"}
_ROOTED = {"broadcast", "reduce"}
_TABLE_HEADER = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)",
)
_UNCHECKED_IN_PLACE = {"alltoall", "sendrecv", "hypercube"}  # nccl-tests prints N/A for in-place #wrong


@dataclass(frozen=True)
class SyntheticRun:
    """What to print: the op, hosts x GPUs, and BusBW (GB/s) per size; optional damage."""

    op: str
    hosts: Sequence[str]
    gpus_per_host: int
    busbw: Mapping[int, float]  # size in bytes -> out-of-place BusBW
    in_place_factor: float = 1.0  # in-place BusBW = out-of-place x this
    wrong: Mapping[int, int] = field(default_factory=dict)  # size -> #wrong
    truncate_after: int | None = None  # stop after this size, without the footer
    asked: tuple[int, int] | None = None  # minBytes, maxBytes of the header (default: the sizes')

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.gpus_per_host


def saturating_busbw(peak_gbytes: float, half_bytes: float, sizes: Sequence[int]) -> dict[int, float]:
    """A curve shaped like a real one: latency first, then the plateau (BusBW = peak x s / (s + half))."""
    return {size: peak_gbytes * size / (size + half_bytes) for size in sizes}


def doubling_sizes(low: int, high: int) -> list[int]:
    sizes = []
    size = low
    while size <= high:
        sizes.append(size)
        size *= 2
    return sizes


def render_output(run: SyntheticRun) -> str:
    sizes = sorted(run.busbw)
    low, high = run.asked or (sizes[0], sizes[-1])
    lines = [
        f"# Collective test starting: {run.op}_perf",
        f"# nThread 1 nGpus 1 minBytes {low} maxBytes {high} step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for rank in range(run.ranks):
        host, device = run.hosts[rank // run.gpus_per_host], rank % run.gpus_per_host
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {1000 + rank:6d} on {host:>10} device {device:2d} "
            f"[0000:{16 + device:02x}:00] NVIDIA H100 80GB HBM3"
        )
    lines += ["#", *_TABLE_HEADER]
    for size in sizes:
        lines.append(_row(run, size))
        if run.truncate_after is not None and size >= run.truncate_after:
            return "\n".join(lines) + "\n"
    average = sum(run.busbw.values()) / len(sizes)
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {average:.4f}", "#"]
    return "\n".join(lines) + "\n"


def _row(run: SyntheticRun, size: int) -> str:
    factor = BUSBW_FACTORS[run.op](run.ranks) if run.ranks > 1 else 1.0
    # algbw is bytes over time: the buffer for most ops, (n-1) buffers for hypercube
    # (NVIDIA/nccl-tests src/hypercube.cu HyperCubeGetBw @a0b82b2260cf5152b9f8c061bbf7eaf0ba096432).
    moved = size * (run.ranks - 1) if run.op == "hypercube" and run.ranks > 1 else size
    redop = "sum" if run.op in _REDUCING else "none"
    root = 0 if run.op in _ROOTED else -1
    wrong = run.wrong.get(size, 0)
    ip_wrong = "N/A" if run.op in _UNCHECKED_IN_PLACE else str(wrong)
    sides = []
    for busbw, wrong_cell in (
        (run.busbw[size], str(wrong)),
        (run.busbw[size] * run.in_place_factor, ip_wrong),
    ):
        algbw = busbw / factor if factor else busbw
        time_us = moved / (algbw * 1e3) if algbw > 0 else 0.0
        sides.append(f"{time_us:8.1f} {algbw:7.2f} {busbw:7.2f} {wrong_cell:>6}")
    return f"{size:12d} {size // 4:13d} {'float':>9} {redop:>7} {root:7d} {sides[0]} {sides[1]}"
