"""The gate's other ways of reading the lab give the verdicts of the native ssh run, node by node and
finding by finding: pytest-testinfra's ssh and paramiko backends, one Ansible play (--via ansible), and
the offline replay of the snapshot the native run saved (identical JSON); the pytest plugin gives the
same verdict per (node, check). One lab of 2 GPU hosts and 1 switch in factory state (no role has run),
where passes, failures and skips all occur."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from labsupport import requires_lab, running_lab

from fabcheck.cli import main
from fabcheck.intent.loader import load_inventory
from fabcheck.pytest_plugin import outcome_of
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


@dataclass(frozen=True)
class Lab:
    paths: LabPaths
    snapshot: Path
    native: list[dict]  # the native run's JSON lines, saved as `snapshot`

    @property
    def inventory(self) -> str:
        return str(self.paths.inventory.parent)


def validate(inventory: str, *options: str, expect: tuple[int, ...] = (1,)) -> tuple[list[dict], str]:
    """`fabcheck validate --json` in this process (no interpreter start per run): its lines and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["validate", "-i", inventory, "--json", *GENEROUS, *options])
    assert rc in expect, err.getvalue()[-3000:]
    return [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def host_stage(lines: list[dict]) -> list[dict]:
    """What the host stage alone reports: GPU hosts, without the link stage's findings on them."""
    return [
        {**line, "findings": [f for f in line["findings"] if not f["check"].startswith("link.")]}
        for line in lines
        if "host" in line
    ]


def verdicts(lines: list[dict]) -> dict[tuple[str, str, str], str]:
    """(node, check, subject) -> status of every finding of a run."""
    return {
        (str(line.get("host") or line.get("switch")), f["check"], f["subject"]): f["status"]
        for line in lines
        for f in line["findings"]
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(profile="roce", hosts=2, switches=1) as (paths, _state):
        snapshot = tmp_path_factory.mktemp("gate") / "snapshot"
        native, _ = validate(str(paths.inventory.parent), "--save-snapshot", str(snapshot))
        statuses = set(verdicts(native).values())
        assert {"pass", "fail", "skip"} <= statuses, statuses
        assert {line.get("switch") for line in native} >= {"leaf01"}
        yield Lab(paths, snapshot, native)


@pytest.mark.parametrize("backend", ["ssh", "paramiko"])
def test_testinfra_backends_give_the_native_verdicts(lab: Lab, backend: str) -> None:
    lines, _ = validate(lab.inventory, "--backend", backend, "--stages", "host")
    assert verdicts(lines) == verdicts(host_stage(lab.native))
    assert any(k[:2] == ("gpu02", "host.pfc") for k, v in verdicts(lines).items() if v == "fail")  # factory


def test_named_hosts_urls_reach_their_hosts(lab: Lab) -> None:
    gpu01 = load_inventory(lab.inventory).host("gpu01").variables
    key = gpu01["ansible_ssh_private_key_file"]
    url = f"paramiko://root@{gpu01['ansible_host']}:{gpu01['ansible_port']}?ssh_identity_file={key}"
    lines, _ = validate(lab.inventory, "--hosts", url, "--limit", "gpu01", "--stages", "host")
    want = {k: v for k, v in verdicts(lab.native).items() if k[0] == "gpu01" and not k[1].startswith("link.")}
    assert {k: v for k, v in verdicts(lines).items() if not k[1].startswith("host.versions")} == {
        k: v for k, v in want.items() if not k[1].startswith("host.versions")
    }


def test_the_snapshot_replays_to_identical_json(lab: Lab, tmp_path: Path) -> None:
    lines, _ = validate(lab.inventory, "--from-snapshot", str(lab.snapshot))
    assert lines == lab.native
    broken = tmp_path / "broken"
    shutil.copytree(lab.snapshot, broken)
    (broken / "switch" / "leaf01.json").write_text('{"stage": "switch", "node": "leaf01"')
    _, said = validate(lab.inventory, "--from-snapshot", str(broken), expect=(2,))
    assert f"{broken}/switch/leaf01.json:1: not JSON" in said


def test_via_ansible_gives_the_native_verdicts(lab: Lab) -> None:
    lines, _ = validate(lab.inventory, "--via", "ansible", "--stages", "host")
    assert verdicts(lines) == verdicts(host_stage(lab.native))


def test_the_pytest_plugin_gives_the_native_verdicts(lab: Lab, tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    argv = [sys.executable, "-m", "pytest", "-p", "fabcheck", "-p", "no:cacheprovider", "-q"]
    argv += ["--fabcheck-inventory", lab.inventory, "--connection", "ssh", "--fabcheck-results", str(results)]
    argv += ["-n", "2"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout[-3000:]
    got = {
        test["nodeid"].rpartition("[")[2].rstrip("]"): test["outcome"]
        for test in json.loads(results.read_text())["tests"]
    }
    statuses: dict[str, set[str]] = {}
    for line in lab.native:
        for finding in line["findings"]:
            if "host" in line and not finding["check"].startswith("link."):
                statuses.setdefault(f"{line['host']}-{finding['check']}", set()).add(finding["status"])
    assert got == {case: outcome_of(found) for case, found in statuses.items()}
    assert {"pass", "fail", "skip"} <= set(got.values()) and got["gpu02-host.pfc"] == "fail"
