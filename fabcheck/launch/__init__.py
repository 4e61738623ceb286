"""Start a multi-node program (nccl-tests, perftest pairs) through the cluster's real launcher.

The API other stages use (the nccl stage, `fabcheck bench nccl`):

    from fabcheck.launch import LaunchRequest, launch_hosts, launcher_config, launcher_for

    config = launcher_config(entries)                    # fabric_launcher of these HostEntry, validated once
    hosts = launch_hosts(entries)                        # how each host is reached (its ssh connection)
    request = LaunchRequest(
        program="all_reduce_perf", args=("-b", "8", "-e", "8G", "-f", "2", "-g", "1"),
        hosts=hosts, ranks_per_host=8, env={"NCCL_DEBUG": "INFO"}, timeout_s=300,
    )
    result = launcher_for(config).run(request)
    result.rc, result.timed_out          # exit status; rc None: the launcher was killed at timeout_s
    result.ranks[3]                      # rank 3's stdout lines, as the launcher tagged them
    result.merged                        # everything in arrival order, tags removed
    result.argv                          # the exact command line run (for the report)

Two launchers, chosen by `fabric_launcher.kind` in the inventory (default mpirun):
  - mpirun (Open MPI): a hostfile of the hosts (`slots=` ranks per host) and an ssh_config written from
    the inventory's connection variables (or `fabric_launcher.ssh_config`), so its daemons (orted /
    prted) start on the hosts over the same ssh Ansible uses; env goes with `-x`; output is tagged per
    rank (`--tag-output`).
  - srun (Slurm): `--nodelist` of the inventory names, `--ntasks-per-node`, env through srun's own
    environment (`--export=ALL`: NCCL values hold commas, which `--export=VAR=value` cannot carry),
    output labelled per task (`--label`).
Building the argv is pure (`Launcher.argv`), so it is unit-tested without a cluster; `run` does the I/O.
"""

from fabcheck.launch.config import LauncherConfig, launcher_config
from fabcheck.launch.model import LaunchError, LaunchHost, LaunchRequest, LaunchResult, launch_hosts
from fabcheck.launch.mpirun import MpirunLauncher
from fabcheck.launch.srun import SrunLauncher

__all__ = [
    "LaunchError",
    "LaunchHost",
    "LaunchRequest",
    "LaunchResult",
    "LauncherConfig",
    "MpirunLauncher",
    "SrunLauncher",
    "launch_hosts",
    "launcher_config",
    "launcher_for",
]


def launcher_for(config: LauncherConfig) -> MpirunLauncher | SrunLauncher:
    if config.kind == "srun":
        return SrunLauncher(config)
    return MpirunLauncher(config)
