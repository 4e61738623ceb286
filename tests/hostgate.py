"""The host stage as a test drives it outside a gate run: each host's desired state derived here (in
the product it is derived once, by the gate's plan), its hosts read through the gate's reader."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from fabcheck.collect.backends import Collector
from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.nic import DesiredHost, desired_host
from fabcheck.gate.host_stage import HostResult, read_hosts
from fabcheck.gate.host_stage import judge as judge_host
from fabcheck.gate.reader import Reader
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent

WORKERS = 16


def judge(collection: HostCollection, intent: FabricIntent, desired: DesiredHost | None = None) -> HostResult:
    """One host's collection judged against its intent's desired state."""
    return judge_host(collection, intent, desired or desired_host(intent, collection.host))


def validate(
    hosts: Sequence[HostEntry],
    limits: TimeLimits | None = None,
    collector: Collector | None = None,  # None: the native ssh round trip
    deadline_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    workers: int = WORKERS,
    on_done: Callable[[HostResult], None] = lambda _result: None,
    desired: Mapping[str, DesiredHost] | None = None,
) -> list[HostResult]:
    """The host stage over `hosts` with these limits, deadline (on `clock`) and pool size."""
    if desired is None:
        desired = {entry.name: desired_host(entry.intent, entry.name) for entry in hosts}
    end = None if deadline_s is None else clock() + deadline_s
    reader = Reader(limits or TimeLimits(), workers, end, deadline_s, clock=clock)
    return read_hosts(reader, hosts, collector, desired, on_done)
