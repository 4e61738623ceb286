"""Shared test helpers: where the recorded corpus lives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "data" / "corpus"


def corpus_samples(kind: str) -> list[Path]:
    """Every recorded sample of one kind (topo, nccl-log, perftest, nccl-tests, nic-state, switch)."""
    return sorted((CORPUS / kind).glob("*.txt"))


def corpus_truth(sample: Path) -> dict | None:
    """The truth JSON for a sample, or None when the kind has no truth files."""
    truth = CORPUS / "truth" / sample.parent.name / (sample.stem + ".json")
    return json.loads(truth.read_text()) if truth.exists() else None


MOCK_TEST_PREFIX = "tests/lab/test_mock"


def is_lab_test(nodeid: str) -> bool:
    """A test that brings up the lab or its mocks: under tests/lab/, or in a `*_lab.py` file elsewhere."""
    path = nodeid.split("::", 1)[0]
    return path.startswith("tests/lab/") or path.endswith("_lab.py")


def is_in_process_mock_test(nodeid: str) -> bool:
    """A tests/lab/test_mock*.py test: the mock tools on tmp_path nodes, in this process, no lab. Their
    daemons (nvidia-imex, opensm, traffic servers) listen on 127.100-249.x addresses of their own, never
    the lab's 127.0.x/127.3.x, but some share a fixed one (mocknode's 127.200.1.1): they run together,
    one after another, on either worker, off the lab worker's critical path."""
    path = nodeid.split("::", 1)[0]
    return path.startswith(MOCK_TEST_PREFIX) and not path.endswith("_lab.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Lab tests first, in file order (under xdist their worker, the critical path, starts at once; the
    other worker and then both take the rest). A `lab`-marked test outside what is_lab_test names would
    escape the lab worker: refused."""
    stray = [item.nodeid for item in items if item.get_closest_marker("lab") and not is_lab_test(item.nodeid)]
    if stray:
        raise pytest.UsageError(f"lab tests must live under tests/lab/ or in a *_lab.py file: {stray[0]}")
    items.sort(key=lambda item: not is_lab_test(item.nodeid))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under xdist (`scripts/test` runs two workers), every lab test goes to one worker, in file order.

    Lab tests share the machine's lab namespaces, sshd ports and the lab's run directory (labsupport's
    lock serialises them anyway); the other tests are independent and fill the second worker meanwhile.
    Our own scheduler, not `--dist loadgroup` marks: xdist 3.8 writes a group into `item._nodeid`, which
    pytest 9 no longer reads, so every lab test went to either worker and a class or module lab fixture
    was built once on each (the switch play story twice: 208 s + 292 s of one CI run).
    """
    from xdist.scheduler import LoadScopeScheduling

    class LabTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if is_in_process_mock_test(nodeid):
                return "in-process mocks"
            return "lab" if is_lab_test(nodeid) else nodeid

    return LabTogether(config, log)
