"""A real Slurm cluster of 2 lab nodes (Debian's munged, slurmctld, slurmd: lab/src/fabcheck_lab/slurm.py),
and fabcheck's SrunLauncher on it: srun starts its tasks under slurmstepd inside the nodes, the mock
nccl-tests take rank and size from SLURM_*, and `validate --stages host,nccl` with `fabric_launcher.kind:
srun` passes on the converged lab.

Not root: requires_lab skips (whatever Slurm). As root a missing Slurm is an error of the fixture
(slurm.up names the packages scripts/setup installs), never a skip.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from labsupport import REPO, requires_lab, run_playbook, running_lab

from fabcheck.cli import main
from fabcheck.intent.loader import HostEntry, load_inventory
from fabcheck.launch import LauncherConfig, LaunchRequest, LaunchResult, SrunLauncher, launch_hosts
from fabcheck_lab import slurm
from fabcheck_lab.state import LabError, LabPaths, NodeRecord

HOSTS = ("gpu01", "gpu02")
GPUS = 8  # rail8 nodes: slurmd reports one CPU per GPU
GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


@dataclass(frozen=True)
class SlurmLab:
    paths: LabPaths
    cluster: slurm.SlurmCluster
    entries: list[HostEntry]

    def srun(self, request: LaunchRequest) -> LaunchResult:
        return SrunLauncher(LauncherConfig(kind="srun")).run(request, self.cluster.env())


@pytest.fixture(scope="module")
def slurm_lab() -> Iterator[SlurmLab]:
    with running_lab(profile="roce", hosts=len(HOSTS), switches=0) as (paths, _state):
        converged = run_playbook(paths, "--limit", "gpu_hosts")
        assert converged.rc == 0, converged.output[-4000:]
        cluster = slurm.up(paths)
        try:
            entries = [
                h for h in load_inventory(str(paths.inventory.parent)).hosts if "gpu_hosts" in h.groups
            ]
            yield SlurmLab(paths, cluster, entries)
        finally:
            slurm.down(paths)


@pytest.mark.lab
@requires_lab
def test_cluster_is_up_idempotent_and_says_so(
    slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert slurm_lab.cluster.nodes == {name: "idle" for name in HOSTS}
    again = slurm.up(slurm_lab.paths)
    assert again.already_up and again.nodes == slurm_lab.cluster.nodes
    # The CLI finds the lab of this checkout; the tests' lab belongs to a scratch project.
    monkeypatch.setattr("fabcheck_lab.cli.project_root", lambda: slurm_lab.paths.project)
    capsys.readouterr()
    assert main(["lab", "slurm", "status"]) == 0
    shown = capsys.readouterr().out
    assert f"SLURM_CONF={slurm_lab.cluster.conf}" in shown and "gpu02  idle" in shown, shown


@pytest.mark.lab
@requires_lab
def test_srun_launcher_starts_tasks_under_slurmstepd_in_each_node(slurm_lab: SlurmLab) -> None:
    probe = 'echo "$(hostname) $(cat /proc/$PPID/comm) $SLURM_PROCID/$SLURM_NTASKS $SLURM_LOCALID $PROBE"'
    hosts = launch_hosts(slurm_lab.entries)
    result = slurm_lab.srun(LaunchRequest("sh", ("-c", probe), hosts, GPUS, {"PROBE": "INIT,NET"}, 60))
    assert result.rc == 0, result.stderr
    # Block distribution: tasks 0-7 on gpu01, 8-15 on gpu02, each a child of slurmstepd in its node.
    assert result.ranks == {
        rank: (f"{HOSTS[rank // GPUS]} slurmstepd {rank}/16 {rank % GPUS} INIT,NET",) for rank in range(16)
    }


@pytest.mark.lab
@requires_lab
def test_mock_nccl_tests_take_their_ranks_from_slurm(slurm_lab: SlurmLab) -> None:
    args = ("-b", "1M", "-e", "1M", "-f", "2", "-g", "1")
    request = LaunchRequest("all_reduce_perf", args, launch_hosts(slurm_lab.entries), GPUS, {}, 120)
    result = slurm_lab.srun(request)
    assert result.rc == 0, result.stderr[-2000:]
    header = [line.split() for line in result.ranks[0] if line.startswith("#  Rank")]
    # "#  Rank  9 Group  0 Pid ... on gpu02 device  1 [...]": process 0 heard from all 16 SLURM_PROCIDs.
    placed = {int(words[2]): (words[8], int(words[10])) for words in header}
    assert placed == {rank: (HOSTS[rank // GPUS], rank % GPUS) for rank in range(16)}


@pytest.mark.lab
@requires_lab
def test_validate_host_and_nccl_pass_with_srun(slurm_lab: SlurmLab, tmp_path: Path) -> None:
    inventory = srun_inventory(slurm_lab.paths, tmp_path / "inventory")
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(inventory), "--stages", "host,nccl"]
    done = subprocess.run(
        [*argv, "--json", *GENEROUS],
        cwd=REPO,
        env=slurm_lab.cluster.env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    subjects = [json.loads(line) for line in done.stdout.splitlines()]
    launches = [f for s in subjects for f in s.get("findings", []) if f["check"] == "nccl.launch"]
    assert {f["status"] for f in launches} == {"pass"} and len(launches) == len(HOSTS)
    assert all("srun" in json.dumps(f) for f in launches), launches


def srun_inventory(paths: LabPaths, target: Path) -> Path:
    """The lab's inventory with `fabric_launcher.kind: srun`, outside every inventory folder (Ansible
    parses whatever lies in one): its files linked, the launcher in a group_vars file of its own."""
    lab_inventory = paths.inventory.parent
    (target / "group_vars" / "all").mkdir(parents=True)
    for name in ("hosts.yml", "groups.yml"):
        (target / name).symlink_to((lab_inventory / name).resolve())
    for source in sorted((lab_inventory / "group_vars" / "all").resolve().iterdir()):
        (target / "group_vars" / "all" / source.name).symlink_to(source)
    launcher = {"fabric_launcher": {"kind": "srun", "timeout_s": 300}}
    (target / "group_vars" / "all" / "launcher.yml").write_text(yaml.safe_dump(launcher))
    return target


# ---- no lab needed ------------------------------------------------------------------------------------


def test_missing_slurm_is_one_error_naming_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm, "DAEMONS", {**slurm.DAEMONS, "slurmd": "/nonexistent/slurmd"})
    monkeypatch.setattr(slurm, "CLIENTS", ("srun", "fabcheck-no-such-sinfo"))
    monkeypatch.setitem(slurm.PACKAGES, "fabcheck-no-such-sinfo", "slurm-client")
    with pytest.raises(LabError, match=r"Slurm is not installed: missing slurmd, fabcheck-no-such-sinfo; "
                       r"install slurm-client slurmd \(scripts/setup"):  # fmt: skip
        slurm.require_slurm()


def test_conf_gives_each_node_its_port_cpus_and_lab_address() -> None:
    files = slurm.SlurmFiles(Path("/dev/shm/fabcheck-lab-x/slurm"))
    hosts = [
        NodeRecord(name, "host", "rail8", "gpu_hosts", i, f"127.0.1.{i + 1}", 2222)
        for i, name in enumerate(HOSTS)
    ]
    conf = slurm.slurm_conf(files, "ctl", hosts).splitlines()
    assert "SlurmctldHost=ctl(127.0.0.1)" in conf
    assert "AuthInfo=socket=/dev/shm/fabcheck-lab-x/slurm/munged.socket" in conf
    assert "SlurmdParameters=config_overrides" in conf
    nodes = [line for line in conf if line.startswith("NodeName=")]
    port = slurm.SLURMD_BASE_PORT
    assert nodes == [
        f"NodeName=gpu01 NodeAddr=127.0.1.1 NodeHostname=gpu01 Port={port} CPUs=8 State=UNKNOWN",
        f"NodeName=gpu02 NodeAddr=127.0.1.2 NodeHostname=gpu02 Port={port + 1} CPUs=8 State=UNKNOWN",
    ]
    assert conf[-1] == "PartitionName=lab Nodes=gpu01,gpu02 Default=YES MaxTime=INFINITE State=UP"
