"""The gate's `ib` stage: the whole InfiniBand fabric between the hosts, read from ONE node in ONE ssh
round trip whatever the fabric's size, then judged against the planned cabling.

Claims the InfiniBand switches of the inventory (group ib_switches): fabcheck never logs in to one, the
stage finds them in-band, by node description, from the planned reader (DesiredIbFabric.reader: the
intent's ib_fabric.read_from, else the SM master, ...). Where the fabric is read: when the run's sm stage
reads the reader (an SM node of this run), inside the sm stage's one round trip to it
(fabcheck.collect.sm.collect_sm_with_fabric; its SmResult carries the fabric's sections, taken here from
context.earlier["sm"]); otherwise (ib without sm, a GPU host or a node the sm stage does not read) in
this stage's own round trip to the reader. Either way the fabric script (fabcheck.collect.ib)
prints ibnetdiscover -p, saquery, vendstat -N per switch LID and ibqueryerrors twice, the counter
window apart (the gate's window reader gives it the window's time); its sections are parsed here into
one IbEvidence and fabcheck.checks.ib judges it: ib.topology, ib.link, ib.errors at the switch of each
cable, ib.guids and ib.firmware at each switch, a host HCA's ib.guids at the host; ib.as_planned
(fabcheck.checks.as_planned), the run's summary, at the first top-tier IB switch. A reader that does
not answer is an error on every IB switch, naming the reader. The read is kept and replayed like any
other node's (--save-snapshot, --from-snapshot: `ib/<reader>.json`, or under "fabric" in the SM
node's `sm/<reader>.json` when the sm stage read it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from fabcheck.checks.as_planned import ib_summary, ib_top_switch
from fabcheck.checks.host import Unreadable
from fabcheck.checks.ib import IbEvidence, check_ib_fabric
from fabcheck.collect.ib import (
    ERRORS_AFTER,
    ERRORS_BEFORE,
    IBNETDISCOVER,
    SAQUERY,
    VENDSTAT,
    IbCollection,
    collect_ib,
    section_commands,
)
from fabcheck.collect.script import COUNTER_WINDOW, Section
from fabcheck.collect.ssh import ConnectionVarError, SshTarget, TimeLimits
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.errors import ParseError, UsageError
from fabcheck.gate.reader import NodeReads, NotRead
from fabcheck.gate.snapshot import Replay, optional_text, section_record, sections_restored
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import SUBNET_MANAGERS, Fabric
from fabcheck.intent.ib_fabric import IB_SWITCHES, IbPlan
from fabcheck.intent.loader import HostEntry
from fabcheck.parsers.ib_records import IbErrorSweep, IbSwitchFirmware
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from fabcheck.parsers.ibqueryerrors import parse_ibqueryerrors, sweep_deltas
from fabcheck.parsers.saquery import parse_saquery_nodes
from fabcheck.parsers.vendstat import parse_vendstat_general
from fabcheck.report.model import NodeKind

if TYPE_CHECKING:
    from fabcheck.gate.plan import GatePlan

STAGE_NAME = "ib"
# ibqueryerrors exits 1 when it printed ports over their threshold (rdma-core ibqueryerrors.c main:
# rc = print_summary(), the bad ports): with every threshold 0 that is any non-zero counter, an answer.
SWEEP_ANSWERS = (0, 1)

Collector = Callable[[SshTarget, DesiredIbFabric, TimeLimits], IbCollection]
T = TypeVar("T")


def evidence_of(collection: IbCollection, desired: DesiredIbFabric) -> IbEvidence:
    """Pure: the reader's sections -> the fabric's evidence. A section missing, failed, cut or
    unparsable is Unreadable naming its command; nothing at all is the reader unreachable."""
    if not collection.sections:
        why = collection.error or "no output"
        unread = Unreadable("collection", why)
        return IbEvidence(unread, unread, unread, unread, (), {}, 0, unreachable=why)
    sections = collection.sections
    commands = section_commands(desired, sections)
    lost = (
        collection.error
    )  # why the round trip did not end (a cap, the time limit): the missing ones' reason
    source = collection.node

    def read(name: str, parse: Callable[[str, str], T], answers: tuple[int, ...] = (0,)) -> T | Unreadable:
        section = sections.get(name)
        command = commands[name]
        if section is None:
            return Unreadable(command, lost or "not in the output")
        if section.rc is None:
            return Unreadable(command, lost or "output truncated (no end marker)")
        if section.rc not in answers:
            return Unreadable(command, section_said(section))
        try:
            return parse(section.stdout, f"{source}: {command}")
        except ParseError as err:
            where = "" if err.line is None else f"line {err.line}: "
            return Unreadable(command, f"unparsable output: {where}{err.message}"[:300])

    window = _window(sections.get(COUNTER_WINDOW), commands[COUNTER_WINDOW], lost)
    after = read(ERRORS_AFTER, parse_ibqueryerrors, SWEEP_ANSWERS)
    if isinstance(window, Unreadable):
        before: IbErrorSweep | Unreadable = window  # the window was not waited: no delta to judge
        window_s = 0
    elif window == 0:
        before, window_s = after, 0  # one sweep: ib.errors is a named skip
    else:
        before, window_s = read(ERRORS_BEFORE, parse_ibqueryerrors, SWEEP_ANSWERS), window
    both = isinstance(before, IbErrorSweep) and isinstance(after, IbErrorSweep) and window_s > 0
    deltas = sweep_deltas(before, after) if both else ()  # type: ignore[arg-type]
    firmware: dict[int, IbSwitchFirmware | Unreadable] = {}
    for name in sections:
        kind, _, lid = name.partition(":")
        if kind == VENDSTAT and lid.isdigit():
            firmware[int(lid)] = read(name, _vendstat_of(int(lid)))
    return IbEvidence(
        topology=read(IBNETDISCOVER, parse_ibnetdiscover_ports),
        nodes=read(SAQUERY, parse_saquery_nodes),
        before=before,
        after=after,
        deltas=deltas,
        firmware=firmware,
        window_s=window_s,
    )


def _vendstat_of(lid: int) -> Callable[[str, str], IbSwitchFirmware]:
    return lambda text, source: parse_vendstat_general(text, source, lid)


def _window(section: Section | None, command: str, lost: str | None) -> int | Unreadable:
    """The seconds the script waited between the sweeps (its counter_window section), or why not."""
    if section is None or section.rc is None:
        return Unreadable(command, lost or "the round trip ended inside the counter window")
    if section.rc != 0:
        return Unreadable(command, section_said(section))
    text = section.stdout.strip()
    if not text.isdigit() or not text.isascii():
        return Unreadable(command, f"not a number of seconds: {text[:40]!r}")
    return int(text)


def section_said(section: Section) -> str:
    """Why a section's tool gave no answer: its last stderr line, else its exit status (the ib and
    sm stages' wording)."""
    lines = [line.strip() for line in section.stderr.splitlines() if line.strip()]
    return lines[-1][:200] if lines else f"exit {section.rc}"


@dataclass(frozen=True)
class IbItem:
    """What the reader hands the read of the one node: where it is and the planned fabric."""

    target: SshTarget
    desired: DesiredIbFabric


def ib_reads(collector: Collector) -> NodeReads[IbItem, IbCollection]:
    """How the ib stage reads its one node (one round trip through `collector`) and saves it: each
    section with the command it ran, whether the script ran to the end, and why not."""

    def read(item: IbItem, limits: TimeLimits, _ends_at: float | None) -> IbCollection:
        return collector(item.target, item.desired, limits)

    def record(item: IbItem, collection: IbCollection) -> dict[str, Any]:
        return fabric_record(item.desired, collection)

    def replay(item: IbItem, data: Mapping[str, Any]) -> IbCollection:
        return fabric_replayed(item.target.name, data)

    return NodeReads(STAGE_NAME, read, record, replay)


def fabric_record(desired: DesiredIbFabric, collection: IbCollection) -> dict[str, Any]:
    """A fabric read as snapshot data (`ib/<reader>.json`, or the SM node's record that read it along)."""
    commands = section_commands(desired, collection.sections)
    return {
        "node": collection.node,
        "complete": collection.complete,
        "error": collection.error,
        "sections": {
            name: section_record(commands.get(name, name), section)
            for name, section in collection.sections.items()
        },
    }


def fabric_replayed(node: str, data: Mapping[str, Any]) -> IbCollection:
    if data.get("node") != node:
        raise ValueError(f'"node" is not {node!r}')
    sections = sections_restored(data["sections"])
    return IbCollection(node, sections, bool(data["complete"]), optional_text(data["error"]))


@dataclass(frozen=True)
class IbStage:
    name: str = STAGE_NAME
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False
    collector: Collector = field(default=collect_ib)

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        """The IB switches, and every node that cables an HCA into the IB plan (its ib.guids)."""
        if not fabric.ib.switches:
            return False
        return IB_SWITCHES in entry.groups or entry.name in _cabled_nodes(fabric.ib)

    def runs(self, plan: GatePlan) -> bool:
        """Whether this stage reads the fabric in this run: an IB plan and a node of it chosen."""
        desired = plan.desired.ib_fabric
        return desired is not None and any(self.claims(entry, plan.fabric) for entry in plan.chosen)

    def run(self, context: StageContext) -> StageOutcome:
        desired = context.plan.desired.ib_fabric
        if desired is None or not self.runs(context.plan):
            return StageOutcome(self.name, ())
        switches = [entry for entry in context.plan.chosen if IB_SWITCHES in entry.groups]
        evidence = self._read(context, desired)
        judged = check_ib_fabric(evidence, desired)
        top = ib_top_switch(desired, [entry.name for entry in switches])
        if top is not None:  # the run's built-vs-planned summary, once, at the top tier
            judged[top] = [*judged.get(top, ()), ib_summary(evidence, desired)]
        chosen = {entry.name: entry for entry in context.plan.chosen}
        outcomes = [NodeOutcome(e.name, NodeKind.IB_SWITCH, tuple(judged.get(e.name, ()))) for e in switches]
        claimed = {entry.name for entry in switches}
        left_out = []
        for node, findings in judged.items():
            if node in claimed or not findings:
                continue
            if node in chosen:
                outcomes.append(NodeOutcome(node, _kind(chosen[node]), tuple(findings)))
            else:
                left_out.append(node)
        notes = () if not left_out else (_left_out_note(left_out),)
        return StageOutcome(self.name, tuple(outcomes), notes)

    def _read(self, context: StageContext, desired: DesiredIbFabric) -> IbEvidence:
        reader = desired.reader
        along = _read_along(context, reader) or _replayed_along(context, reader)
        if along is not None:  # the sm stage's round trip to the reader read the fabric too
            return evidence_of(along, desired)
        try:
            entry = context.inventory.host(reader)
            target = SshTarget.from_host_vars(entry.name, entry.variables)
        except (ConnectionVarError, UsageError) as err:
            unread = IbCollection(reader, {}, False, f"the reader {reader} cannot be reached: {err}")
            return evidence_of(unread, desired)

        def judged(node: str, got: IbCollection | NotRead) -> IbEvidence:
            if isinstance(got, NotRead):
                got = IbCollection(node, {}, False, not_read_reason(got, context.deadline_s, "the reader"))
            return evidence_of(got, desired)

        [evidence] = context.window_reader.each(
            ib_reads(self.collector), [(reader, IbItem(target, desired))], judged
        )
        return evidence


def _read_along(context: StageContext, reader: str) -> IbCollection | None:
    """The fabric the sm stage read in its round trip to the reader (an SM node of this run), if it did."""
    from fabcheck.gate.sm_stage import SmResult  # sm_stage reads the fabric along through this module

    outcome = context.earlier.get("sm")
    for node in () if outcome is None else outcome.nodes:
        if isinstance(node, SmResult) and node.node == reader and node.fabric is not None:
            return node.fabric
    return None


def _replayed_along(context: StageContext, reader: str) -> IbCollection | None:
    """--from-snapshot without the sm stage, of a run whose sm stage read the fabric along: the fabric
    from the SM node's record (the snapshot has no ib/ folder then)."""
    tape = context.tape
    if (
        not isinstance(tape, Replay)
        or STAGE_NAME in tape.recorded
        or reader not in tape.recorded.get("sm", ())
    ):
        return None

    def fabric_of(data: Mapping[str, Any]) -> IbCollection | None:
        fabric = data.get("fabric")
        return None if fabric is None else fabric_replayed(reader, fabric)

    got = tape.replayed("sm", reader, fabric_of)
    return None if isinstance(got, NotRead) else got


# The nodes with an HCA in the last IB plan asked about: claims() is asked once per inventory node, and a
# plan holds every cable (49,152 of them at 2,048 hosts), so the set is built once per plan.
_CABLED: dict[int, tuple[IbPlan, frozenset[str]]] = {}


def _cabled_nodes(plan: IbPlan) -> frozenset[str]:
    kept = _CABLED.get(id(plan))
    if kept is None or kept[0] is not plan:
        nodes = frozenset(
            end.node for cable in plan.cables for end in (cable.a, cable.b) if end.nic is not None
        )
        kept = (plan, nodes)
        _CABLED.clear()
        _CABLED[id(plan)] = kept
    return kept[1]


def _kind(entry: HostEntry) -> NodeKind:
    return NodeKind.SM if SUBNET_MANAGERS in entry.groups else NodeKind.HOST


def _left_out_note(nodes: list[str]) -> str:
    shown = ", ".join(sorted(nodes)[:10]) + (f" and {len(nodes) - 10} more" if len(nodes) > 10 else "")
    return f"ib findings on nodes outside --limit are not reported: {shown}"


def not_read_reason(got: NotRead, deadline_s: float | None, whom: str) -> str:
    """A node the window reader did not read, as its error: `whom` is the node as the stage names it
    ("the reader", "this node")."""
    if got.late:
        given = "" if deadline_s is None else f" (--deadline {deadline_s:g} s)"
        return f"not read: the run's deadline{given} passed before {whom}'s turn"
    return f"fabcheck failed reading {whom}: {got.said[:300]}"


STAGE = IbStage()
