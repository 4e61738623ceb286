"""The pytest plugin and --extra-checks on this machine's own host (local://): the plugin's tests give
the verdicts `fabcheck validate` gives, per node and check, on one collection or on a snapshot; `-k`
selects and xdist runs them; a user's test gets the shared evidence and the testinfra host; and
`validate --extra-checks` puts each user test's result on its node in the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabcheck.pytest_plugin import outcome_of

HOSTS_YML = """
all:
  children:
    gpu_hosts:
      hosts:
        gpu01:
          ansible_host: 127.0.0.1
          ansible_connection: local
"""

USER_TESTS = """
def test_evidence_is_shared(fabcheck, host):
    assert fabcheck.node == "gpu01" and fabcheck.host is host
    assert fabcheck.collection is not None and "rdma_link" in fabcheck.collection.sections
    assert host.run("true").rc == 0


def test_fails_on_purpose(fabcheck):
    assert fabcheck.result.verdict.value == "pass", "the local machine has no RDMA NIC"
"""


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plugin")
    inventory = root / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (inventory / "hosts.yml").write_text(HOSTS_YML)
    (root / "checks").mkdir()
    (root / "checks" / "test_mine.py").write_text(USER_TESTS)
    return {"root": root, "inventory": inventory, "snapshot": root / "snapshot", "checks": root / "checks"}


def validate_json(*argv: str) -> list[dict]:
    command = [sys.executable, "-m", "fabcheck.cli", "validate", *argv, "--json", "--stages", "host"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (1, 3), done.stderr  # this machine has no RDMA NIC: never a pass
    return [json.loads(line) for line in done.stdout.splitlines()]


def expected(lines: list[dict]) -> dict[str, str]:
    """validate's verdict per (node, check), as the plugin's test ids name them."""
    statuses: dict[str, set[str]] = {}
    for node in lines:
        for finding in node["findings"]:
            statuses.setdefault(f"{node['host']}-{finding['check']}", set()).add(finding["status"])
    return {case: outcome_of(found) for case, found in statuses.items()}


def run_pytest(gate: dict[str, Path], *options: str) -> dict[str, dict]:
    results = gate["root"] / "results.json"
    argv = [sys.executable, "-m", "pytest", "-p", "fabcheck", "-p", "no:cacheprovider", "-q"]
    argv += ["--fabcheck-inventory", str(gate["inventory"]), "--fabcheck-results", str(results), *options]
    done = subprocess.run(argv, cwd=gate["root"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    tests = json.loads(results.read_text())["tests"]
    # The plugin's tests by their case id (NODE-CHECK), the user's by their node id.
    return {_case(test["nodeid"]): test for test in tests}


def _case(nodeid: str) -> str:
    _, _, param = nodeid.partition("::test_fabcheck[")
    return param.rstrip("]") if param else nodeid


@pytest.fixture(scope="module")
def saved(gate: dict[str, Path]) -> list[dict]:
    """One live run on this machine (local://), saved as a snapshot the other runs judge again."""
    argv = [
        "-i",
        str(gate["inventory"]),
        "--hosts",
        "local://gpu01",
        "--save-snapshot",
        str(gate["snapshot"]),
    ]
    return validate_json(*argv)


def test_plugin_verdicts_are_validates(gate: dict[str, Path], saved: list[dict]) -> None:
    tests = run_pytest(
        gate, "--fabcheck-snapshot", str(gate["snapshot"]), "--hosts", "local://gpu01", "checks"
    )
    ours = {case: test["outcome"] for case, test in tests.items() if case.startswith("gpu01-")}
    assert ours == expected(saved)
    assert all(test["node"] == "gpu01" for test in tests.values())
    mine = {case: test["outcome"] for case, test in tests.items() if not case.startswith("gpu01-")}
    assert mine == {
        "checks/test_mine.py::test_evidence_is_shared[local]": "pass",
        "checks/test_mine.py::test_fails_on_purpose[local]": "fail",
    }


def test_k_selects_and_xdist_runs_one_collection_per_worker(gate: dict[str, Path], saved: list[dict]) -> None:
    """Live collection in each worker (local://); -k picks two of the cases."""
    tests = run_pytest(gate, "--hosts", "local://gpu01", "-k", "nic_persistence or rdma_device", "-n", "2")
    assert set(tests) == {"gpu01-host.nic_persistence", "gpu01-host.rdma_device"}
    want = expected(saved)
    assert {case: test["outcome"] for case, test in tests.items()} == {case: want[case] for case in tests}


def test_extra_checks_join_the_report(gate: dict[str, Path], saved: list[dict]) -> None:
    argv = ["-i", str(gate["inventory"]), "--from-snapshot", str(gate["snapshot"]), "--extra-checks"]
    lines = validate_json(*argv, str(gate["checks"]))
    extra = {f["check"]: f for node in lines for f in node["findings"] if f["check"].startswith("extra.")}
    assert {name: f["status"] for name, f in extra.items()} == {
        "extra.test_mine.py::test_evidence_is_shared": "pass",
        "extra.test_mine.py::test_fails_on_purpose": "fail",
    }
    assert [node["host"] for node in lines] == ["gpu01"]  # on the node the tests ran on
    assert "the local machine has no RDMA NIC" in extra["extra.test_mine.py::test_fails_on_purpose"]["actual"]
    others = [{k: v for k, v in node.items() if k != "findings"} for node in saved]
    assert [{k: v for k, v in node.items() if k != "findings"} for node in lines] == others


def test_extra_checks_that_collect_nothing_are_an_error(
    gate: dict[str, Path], saved: list[dict], tmp_path: Path
) -> None:
    argv = [
        "-i",
        str(gate["inventory"]),
        "--from-snapshot",
        str(gate["snapshot"]),
        "--extra-checks",
        str(tmp_path),
    ]
    run = [f for node in validate_json(*argv) for f in node["findings"] if f["check"] == "extra.run"]
    assert [(f["status"], f["actual"]) for f in run] == [("error", "pytest collected no test")]
