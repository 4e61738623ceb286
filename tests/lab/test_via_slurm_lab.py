"""`fabcheck validate --via slurm` on the lab's real Slurm cluster (Debian's slurmctld and slurmd in the lab
nodes, lab/src/fabcheck_lab/slurm.py): ONE srun step brings back every node's bundle and the JSON equals the
native ssh run's, line for line; a node Slurm cannot run on (drained) is an error naming Slurm's state and
reason while the other node is judged as natively; a partition the node is not in is an error naming it.
Two GPU hosts in factory state (no role has run), where passes, failures and skips all occur."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from labsupport import REPO, requires_lab, running_lab

from fabcheck.cli import main
from fabcheck_lab import slurm
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


@dataclass(frozen=True)
class SlurmLab:
    paths: LabPaths
    cluster: slurm.SlurmCluster

    @property
    def inventory(self) -> str:
        return str(self.paths.inventory.parent)


@pytest.fixture(scope="module")
def slurm_lab() -> Iterator[SlurmLab]:
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        cluster = slurm.up(paths)
        try:
            yield SlurmLab(paths, cluster)
        finally:
            slurm.down(paths)


def validate(lab: SlurmLab, monkeypatch: pytest.MonkeyPatch, *options: str) -> tuple[list[dict], int]:
    """`fabcheck validate --stages host --json` in this process, with the lab's SLURM_CONF."""
    monkeypatch.setenv("SLURM_CONF", str(lab.cluster.conf))
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["validate", "-i", lab.inventory, "--stages", "host", "--json", *GENEROUS, *options])
    assert rc in (0, 1, 3), err.getvalue()[-3000:]
    return [json.loads(steady(line)) for line in out.getvalue().splitlines()], rc


def steady(line: str) -> str:
    """The JSON line with the one figure two runs cannot share: the bits a lab link received in the
    counter window (host.link_errors quotes them; they grow 400 Gb/s while the link is up)."""
    return re.sub(r"rx_bits_phy \+[0-9]+", "rx_bits_phy +N", line)


def scontrol(lab: SlurmLab, *words: str) -> None:
    done = subprocess.run(
        ["scontrol", *words], env=lab.cluster.env(), capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr


def test_one_step_gives_the_native_json_line_for_line(
    slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    native, native_rc = validate(slurm_lab, monkeypatch)
    via, via_rc = validate(slurm_lab, monkeypatch, "--via", "slurm")
    assert [line["host"] for line in native] == ["gpu01", "gpu02"]
    statuses = {f["status"] for line in native for f in line["findings"]}
    assert {"pass", "fail"} <= statuses, statuses  # factory state: a judged mix, not all errors
    assert via == native and via_rc == native_rc


def test_a_drained_node_is_an_error_naming_slurms_reason(
    slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fleet checks compare the hosts that were read: natively, gpu01 read alone.
    native, _ = validate(slurm_lab, monkeypatch, "--limit", "gpu01")
    scontrol(slurm_lab, "update", "nodename=gpu02", "state=drain", "reason=fabcheck lab test")
    try:
        via, rc = validate(slurm_lab, monkeypatch, "--via", "slurm")
    finally:
        scontrol(slurm_lab, "update", "nodename=gpu02", "state=resume")
    assert rc == 1 and via[0] == native[0] and [line["host"] for line in via] == ["gpu01", "gpu02"]
    (finding,) = via[1]["findings"]
    assert finding["status"] == "error" and finding["check"] == "host.collection"
    assert "Slurm cannot run on node gpu02: state drained" in finding["actual"], finding
    assert "reason: fabcheck lab test" in finding["actual"], finding


def test_a_partition_the_nodes_are_not_in_is_an_error_naming_it(
    slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    via, rc = validate(slurm_lab, monkeypatch, "--via", "slurm", "--partition", "gpu")
    assert rc == 3 and [line["verdict"] for line in via] == ["error", "error"]
    for line in via:
        (finding,) = line["findings"]
        assert f"node {line['host']} is not in the partition gpu (it is in lab)" in finding["actual"]


def test_inside_an_allocation_the_step_runs_in_it_and_only_on_its_nodes(
    slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    native, _ = validate(slurm_lab, monkeypatch, "--limit", "gpu01")
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", slurm_lab.inventory, "--stages", "host"]
    # salloc runs fabcheck with SLURM_JOB_ID and SLURM_JOB_NODELIST of a job holding gpu01 alone.
    salloc = ["salloc", "--nodes=1", "--nodelist=gpu01", "--immediate=60", "--job-name=fabcheck-test"]
    env = {k: v for k, v in slurm_lab.cluster.env().items() if not k.startswith("SLURM_JOB")}
    done = subprocess.run(
        [*salloc, *argv, "--json", *GENEROUS, "--via", "slurm"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    lines = [json.loads(steady(line)) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 1 and len(lines) == 2, done.stderr[-3000:]
    assert lines[0] == native[0]  # gpu01 judged in the allocation as natively (gpu02 unread there too)
    (finding,) = lines[1]["findings"]
    assert re.fullmatch(r"--via slurm: node gpu02 is not in the allocation of job \d+ \(SLURM_JOB_NODELIST\)",
                        finding["actual"]), finding  # fmt: skip
