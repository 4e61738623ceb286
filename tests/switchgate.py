"""The switch stage as a test drives it outside a gate run: given each switch's desired state and
login, its switches read through the gate's reader (in the product, run_gate reads the planned
switches with the run's one reader)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabcheck.collect.switch import Connect
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.errors import FabcheckError
from fabcheck.gate.reader import Reader
from fabcheck.gate.switch_stage import SwitchItem, SwitchResult, read_switches
from fabcheck.switch.connect import SwitchLogin
from fabcheck.switch.connect import connect as netmiko_connect

SESSIONS = 8


def collect_switches(
    desired: Mapping[str, DesiredSwitch],
    logins: Mapping[str, SwitchLogin],
    *,
    concurrency: int = SESSIONS,
    connect: Connect = netmiko_connect,
    switches: Sequence[str] | None = None,
    ends_at: float | None = None,
) -> list[SwitchResult]:
    """The switch stage over `desired`'s switches (or those of `switches`) outside a gate run: the
    gate's reader with at most `concurrency` sessions open at once; with `ends_at` (a deadline on
    time.monotonic()) every read ends by it, and a switch not read by then is an error saying so."""
    if concurrency < 1:
        raise FabcheckError(f"concurrency {concurrency}: expected at least 1")
    names = list(switches) if switches is not None else list(desired)
    missing = [name for name in names if name not in logins]
    if missing:
        raise FabcheckError(f"no login for switch(es) {', '.join(missing)}")
    reader = Reader(concurrency=concurrency, ends_at=ends_at)
    items = [(name, SwitchItem(desired[name], logins[name])) for name in names]
    return read_switches(reader, items, connect)
