"""One worker pool for the gate's reads and one for the traffic stages' launches (issue 34): a thread
or process pool appears only in the gate's reader (fabcheck/gate/reader.py) and the traffic launcher
(fabcheck/launch/fanout.py). A stage that needs nodes read at once declares its read (NodeReads) and
goes through the reader; a traffic stage starts its sessions through the launcher."""

from __future__ import annotations

import re
from pathlib import Path

PRODUCT = Path(__file__).resolve().parents[2] / "fabcheck"
POOL_MODULES = {"gate/reader.py", "launch/fanout.py"}
# The lab's mock fleet (its own distribution soon) builds images in processes: not a read of the fabric.
OUTSIDE_THE_PRODUCT = ("lab/",)
POOL = re.compile(r"\bconcurrent\.futures\b|\bThreadPoolExecutor\b|\bProcessPoolExecutor\b|multiprocessing\.")


def pool_modules() -> set[str]:
    found = set()
    for path in PRODUCT.rglob("*.py"):
        name = path.relative_to(PRODUCT).as_posix()
        if not name.startswith(OUTSIDE_THE_PRODUCT) and POOL.search(path.read_text(encoding="utf-8")):
            found.add(name)
    return found


def test_a_thread_pool_only_in_the_reader_and_the_launcher() -> None:
    found = pool_modules()
    assert found <= POOL_MODULES, (
        f"a pool outside the reader and the launcher: {sorted(found - POOL_MODULES)}"
    )
    assert len(found) <= 2


def test_the_reader_and_the_launcher_do_run_the_pool() -> None:
    # The check above cannot pass by finding nothing: both named modules hold the pool.
    assert pool_modules() == POOL_MODULES
