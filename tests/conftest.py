"""Shared test helpers: where the recorded corpus lives."""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).parent / "data" / "corpus"


def corpus_samples(kind: str) -> list[Path]:
    """Every recorded sample of one kind (topo, nccl-log, perftest, nccl-tests, nic-state, switch)."""
    return sorted((CORPUS / kind).glob("*.txt"))


def corpus_truth(sample: Path) -> dict | None:
    """The truth JSON for a sample, or None when the kind has no truth files."""
    truth = CORPUS / "truth" / sample.parent.name / (sample.stem + ".json")
    return json.loads(truth.read_text()) if truth.exists() else None


def pytest_collection_modifyitems(config: object, items: list) -> None:
    """Under xdist (`scripts/test` runs two workers), every lab test goes to one worker, in file order.

    Lab tests share the machine's lab namespaces, sshd ports and the lab's run directory; the other tests
    are independent and fill the second worker meanwhile.
    """
    import pytest

    for item in items:
        if item.get_closest_marker("lab") or item.nodeid.startswith("tests/lab/"):
            item.add_marker(pytest.mark.xdist_group("lab"))
