"""The bench loop's PointLauncher over the inventory's real launcher (fabcheck.launch: Open MPI mpirun
or Slurm srun, chosen by `fabric_launcher`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabcheck.intent.loader import HostEntry
from fabcheck.launch import LauncherConfig, LaunchRequest, launch_hosts, launcher_for
from fabcheck.perf.bench import PointOutput, PointRequest


class InventoryLauncher:
    def __init__(self, config: LauncherConfig, entries: Sequence[HostEntry]) -> None:
        self.config = config
        self._entries: Mapping[str, HostEntry] = {entry.name: entry for entry in entries}

    def launch(self, request: PointRequest) -> PointOutput:
        launch = LaunchRequest(
            program=request.program,
            args=request.args,
            hosts=launch_hosts([self._entries[name] for name in request.hosts]),
            ranks_per_host=request.ranks_per_host,
            env=dict(request.env),
            timeout_s=self.config.timeout_s,
        )
        result = launcher_for(self.config).run(launch)
        return PointOutput(result.merged, result.rc, result.argv, result.seconds, result.stderr)
