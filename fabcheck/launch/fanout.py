"""The traffic stages' one worker pool: a function over hosts, pairs or switches at once.

The perftest pairs (fabcheck.pairs.runner) and the incast's counter captures (fabcheck.incast.capture)
start their ssh and netmiko sessions through `each`; the gate's read stages read their nodes through
the gate's reader (fabcheck.gate.reader). No other product module runs a thread pool
(tests/invariant/test_one_pool.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item", bound=Hashable)
Answer = TypeVar("Answer")


def each(items: Sequence[Item], work: Callable[[Item], Answer], workers: int) -> dict[Item, Answer]:
    """`work` over the items at once, at most `workers` at a time, keyed by item in the items' order.
    An exception in one item's work is raised here, after the others finished (the callers turn what
    one item cannot do into that item's answer themselves)."""
    return dict(zip(items, each_in_order(items, work, workers), strict=True))


def each_in_order(items: Sequence[Item], work: Callable[[Item], Answer], workers: int) -> list[Answer]:
    """`work` over the items at once, at most `workers` at a time; the answers in the items' order."""
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
        return list(pool.map(work, items))
