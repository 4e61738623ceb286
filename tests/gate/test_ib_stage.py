"""The ib stage without a lab: the reader's one round trip runs the real script (fabcheck.collect.ib)
through a fake `ssh` that runs it here, with stand-in infiniband-diags printing what the lab's fabric
model renders (fabcheck_lab.ib_fabric: rdma-core format strings); the stage parses, judges and places
the findings. One round trip to one node whatever the fabric's size, counted; the unreachable reader;
the snapshot replay; the bench's figures at a small size."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from fabcheck.checks.model import Status
from fabcheck.cli import main
from fabcheck.collect.ib import IbCollection
from fabcheck.collect.sm import SM_SECTIONS
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.desired.sm import desired_subnet_manager
from fabcheck.gate.ib_stage import STAGE, IbStage, evidence_of
from fabcheck.gate.plan import GateDesired, GatePlan
from fabcheck.gate.sm_stage import STAGE as SM_STAGE
from fabcheck.gate.sm_stage import SmResult
from fabcheck.gate.snapshot import Recording, replay
from fabcheck.gate.stages import StageContext, StageOutcome, default_stage_names, stage_names
from fabcheck.intent.fabric import SUBNET_MANAGERS, Fabric
from fabcheck.intent.ib_fabric import IB_SWITCHES, IbCable, IbEnd, IbPlan, IbSwitchNode
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.intent.model import FabricIntent
from fabcheck.report.model import NodeKind
from fabcheck_lab import ib_fabric as model
from tests.lab.ibmock import inventory_of

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ib_stage.py"
spec = importlib.util.spec_from_file_location("ib_stage_bench", BENCH)
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
sys.modules["ib_stage_bench"] = bench
spec.loader.exec_module(bench)

READER = "gpu01"
WINDOW_S = 2
LIMITS = TimeLimits(connect_s=5, command_s=60)


def small_fabric() -> model.Fabric:
    """4 hosts x 2 HCAs over 2 leaves and 2 spines (8 host cables, 8 uplinks)."""
    return model.two_tier(model.modelled_hcas(4, 2), 2, 2)


def context_of(fabric: model.Fabric, desired: DesiredIbFabric, window_s: int = WINDOW_S) -> StageContext:
    """The plan the inventory of this fabric gives: its IB switches in ib_switches, its hosts in
    gpu_hosts (the reader among them), every planned cable."""
    intent = FabricIntent(kind="ib")
    tier_group = {"leaf": "ib_leaves", "spine": "ib_spines", "core": "ib_cores"}
    entries = [HostEntry(s.name, (IB_SWITCHES, tier_group[s.tier]), intent, {}) for s in fabric.switches]
    hosts = sorted({hca.host for hca in fabric.hcas})
    entries += [HostEntry(h, ("gpu_hosts",), intent, {"ansible_host": h}) for h in hosts]
    switches = tuple(IbSwitchNode(s.name, s.tier, s.description, s.port_count) for s in fabric.switches)
    cables = tuple(
        IbCable(
            IbEnd(link.a.node, link.a.port, link.a.nic),
            IbEnd(link.b.node, link.b.port, link.b.nic),
        )
        for link in desired.links
    )
    plan_fabric = Fabric((), (), IbPlan(switches, cables))
    plan = GatePlan(
        hosts=(),
        switches=(),
        fabric=plan_fabric,
        cabled=frozenset(),
        not_checked=(),
        stages=("ib",),
        chosen=tuple(entries),
        desired=GateDesired(ib_fabric=dataclasses.replace(desired, counter_window_s=window_s)),
        whole=plan_fabric,
        counter_window_s=window_s,
    )
    inventory = Inventory("inline", intent, tuple(entries))
    return StageContext(inventory, plan, LIMITS, 4, None)


def serve(root: Path, fabric: model.Fabric) -> None:
    """Stand-in tools in root/tools printing the fabric as the lab renders it; the first ibqueryerrors
    shows the counters at t=1, every later one at t=1+WINDOW_S."""
    tools = root / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    before, before_rc = model.render_ibqueryerrors(fabric, 1.0)
    after, after_rc = model.render_ibqueryerrors(fabric, 1.0 + WINDOW_S)
    outputs = {
        "ibnetdiscover.txt": model.render_ibnetdiscover_ports(fabric),
        "saquery.txt": model.render_saquery_nodes(fabric),
        "before.txt": before,
        "after.txt": after,
    }
    for switch in fabric.switches:
        outputs[f"vendstat.{switch.lid}.txt"] = model.render_vendstat_general(switch)
    for name, text in outputs.items():
        (tools / name).write_text(text)
    bodies = {
        "ibnetdiscover": f"cat {tools}/ibnetdiscover.txt",
        "saquery": f"cat {tools}/saquery.txt",
        "ibqueryerrors": (
            f"if [ -e {tools}/swept ]; then cat {tools}/after.txt; exit {after_rc}; fi\n"
            f"touch {tools}/swept; cat {tools}/before.txt; exit {before_rc}"
        ),
        "vendstat": f'for lid; do :; done\ncat {tools}/vendstat."$lid".txt || exit 1',
    }
    for tool, body in bodies.items():
        path = tools / tool
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    (tools / "swept").unlink(missing_ok=True)


@pytest.fixture
def ssh_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `ssh` first on PATH that counts round trips (one line each, with the address) and runs the
    remote command here with the stand-in tools; the address `nowhere.invalid` does not answer."""
    ssh = tmp_path / "ssh" / "ssh"
    ssh.parent.mkdir()
    ssh.write_text(
        "#!/bin/sh\n"
        '[ "$1" != -G ] || exit 255\n'  # ssh's option probe (fast_kex_known): no round trip
        "for remote; do :; done\n"
        "for word; do case $word in gpu*|sm0*|nowhere.invalid) address=$word; break;; esac; done\n"
        f'echo "$address" >> {tmp_path / "round_trips.log"}\n'
        'if [ "$address" = nowhere.invalid ]; then\n'
        '    echo "ssh: connect to host nowhere.invalid port 22: Connection refused" >&2; exit 255\n'
        "fi\n"
        f'PATH={tmp_path / "tools"}:$PATH exec sh -c "$remote"\n'
    )
    ssh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{ssh.parent}:{os.environ['PATH']}")
    return tmp_path


def round_trips(root: Path) -> list[str]:
    log = root / "round_trips.log"
    return log.read_text().split() if log.exists() else []


def verdicts(outcome: StageOutcome) -> dict[str, set[str]]:
    return {
        node.node: {f"{f.check} {f.status.value}" for f in node.findings if f.status is not Status.PASS}
        for node in outcome.nodes
    }


def test_ib_runs_by_default_after_sm() -> None:
    assert "ib" in default_stage_names()
    names = stage_names()
    assert names.index("ib") == names.index("sm") + 1


def test_a_healthy_fabric_passes_every_check_in_one_round_trip(ssh_here: Path) -> None:
    fabric = small_fabric()
    serve(ssh_here, fabric)
    context = context_of(fabric, bench.planned(fabric, READER))
    switches = ("leaf01", "leaf02", "spine01", "spine02")
    hosts = ("gpu01", "gpu02", "gpu03", "gpu04")  # each HCA's ib.guids at its host: claimed too
    claimed = {e.name for e in context.plan.chosen if STAGE.claims(e, context.plan.fabric)}
    assert claimed == {*switches, *hosts}
    outcome = STAGE.run(context)
    assert round_trips(ssh_here) == [READER]
    kinds = {node.node: node.kind for node in outcome.nodes}
    assert kinds == dict.fromkeys(switches, NodeKind.IB_SWITCH) | dict.fromkeys(hosts, NodeKind.HOST)
    assert not any(verdicts(outcome).values())
    checks = {f.check for node in outcome.nodes for f in node.findings}
    assert checks == {"ib.topology", "ib.link", "ib.errors", "ib.guids", "ib.firmware", "ib.as_planned"}
    # every planned cable judged at its switch, both ends named
    topology = [f for node in outcome.nodes for f in node.findings if f.check == "ib.topology"]
    assert len(topology) == len(fabric.cables)
    # and the run's one summary, at the first spine (the top tier)
    [summary] = [(n.node, f) for n in outcome.nodes for f in n.findings if f.check == "ib.as_planned"]
    assert summary[0] == "spine01" and summary[1].status is Status.PASS
    cables = len(fabric.cables)
    assert summary[1].actual == (
        f"{cables} of {cables} planned cables as planned: 0 missing, 0 miswired, 0 extra"
    )


@pytest.mark.parametrize(
    ("fault", "where", "check"),
    [
        ("ib-link-width", "leaf01", "ib.link"),
        ("ib-link-missing", "leaf01", "ib.topology"),
        ("ib-symbol-errors", "leaf01", "ib.errors"),
    ],
)
def test_a_fault_fails_its_check_at_its_switch(ssh_here: Path, fault: str, where: str, check: str) -> None:
    healthy = small_fabric()
    serve(ssh_here, model.with_fault(healthy, fault, where, 0.0))
    outcome = STAGE.run(context_of(healthy, bench.planned(healthy, READER)))
    assert round_trips(ssh_here) == [READER]
    failing = {
        node: {v for v in found if not v.endswith(" skip")} for node, found in verdicts(outcome).items()
    }
    failing = {node: found for node, found in failing.items() if found}
    # A cable that is not there is not as planned: the run's summary at the top tier fails too.
    summary = {"spine01": {"ib.as_planned fail"}} if check == "ib.topology" else {}
    assert failing == {where: {f"{check} fail"}} | summary


def test_a_bigger_fabric_costs_the_same_one_round_trip(ssh_here: Path) -> None:
    fabric = model.fat_tree(model.modelled_hcas(64, 8))  # 512 host cables, 3 tiers
    serve(ssh_here, fabric)
    outcome = STAGE.run(context_of(fabric, bench.planned(fabric, fabric.hcas[0].host)))
    assert round_trips(ssh_here) == [fabric.hcas[0].host]
    judged = [node.node for node in outcome.nodes if node.kind is NodeKind.IB_SWITCH]
    assert len(judged) == len(fabric.switches) == 64  # 16 leaves, 32 spines, 16 cores
    assert not any(found for found in verdicts(outcome).values())


def test_an_unreachable_reader_is_an_error_on_every_ib_switch_naming_it(ssh_here: Path) -> None:
    fabric = small_fabric()
    context = context_of(fabric, bench.planned(fabric, READER))
    entries = tuple(
        dataclasses.replace(e, variables={"ansible_host": "nowhere.invalid"}) if e.name == READER else e
        for e in context.inventory.hosts
    )
    context = dataclasses.replace(context, inventory=dataclasses.replace(context.inventory, hosts=entries))
    outcome = STAGE.run(context)
    assert round_trips(ssh_here) == ["nowhere.invalid"]
    assert len(outcome.nodes) == 4
    for node in outcome.nodes:
        assert node.findings and all(f.status is Status.ERROR for f in node.findings)
        assert all(READER in f.expected and "Connection refused" in f.actual for f in node.findings)


def test_the_read_is_saved_and_replayed_to_the_same_findings(ssh_here: Path, tmp_path: Path) -> None:
    fabric = small_fabric()
    serve(ssh_here, model.with_fault(fabric, "ib-link-speed", "leaf02", 0.0))
    context = context_of(fabric, bench.planned(fabric, READER))
    recording = Recording()
    live = STAGE.run(dataclasses.replace(context, tape=recording))
    recording.save(tmp_path / "snapshot")
    assert (tmp_path / "snapshot" / "ib" / f"{READER}.json").exists()
    replayed = STAGE.run(dataclasses.replace(context, tape=replay(tmp_path / "snapshot")))
    assert round_trips(ssh_here) == [READER]  # the replay connects to nothing
    assert [n.findings for n in replayed.nodes] == [n.findings for n in live.nodes]
    assert "ib.link fail" in verdicts(live)["leaf02"]


def test_without_a_window_the_errors_are_a_named_skip(ssh_here: Path) -> None:
    fabric = small_fabric()
    serve(ssh_here, fabric)
    outcome = STAGE.run(context_of(fabric, bench.planned(fabric, READER), window_s=0))
    errors = [f for node in outcome.nodes for f in node.findings if f.check == "ib.errors"]
    assert errors and all(f.status is Status.SKIP and "window 0" in f.actual for f in errors)


def test_a_collector_that_reads_nothing_is_every_switch_s_error() -> None:
    calls: list[str] = []

    def collector(target: SshTarget, desired: DesiredIbFabric, limits: TimeLimits) -> IbCollection:
        calls.append(target.name)
        return IbCollection(target.name, {}, False, "no complete answer within 9 s")

    fabric = small_fabric()
    outcome = IbStage(collector=collector).run(context_of(fabric, bench.planned(fabric, READER)))
    assert calls == [READER]
    assert verdicts(outcome)["spine02"] == {
        f"{check} error" for check in ("ib.topology", "ib.link", "ib.errors", "ib.guids", "ib.firmware")
    }
    assert "ib.as_planned error" in verdicts(outcome)["spine01"]


def test_a_section_cut_short_is_unreadable_naming_its_command() -> None:
    fabric = small_fabric()
    desired = bench.planned(fabric, READER)
    sections = bench.reader_sections(fabric, WINDOW_S)
    sections["saquery"] = dataclasses.replace(sections["saquery"], rc=None)
    shown = evidence_of(
        IbCollection(READER, sections, False, "section saquery printed more than 4 MiB"), desired
    )
    assert shown.unreachable is None
    assert shown.nodes.command == "saquery -C mlx5_0 -P 1"  # type: ignore[union-attr]
    assert "4 MiB" in shown.nodes.reason  # type: ignore[union-attr]
    assert shown.window_s == WINDOW_S and len(shown.firmware) == len(fabric.switches)


def test_the_bench_reports_both_sizes_and_their_ratios() -> None:
    sizes = [bench.measure(4, 1, cli=True), bench.measure(8, 1, cli=False)]
    lines = bench.report(sizes, 1)
    assert "4 hosts" in lines[1] and "8 hosts" in lines[3]
    assert lines[-1].startswith("  8 / 4 hosts: cables x1.1, wall x")  # one pod: 32 spines either way
    assert all(s.result["failed"] == ["ib.errors leaf01/33 ↔ spine01/1"] for s in sizes), sizes
    assert sizes[0].command["exit"] == 1
    assert sizes[0].command["lines"] == 49 + 4  # a JSON line per node: 1 leaf, 32 spines, 16 cores, 4 hosts
    assert "fabcheck validate --stages ib --from-snapshot" in lines[2] and not sizes[1].command


# ---- the whole command: an inventory as a user writes it, `fabcheck validate --stages ib` ----------


def node_of(line: dict[str, Any]) -> str:
    return str(line.get("ib_switch") or line.get("host"))


def validate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code = main(["validate", *argv, "--json"])
    printed = capsys.readouterr()
    assert "not checked" not in printed.err  # every IB switch and every cabled host is the stage's
    return code, [json.loads(line) for line in printed.out.splitlines() if line.startswith("{")]


def test_validate_stages_ib_from_the_inventory_saves_and_replays(
    ssh_here: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fabric = small_fabric()
    inventory = str(inventory_of(fabric, tmp_path / "inventory"))  # no SM node: the reader is gpu01
    serve(ssh_here, model.with_fault(fabric, "ib-link-width", "leaf01", 0.0))
    snapshot = str(tmp_path / "snapshot")
    args = ["-i", inventory, "--stages", "ib", "--counter-window", str(WINDOW_S)]
    html = tmp_path / "gate.html"
    code, live = validate([*args, "--save-snapshot", snapshot, "--html", str(html)], capsys)
    assert round_trips(ssh_here) == [READER]
    assert code == 1
    failed = {(node_of(line), f["check"]) for line in live for f in line["findings"] if f["status"] == "fail"}
    assert failed == {("leaf01", "ib.link")}
    assert {line["ib_switch"] for line in live if "ib_switch" in line} == {
        "leaf01",
        "leaf02",
        "spine01",
        "spine02",
    }
    assert {line["host"] for line in live if "host" in line} == {"gpu01", "gpu02", "gpu03", "gpu04"}
    page = html.read_text()  # the report's IB fabric picture and the cable table, both ends named
    assert "<h2>InfiniBand fabric</h2>" in page and 'class="figure ib-fabric"' in page
    assert "leaf01/33" in page and "spine01/1" in page
    code, replayed = validate(["-i", inventory, "--stages", "ib", "--from-snapshot", snapshot], capsys)
    assert code == 1 and replayed == live
    assert round_trips(ssh_here) == [READER]  # the replay connected to nothing


def test_a_limit_to_one_host_reads_the_fabric_once_and_reports_that_host(ssh_here: Path) -> None:
    fabric = small_fabric()
    serve(ssh_here, model.with_fault(fabric, "ib-link-width", "leaf01", 0.0))
    context = context_of(fabric, bench.planned(fabric, READER))
    only = tuple(e for e in context.plan.chosen if e.name == "gpu02")
    outcome = STAGE.run(dataclasses.replace(context, plan=dataclasses.replace(context.plan, chosen=only)))
    assert round_trips(ssh_here) == [READER]
    assert [(node.node, node.kind) for node in outcome.nodes] == [("gpu02", NodeKind.HOST)]
    assert {f.check for f in outcome.nodes[0].findings} == {"ib.guids"}
    assert outcome.notes == (
        "ib findings on nodes outside --limit are not reported: gpu01, gpu03, gpu04, leaf01, leaf02, "
        "spine01, spine02",
    )


# ---- the reader an SM node: the sm stage's round trip reads the fabric too ------------------------

SM_NODE = "sm01"


def with_sm_node(context: StageContext, root: Path, stages: tuple[str, ...]) -> StageContext:
    """The context with an SM node sm01 (the fabric's reader when the plan says so), its opensm files
    under root and stand-in sminfo/systemctl among the tools; the run's stages `stages`."""
    intent = FabricIntent.model_validate({"kind": "ib", "subnet_manager": {"sm_priorities": {SM_NODE: 15}}})
    entry = HostEntry(SM_NODE, (SUBNET_MANAGERS,), intent, {"ansible_host": SM_NODE})
    (root / "opensm.conf").write_text("sm_priority 15\n")
    wanted = dataclasses.replace(
        desired_subnet_manager(intent, SM_NODE),
        opensm_conf_path=str(root / "opensm.conf"),
        partitions_conf_path=str(root / "partitions.conf"),
    )
    tools = root / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    line = "sminfo: sm lid 1 sm guid 0x11, activity count 9 priority 15 state 3 SMINFO_MASTER"
    for tool, body in {"sminfo": f'echo "{line}"', "systemctl": "echo active"}.items():
        (tools / tool).write_text(f"#!/bin/sh\n{body}\n")
        (tools / tool).chmod(0o755)
    desired = dataclasses.replace(context.plan.desired, subnet_managers={SM_NODE: wanted})
    plan = dataclasses.replace(
        context.plan, chosen=(*context.plan.chosen, entry), desired=desired, stages=stages
    )
    inventory = dataclasses.replace(context.inventory, hosts=(*context.inventory.hosts, entry))
    return dataclasses.replace(context, plan=plan, inventory=inventory)


def run_stages(context: StageContext) -> dict[str, StageOutcome]:
    """The plan's stages in run order, each seeing the earlier ones' outcomes (as run_gate does)."""
    outcomes: dict[str, StageOutcome] = {}
    for stage in (SM_STAGE, STAGE):
        if stage.name in context.plan.stages:
            outcomes[stage.name] = stage.run(dataclasses.replace(context, earlier=dict(outcomes)))
    return outcomes


def test_sm_and_ib_read_the_fabric_in_the_sm_nodes_one_round_trip(ssh_here: Path, tmp_path: Path) -> None:
    fabric = small_fabric()
    serve(ssh_here, model.with_fault(fabric, "ib-link-speed", "leaf02", 0.0))
    base = context_of(fabric, bench.planned(fabric, SM_NODE))
    context = with_sm_node(base, tmp_path, ("sm", "ib"))
    recording = Recording()
    live = run_stages(dataclasses.replace(context, tape=recording))
    assert round_trips(ssh_here) == [SM_NODE]  # one round trip to the reader in the whole run
    [sm] = live["sm"].nodes
    assert isinstance(sm, SmResult) and sm.fabric is not None and sm.fabric.complete
    assert sm.findings and all(f.check.startswith("sm.") for f in sm.findings)  # SM checks only
    # the SM checks see the SM sections only; the fabric's are the ib stage's, judged as its own read
    assert (
        sm.findings
        == SM_STAGE.run(dataclasses.replace(context, plan=dataclasses.replace(context.plan, stages=("sm",))))
        .nodes[0]
        .findings
    )
    assert round_trips(ssh_here) == [SM_NODE, SM_NODE]
    assert set(sm.fabric.sections).isdisjoint(SM_SECTIONS)
    assert "ib.link fail" in verdicts(live["ib"])["leaf02"]
    serve(ssh_here, model.with_fault(fabric, "ib-link-speed", "leaf02", 0.0))  # a fresh first sweep
    alone = STAGE.run(with_sm_node(base, tmp_path, ("ib",)))  # ib alone: its own round trip, as before
    assert round_trips(ssh_here) == [SM_NODE] * 3
    assert [n.findings for n in alone.nodes] == [n.findings for n in live["ib"].nodes]
    # the snapshot: the fabric in the SM node's record, no ib/ file; the replay judges both alike
    recording.save(tmp_path / "snapshot")
    saved = json.loads((tmp_path / "snapshot" / "sm" / f"{SM_NODE}.json").read_text())
    assert (
        set(saved["read"]["sections"]) <= SM_SECTIONS
        and "ibnetdiscover" in saved["read"]["fabric"]["sections"]
    )
    assert not (tmp_path / "snapshot" / "ib").exists()
    replayed = run_stages(dataclasses.replace(context, tape=replay(tmp_path / "snapshot")))
    assert round_trips(ssh_here) == [SM_NODE] * 3  # the replay connects to nothing
    for name in ("sm", "ib"):
        assert [n.findings for n in replayed[name].nodes] == [n.findings for n in live[name].nodes]
    # ib alone from that snapshot: the fabric from the SM node's record, judged the same
    only_ib = dataclasses.replace(context, plan=dataclasses.replace(context.plan, stages=("ib",)))
    ib_replayed = STAGE.run(dataclasses.replace(only_ib, tape=replay(tmp_path / "snapshot")))
    assert [n.findings for n in ib_replayed.nodes] == [n.findings for n in live["ib"].nodes]
    assert round_trips(ssh_here) == [SM_NODE] * 3


def test_ib_alone_or_a_host_reader_keeps_the_ib_stage_s_own_round_trip(
    ssh_here: Path, tmp_path: Path
) -> None:
    fabric = small_fabric()
    serve(ssh_here, fabric)
    context = with_sm_node(context_of(fabric, bench.planned(fabric, READER)), tmp_path, ("sm", "ib"))
    outcomes = run_stages(context)  # the reader gpu01 is no SM node: the sm stage reads sm01 alone
    assert sorted(round_trips(ssh_here)) == [READER, SM_NODE]
    [sm] = outcomes["sm"].nodes
    assert isinstance(sm, SmResult) and sm.fabric is None
    assert not any(verdicts(outcomes["ib"]).values())


def test_an_unreachable_sm_reader_is_the_ib_stage_s_error_without_a_second_try(
    ssh_here: Path, tmp_path: Path
) -> None:
    fabric = small_fabric()
    context = with_sm_node(context_of(fabric, bench.planned(fabric, SM_NODE)), tmp_path, ("sm", "ib"))
    entries = tuple(
        dataclasses.replace(e, variables={"ansible_host": "nowhere.invalid"}) if e.name == SM_NODE else e
        for e in context.plan.chosen
    )
    context = dataclasses.replace(context, plan=dataclasses.replace(context.plan, chosen=entries))
    outcomes = run_stages(context)
    assert round_trips(ssh_here) == ["nowhere.invalid"]
    switches = [n for n in outcomes["ib"].nodes if n.kind is NodeKind.IB_SWITCH]
    assert len(switches) == 4
    for node in switches:
        assert node.findings and all(f.status is Status.ERROR for f in node.findings)
        assert all(SM_NODE in f.expected and "Connection refused" in f.actual for f in node.findings)


def test_the_ib_and_sm_stages_word_an_unread_node_and_a_silent_tool_alike() -> None:
    from fabcheck.collect.script import Section
    from fabcheck.gate import ib_stage, sm_stage
    from fabcheck.gate.reader import NotRead

    late = NotRead("sm01", "the deadline passed", late=True)
    assert ib_stage.not_read_reason(late, 5, "the reader") == (
        "not read: the run's deadline (--deadline 5 s) passed before the reader's turn"
    )
    raised = NotRead("sm01", "boom", raised="ValueError")
    assert (
        ib_stage.not_read_reason(raised, None, "this node")
        == "fabcheck failed reading this node: ValueError: boom"
    )
    assert ib_stage.section_said(Section(3, "", "\nfirst\n  last  \n")) == "last"
    assert ib_stage.section_said(Section(3, "out", "")) == "exit 3"
    # one of each, shared: the sm stage has no copy of its own
    assert not hasattr(sm_stage, "_said") and not hasattr(sm_stage, "_not_read")
