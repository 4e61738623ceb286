"""The counter window through the gate: the plan holds --counter-window; each host's round trip gets
it in its limits (its host limit grows by it, and what the deadline leaves it is shared with it); each
switch session reads its counters that far apart, saves the window with its outputs, and a replay reads
them the same way without waiting (a record from before the window existed replays as window 0)."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.gate.fabric import run_gate
from fabcheck.gate.plan import plan_gate
from fabcheck.gate.stages import Reads
from fabcheck.gate.switch_stage import SwitchItem, switch_reads
from fabcheck.intent.loader import Inventory
from tests.checks.host.hostdata import INTENT, healthy_sections, inventory_entry
from tests.checks.switchfabric import desired
from tests.gate.test_switch_stage import Replay, login


def _inventory() -> Inventory:
    return Inventory(
        "inv", INTENT, (inventory_entry("gpu01", "gpu_hosts"), inventory_entry("gpu02", "gpu_hosts"))
    )


def test_the_plan_gives_every_host_and_its_round_trip_the_window() -> None:
    plan = plan_gate(_inventory(), None, ("host",), 7)
    assert plan.counter_window_s == 7 and {d.counter_window_s for d in plan.desired.hosts.values()} == {7}
    seen: dict[str, TimeLimits] = {}

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        seen[target.name] = limits
        return HostCollection(target.name, healthy_sections(), True, priority=priority)

    limits = TimeLimits(connect_s=10, command_s=30)
    run_gate(_inventory(), plan, limits, reads=Reads(host=collector))
    assert {name: got.counter_window_s for name, got in seen.items()} == {"gpu01": 7, "gpu02": 7}
    assert seen["gpu01"].host_s == 37 and seen["gpu01"].tool_s == 10
    # Under a deadline the window is counted in what is left: a 20 s deadline leaves each host at most
    # 20 s in all, the window 7 of them.
    seen.clear()
    run_gate(_inventory(), plan, limits, deadline_s=20, reads=Reads(host=collector))
    assert all(got.client_s <= 20 and got.counter_window_s == 7 for got in seen.values())


def test_a_bad_window_is_refused_by_the_plan() -> None:
    with pytest.raises(ValueError, match="counter window"):
        plan_gate(_inventory(), None, ("host",), 601)


def _item(window: int) -> SwitchItem:
    return SwitchItem(dataclasses.replace(desired("leaf01"), counter_window_s=window), login("leaf01"))


def test_a_switch_session_waits_the_window_and_its_replay_does_not() -> None:
    reads = switch_reads(lambda lg: Replay(lg.name))
    started = time.monotonic()
    live = reads.read(_item(1), TimeLimits(), None)
    assert time.monotonic() - started >= 1
    record = reads.record(_item(1), live)
    assert record["counter_window_s"] == 1 and live.counter_window_s == 1
    # Replayed with another run's window: the saved one is used, and nothing is waited.
    started = time.monotonic()
    again = reads.replay(_item(30), record)
    assert time.monotonic() - started < 1
    assert again.evidence.records == live.evidence.records and again.counter_window_s == 1


def test_a_switch_record_from_before_the_window_replays_as_window_zero() -> None:
    reads = switch_reads(lambda lg: Replay(lg.name))
    live = reads.read(_item(0), TimeLimits(), None)
    record = reads.record(_item(0), live)
    del record["counter_window_s"]  # as version 1 snapshots and earlier version 2 ones hold it
    again = reads.replay(_item(5), record)
    assert again.evidence.records == live.evidence.records and again.counter_window_s == 0
    record["counter_window_s"] = -1
    with pytest.raises(ValueError, match="counter_window_s"):
        reads.replay(_item(5), record)


def test_the_wait_never_passes_the_deadline() -> None:
    reads = switch_reads(lambda lg: Replay(lg.name))
    started = time.monotonic()
    reads.read(_item(60), TimeLimits(), time.monotonic() + 1.5)
    assert time.monotonic() - started < 10


def test_the_default_pool_reads_every_waiting_host_at_once_and_a_given_one_still_bounds() -> None:
    from fabcheck.gate import fabric

    assert fabric.knee_concurrency(2) == 15 and fabric.knee_concurrency(2, window_s=5) == 256
    assert fabric.knee_concurrency(1, window_s=0.1) == 10  # 1 core x 0.4 s / 0.04 s
    entries = tuple(inventory_entry(f"gpu{i:02d}", "gpu_hosts") for i in range(1, 41))
    inventory = Inventory("inv", INTENT, entries)
    lock, in_flight, most = threading.Lock(), [0], [0]

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.3)  # the round trip, waiting its window
        with lock:
            in_flight[0] -= 1
        return HostCollection(target.name, healthy_sections(), True, priority=priority)

    plan = plan_gate(inventory, None, ("host",), 5)
    run_gate(inventory, plan, TimeLimits(), reads=Reads(host=collector))
    # Every host waits its window at the same time (on 2 cores the pool without a window is 15).
    assert most[0] == min(40, fabric.knee_concurrency(window_s=5)) > min(40, fabric.DEFAULT_CONCURRENCY) - 1
    most[0] = 0
    run_gate(inventory, plan, TimeLimits(), concurrency=4, reads=Reads(host=collector))
    assert most[0] == 4  # --concurrency given: open connections never more
    most[0] = 0
    run_gate(inventory, plan_gate(inventory, None, ("host",), 0), TimeLimits(), reads=Reads(host=collector))
    assert most[0] == min(40, fabric.DEFAULT_CONCURRENCY)  # no window: the knee as before


def test_a_zero_window_is_said_in_a_note() -> None:
    from fabcheck.cli.validate import _notes

    windowless = _notes(plan_gate(_inventory(), None, ("host",), 0))
    assert any("--counter-window 0" in note and "lifetime totals" in note for note in windowless)
    assert not any("--counter-window" in note for note in _notes(plan_gate(_inventory(), None, ("host",), 5)))
