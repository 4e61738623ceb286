"""Launchers: the exact mpirun and srun command lines, the ssh_config and hostfile written from the
inventory, per-rank output from tagged lines (also when Open MPI cuts a line at a chunk end), the
fabric_launcher validation, the timeout, and one real local mpirun run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fabcheck.collect.ssh import SshTarget
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent
from fabcheck.launch import (
    LauncherConfig,
    LaunchError,
    LaunchHost,
    LaunchRequest,
    MpirunLauncher,
    SrunLauncher,
    launch_hosts,
    launcher_config,
    launcher_for,
    mpirun,
    srun,
)
from fabcheck.launch.model import run_process, split_tagged

KEY = "/keys/id_ed25519"
ARGS = ("-b", "8", "-e", "1G", "-f", "2", "-g", "1")


def host(name: str, address: str, *options: str) -> LaunchHost:
    return LaunchHost(name, SshTarget(name, address, 2222, "root", KEY, tuple(options)))


def request(**changes: object) -> LaunchRequest:
    fields: dict[str, object] = {
        "program": "all_reduce_perf",
        "args": ARGS,
        "hosts": (host("gpu01", "10.0.0.1"), host("gpu02", "10.0.0.2")),
        "ranks_per_host": 8,
        "env": {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"},
        "timeout_s": 120.0,
    }
    return LaunchRequest(**{**fields, **changes})  # type: ignore[arg-type]


def test_mpirun_argv_places_ranks_per_host_and_passes_env_with_x() -> None:
    config = LauncherConfig(extra_args=("--mca", "btl_tcp_if_include", "eth0"))
    argv = MpirunLauncher(config).argv(request(), Path("/s/hostfile"), Path("/s/ssh_config"), as_root=True)
    assert argv == [
        "mpirun",
        "--allow-run-as-root",
        "--hostfile",
        "/s/hostfile",
        "-np",
        "16",
        "--map-by",
        "ppr:8:node",
        "--tag-output",
        "--mca",
        "plm_rsh_agent",
        "ssh -F /s/ssh_config -o BatchMode=yes",
        "--mca",
        "plm_rsh_no_tree_spawn",
        "1",
        "-x",
        "NCCL_DEBUG=INFO",
        "-x",
        "NCCL_DEBUG_SUBSYS=INIT,NET",
        "--mca",
        "btl_tcp_if_include",
        "eth0",
        "all_reduce_perf",
        *ARGS,
    ]
    plain = MpirunLauncher(LauncherConfig(command="/opt/ompi/bin/mpirun"))
    argv = plain.argv(request(), Path("h"), Path("c"), as_root=False)
    assert argv[0] == "/opt/ompi/bin/mpirun" and "--allow-run-as-root" not in argv
    assert MpirunLauncher.hostfile_text(request()) == "gpu01 slots=8\ngpu02 slots=8\n"


def test_ssh_config_reaches_each_host_as_the_inventory_says() -> None:
    hosts = [
        host("gpu01", "10.0.0.1", "-o", "UserKnownHostsFile=/lab/known_hosts", "-oStrictHostKeyChecking=yes"),
        host("gpu02", "10.0.0.2", "-o", "ProxyCommand=ssh -W %h:%p bastion", "-J", "jump"),
    ]
    text = mpirun.ssh_config_text(hosts)
    assert (
        "Host gpu01\n    HostName 10.0.0.1\n    Port 2222\n    User root\n    IdentityFile /keys/id_ed25519\n"
        in text
    )
    assert "    UserKnownHostsFile /lab/known_hosts\n    StrictHostKeyChecking yes\n" in text
    assert "    ProxyCommand ssh -W %h:%p bastion\n    ProxyJump jump\n" in text
    assert text.endswith("Host *\n    BatchMode yes\n")
    with pytest.raises(LaunchError, match="host gpu03: ssh option '-v'"):
        mpirun.ssh_config_text([host("gpu03", "10.0.0.3", "-v")])


def test_srun_argv_and_environment() -> None:
    launcher = SrunLauncher(LauncherConfig(kind="srun", extra_args=("--partition=gpu",)))
    assert launcher.argv(request(timeout_s=90.0)) == [
        "srun",
        "--nodes=2",
        "--ntasks=16",
        "--ntasks-per-node=8",
        "--nodelist=gpu01,gpu02",
        "--label",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--time=2",
        "--partition=gpu",
        "all_reduce_perf",
        *ARGS,
    ]
    env = launcher.environment(request(), {"PATH": "/usr/bin", "NCCL_DEBUG": "WARN"})
    assert env == {"PATH": "/usr/bin", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    assert isinstance(launcher_for(LauncherConfig(kind="srun")), SrunLauncher)


def test_tagged_output_is_split_per_rank_and_cut_lines_are_joined() -> None:
    text = (
        "[1,0]<stdout>:#  Rank  0 on gpu01\n"
        "[1,0]<stdout>:# Avg bus bandwidth    [1,9]<stdout>:gpu02:30:44 [1] NCCL INFO Using network IB\n"
        "[1,9]<stdout>:gpu02:30:44 [1] NCCL INFO Connected all rings\n"
        "[1,0]<stdout>:: 167.717\n"
        "[gpu01:00036] plm:rsh: a launcher line\n"
    )
    ranks, merged = split_tagged(text, mpirun.TAG, mpirun.INNER_TAG)
    assert ranks == {
        0: ("#  Rank  0 on gpu01", "# Avg bus bandwidth    : 167.717"),
        9: ("gpu02:30:44 [1] NCCL INFO Using network IB", "gpu02:30:44 [1] NCCL INFO Connected all rings"),
    }
    assert merged.splitlines()[-1] == "[gpu01:00036] plm:rsh: a launcher line"
    labelled, _ = split_tagged(" 0: first\n10: tenth\n 0:  indented row\n", srun.TAG)
    assert labelled == {0: ("first", " indented row"), 10: ("tenth",)}


def entry(name: str, launcher: object = None) -> HostEntry:
    variables = {"ansible_host": f"{name}.lab"} | (
        {"fabric_launcher": launcher} if launcher is not None else {}
    )
    return HostEntry(name, ("gpu_hosts",), FabricIntent(), variables)


def test_fabric_launcher_is_validated_once_for_all_hosts() -> None:
    assert launcher_config([entry("a"), entry("b")]) == LauncherConfig()
    assert launcher_config([entry("a", {"kind": "srun"}), entry("b", {"kind": "srun"})]).binary == "srun"
    with pytest.raises(LaunchError, match=r"fabric_launcher\.kind: Input should be 'mpirun' or 'srun'"):
        launcher_config([entry("a", {"kind": "pdsh"})])
    with pytest.raises(LaunchError, match=r"fabric_launcher\.hostfile: Extra inputs"):
        launcher_config([entry("a", {"hostfile": "/x"})])
    with pytest.raises(LaunchError, match="only mpirun uses an ssh config"):
        launcher_config([entry("a", {"kind": "srun", "ssh_config": "/x"})])
    with pytest.raises(LaunchError, match=r"differs between a \(mpirun\) and b \(srun\)"):
        launcher_config([entry("a"), entry("b", {"kind": "srun"})])
    assert [h.ssh.address for h in launch_hosts([entry("a"), entry("b")])] == ["a.lab", "b.lab"]
    with pytest.raises(LaunchError, match="host c: ansible_host"):
        launch_hosts([HostEntry("c", (), FabricIntent(), {"ansible_host": "two words"})])


def test_a_bad_request_is_refused() -> None:
    with pytest.raises(LaunchError, match="at least one host"):
        request(hosts=())
    with pytest.raises(LaunchError, match="not environment variable names"):
        request(env={"BAD NAME": "1"})


def test_timeout_stops_the_launcher_and_a_missing_binary_is_named() -> None:
    done = run_process(["sleep", "30"], {"PATH": "/usr/bin:/bin"}, timeout_s=0.3)
    assert done.rc is None and done.seconds < 30
    with pytest.raises(LaunchError, match="cannot start /nonexistent/mpirun"):
        run_process(["/nonexistent/mpirun"], {}, timeout_s=5)


@pytest.mark.skipif(
    shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed (scripts/setup)"
)
def test_real_mpirun_runs_ranks_with_their_env_on_the_local_host() -> None:
    local = (LaunchHost("localhost", SshTarget("localhost", "localhost")),)
    script = (
        'echo "rank=$OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE local=$OMPI_COMM_WORLD_LOCAL_RANK $PROBE"'
    )
    job = LaunchRequest("sh", ("-c", script), local, ranks_per_host=2, env={"PROBE": "a,b"}, timeout_s=60)
    result = MpirunLauncher(LauncherConfig()).run(job)
    assert result.rc == 0, result.stderr
    assert result.ranks == {0: ("rank=0 of 2 local=0 a,b",), 1: ("rank=1 of 2 local=1 a,b",)}
