"""--via slurm, the pure parts: node names from the inventory, sinfo's node states into Slurm's reason
for a node the step cannot run on, the one srun step's argv, and srun's labelled stdout demultiplexed
into one bundle per node as each completes (the lab test runs the real srun: tests/lab/test_via_slurm_lab)."""

from __future__ import annotations

import argparse
import subprocess
from types import SimpleNamespace

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect.backends import slurm
from fabcheck.collect.script import split_sections
from fabcheck.collect.ssh import TimeLimits
from fabcheck.errors import UsageError
from fabcheck.gate import sources

TOKEN = "0123456789abcdef"


def entry(name: str, **variables: object) -> SimpleNamespace:
    """An inventory host as the Slurm backend reads it: its name and variables, no intent (the priority
    comes from the gate's plan)."""
    return SimpleNamespace(name=name, variables=variables)


# The plan of a run with no node (choose_source refuses the flags before it reads any).
NO_NODE = SimpleNamespace(hosts=(), switches=(), host_priorities=dict)


def test_the_node_name_is_the_inventory_var_else_the_host_name() -> None:
    assert slurm.node_name(entry("gpu01")) == "gpu01"  # type: ignore[arg-type]
    assert slurm.node_name(entry("gpu01", slurm_node_name="nid0001")) == "nid0001"  # type: ignore[arg-type]
    for bad in ("nid[01-02]", "a,b", "", "x y", 7):
        with pytest.raises(UsageError, match=r"host gpu01: slurm_node_name .* is not a Slurm node name"):
            slurm.node_name(entry("gpu01", slurm_node_name=bad))  # type: ignore[arg-type]


SINFO = """\
gpu01|idle|batch*|none
gpu01|idle|debug|none
gpu02|drained|batch*|bad DIMM
gpu03|down*|batch*|Not responding
gpu04|mixed|debug|none
gpu05|allocated|batch*|none
"""


def test_sinfo_lines_become_node_states_with_partitions_and_the_default() -> None:
    nodes = slurm.parse_sinfo(SINFO)
    assert nodes["gpu01"] == slurm.NodeState("idle", "", ("batch", "debug"), "batch")
    assert nodes["gpu02"].reason == "bad DIMM" and slurm.default_partition_of(nodes) == "batch"


@pytest.mark.parametrize(
    ("node", "partition", "why"),
    [
        ("gpu01", None, None),
        ("gpu01", "debug", None),
        ("gpu05", None, None),  # busy: srun --immediate says so if it cannot start now
        ("gpu02", None, "Slurm cannot run on node gpu02: state drained, reason: bad DIMM (sinfo)"),
        ("gpu03", None, "Slurm cannot run on node gpu03: state down*, reason: Not responding (sinfo)"),
        ("gpu04", None, "node gpu04 is not in the default partition batch (it is in debug)"),
        ("gpu05", "debug", "node gpu05 is not in the partition debug (it is in batch)"),
        ("gpu09", None, "Slurm does not know node gpu09 (not in sinfo; set slurm_node_name"),
    ],
)
def test_why_slurm_cannot_run_on_a_node(node: str, partition: str | None, why: str | None) -> None:
    nodes = slurm.parse_sinfo(SINFO)
    said = slurm.why_not_runnable(node, nodes.get(node), partition, "batch", None, None)
    assert said == why if why is None else (said or "").startswith(why), said


def test_inside_an_allocation_only_its_nodes_can_run() -> None:
    nodes = slurm.parse_sinfo(SINFO)
    inside = frozenset({"gpu04"})
    assert slurm.why_not_runnable("gpu04", nodes["gpu04"], None, "batch", inside, "42") is None
    said = slurm.why_not_runnable("gpu01", nodes["gpu01"], None, "batch", inside, "42")
    assert said == "node gpu01 is not in the allocation of job 42 (SLURM_JOB_NODELIST)"


def test_the_step_is_one_srun_with_a_task_per_node_and_the_options_passed_through() -> None:
    limits = TimeLimits(connect_s=5, command_s=100)
    options = slurm.SlurmOptions(partition="batch", account="ops", reservation="maint")
    argv = slurm.step_argv(["gpu01", "gpu02"], {"gpu01": 3, "gpu02": 4}, TOKEN, limits, options, False)
    assert argv[:5] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--nodelist=gpu01,gpu02"]
    assert {"--partition=batch", "--account=ops", "--reservation=maint", "--immediate=5"} <= set(argv)
    assert {"--time=2", "--label", "--export=NONE", "--no-kill", "--kill-on-bad-exit=0"} <= set(argv)
    program = argv[argv.index("/bin/sh") :]
    # No records to judge with: each node's entry names none (-) and the nodes send raw output.
    assert program[3:10] == ["fabcheck-slurm", TOKEN, "fabcheck", "-", "*", "gpu01=3=-=", "gpu02=4=-="]
    inside = slurm.step_argv(["gpu01"], {"gpu01": 3}, TOKEN, limits, slurm.SlurmOptions(), True)
    assert "--overlap" in inside and not any(w.startswith(("--partition", "--immediate")) for w in inside)


def test_the_wrapper_picks_its_nodes_priority_and_runs_the_collection_as_ssh_would() -> None:
    """The step's program, run here as one task of node gpu02 (the script's output is the same
    as the native remote command's, at gpu02's priority)."""
    limits = TimeLimits(connect_s=5, command_s=60)
    argv = slurm.step_argv(
        ["gpu01", "gpu02"], {"gpu01": 3, "gpu02": 5}, TOKEN, limits, slurm.SlurmOptions(), False
    )
    program = argv[argv.index("/bin/sh") :]
    env = {"SLURMD_NODENAME": "gpu02"}  # and no PATH: --export=NONE gives the task none
    done = subprocess.run(program, capture_output=True, text=True, env=env, timeout=120, check=False)
    first, _, rest = done.stdout.partition("\n")
    assert first == f"<<<fabcheck-slurm {TOKEN} node gpu02>>>"
    direct = subprocess.run(
        ["sh", "-c", collect.remote_command(TOKEN, 5, limits)], capture_output=True, text=True, timeout=120
    )
    ours, theirs = split_sections(rest, TOKEN), split_sections(direct.stdout, TOKEN)
    assert ours.complete and {k: v.rc for k, v in ours.sections.items()} == {
        k: v.rc for k, v in theirs.sections.items()
    }
    lost = subprocess.run(
        program, capture_output=True, text=True, env={"SLURMD_NODENAME": "gpu09"}, check=False
    )
    assert lost.returncode == 2 and "node gpu09 has no priority in the step" in lost.stderr


def bundle(task: int, node: str, body: list[str]) -> list[str]:
    lines = [f"<<<fabcheck-slurm {TOKEN} node {node}>>>", *body, f"<<<fabcheck {TOKEN} complete>>>"]
    return [f"{task:>2}: {line}\n" for line in lines]


def test_labelled_stdout_becomes_one_bundle_per_node_as_each_completes() -> None:
    one = bundle(0, "gpu01", [f"<<<fabcheck {TOKEN} begin lsmod>>>", "mlx5_core 1", ""])
    two = bundle(10, "gpu02", [f"<<<fabcheck {TOKEN} begin lsmod>>>", "  indented"])
    output = slurm.StepOutput(TOKEN)
    done = []
    # Interleaved as srun forwards them; gpu02 completes first.
    for line in [one[0], two[0], one[1], *two[1:], one[2], "srun: a line of srun's own\n", *one[3:]]:
        finished = output.feed(line)
        if finished is not None:
            done.append(finished)
    assert [node for node, _ in done] == ["gpu02", "gpu01"]
    gpu02 = dict(done)["gpu02"]
    assert gpu02 == f"<<<fabcheck {TOKEN} begin lsmod>>>\n  indented\n<<<fabcheck {TOKEN} complete>>>\n"
    assert dict(done)["gpu01"].splitlines()[1:3] == ["mlx5_core 1", ""]
    assert output.unfinished() == {} and output.lines == {}  # nothing held once a node completed


def test_a_node_that_never_completed_is_kept_as_far_as_it_got() -> None:
    output = slurm.StepOutput(TOKEN)
    for line in bundle(1, "gpu02", ["<<<fabcheck x begin lsmod>>>", "half"])[:-1]:
        assert output.feed(line) is None
    assert output.unfinished() == {"gpu02": "<<<fabcheck x begin lsmod>>>\nhalf\n"}


def test_srun_stderr_is_split_by_task_and_the_node_named_is_found() -> None:
    tasks, step = slurm.stderr_of_tasks(
        ["1: mlnx_qos: oops\n", "srun: error: gpu02: task 1: Exited with exit code 2\n", "srun: other\n"]
    )
    assert list(tasks[1]) == ["mlnx_qos: oops"]
    assert slurm.srun_said_about("gpu02", step) == "srun: error: gpu02: task 1: Exited with exit code 2"
    assert (
        slurm.srun_said_about("gpu0", step)
        == "srun: error: gpu02: task 1: Exited with exit code 2; srun: other"
    )


def namespace(**given: object) -> argparse.Namespace:
    defaults = dict(
        from_snapshot=None, backend="native", hosts=None, via="ssh", save_snapshot=None,
        partition=None, account=None, reservation=None, deadline=None,
    )  # fmt: skip
    return argparse.Namespace(**{**defaults, **given})


def test_the_allocation_options_need_via_slurm_and_no_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = SimpleNamespace(source="inv")
    with pytest.raises(UsageError, match="--partition allocate a Slurm step: only with --via slurm"):
        sources.choose_source(namespace(partition="batch"), inventory, NO_NODE, TimeLimits())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--via slurm reaches hosts itself"):
        sources.choose_source(namespace(via="slurm", backend="paramiko"), inventory, NO_NODE, TimeLimits())  # type: ignore[arg-type]
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    with pytest.raises(UsageError, match=r"inside allocation 42 .* leave out --account"):
        sources.choose_source(namespace(via="slurm", account="ops"), inventory, NO_NODE, TimeLimits())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--reservation 'a b': expected a Slurm name"):
        slurm.SlurmOptions(reservation="a b")


def test_a_missing_srun_or_sinfo_is_an_error_for_every_host_never_a_hang() -> None:
    hosts = [entry("gpu01"), entry("gpu02")]
    options = slurm.SlurmOptions(sinfo="/nonexistent/sinfo")
    step = slurm.SlurmStep(hosts, {"gpu01": 3, "gpu02": 3}, TimeLimits(), options, environ={})  # type: ignore[arg-type]
    for name in ("gpu01", "gpu02"):
        got = step(SimpleNamespace(name=name), 3, TimeLimits())  # type: ignore[arg-type]
        assert not got.complete and got.sections == {}
        assert got.error == (
            "--via slurm: Slurm did not say which nodes can run the step: cannot run /nonexistent/sinfo: "
            "No such file or directory"
        )
