"""`fabcheck node-check` on a mock GPU node, in process (no lab, no sshd): the rail8 mock tools on PATH
(the mock dispatcher: one Python interpreter per tool call), the desired record `fabcheck
desired-record` writes for the example inventory's gpu01, and Slurm's scontrol faked on PATH
(tests/gate/fake_scontrol.py).

What this proves: the collection script runs here under the gate's bounds and is judged by the gate's
host checks; a `pfc-off` fault fails host.pfc on the faulted NIC and `--slurm` drains the node with a
reason naming it; a hung tool never hangs node-check. It also measures node-check's wall time and CPU
(its own process and the collection's). Not proved here: a node that passes every check (the probes
that `cat` files read this machine's /sys and /etc, not the mock node's; the lab's namespaces do that).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, configure_lossless, installed_bin, make_nodes, tree_bytes

from fabcheck.cli import main
from fabcheck_lab.mockhost import heal, inject

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gate"))
from fake_scontrol import FakeScontrol

REPO = Path(__file__).resolve().parents[2]
# The collection's limit here: generous, as 7 test runs may share 2 cores (a node-check on a quiet lab
# host takes far less; the default --timeout is 30 s). The wall bound below is this plus the grace.
TIMEOUT_S = 150


@dataclass
class Node:
    mock: MockNode
    record: Path
    scontrol: FakeScontrol


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Node:
    """gpu01 of profile rail8, configured as the host role configures it, its record written by
    desired-record (counter window 0: lifetime counters, no wait)."""
    mock = make_nodes(tmp_path, installed_bin(tmp_path), [("gpu01", "rail8")])[0]
    configure_lossless(mock)
    record = tmp_path / "etc" / "desired.json"
    inventory = str(REPO / "inventory" / "example")
    argv = ["desired-record", "-i", inventory, "--host", "gpu01", "--counter-window", "0", "-o", str(record)]
    assert main(argv) == 0
    scontrol = FakeScontrol(tmp_path / "slurm", "gpu01")
    for key, value in mock.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{scontrol.path.parent}:{mock.env['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu01")
    return Node(mock, record, scontrol)


@dataclass(frozen=True)
class Run:
    rc: int
    document: dict[str, object]
    wall_s: float
    own_cpu_s: float  # node-check's own process: read the record, parse and judge
    collection_cpu_s: float  # every process the collection started (sh, timeout, the mock tools)

    def statuses(self, check: str) -> dict[str, str]:
        findings = self.document["findings"]
        assert isinstance(findings, list)
        return {f["subject"]: f["status"] for f in findings if f["check"] == check}


def node_check(*options: str) -> Run:
    before_self = resource.getrusage(resource.RUSAGE_SELF)
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["node-check", "--json", "--timeout", str(TIMEOUT_S), *options])
    wall = time.perf_counter() - started
    after_self = resource.getrusage(resource.RUSAGE_SELF)
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Run(
        rc,
        json.loads(out.getvalue()),
        wall,
        _cpu(after_self) - _cpu(before_self),
        _cpu(after_children) - _cpu(before_children),
    )


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


NICS = {f"mlx5_{i}" for i in range(8)}


def test_pfc_off_fails_host_pfc_and_drains_the_node_naming_it(node: Node) -> None:
    textfile = node.record.parent / "textfile"
    textfile.mkdir()
    before = tree_bytes(node.mock.paths.state, node.mock.paths.sys_class)
    healthy = node_check("--desired", str(node.record), "--slurm", "--textfile", str(textfile))
    assert tree_bytes(node.mock.paths.state, node.mock.paths.sys_class) == before  # it changes nothing
    print(
        f"\nnode-check on a mock rail8 node: wall {healthy.wall_s:.2f} s, own CPU {healthy.own_cpu_s:.3f} s, "
        f"collection CPU {healthy.collection_cpu_s:.2f} s"
    )
    assert healthy.statuses("host.collection") == {}, healthy.document  # complete within the bound
    assert healthy.statuses("host.pfc") == dict.fromkeys(NICS, "pass")
    metrics = (textfile / "fabcheck-node-check.prom").read_text()
    assert 'fabcheck_check_status{node="gpu01",check="host.pfc",part="mlx5_0"} 1' in metrics
    # validate --metrics' families: the statuses and the counters the collection read, per rail NIC
    assert 'fabcheck_link_pause_frames{node="gpu01",kind="host",port="mlx5_0"' in metrics
    assert healthy.wall_s < TIMEOUT_S + 10
    # Parsing and judging a whole 8-NIC host: a small share of a health-check interval.
    assert healthy.own_cpu_s < 2.0
    # The mock node still fails checks that read this machine's files (e.g. host.nic_persistence): drained
    # for one of those, never for host.pfc.
    assert healthy.rc == 1 and node.scontrol.node["reason"].startswith("fabcheck: ")
    assert "host.pfc " not in node.scontrol.node["reason"]

    inject(node.mock.paths, "pfc-off")
    faulted = node_check("--desired", str(node.record), "--slurm")
    assert faulted.statuses("host.pfc") == dict.fromkeys(NICS, "pass") | {"mlx5_0": "fail"}
    assert faulted.rc == 1
    reason = node.scontrol.node["reason"]
    assert reason.startswith("fabcheck: host.pfc mlx5_0: "), reason
    assert node.scontrol.node["state"] == "IDLE+DRAIN"
    assert faulted.document["slurm"] == {
        "action": "drain",
        "why": f"draining gpu01: {reason}",
        "reason": reason,
    }
    drains = [call for call in node.scontrol.updates() if "State=DRAIN" in call]
    assert drains[-1] == ["update", "NodeName=gpu01", "State=DRAIN", f"Reason={reason}"]
    heal(node.mock.paths, "pfc-off")  # the resume after a repair: tests/gate/test_slurm_node.py


def test_a_hung_tool_never_hangs_node_check(
    node: Node, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rdma link` hangs: its tool limit (a third of --timeout) stops it and every process it started,
    and node-check answers within --timeout plus the grace."""
    hang = tmp_path / "hang"
    hang.mkdir()
    pid_file = tmp_path / "hung.pid"
    (hang / "rdma").write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 1000\n")
    (hang / "rdma").chmod(0o755)
    monkeypatch.setenv("PATH", f"{hang}:{os.environ['PATH']}")
    started = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["node-check", "--json", "--timeout", "6", "--desired", str(node.record)])
    wall = time.perf_counter() - started
    assert wall < 6 + 10, wall
    document = json.loads(out.getvalue())
    rdma = [f for f in document["findings"] if "rdma link" in f["actual"]]
    assert rdma and all("stopped after 2 s" in f["actual"] for f in rdma), rdma
    assert rc in (1, 3)
    hung = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)


def test_as_a_process_with_the_default_window_it_ends_well_within_slurms_limit(
    node: Node, tmp_path: Path
) -> None:
    """`fabcheck node-check` as slurmd starts it (a new process, validate's 5 s counter window, default
    --timeout): the figures README states, the whole process tree's CPU included."""
    record = tmp_path / "window5.json"
    inventory = str(REPO / "inventory" / "example")
    assert main(["desired-record", "-i", inventory, "--host", "gpu01", "-o", str(record)]) == 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", "node-check", "--desired", str(record), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"\nnode-check as a process, 5 s window: wall {wall:.2f} s, process tree CPU "
        f"{_cpu(after) - _cpu(before):.2f} s, load {os.getloadavg()[0]:.1f}"
    )
    document = json.loads(done.stdout)
    assert done.returncode == 1 and document["exit_code"] == 1, done.stderr[-2000:]
    assert {f["status"] for f in document["findings"] if f["check"] == "host.link_errors"} == {
        "pass"
    }  # judged
    assert wall < 41 + 5  # its own bound (README), whatever the machine's load
