"""--extra-checks: each user test's outcome becomes a finding on the node it ran on, one name for the
same test on every node; a test on no GPU host and a broken run land on `extra-checks`, never a pass;
the pytest command line shares the snapshot and gives each host a testinfra URL."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fabcheck.checks.model import Status
from fabcheck.gate import extra_stage as extra_checks
from fabcheck.pytest_plugin import name_without_host


def test_outcomes_land_on_their_nodes() -> None:
    tests = [
        {
            "nodeid": "t.py::test_a[ssh://10.0.0.1]",
            "name": "t.py::test_a",
            "node": "gpu01",
            "outcome": "pass",
        },
        {
            "nodeid": "t.py::test_a[ssh://10.0.0.2]",
            "name": "t.py::test_a",
            "node": "gpu02",
            "outcome": "fail",
            "message": "assert 1 == 2",
        },
        {"nodeid": "t.py::test_b", "outcome": "error", "message": "fixture 'x' not found"},
        {
            "nodeid": "t.py::test_c[ssh://10.0.0.2]",
            "name": "t.py::test_c",
            "node": "gpu02",
            "outcome": "skip",
        },
    ]
    outcome = extra_checks.outcome_of(tests, ["gpu01", "gpu02"])
    found = {(n.node, f.check, f.subject): f for n in outcome.nodes for f in n.findings}
    assert {key: f.status for key, f in found.items()} == {
        ("gpu01", "extra.t.py::test_a", "t.py::test_a[ssh://10.0.0.1]"): Status.PASS,
        ("gpu02", "extra.t.py::test_a", "t.py::test_a[ssh://10.0.0.2]"): Status.FAIL,
        ("extra-checks", "extra.t.py::test_b", "t.py::test_b"): Status.ERROR,
        ("gpu02", "extra.t.py::test_c", "t.py::test_c[ssh://10.0.0.2]"): Status.SKIP,
    }
    failed = found[("gpu02", "extra.t.py::test_a", "t.py::test_a[ssh://10.0.0.2]")]
    assert failed.actual == "assert 1 == 2" and "pytest t.py::test_a[ssh://10.0.0.2]" in failed.hint


def test_test_names_lose_only_the_host_parameter() -> None:
    host = SimpleNamespace(backend=SimpleNamespace(get_pytest_id=lambda: "ssh://gpu-01"))
    assert name_without_host("t.py::test_a[ssh://gpu-01]", host) == "t.py::test_a"
    assert name_without_host("t.py::test_a[ssh://gpu-01-9000]", host) == "t.py::test_a[9000]"
    assert name_without_host("t.py::test_a[mtu-ssh://gpu-01]", host) == "t.py::test_a[mtu]"
    assert name_without_host("t.py::test_a", host) == "t.py::test_a"


def test_pytest_runs_the_directory_on_the_shared_snapshot(tmp_path: Path) -> None:
    argv = extra_checks.pytest_argv(
        tmp_path / "mine",
        "inv/lab",
        tmp_path / "snap",
        tmp_path / "r.json",
        ["gpu01", "gpu02"],
        {"gpu01": "paramiko://gpu01"},
    )
    assert argv[1:5] == ["-m", "pytest", str(tmp_path / "mine"), "-p"]
    assert argv[argv.index("--fabcheck-snapshot") + 1] == str(tmp_path / "snap")
    assert "--fabcheck-no-builtin" in argv
    assert argv[-2:] == ["--hosts", "paramiko://gpu01,ansible://gpu02?ansible_inventory=inv/lab"]


def test_a_broken_run_is_an_error(tmp_path: Path) -> None:
    outcome = extra_checks.run_error(tmp_path, "pytest exit 4: usage")
    (node,) = outcome.nodes
    assert node.node == "extra-checks" and [f.status for f in node.findings] == [Status.ERROR]


def test_the_plugin_times_hosts_as_validate_does() -> None:
    from fabcheck import pytest_plugin
    from fabcheck.collect.ssh import TimeLimits

    assert TimeLimits().command_s == pytest_plugin.DEFAULT_TIMEOUT_S


def test_the_plugin_waits_the_counter_window_validate_does() -> None:
    import argparse

    import pytest

    from fabcheck import pytest_plugin
    from fabcheck.desired.nic import DEFAULT_COUNTER_WINDOW_S

    assert pytest_plugin.DEFAULT_COUNTER_WINDOW_S == DEFAULT_COUNTER_WINDOW_S
    assert pytest_plugin._counter_window("0") == 0
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected whole seconds 0\.\.600"):
        pytest_plugin._counter_window("5s")
