"""fabcheck on the lab's GPU nodes and `node-check --slurm` against the lab's real Slurm (Debian's
slurmctld and slurmd; lab/src/fabcheck_lab/slurm.py).

site.yml with a wheelhouse (scripts/wheelhouse) converges 2 RoCE hosts: role fabcheck_node puts fabcheck
in each node's own venv (/opt/fabcheck, from the wheels copied over ssh, pip with no index; the node's
/usr/local/bin is the lab's read-only tools folder, where the lab links fabcheck to that venv) and play
node_check installs each node's desired record. Then, over ssh on the node itself: `fabcheck node-check`
passes on each; with `pfc-off` on gpu02, `node-check --slurm` there fails and drains gpu02 with a reason
naming host.pfc (seen by `sinfo -R` on the controller); healed, the next run resumes it; gpu01 drained by
hand stays drained after a passing run. A second node_check play changes nothing on the lab's nodes.

Not root: requires_lab skips. Each node-check run takes about 15 s (its 5 s counter window included).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labsupport import REPO, injected, requires_lab, run_playbook, running_lab

from fabcheck.gate.step_judge import unpacked
from fabcheck_lab import slurm
from fabcheck_lab.state import LabPaths

HOSTS = ("gpu01", "gpu02")
NODE_CHECK_TIMEOUT_S = 120  # its own bound with --slurm is 57 s; a loaded machine gets twice that


@dataclass(frozen=True)
class NodeLab:
    paths: LabPaths
    cluster: slurm.SlurmCluster
    wheelhouse: Path
    said: list[str] = field(default_factory=list)  # what each `fabcheck validate` printed on stderr


@pytest.fixture(scope="module")
def node_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeLab]:
    wheelhouse = tmp_path_factory.mktemp("node-wheels") / "wheelhouse"
    build = [REPO / "scripts" / "wheelhouse", wheelhouse]
    subprocess.run(build, cwd=REPO, env=os.environ | {"PYTHON": sys.executable}, check=True, timeout=300)
    with running_lab(profile="roce", hosts=len(HOSTS), switches=0) as (paths, _state):
        converged = run_playbook(
            paths, "--limit", "gpu_hosts", "-e", f"fabcheck_node_wheelhouse={wheelhouse}"
        )
        assert converged.rc == 0, converged.output[-4000:]
        cluster = slurm.up(paths)
        try:
            yield NodeLab(paths, cluster, wheelhouse)
        finally:
            slurm.down(paths)


def on_node(lab: NodeLab, node: str, command: str) -> subprocess.CompletedProcess[str]:
    """A command in the node over ssh, with the lab cluster's slurm.conf (the node's copy, same path)."""
    remote = f"SLURM_CONF={shlex.quote(str(lab.cluster.conf))} {command}"
    argv = ["ssh", "-F", str(lab.paths.ssh_config), node, remote]
    return subprocess.run(argv, capture_output=True, text=True, timeout=NODE_CHECK_TIMEOUT_S, check=False)


def slurm_client(lab: NodeLab, *argv: str) -> str:
    done = subprocess.run(
        list(argv), env=lab.cluster.env(), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def node_states(lab: NodeLab) -> dict[str, tuple[str, str]]:
    """node -> (state, reason) as `sinfo -R` shows the unavailable ones, and sinfo the rest."""
    states = {}
    for line in slurm_client(lab, "sinfo", "--noheader", "--Node", "--format=%N|%T").splitlines():
        name, state = line.split("|")
        states[name] = (state, "")
    for line in slurm_client(lab, "sinfo", "-R", "--noheader", "--format=%N|%T|%E").splitlines():
        name, state, reason = line.split("|", 2)
        states[name] = (state, reason)
    return states


def settled_state(lab: NodeLab, node: str, timeout_s: float = 60.0) -> tuple[str, str]:
    """The node's (state, reason) once slurmctld hears its slurmd again: a resumed node may read `idle*`
    (not responding) until its next registration on a loaded machine."""
    deadline = time.monotonic() + timeout_s
    state = node_states(lab)[node]
    while state[0].endswith("*") and time.monotonic() < deadline:
        time.sleep(2)
        state = node_states(lab)[node]
    return state


@pytest.mark.lab
@requires_lab
def test_site_installs_fabcheck_and_its_record_and_node_check_passes_on_each_node(node_lab: NodeLab) -> None:
    for node in HOSTS:
        placed = on_node(node_lab, node, 'readlink -f "$(command -v fabcheck)"; fabcheck --version')
        assert placed.returncode == 0, placed.stderr
        assert placed.stdout.splitlines()[0] == "/opt/fabcheck/bin/fabcheck", placed.stdout
        passed = on_node(node_lab, node, "fabcheck node-check")
        assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-2000:]
    assert node_states(node_lab) == {node: ("idle", "") for node in HOSTS}
    # Installed and recorded already: the play changes nothing on a node (its link included).
    wheelhouse = f"fabcheck_node_wheelhouse={node_lab.wheelhouse}"
    again = run_playbook(
        node_lab.paths, "--limit", "gpu_hosts", "-e", wheelhouse, playbook="playbooks/node_check.yml"
    )
    assert again.rc == 0 and again.changed == dict.fromkeys(HOSTS, 0), again.output[-4000:]


def gate(lab: NodeLab, *options: str) -> tuple[list[dict[str, Any]], int]:
    """`fabcheck validate --stages host --json` from the controller, with the lab's SLURM_CONF."""
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(lab.paths.inventory.parent)]
    argv += ["--stages", "host", "--json", "--timeout", "120", "--connect-timeout", "60", *options]
    done = subprocess.run(
        argv, cwd=REPO, env=lab.cluster.env(), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode in (0, 1, 3), done.stderr[-3000:]
    lab.said.append(done.stderr)
    # The bits a lab link received in the counter window grow while it is up: the one figure two runs
    # cannot share (host.link_errors quotes it).
    steady = re.sub(r"rx_bits_phy \+[0-9]+", "rx_bits_phy +N", done.stdout)
    return [json.loads(line) for line in steady.splitlines()], done.returncode


@pytest.mark.lab
@requires_lab
def test_via_slurm_each_node_judges_itself_and_the_findings_are_the_native_ones(
    node_lab: NodeLab, tmp_path: Path
) -> None:
    native, native_rc = gate(node_lab)
    via, via_rc = gate(node_lab, "--via", "slurm")
    assert [line["host"] for line in native] == list(HOSTS) and native_rc == 0
    assert via == native and via_rc == native_rc
    assert "--via slurm: 2 of 2 nodes judged themselves\n" in node_lab.said[-1], node_lab.said[-1][-3000:]
    # A snapshot keeps each node's judgement and its raw reads, and is judged again from those.
    saved = tmp_path / "snap"
    again, again_rc = gate(node_lab, "--via", "slurm", "--save-snapshot", str(saved))
    assert again == native and again_rc == native_rc
    for host in HOSTS:
        read = json.loads((saved / "host" / f"{host}.json").read_text())["read"]
        assert list(read["sections"]) == ["fabcheck.judged"], sorted(read["sections"])
        payload = json.loads(unpacked(read["sections"]["fabcheck.judged"]["stdout"]))
        assert payload["forward"] == "*" and payload["records"] is None
        assert {"rdma_link", "show_gids", "lsmod"} <= set(payload["sections"]), sorted(payload["sections"])
    replayed, replayed_rc = gate(node_lab, "--from-snapshot", str(saved))
    assert replayed == native and replayed_rc == native_rc


@pytest.mark.lab
@requires_lab
def test_pfc_off_drains_gpu02_naming_host_pfc_and_the_repair_resumes_it(node_lab: NodeLab) -> None:
    with injected(node_lab.paths, "pfc-off", "gpu02"):
        failed = on_node(node_lab, "gpu02", "fabcheck node-check --slurm")
        assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-2000:]
        state, reason = node_states(node_lab)["gpu02"]
        assert state == "drained" and reason.startswith("fabcheck: host.pfc "), (state, reason)
        assert node_states(node_lab)["gpu01"] == ("idle", "")
    repaired = on_node(node_lab, "gpu02", "fabcheck node-check --slurm")
    assert repaired.returncode == 0, repaired.stdout[-3000:] + repaired.stderr[-2000:]
    assert settled_state(node_lab, "gpu02") == ("idle", "")


@pytest.mark.lab
@requires_lab
def test_a_node_drained_by_hand_stays_drained_after_a_passing_run(node_lab: NodeLab) -> None:
    slurm_client(node_lab, "scontrol", "update", "nodename=gpu01", "state=drain", "reason=maintenance")
    try:
        passed = on_node(node_lab, "gpu01", "fabcheck node-check --slurm")
        assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-2000:]
        assert node_states(node_lab)["gpu01"] == ("drained", "maintenance")
    finally:
        slurm_client(node_lab, "scontrol", "update", "nodename=gpu01", "state=resume")
