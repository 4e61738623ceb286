"""Where the host collection runs: one backend per module behind one interface, `Collector`.

    native.py     fabcheck's own OpenSSH round trip (default)
    testinfra.py  a pytest-testinfra backend per host URL (ssh, paramiko, ansible, local, docker, ...)
    ansible.py    every host in one Ansible play through ansible-runner
    (a snapshot replay, fabcheck.gate.snapshot, serves recorded collections through the same interface)

Each turns one host's ssh target, the lossless priority the script reads and the time limits into a
HostCollection: the sections the script printed, whether it ran to the end, and why not. A backend
never raises for an unreachable host.
"""

from __future__ import annotations

from typing import Protocol

from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import SshTarget, TimeLimits


class Collector(Protocol):
    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits, /) -> HostCollection: ...
