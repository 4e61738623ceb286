"""The gate's one reader: how every read stage's nodes are read, at once, within the run's deadline.

A read stage declares how to read ONE node and how that read is saved and replayed (`NodeReads`), and
how to judge what came back; `Reader.each` does the rest, the same for every stage (run_gate builds
the run's Reader, StageContext.reader hands it to the stages):

- the worker pool: at most `concurrency` nodes in flight (--concurrency);
- the deadline (--deadline): each node's time limits are cut to what is left of the run; a node whose
  turn comes after the deadline is not read, and is judged as `NotRead(late=True)`, naming it;
- per-node error isolation: a read or a judge that raises is that node's `NotRead` (its error
  finding), the other nodes go on;
- the snapshot (`Tape`, fabcheck.gate.snapshot): with --save-snapshot every node's read is kept as the
  stage records it, with --from-snapshot every node's read is the saved one, replayed through the same
  judge, so the findings are the live run's.

A batch backend (--via ansible|slurm) reads its hosts in one play or one step; it serves each host's
bundle through the same one-node read (fabcheck.collect.backends), so it is read here like any other.
This module and the traffic launcher (fabcheck.launch.fanout) are the only ones that run a thread pool
(tests/invariant/test_one_pool.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from fabcheck.collect.ssh import TimeLimits
from fabcheck.errors import UsageError

Item = TypeVar("Item")  # what a stage hands the read of one node: its ssh target, its switch login ...
Read = TypeVar("Read")  # what one node's read gives: its collection
Judged = TypeVar("Judged")  # what the stage makes of it: the node's result


@dataclass(frozen=True)
class NotRead:
    """A node the reader has no read of: the deadline passed before its turn (`late`), or its read (or
    the judging of it) raised `raised` saying `reason`. The stage judges it as that node's error."""

    node: str
    reason: str
    late: bool = False
    raised: str | None = None  # the exception's type name

    @property
    def said(self) -> str:
        """The reason as one line: `ValueError: boom`, or the late reason as it is."""
        return self.reason if self.raised is None else f"{self.raised}: {self.reason}"


@dataclass(frozen=True)
class NodeReads(Generic[Item, Read]):
    """How a stage reads one node, and how that read is saved in a snapshot and read back.

    `read(item, limits, ends_at)`: one node, live, within `limits` (the run's, cut to the deadline) and
    by `ends_at` (the deadline on time.monotonic(), None without one). `record(item, read)`: the read as
    JSON data. `replay(item, data)`: the read again from that data, with no connection (a stage whose
    read parses while it reads, the switch stage, parses the saved outputs again here)."""

    stage: str
    read: Callable[[Item, TimeLimits, float | None], Read]
    record: Callable[[Item, Read], dict[str, Any]]
    replay: Callable[[Item, Mapping[str, Any]], Read]
    # A backend that reads every node at once (--via ansible: one play, --via slurm: one step): started
    # with every node before the one-node reads, which then hand over each node's part. A batch that
    # raises is every node's error; a UsageError from it (a broken setup) ends the run.
    batch: Callable[[Sequence[tuple[str, Item]], TimeLimits], None] | None = None


class RunEnded(UsageError):
    """A usage error met while reading that ends the whole run (exit 2), never one node's error."""


class ReplayError(RunEnded):
    """A snapshot the replay cannot read (a file missing, corrupt, of another format): it ends the run
    as a usage error naming the file."""


class Tape(Protocol):
    """Where a run's reads are kept (--save-snapshot, --extra-checks) or served from (--from-snapshot):
    fabcheck.gate.snapshot's Recording and Replay."""

    @property
    def replaying(self) -> bool: ...

    def keep(self, stage: str, node: str, read: Mapping[str, Any] | NotRead) -> None:
        """Keep one node's read (its record) or why there is none. Called from the workers."""
        ...

    def replayed(self, stage: str, node: str, restore: Callable[[Mapping[str, Any]], Read]) -> Read | NotRead:
        """A replay: the node's saved read, `restore`d (or the NotRead saved for it). ReplayError naming
        the file when it is missing or not what `restore` reads."""
        ...


@dataclass(frozen=True)
class Reader:
    """The run's reading rules: the time limits, the deadline, the pool size and the tape."""

    limits: TimeLimits = field(default_factory=TimeLimits)
    concurrency: int = 1
    ends_at: float | None = None  # the deadline on `clock` (None: no deadline)
    deadline_s: float | None = None  # as --deadline gave it, for the messages
    tape: Tape | None = None
    clock: Callable[[], float] = time.monotonic

    def each(
        self,
        reads: NodeReads[Item, Read],
        items: Sequence[tuple[str, Item]],
        judge: Callable[[str, Read | NotRead], Judged],
    ) -> list[Judged]:
        """Every (node, item) read and judged, at most `concurrency` at once; the results in the items'
        order. Each node is judged in its worker as its read arrives (its raw read is then dropped
        unless the tape keeps it). A replay's saved reads are all looked up first, so a snapshot that
        lacks one ends the run before any node is judged."""
        if not items:
            return []
        tape = self.tape
        replayed: dict[str, Read | NotRead] = {}
        if tape is not None and tape.replaying:
            for node, item in items:
                saved = _replayed(tape, reads, node, item)
                replayed[node] = saved
        batch_failed = None if replayed else self._start_batch(reads, items)

        def one(node_item: tuple[str, Item]) -> Judged:
            node, item = node_item
            if node in replayed:
                got = replayed[node]
            elif batch_failed is not None:
                got = NotRead(node, batch_failed.reason, raised=batch_failed.raised)
            else:
                live = self._read(reads, node, item)
                got = live
            if tape is not None:
                kept = got if isinstance(got, NotRead) else _recorded(reads, node, item, got)
                tape.keep(reads.stage, node, kept)
            try:
                return judge(node, got)
            except Exception as err:  # the judge of one node must never take the others down
                return judge(node, NotRead(node, str(err), raised=type(err).__name__))

        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(items)))) as pool:
            return list(pool.map(one, items))

    def _start_batch(self, reads: NodeReads[Item, Read], items: Sequence[tuple[str, Item]]) -> NotRead | None:
        """Start a batch backend with every node (None: started, or no batch); why it failed, else."""
        limits = self._limits_left()
        if reads.batch is None or limits is None:
            return None  # no batch; or the deadline passed: each node is late
        try:
            reads.batch(items, limits)
        except UsageError as err:
            raise RunEnded(str(err)) from None
        except Exception as err:  # the batch is every node's read: each node's error says why
            return NotRead("", str(err), raised=type(err).__name__)
        return None

    def _read(self, reads: NodeReads[Item, Read], node: str, item: Item) -> Read | NotRead:
        try:
            limits = self._limits_left()
            if limits is None:
                return NotRead(node, self.late_reason(), late=True)
            return reads.read(item, limits, self.ends_at)
        except Exception as err:  # one node's read must never take the others down
            return NotRead(node, str(err), raised=type(err).__name__)

    def _limits_left(self) -> TimeLimits | None:
        """The run's limits cut to what is left before the deadline; None when none is left."""
        if self.ends_at is None:
            return self.limits
        left = self.ends_at - self.clock()
        return None if left <= 0 else self.limits.within(left)

    def late_reason(self) -> str:
        deadline = "" if self.deadline_s is None else f" (--deadline {self.deadline_s:g} s)"
        return f"not read: the run's deadline{deadline} passed before this node's turn"


def _replayed(tape: Tape, reads: NodeReads[Item, Read], node: str, item: Item) -> Read | NotRead:
    """The node's saved read; what the replay of a sound record raises is the node's error, as live."""
    try:
        return tape.replayed(reads.stage, node, lambda data: reads.replay(item, data))
    except UsageError:
        raise
    except Exception as err:
        return NotRead(node, str(err), raised=type(err).__name__)


def _recorded(reads: NodeReads[Item, Read], node: str, item: Item, got: Read) -> Mapping[str, Any] | NotRead:
    """The read's record; a read that cannot be recorded is kept as the error it is (a stage bug)."""
    try:
        return reads.record(item, got)
    except Exception as err:
        return NotRead(node, f"cannot record this read: {err}", raised=type(err).__name__)
