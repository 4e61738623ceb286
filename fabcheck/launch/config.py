"""`fabric_launcher` (inventory group or host vars): which launcher starts multi-node programs.

    fabric_launcher:
      kind: mpirun            # mpirun (Open MPI, the default) or srun (Slurm)
      command: mpirun         # the launcher binary (a name on PATH or a path)
      ssh_config: ~/.ssh/cluster_config   # mpirun only: ssh config for its daemons (default: written
                                          # from the hosts' ansible_host/port/user/key/ssh args)
      extra_args: ["--mca", "btl_tcp_if_include", "eth0"]   # added before the program
      timeout_s: 600          # a whole launch is killed after this long

It is read here once per launch, from the launch's hosts, and every host must hold the same value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fabcheck.intent.loader import HostEntry, plain_python, where_of
from fabcheck.launch.model import LaunchError

LAUNCHER_VAR = "fabric_launcher"
DEFAULT_COMMANDS = {"mpirun": "mpirun", "srun": "srun"}


class LauncherConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["mpirun", "srun"] = "mpirun"
    command: str | None = Field(None, min_length=1, description="launcher binary; default mpirun / srun")
    ssh_config: str | None = Field(None, min_length=1, description="mpirun: ssh_config for its daemons")
    extra_args: tuple[str, ...] = ()
    timeout_s: float = Field(600.0, gt=0, le=86400)

    @property
    def binary(self) -> str:
        return self.command or DEFAULT_COMMANDS[self.kind]


def parse_launcher(raw: Any, where: str = "") -> LauncherConfig:
    """One clear LaunchError naming the file and key for a bad value."""
    if raw is None:
        return LauncherConfig()
    value = plain_python(raw)
    if not isinstance(value, Mapping):
        raise LaunchError(f"{where}{LAUNCHER_VAR}: expected a mapping, got {type(value).__name__}")
    try:
        config = LauncherConfig.model_validate(dict(value))
    except ValidationError as err:
        problems = [
            f"{where}{LAUNCHER_VAR}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()
        ]
        raise LaunchError("; ".join(problems)) from None
    if config.ssh_config and config.kind != "mpirun":
        raise LaunchError(f"{where}{LAUNCHER_VAR}.ssh_config: only mpirun uses an ssh config (kind is srun)")
    return config


def launcher_config(entries: Sequence[HostEntry]) -> LauncherConfig:
    """The launcher of a launch over these hosts; hosts that disagree are an error naming both."""
    if not entries:
        return LauncherConfig()
    first = entries[0]
    config = parse_launcher(first.variables.get(LAUNCHER_VAR), where_of(first.variables.get(LAUNCHER_VAR)))
    for entry in entries[1:]:
        raw = entry.variables.get(LAUNCHER_VAR)
        other = parse_launcher(raw, where_of(raw))
        if other != config:
            raise LaunchError(
                f"{LAUNCHER_VAR} differs between {first.name} ({config.kind}) and {entry.name} "
                f"({other.kind}): one launch uses one launcher; set it for the group, not per host"
            )
    return config
