"""A stand-in launcher for the bench loop: it answers each request with a synthetic nccl-tests output
and NCCL_DEBUG=INFO transport lines, and can fail a point or kill its own process at the Nth launch."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

from fabcheck.perf.bench import PointOutput, PointRequest
from fabcheck.perf.synthetic import SyntheticRun, doubling_sizes, render_output, saturating_busbw

SIZES = doubling_sizes(8 << 20, 64 << 20)
NCCL_LINES = (
    "{host}:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; "
    "OOB eth0:10.0.0.1<0>",
    "{host}:1234:1234 [0] NCCL INFO Using network {network}",
    "{host}:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
    # Every real NCCL_DEBUG=INFO run prints it; without it the transport proof is not judged (nccl.init).
    "{host}:1234:1300 [0] NCCL INFO comm 0x55f0 rank 0 nranks 16 cudaDev 0 busId 17000 - Init COMPLETE",
)


def op_of(program: str) -> str:
    return program.rsplit("/", 1)[-1].removesuffix("_perf")


@dataclass
class FakeLauncher:
    kill_at: int | None = None  # SIGKILL this process when asked for this launch (1-based)
    fail_ops: set[str] = field(default_factory=set)  # these ops exit 1 with no table
    network: str = "IB"
    requests: list[PointRequest] = field(default_factory=list)

    def launch(self, request: PointRequest) -> PointOutput:
        self.requests.append(request)
        if self.kill_at is not None and len(self.requests) == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        op = op_of(request.program)
        if op in self.fail_ops:
            return PointOutput("", 1, ("mpirun", request.program), 0.5, "mpirun: orted died on gpu02")
        peak = 300.0 / len(request.hosts)
        run = SyntheticRun(
            op, list(request.hosts), request.ranks_per_host, saturating_busbw(peak, 8 << 20, SIZES)
        )
        nccl = "\n".join(line.format(host=request.hosts[0], network=self.network) for line in NCCL_LINES)
        return PointOutput(
            nccl + "\n" + render_output(run), 0, ("mpirun", request.program, *request.args), 1.5
        )
