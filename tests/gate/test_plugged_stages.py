"""A stage plugs into the gate by declaration alone: --stages accepts it, its nodes leave the "not
checked" note, its findings join the node's report, a stage that cannot run is an error on its nodes,
and its figures reach the HTML report."""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabcheck.checks.model import Status, failed
from fabcheck.collect.ssh import TimeLimits
from fabcheck.errors import FabcheckError, UsageError
from fabcheck.gate import fabric, stages
from fabcheck.gate.fabric import gate_report as gate_run
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome, default_stage_names, stage_names
from fabcheck.intent.loader import HostEntry, Inventory, load_inventory
from fabcheck.report import html
from fabcheck.report.model import NodeKind, exit_code

HOSTS_YML = """
all:
  children:
    subnet_managers:
      hosts:
        sm01:
        sm02:
    others:
      hosts:
        mgmt01:
"""


@dataclass(frozen=True)
class Picture:
    title: str = "pair bandwidth"

    def svg(self) -> str:
        return '<svg xmlns="http://www.w3.org/2000/svg"><rect id="probe-picture"/></svg>'


@dataclass
class SmStage:
    name: str = "fake_sm"
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False
    broken: bool = False

    def claims(self, entry: HostEntry, fabric: object = None) -> bool:
        return "subnet_managers" in entry.groups

    def run(self, context: StageContext) -> StageOutcome:
        if self.broken:
            raise FabcheckError("sminfo not found")
        nodes = [e for e in context.plan.chosen if self.claims(e)]
        verdict = failed("fake_sm.master", "sm", "master", "none", "start it")
        found = [NodeOutcome(e.name, NodeKind.SM, (verdict,)) for e in nodes]
        return StageOutcome(self.name, tuple(found), ("fake note",), (Picture(),))


@dataclass
class NeedsHost(SmStage):
    name: str = "fake_nccl"
    requires: tuple[str, ...] = ("host",)
    by_default: bool = False


# The stages every gate has; the fakes run after them (the real sm, nccl, ... are left out).
BUILT_IN = ("fabcheck.gate.host_stage", "fabcheck.gate.switch_stage", "fabcheck.gate.link_stage")


@pytest.fixture
def plug(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    """Declares fake stage modules for one test, after the real ones, as STAGE_MODULES names them."""
    declared: dict[str, object] = {}

    def install(*fakes: object) -> None:
        names = []
        for i, stage in enumerate(fakes):
            module = types.ModuleType(f"fake_stage_{i}")
            module.STAGE = stage  # type: ignore[attr-defined]
            monkeypatch.setitem(sys.modules, module.__name__, module)
            names.append(module.__name__)
        monkeypatch.setattr(stages, "STAGE_MODULES", (*BUILT_IN, *names))
        stages.all_stages.cache_clear()

    declared["install"] = install
    yield declared
    stages.all_stages.cache_clear()


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    root: Path = tmp_path_factory.mktemp("inventory")
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (root / "hosts.yml").write_text(HOSTS_YML)
    return load_inventory(root)


def test_declared_stage_is_listed_and_default(plug: dict, inventory: Inventory) -> None:
    plug["install"](SmStage(), NeedsHost())
    assert stage_names() == ("host", "switch", "link", "fake_sm", "fake_nccl")
    assert default_stage_names() == ("host", "switch", "link", "fake_sm")


def test_claimed_nodes_are_planned_and_the_rest_not_checked(plug: dict, inventory: Inventory) -> None:
    plug["install"](SmStage())
    plan = fabric.plan_gate(inventory, stages=["fake_sm"])
    assert plan.stages == ("fake_sm",)
    assert [h.name for h in plan.not_checked] == ["mgmt01"]
    # Without the stage nothing of this inventory is judged: a usage error, never an empty pass.
    with pytest.raises(UsageError):
        fabric.plan_gate(inventory, stages=["host"])


def test_a_stage_without_what_it_reads_is_refused(plug: dict, inventory: Inventory) -> None:
    plug["install"](SmStage(), NeedsHost())
    with pytest.raises(UsageError, match="fake_nccl reads the results of host"):
        fabric.plan_gate(inventory, stages=["fake_sm", "fake_nccl"])
    with pytest.raises(UsageError, match="unknown stage"):
        fabric.plan_gate(inventory, stages=["fake_sm", "nope"])


def test_findings_notes_and_figures_reach_the_report(plug: dict, inventory: Inventory) -> None:
    plug["install"](SmStage())
    plan = fabric.plan_gate(inventory, stages=["fake_sm"])
    result = fabric.run_gate(inventory, plan, TimeLimits())
    run = gate_run(result)
    assert [(s.name, s.kind, s.verdict) for s in run.subjects] == [
        ("sm01", NodeKind.SM, Status.FAIL),
        ("sm02", NodeKind.SM, Status.FAIL),
    ]
    assert "fake note" in run.notes
    assert exit_code(run) == 1
    page = html.render(run)
    assert "<h2>pair bandwidth</h2>" in page and 'id="probe-picture"' in page


def test_a_stage_that_cannot_run_is_an_error_on_its_nodes(plug: dict, inventory: Inventory) -> None:
    plug["install"](SmStage(broken=True))
    plan = fabric.plan_gate(inventory, stages=["fake_sm"])
    run = gate_run(fabric.run_gate(inventory, plan, TimeLimits()))
    assert [(s.name, s.verdict) for s in run.subjects] == [("sm01", Status.ERROR), ("sm02", Status.ERROR)]
    assert "sminfo not found" in run.subjects[0].findings[0].actual
    assert exit_code(run) == 3


@pytest.mark.parametrize("name", ["nccl", "perftest", "incast"])
def test_each_traffic_stage_is_a_command_that_runs_validate_with_what_it_reads(name: str) -> None:
    from fabcheck.cli import build_parser
    from fabcheck.cli import validate as validate_cli

    args = build_parser().parse_args([name, "-i", "inventory/lab", "--concurrency", "4"])
    assert args.func is validate_cli.run
    assert args.stages == ("host", name)
    assert args.concurrency == 4
    with pytest.raises(SystemExit):  # the stage is fixed by the command: no --stages to contradict it
        build_parser().parse_args([name, "-i", "inventory/lab", "--stages", "host"])


def test_stages_of_the_default_gate_get_no_command_of_their_own() -> None:
    from fabcheck.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["sm", "-i", "inventory/lab"])


@dataclass
class ClockedStage(SmStage):
    """Reads the time left before the run's deadline, as the traffic stages do before each step."""

    name: str = "fake_clocked"
    seen: list[TimeLimits] = dataclasses.field(default_factory=list)

    def run(self, context: StageContext) -> StageOutcome:
        self.seen.append(context.limits_left("the fake load"))
        return super().run(context)


def test_a_deadline_cuts_a_stage_s_limits_to_the_time_left(plug: dict, inventory: Inventory) -> None:
    stage = ClockedStage()
    plug["install"](stage)
    plan = fabric.plan_gate(inventory, stages=["fake_clocked"])
    limits = TimeLimits(connect_s=10, command_s=60)
    fabric.run_gate(inventory, plan, limits, deadline_s=None)
    fabric.run_gate(inventory, plan, limits, deadline_s=5)
    unbounded, bounded = stage.seen
    assert unbounded == limits
    assert bounded.client_s <= 5 and bounded.connect_s <= 5 < limits.client_s


def test_a_deadline_passed_before_a_stage_is_an_error_naming_it(plug: dict, inventory: Inventory) -> None:
    plug["install"](ClockedStage())
    plan = fabric.plan_gate(inventory, stages=["fake_clocked"])
    run = gate_run(fabric.run_gate(inventory, plan, TimeLimits(), deadline_s=0))
    assert [(s.name, s.verdict) for s in run.subjects] == [("sm01", Status.ERROR), ("sm02", Status.ERROR)]
    said = run.subjects[0].findings[0].actual
    assert "--deadline 0 s" in said and "the fake load" in said, said
    assert exit_code(run) == 3
