"""The sm stage end to end without a lab: its static script runs under sh with stand-in sminfo/systemctl
and files on tmp paths, its sections become evidence, and the stage judges the planned SM nodes."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from fabcheck.checks.host import Unreadable
from fabcheck.checks.model import Status
from fabcheck.checks.sm import NoAnswer
from fabcheck.collect.script import split_sections
from fabcheck.collect.sm import SmCollection, remote_command
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.sm import DesiredSubnetManager, desired_subnet_manager
from fabcheck.gate import fabric
from fabcheck.gate.fabric import gate_report as gate_run
from fabcheck.gate.sm_stage import STAGE, SmStage, evidence_of, service_of
from fabcheck.gate.stages import StageContext, default_stage_names
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck.report.model import NodeKind

FABRIC_YML = """
fabric_intent:
  kind: ib
  roce_tos: 104
  subnet_manager:
    routing_engine: ftree
    sm_priorities: {sm01: 15, sm02: 14}
"""
HOSTS_YML = """
all:
  children:
    subnet_managers:
      hosts:
        sm01: {ansible_host: 127.0.0.1, ansible_port: 1}
        sm02: {ansible_host: 127.0.0.1, ansible_port: 1, opensm_service: opensmd}
"""
GUIDS = {"sm01": "0x0000000000000011", "sm02": "0x0000000000000022"}
LIDS = {"sm01": "0x11", "sm02": "0x19"}
LIMITS = TimeLimits(connect_s=5, command_s=20)


def sm_inventory(root: Path) -> Inventory:
    """Two SM nodes, sm02 with opensm_service opensmd, both on 127.0.0.1:1 (nothing listens there)."""
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "group_vars" / "all" / "fabric.yml").write_text(FABRIC_YML)
    (root / "hosts.yml").write_text(HOSTS_YML)
    return load_inventory(root)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    return sm_inventory(tmp_path_factory.mktemp("inventory"))


def sm_node(root: Path, name: str, desired: DesiredSubnetManager, *, running: bool = True) -> Path:
    """A node's files and stand-in tools under root/name; sm01 is master when it runs."""
    node = root / name
    (node / "bin").mkdir(parents=True)
    (node / "ib" / "mlx5_0" / "ports" / "1").mkdir(parents=True)
    (node / "ib" / "mlx5_0" / "ports" / "1" / "lid").write_text(LIDS[name] + "\n")
    (node / "opensm.conf").write_text("".join(f"{k} {v}\n" for k, v in desired.conf_pairs))
    (node / "partitions.conf").write_text("\n".join(desired.partition_lines) + "\n")
    state = {"sm01": "3 SMINFO_MASTER", "sm02": "2 SMINFO_STANDBY"}[name] if running else ""
    master = "sm01" if running else "sm02"
    master_line = (
        f"sminfo: sm lid 17 sm guid {GUIDS[master]}, activity count 9 priority 15 state 3 SMINFO_MASTER"
    )
    own = (
        f"sminfo: sm lid {int(LIDS[name], 16)} sm guid {GUIDS[name]}, activity count 9 "
        f"priority {desired.sm_priority} state {state}"
    )
    answer_own = f'echo "{own}"' if running else 'echo "sminfo: iberror: failed: query" >&2; exit 255'
    tools = {
        "sminfo": f"""
            if [ $# -eq 0 ]; then echo "{master_line}"; exit 0; fi
            [ "$1" = "{LIDS[name]}" ] || {{ echo "sminfo: iberror: failed: query" >&2; exit 255; }}
            {answer_own}
            """,
        "systemctl": f"""
            case $1 in
            is-enabled) echo enabled;;
            is-active) if [ {int(running)} = 1 ]; then echo active; else echo inactive; exit 3; fi;;
            esac
            """,
    }
    for tool, body in tools.items():
        path = node / "bin" / tool
        path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
        path.chmod(0o755)
    return node


def local_desired(desired: DesiredSubnetManager, node: Path) -> DesiredSubnetManager:
    return dataclasses.replace(
        desired,
        opensm_conf_path=str(node / "opensm.conf"),
        partitions_conf_path=str(node / "partitions.conf"),
    )


def run_locally(node: Path, desired: DesiredSubnetManager, service: str) -> SmCollection:
    """What collect_sm does over ssh, run here under sh with the node's tools first on PATH."""
    token = "00ff00ff00ff00ff"
    command = remote_command(token, local_desired(desired, node), service, LIMITS, str(node / "ib"))
    env = {"PATH": f"{node / 'bin'}:{os.environ['PATH']}", "LANG": "C.UTF-8"}
    done = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    parsed = split_sections(done.stdout, token)
    return SmCollection(node.name, parsed.sections, parsed.complete)


def test_the_script_reads_both_sminfos_the_files_and_the_unit(inventory: Inventory, tmp_path: Path) -> None:
    wanted = desired_subnet_manager(inventory.intent, "sm01")
    node = sm_node(tmp_path, "sm01", wanted)
    collection = run_locally(node, wanted, "opensm")
    assert collection.complete
    assert set(collection.sections) == {
        "sminfo",
        "sminfo_own",
        "opensm_conf",
        "partitions_conf",
        "is_enabled",
        "is_active",
    }
    shown = evidence_of(collection, local_desired(wanted, node), "opensm")
    assert shown.own.priority == 15 and shown.own.is_master  # type: ignore[union-attr]
    assert shown.master.guid == 0x11  # type: ignore[union-attr]
    assert (shown.enabled, shown.active) == ("enabled", "active")
    assert not isinstance(shown.conf, Unreadable) and shown.conf.values["routing_engine"] == "ftree"


def test_a_stopped_sm_reads_as_no_answer_and_inactive(inventory: Inventory, tmp_path: Path) -> None:
    wanted = desired_subnet_manager(inventory.intent, "sm01")
    node = sm_node(tmp_path, "sm01", wanted, running=False)
    (node / "partitions.conf").unlink()
    shown = evidence_of(run_locally(node, wanted, "opensm"), wanted, "opensm")
    assert isinstance(shown.own, NoAnswer) and "iberror" in shown.own.said
    assert shown.active == "inactive" and shown.partitions is None


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("unit", "opensm; reboot", "bad unit"),
        ("ibdir", "relative/dir", "bad path"),
        ("token", "XYZ", "bad token"),
    ],
)
def test_the_script_refuses_arguments_it_cannot_use_safely(
    inventory: Inventory, tmp_path: Path, field: str, value: str, said: str
) -> None:
    wanted = desired_subnet_manager(inventory.intent, "sm01")
    args = {"token": "00ff", "unit": "opensm", "ibdir": str(tmp_path)} | {field: value}
    command = remote_command(args["token"], wanted, args["unit"], LIMITS, args["ibdir"])
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and said in done.stderr


def test_the_unit_name_comes_from_the_role_variable(inventory: Inventory) -> None:
    assert service_of(inventory.host("sm01")) == "opensm"
    assert service_of(inventory.host("sm02")) == "opensmd"
    bad = dataclasses.replace(inventory.host("sm02"), variables={"opensm_service": "-x"})
    with pytest.raises(ValueError, match="opensm_service"):
        service_of(bad)


def test_the_stage_judges_every_planned_sm_node(inventory: Inventory, tmp_path: Path) -> None:
    nodes = {
        name: sm_node(tmp_path, name, desired_subnet_manager(inventory.intent, name), running=name != "sm01")
        for name in ("sm01", "sm02")
    }

    def collector(
        target: SshTarget, desired: DesiredSubnetManager, service: str, limits: TimeLimits
    ) -> SmCollection:
        return run_locally(nodes[target.name], local_desired(desired, nodes[target.name]), service)

    stage = SmStage(collector=collector)
    plan = fabric.plan_gate(inventory, stages=["sm"])
    assert plan.stages == ("sm",) and not plan.not_checked
    assert [e.name for e in plan.chosen if STAGE.claims(e, plan.fabric)] == ["sm01", "sm02"]
    outcome = stage.run(StageContext(inventory, plan, LIMITS, 4, None))
    verdicts = {
        node.node: {f.check for f in node.findings if f.status != Status.PASS} for node in outcome.nodes
    }
    assert verdicts == {"sm01": {"sm.service", "sm.state", "sm.master"}, "sm02": set()}
    assert {node.kind for node in outcome.nodes} == {NodeKind.SM}


def test_the_stage_is_in_the_default_run_and_reports_its_nodes(inventory: Inventory) -> None:
    assert "sm" in default_stage_names()
    plan = fabric.plan_gate(inventory)
    run = gate_run(fabric.run_gate(inventory, plan, TimeLimits(connect_s=1, command_s=1)))
    assert {s.name for s in run.subjects} == {"sm01", "sm02"}
    assert all(s.kind == NodeKind.SM for s in run.subjects)
