"""Where the host collection runs: one backend per module behind one interface, `Collector`.

    native.py     fabcheck's own OpenSSH round trip (default)
    testinfra.py  a pytest-testinfra backend per host URL (ssh, paramiko, ansible, local, docker, ...)
    ansible.py    every host in one Ansible play through ansible-runner (a BatchCollector)
    slurm.py      every host in one srun step (a BatchCollector)
    (a snapshot replay, fabcheck.gate.snapshot, serves recorded collections through the same interface)

Each turns one host's ssh target, the lossless priority the script reads and the time limits into a
HostCollection: the sections the script printed, whether it ran to the end, and why not. A backend
never raises for an unreachable host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import SshTarget, TimeLimits


class Collector(Protocol):
    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits, /) -> HostCollection: ...


@runtime_checkable
class BatchCollector(Collector, Protocol):
    """A backend that reads every host at once (--via ansible: one play; --via slurm: one step). The
    gate's reader starts it with every host it reads, each at the lossless priority the gate's plan
    holds for it, and the run's limits cut to the deadline; each host's call then hands over its part."""

    def start(self, priorities: Mapping[str, int], limits: TimeLimits, /) -> None: ...
