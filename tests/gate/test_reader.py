"""The gate's one reader (fabcheck.gate.reader): every read stage's pool, deadline, per-node error
isolation and snapshot. A deadline hit mid-run names each node not read; one node whose read or judge
raises is that node's error and the others are judged; never more than --concurrency nodes in flight;
what a recording keeps replays to the same results."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from fabcheck.checks.model import Status
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.nic import desired_host
from fabcheck.errors import UsageError
from fabcheck.gate import host_stage, snapshot
from fabcheck.gate.reader import NodeReads, NotRead, Reader, RunEnded
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent

INTENT = FabricIntent.model_validate({})


def echo_reads(read: Any) -> NodeReads[str, str]:
    """A stage whose node reads are text: recorded as {"text": ...}."""
    return NodeReads("echo", read, lambda _item, got: {"text": got}, lambda _item, data: str(data["text"]))


def told(node: str, got: str | NotRead) -> str | NotRead:
    return got


def test_a_deadline_hit_mid_run_names_every_node_not_read() -> None:
    now = [0.0]

    def read(item: str, limits: TimeLimits, _ends_at: float | None) -> str:
        assert limits.cap_s is not None and limits.cap_s <= 10  # cut to what is left of the run
        now[0] += 6  # each read takes 6 s of the 10 s deadline
        return f"read {item}"

    reader = Reader(TimeLimits(), concurrency=1, ends_at=10.0, deadline_s=10, clock=lambda: now[0])
    got = reader.each(echo_reads(read), [(n, n) for n in ("a", "b", "c", "d")], told)
    assert got[:2] == ["read a", "read b"]
    late = got[2:]
    assert [n.node for n in late if isinstance(n, NotRead)] == ["c", "d"]
    assert all(isinstance(n, NotRead) and n.late and "(--deadline 10 s)" in n.reason for n in late)


def test_one_node_raising_is_that_nodes_error_and_the_others_are_judged() -> None:
    def read(item: str, _limits: TimeLimits, _ends_at: float | None) -> str:
        if item == "b":
            raise RuntimeError("the library fell over")
        return item

    def judge(node: str, got: str | NotRead) -> str:
        if node == "c" and not isinstance(got, NotRead):
            raise KeyError("a judge bug")
        return got.said if isinstance(got, NotRead) else f"judged {got}"

    got = Reader(concurrency=4).each(echo_reads(read), [(n, n) for n in "abcd"], judge)
    assert got == ["judged a", "RuntimeError: the library fell over", "KeyError: 'a judge bug'", "judged d"]


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_never_more_nodes_in_flight_than_the_concurrency(concurrency: int) -> None:
    lock = threading.Lock()
    flight = {"now": 0, "most": 0}

    def read(item: str, _limits: TimeLimits, _ends_at: float | None) -> str:
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        time.sleep(0.02)
        with lock:
            flight["now"] -= 1
        return item

    items = [(f"n{i}", f"n{i}") for i in range(20)]
    got = Reader(concurrency=concurrency).each(echo_reads(read), items, told)
    assert got == [item for _node, item in items]  # in the items' order
    assert flight["most"] == concurrency


def test_what_a_recording_keeps_replays_to_the_same_judgements(tmp_path: Path) -> None:
    def read(item: str, _limits: TimeLimits, _ends_at: float | None) -> str:
        if item == "bad":
            raise OSError("no route")
        return item.upper()

    items = [("ok", "ok"), ("bad", "bad")]
    recording = snapshot.Recording()
    live = Reader(concurrency=2, tape=recording).each(echo_reads(read), items, told)
    recording.save(tmp_path)

    def no_read(*_args: object) -> str:
        raise AssertionError("a replay read a node live")

    replayed = Reader(concurrency=2, tape=snapshot.replay(tmp_path)).each(echo_reads(no_read), items, told)
    assert replayed == live == ["OK", NotRead("bad", "no route", raised="OSError")]


def entry(name: str, **variables: object) -> HostEntry:
    return HostEntry(name, ("gpu_hosts",), INTENT, {"ansible_host": "10.0.0.1", **variables})


def test_the_host_stage_through_the_reader_late_raising_and_unusable_hosts(tmp_path: Path) -> None:
    """The host stage's findings for what the reader gives it: a host read, one whose read raised, one
    the deadline left out, one whose connection variables are unusable; a replay gives the same."""
    now = [0.0]
    sections = {"time_limit": Section(0, "/usr/bin/timeout")}

    def collector(target: SshTarget, _priority: int, _limits: TimeLimits) -> HostCollection:
        if target.name == "gpu02":
            now[0] += 100  # past the deadline: gpu03 is not read
            raise RuntimeError("boom")
        return HostCollection(target.name, sections, True)

    hosts = [entry("gpu01"), entry("gpu02"), entry("gpu03"), entry("gpu04", ansible_port="x")]
    desired: Mapping[str, Any] = {h.name: desired_host(INTENT, h.name) for h in hosts}
    recording = snapshot.Recording()
    reader = Reader(TimeLimits(), 1, ends_at=60.0, deadline_s=60, tape=recording, clock=lambda: now[0])
    results = {r.host: r for r in host_stage.read_hosts(reader, hosts, collector, desired)}
    assert results["gpu01"].evidence is not None
    [crashed] = results["gpu02"].findings
    assert (
        crashed.status is Status.ERROR
        and crashed.actual == "fabcheck failed on this host: RuntimeError: boom"
    )
    assert "not collected before the deadline (--deadline 60 s)" in results["gpu03"].findings[0].actual
    assert results["gpu04"].findings[0].check == "host.inventory"
    recording.save(tmp_path)
    again = host_stage.read_hosts(Reader(tape=snapshot.replay(tmp_path), deadline_s=60), hosts, None, desired)
    assert again == list(results.values())
    assert [r.findings for r in again] == [r.findings for r in results.values()]


def test_a_batch_backend_is_started_once_with_every_node_then_read_node_by_node() -> None:
    started: list[list[str]] = []
    parts: dict[str, str] = {}

    def batch(items: Sequence[tuple[str, str]], limits: TimeLimits) -> None:
        started.append([node for node, _item in items])
        parts.update({node: f"part of {item}" for node, item in items})

    reads = NodeReads("echo", lambda item, _l, _e: parts[item], lambda _i, got: {"text": got}, told, batch)
    got = Reader(concurrency=2).each(reads, [(n, n) for n in "abc"], told)
    assert started == [["a", "b", "c"]] and got == ["part of a", "part of b", "part of c"]


def test_a_failed_batch_is_every_nodes_error_and_a_broken_setup_ends_the_run() -> None:
    def broken(_items: Sequence[tuple[str, str]], _limits: TimeLimits) -> None:
        raise OSError("srun: not found")

    def unread(*_args: object) -> str:
        raise AssertionError("a node was read after its batch failed")

    reads = NodeReads("echo", unread, lambda _i, got: {"text": got}, told, broken)
    got = Reader(concurrency=2).each(reads, [(n, n) for n in "ab"], told)
    assert got == [NotRead(n, "srun: not found", raised="OSError") for n in "ab"]

    def unusable(_items: Sequence[tuple[str, str]], _limits: TimeLimits) -> None:
        raise UsageError("--via ansible: ansible-runner could not run the play")

    with pytest.raises(RunEnded, match="could not run the play"):
        Reader().each(NodeReads("echo", unread, lambda _i, got: {}, told, unusable), [("a", "a")], told)
