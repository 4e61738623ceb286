"""`fabcheck topology` under the lab's real Slurm (issue 40, part 3): the scheduler's topology from the
cabling map and the verdicts of the last validate, read by slurmctld itself.

Four rail8 hosts cabled round-robin over two NVUE leaves (every host on both leaves), converged by
site.yml. With PFC off on one NIC of gpu02, `validate --save-snapshot` fails link.pfc on that one cable;
`fabcheck topology --format slurm-tree --snapshot` leaves gpu02 out and names it in a comment. The lab's
Slurm (Debian's 22.05) started with TopologyPlugin=topology/tree on that file: `scontrol show topology`
lists the switches the file names (each node under the leaf of its first rail, leaf01), and gpu01,
gpu03 and gpu04 but not gpu02 under them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from labsupport import REPO, injected, requires_lab, run_playbook, running_lab

from fabcheck_lab import slurm
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")
GENEROUS = ("--timeout", "120", "--connect-timeout", "60")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with running_lab(profile="roce", hosts=len(HOSTS), switches=2) as (paths, _state):
        converged = run_playbook(paths, "--skip-tags", "gate")
        assert converged.rc == 0, converged.output[-4000:]
        try:
            yield paths
        finally:
            slurm.down(paths)


def fabcheck(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", *argv],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_a_host_with_a_failing_cable_is_left_out_of_the_topology_slurmctld_reads(
    lab: LabPaths, tmp_path: Path
) -> None:
    inventory = str(lab.inventory.parent)
    snapshot = tmp_path / "snapshot"
    with injected(lab, "pfc-off", "gpu02"):
        judged = fabcheck("validate", "-i", inventory, "--stages", "host,switch,link", *GENEROUS,
                          "--save-snapshot", str(snapshot))  # fmt: skip
    assert judged.returncode == 1, judged.stdout[-3000:] + judged.stderr[-2000:]
    conf = tmp_path / "topology.conf"
    written = fabcheck("topology", "-i", inventory, "--snapshot", str(snapshot), "-o", str(conf))
    assert written.returncode == 0, written.stderr
    text = conf.read_text()
    entries = [line for line in text.splitlines() if line.startswith("SwitchName=")]
    comments = [line for line in text.splitlines() if line.startswith("#") and "gpu02" in line]
    assert comments, text
    cluster = slurm.up(lab, topology=text)
    shown = subprocess.run(
        ["scontrol", "show", "topology"],
        env=cluster.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    names = {line.split()[0].removeprefix("SwitchName=") for line in lines if line.startswith("SwitchName=")}
    # Each node sits under the leaf of its first rail (Slurm refuses a node under two leaves): here leaf01.
    assert names == {line.split()[0].removeprefix("SwitchName=") for line in entries} and "leaf01" in names, (
        shown.stdout,
        text,
    )
    listed = [
        word.removeprefix("Nodes=") for line in lines for word in line.split() if word.startswith("Nodes=")
    ]
    expanded = subprocess.run(
        ["scontrol", "show", "hostnames", ",".join(listed)],
        env=cluster.env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert set(expanded.stdout.split()) == {"gpu01", "gpu03", "gpu04"}, (shown.stdout, expanded.stdout)
