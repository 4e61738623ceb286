"""The nccl stage in the lab, through Open MPI's real mpirun: its orted daemons start on the lab nodes over
the inventory's ssh, the mock nccl-tests take rank and size from mpirun's environment, and
`fabcheck validate --stages host,nccl` passes on a converged lab; no-rdma on one node fails the stage
naming Socket and that node, and nothing on the other."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from labsupport import REPO, converged_lab, injected, requires_lab

from fabcheck.checks import nccl_ranks
from fabcheck.intent.loader import load_inventory
from fabcheck.launch import LaunchRequest, launch_hosts, launcher_config, launcher_for
from fabcheck_lab.state import LabPaths

pytestmark = [
    pytest.mark.lab,
    requires_lab,
    pytest.mark.skipif(
        shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed (scripts/setup)"
    ),
]

HOSTS = ("gpu01", "gpu02")
GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


@dataclass(frozen=True)
class Lab:
    paths: LabPaths

    def validate(self) -> tuple[int, dict[str, list[dict]], str]:
        """Exit code, each host's nccl findings, and stderr of `validate --stages host,nccl --json`."""
        argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(self.paths.inventory.parent)]
        done = subprocess.run(
            [*argv, "--stages", "host,nccl", "--json", *GENEROUS],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
        subjects = [json.loads(line) for line in done.stdout.splitlines()]
        findings = {
            s["host"]: [f for f in s["findings"] if f["check"].startswith("nccl.")]
            for s in subjects
            if "host" in s
        }
        return done.returncode, findings, done.stderr


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with converged_lab("--limit", "gpu_hosts", profile="roce", hosts=len(HOSTS), switches=0) as paths:
        yield Lab(paths)


def test_mpirun_starts_its_daemons_on_the_lab_nodes(lab: Lab) -> None:
    entries = [h for h in load_inventory(str(lab.paths.inventory.parent)).hosts if "gpu_hosts" in h.groups]
    probe = 'echo "$(hostname) $(cat /proc/$PPID/comm) $OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE $PROBE"'
    job = LaunchRequest("sh", ("-c", probe), launch_hosts(entries), 2, {"PROBE": "INIT,NET"}, timeout_s=60)
    result = launcher_for(launcher_config(entries)).run(job)
    assert result.rc == 0, result.stderr
    # Each rank's parent is Open MPI's orted, on the node mpirun placed it on.
    assert result.ranks == {rank: (f"{HOSTS[rank // 2]} orted {rank}/4 INIT,NET",) for rank in range(4)}


def test_converged_lab_passes_the_nccl_stage_on_every_rank(lab: Lab) -> None:
    rc, findings, _ = lab.validate()
    assert rc == 0, {h: [f for f in fs if f["status"] != "pass"] for h, fs in findings.items()}
    for host in HOSTS:
        checks = {f["check"]: f["status"] for f in findings[host]}
        assert checks == {
            c: "pass"
            for c in ("nccl.launch", nccl_ranks.BUSBW, *nccl_ranks.RANK_CHECKS, nccl_ranks.PAIR_TRANSPORT)
        }
    transport = next(f for f in findings["gpu02"] if f["check"] == nccl_ranks.TRANSPORT)
    assert transport["actual"] == "network IB on every rank"


def test_no_rdma_fails_the_stage_naming_socket_and_the_node(lab: Lab) -> None:
    with injected(lab.paths, "no-rdma", "gpu02"):
        rc, findings, _ = lab.validate()
    assert rc == 1
    socket = next(f for f in findings["gpu02"] if f["check"] == nccl_ranks.TRANSPORT)
    assert socket["status"] == "fail" and socket["subject"] == "gpu02: 8 of 8 ranks"
    assert "network Socket" in socket["actual"] and "gpu02:" in socket["actual"]
    mine = {f["check"]: f["status"] for f in findings["gpu01"]}
    assert mine[nccl_ranks.TRANSPORT] == "pass" and mine[nccl_ranks.GDR] == "pass"
