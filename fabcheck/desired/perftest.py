"""Desired state of perftest between GPU hosts: what each NIC of a host must reach, derived once from
the host's intent. The stage, the localisation and the baseline read this record, never the intent."""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.desired.nic import desired_host
from fabcheck.intent.model import FabricIntent


@dataclass(frozen=True)
class DesiredPerftest:
    """One host's perftest expectations: its rail NICs, the physics floor, and how to run the test."""

    host: str
    nics: tuple[str, ...]
    line_rate_gbps: float
    min_fraction: float
    # NIC -> the GPU on its rail, for `--use_cuda` (GPUDirect RDMA); empty when the intent wants no GDR.
    cuda_pairs: tuple[tuple[str, int], ...]
    gid_index: int | None  # RoCE GID index perftest must use (`-x`); None on InfiniBand

    @property
    def floor_gbps(self) -> float:
        return self.line_rate_gbps * self.min_fraction

    @property
    def cuda_device(self) -> dict[str, int]:
        return dict(self.cuda_pairs)


def desired_perftest(intent: FabricIntent, host: str) -> DesiredPerftest:
    """Pure: a GPU host's intent -> what perftest on its rail NICs must show."""
    rails = desired_host(intent, host).rails
    cuda: dict[str, int] = {}
    if intent.nccl.gdr_required:
        for gpu, nic in sorted(rails.items()):
            cuda.setdefault(nic, gpu)  # the first GPU of the rail: any GPU behind the NIC's switch works
    return DesiredPerftest(
        host=host,
        nics=tuple(sorted(set(rails.values()))),
        line_rate_gbps=float(intent.link.speed_gbps),
        min_fraction=float(intent.performance.perftest_min_fraction),
        cuda_pairs=tuple(sorted(cuda.items())),
        gid_index=intent.nccl.gid_index if intent.link_layer == "Ethernet" else None,
    )


def pair_floor_gbps(a: DesiredPerftest, b: DesiredPerftest) -> tuple[float, str]:
    """A pair runs at the slower NIC's line rate; each end asks its own fraction of it, the stricter
    one wins. Returns the floor and how it was reached, for the finding's Expected text."""
    line = min(a.line_rate_gbps, b.line_rate_gbps)
    fraction = max(a.min_fraction, b.min_fraction)
    return line * fraction, f"{fraction:.0%} of {line:g} Gb/s"
