"""`fabcheck validate --extra-checks DIR`: your own pytest/testinfra tests in the same gate.

The gate's run is saved as a snapshot to a scratch directory, then pytest runs DIR in a subprocess with
the fabcheck plugin judging that snapshot: the `fabcheck` fixture serves your tests the evidence the gate
already collected (no second collection), and testinfra's `host` fixture reaches each GPU host through
its URL (the one `--hosts` gave, else `ansible://NAME?ansible_inventory=INV`, so Ansible's connection
settings apply). Each test joins the report as a finding of the node it ran on (`extra.<test>`), with
pass, fail, error or skip. The whole run is bounded by --extra-checks-timeout; a run that fails to
start, collects nothing or times out is an error, never a pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabcheck.checks.model import Finding, Status
from fabcheck.collect.backends.ansible import path_with_ansible
from fabcheck.errors import UsageError
from fabcheck.gate.fabric import GateResult
from fabcheck.gate.stages import ExtraChecks, NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.report.model import NodeKind

DEFAULT_TIMEOUT_S = 600.0
STAGE_NAME = "extra"
RUN_NODE = "extra-checks"  # where a test that ran on no GPU host, or the run itself, is reported
_STATUS = {"pass": Status.PASS, "fail": Status.FAIL, "error": Status.ERROR, "skip": Status.SKIP}


def add_extra_checks_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--extra-checks",
        type=Path,
        metavar="DIR",
        help="also run your pytest/testinfra tests in DIR (fixtures `host` and `fabcheck`: the evidence "
        "this gate collected); each test's result joins the report on its node",
    )
    parser.add_argument(
        "--extra-checks-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"seconds the extra checks may run in all (default {DEFAULT_TIMEOUT_S:g})",
    )


def extra_checks_of(args: argparse.Namespace, source: Any) -> ExtraChecks | None:
    """What the extra stage runs, from the flags (None without --extra-checks)."""
    directory: Path | None = getattr(args, "extra_checks", None)
    if directory is None:
        return None
    if not directory.is_dir():
        raise UsageError(f"--extra-checks {directory}: not a directory")
    recording = getattr(source, "tape", None)
    if recording is None:
        raise UsageError("--extra-checks: the gate kept no collection to share (a fabcheck bug)")
    urls = dict(getattr(source.collector, "urls", {}) or {})
    return ExtraChecks(directory, args.inventory, args.extra_checks_timeout, urls, recording)


@dataclass(frozen=True)
class ExtraStage:
    """The user's pytest tests over what the host stage read: runs last, only with --extra-checks."""

    name: str = STAGE_NAME
    requires: tuple[str, ...] = ("host",)
    by_default: bool = False
    traffic: bool = False

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return False  # its findings join the hosts the host stage claims

    def run(self, context: StageContext) -> StageOutcome:
        extra = context.extra_checks
        if extra is None:
            raise UsageError("stage extra runs your tests: give them with --extra-checks DIR")
        hosts = GateResult((context.earlier["host"],))
        return run_extra_checks(extra, hosts)


def run_extra_checks(extra: ExtraChecks, result: GateResult) -> StageOutcome:
    """pytest over the user's directory, judging `result`'s hosts as the gate read them."""
    directory, recording = extra.directory, extra.recording
    with tempfile.TemporaryDirectory(prefix="fabcheck-extra-") as scratch:
        saved = Path(scratch) / "snapshot"
        recording.save(saved)
        results_file = Path(scratch) / "results.json"
        # Hosts the gate reached (one with unusable connection variables has no testinfra URL either).
        hosts = [h.host for h in result.hosts if recording.read_of("host", h.host) is not None]
        argv = pytest_argv(directory, extra.inventory, saved, results_file, hosts, extra.urls)
        timeout_s = extra.timeout_s
        env = os.environ | {"PATH": path_with_ansible()}  # testinfra's ansible backend runs ansible-inventory
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                check=False,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return run_error(directory, f"did not finish within --extra-checks-timeout {timeout_s:g} s")
        except OSError as err:
            return run_error(directory, f"cannot start pytest: {err.strerror or err}")
        tests = _read_results(results_file)
    if done.returncode == 5:
        return run_error(directory, "pytest collected no test")
    if tests is None or done.returncode not in (0, 1):
        said = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(("E ", "ERROR"))]
        tail = "; ".join((said or (done.stdout + done.stderr).splitlines())[-3:])
        return run_error(directory, f"pytest exit {done.returncode}: {tail[:400]}")
    return outcome_of(tests, hosts)


def pytest_argv(
    directory: Path,
    inventory: str,
    saved: Path,
    results_file: Path,
    hosts: Sequence[str],
    urls: Mapping[str, str],
) -> list[str]:
    """pytest over DIR with the fabcheck plugin judging the saved run, and a testinfra URL per host."""
    host_urls = [urls.get(name) or f"ansible://{name}?ansible_inventory={inventory}" for name in hosts]
    argv = [sys.executable, "-m", "pytest", str(directory), "-p", "fabcheck", "-p", "no:cacheprovider"]
    argv += ["-q", "--fabcheck-inventory", inventory, "--fabcheck-snapshot", str(saved)]
    argv += ["--fabcheck-no-builtin", "--fabcheck-results", str(results_file)]
    argv += ["--rootdir", str(directory)]
    return [*argv, "--hosts", ",".join(host_urls)] if host_urls else argv


def _read_results(path: Path) -> list[Mapping[str, Any]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    tests = data.get("tests") if isinstance(data, dict) else None
    return tests if isinstance(tests, list) else None


def outcome_of(tests: Sequence[Mapping[str, Any]], hosts: Sequence[str]) -> StageOutcome:
    """Pure: each test's outcome -> a finding on its node; the check is named after the test without its
    testinfra host parameter (the plugin's `name`), so the same test on two nodes has one name, and
    node + check stay unique."""
    by_node: dict[str, list[Finding]] = {}
    for test in tests:
        node = test.get("node") if test.get("node") in hosts else RUN_NODE
        status = _STATUS.get(str(test.get("outcome")), Status.ERROR)
        nodeid = str(test.get("nodeid"))
        message = str(test.get("message") or "")
        name = str(test.get("name") or nodeid)
        finding = Finding(
            f"{STAGE_NAME}.{name}",
            status,
            nodeid,
            "the test passes",
            message or status.value,
            f"`pytest {nodeid}` (your test in --extra-checks)" if status is not Status.PASS else "",
        )
        by_node.setdefault(str(node), []).append(finding)
    nodes = tuple(NodeOutcome(node, NodeKind.HOST, tuple(found)) for node, found in by_node.items())
    return StageOutcome(STAGE_NAME, nodes)


def run_error(directory: Path, why: str) -> StageOutcome:
    finding = Finding(
        f"{STAGE_NAME}.run",
        Status.ERROR,
        str(directory),
        "pytest runs the tests of --extra-checks",
        why,
        f"run `pytest -p fabcheck {directory}` yourself to see why",
    )
    return StageOutcome(STAGE_NAME, (NodeOutcome(RUN_NODE, NodeKind.HOST, (finding,)),))


STAGE = ExtraStage()
