"""The gate's `sm` stage: every InfiniBand subnet-manager node in one ssh round trip, then the SM checks.

Claims the nodes of group subnet_managers whose intent is InfiniBand. Per node a static POSIX sh script
prints marked sections (the host collector's markers and launcher, so a hung tool is stopped on the node
and truncated output is seen as such): `sminfo` (the master the node's port follows), `sminfo LID` of the
node's own first port (its own SM), opensm.conf, partitions.conf and the service state. Its inputs are
positional arguments it validates itself: the token, the per-tool limit, fabcheck's fixed file paths
and the unit name (role variable opensm_service). The checks (fabcheck.checks.sm) judge all SM nodes
together, so that the one-master rule sees the whole subnet.

When the run's `ib` stage reads the InfiniBand fabric from one of these SM nodes (DesiredIbFabric.reader,
by default the intended master), this stage's one round trip to that node reads the fabric too
(fabcheck.collect.sm.collect_sm_with_fabric): that read waits the counter window, so the stage reads
through the window reader, and the node's SmResult carries the fabric's sections for the ib stage (and
its snapshot record holds them under "fabric"). The SM checks see only the SM sections.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fabcheck.checks.host import Unreadable
from fabcheck.checks.sm import NoAnswer, SmEvidence, check_subnet
from fabcheck.collect.ib import IbCollection
from fabcheck.collect.script import Section
from fabcheck.collect.sm import (
    ACTIVE,
    ENABLED,
    MASTER_SMINFO,
    OPENSM_CONF,
    OWN_SMINFO,
    PARTITIONS_CONF,
    SmCollection,
    collect_sm,
    collect_sm_with_fabric,
    section_commands,
)
from fabcheck.collect.ssh import ConnectionVarError, SshTarget, TimeLimits
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.desired.sm import DesiredSubnetManager
from fabcheck.errors import ParseError
from fabcheck.gate import ib_stage
from fabcheck.gate.reader import NodeReads, NotRead
from fabcheck.gate.snapshot import optional_text, section_record, sections_restored
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import SUBNET_MANAGERS, Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.parsers.opensm_conf import parse_opensm_conf, parse_partitions_conf
from fabcheck.parsers.sminfo import SmInfo, no_sm_answered, parse_sminfo
from fabcheck.report.model import Finding, NodeKind

STAGE_NAME = "sm"
DEFAULT_SERVICE = "opensm"  # the opensm role's opensm_service default
SERVICE_VARIABLE = "opensm_service"
_PLAIN_UNIT = re.compile(r"[A-Za-z0-9_.@-]{1,64}", re.ASCII)

Collector = Callable[[SshTarget, DesiredSubnetManager, str, TimeLimits], SmCollection]
# The round trip of the SM node that reads the InfiniBand fabric too (the ib stage's reader).
FabricCollector = Callable[[SshTarget, DesiredSubnetManager, str, DesiredIbFabric, TimeLimits], SmCollection]
T = TypeVar("T")


def evidence_of(collection: SmCollection, desired: DesiredSubnetManager, service: str) -> SmEvidence:
    """Pure: one node's sections -> its evidence. A missing or failed section is Unreadable."""
    if not collection.complete:
        return SmEvidence(
            collection.node,
            *(Unreadable("collection", collection.error or "incomplete"),) * 6,
            unreachable=collection.error or "output incomplete",
        )
    commands = section_commands(desired, service)
    sections = collection.sections
    source = collection.node

    def read(name: str, parse: Callable[[str, str], T]) -> T | Unreadable:
        section = sections.get(name)
        command = commands[name]
        if section is None or section.rc is None:
            return Unreadable(command, "not in the output")
        if not section.ok:
            return Unreadable(command, ib_stage.section_said(section))
        try:
            return parse(section.stdout, f"{source}: {command}")
        except ParseError as err:
            return Unreadable(command, f"unparsable output: {err.message}")

    def sminfo(name: str) -> SmInfo | NoAnswer | Unreadable:
        section = sections.get(name)
        if section is not None and section.rc not in (None, 0) and no_sm_answered(section.stderr):
            return NoAnswer(commands[name], ib_stage.section_said(section))
        return read(name, parse_sminfo)

    partitions_section = sections.get(PARTITIONS_CONF)
    absent = partitions_section is not None and partitions_section.rc == 3
    return SmEvidence(
        node=collection.node,
        own=sminfo(OWN_SMINFO),
        master=sminfo(MASTER_SMINFO),
        conf=read(OPENSM_CONF, parse_opensm_conf),
        partitions=None if absent else read(PARTITIONS_CONF, parse_partitions_conf),
        enabled=_word(sections.get(ENABLED), commands[ENABLED]),
        active=_word(sections.get(ACTIVE), commands[ACTIVE]),
    )


def _word(section: Section | None, command: str) -> str | Unreadable:
    """systemctl is-enabled/is-active print one word and exit non-zero for every other answer than
    enabled/active: the word is the evidence; no word at all is unreadable."""
    if section is None or section.rc is None:
        return Unreadable(command, "not in the output")
    words = section.stdout.split()
    if not words:
        return Unreadable(command, ib_stage.section_said(section))
    return words[0]


def service_of(entry: HostEntry) -> str:
    """The opensm unit name: the role's opensm_service when the inventory sets it, else opensm."""
    value = entry.variables.get(SERVICE_VARIABLE, DEFAULT_SERVICE)
    if not isinstance(value, str) or not _PLAIN_UNIT.fullmatch(value) or value.startswith("-"):
        raise ConnectionVarError(SERVICE_VARIABLE, value, "a systemd unit name (letters, digits, _ . @ -)")
    return value


@dataclass(frozen=True)
class SmResult(NodeOutcome):
    """An SM node's findings, and the fabric read in its round trip when it is the ib stage's reader."""

    fabric: IbCollection | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SmStage:
    name: str = STAGE_NAME
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False
    collector: Collector = field(default=collect_sm)
    with_fabric: FabricCollector = field(default=collect_sm_with_fabric)

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return SUBNET_MANAGERS in entry.groups and entry.intent.kind == "ib"

    def run(self, context: StageContext) -> StageOutcome:
        nodes = [entry for entry in context.plan.chosen if self.claims(entry, context.plan.fabric)]
        if not nodes:
            return StageOutcome(self.name, ())
        desired = context.plan.desired.subnet_managers
        master = nodes[0].intent.subnet_manager.intended_master
        along = _fabric_read_along(context, nodes)
        unusable: dict[str, SmEvidence] = {}
        items: list[tuple[str, SmItem]] = []
        for entry in nodes:
            want = desired[entry.name]
            fabric = along if along is not None and entry.name == along.reader else None
            try:
                target = SshTarget.from_host_vars(entry.name, entry.variables)
                items.append((entry.name, SmItem(target, want, service_of(entry), fabric)))
            except ConnectionVarError as err:  # read by no collector
                unread = SmCollection(entry.name, {}, False, f"bad inventory variable: {err}")
                unusable[entry.name] = evidence_of(unread, want, "")

        def judged(node: str, got: SmCollection | NotRead) -> tuple[SmEvidence, IbCollection | None]:
            item = dict(items)[node]
            if isinstance(got, NotRead):
                why = ib_stage.not_read_reason(got, context.deadline_s, "this node")
                fabric = None if item.fabric is None else IbCollection(node, {}, False, why)
                got = SmCollection(node, {}, False, why, fabric)
            return evidence_of(got, item.desired, item.service), got.fabric

        # The fabric's read waits the counter window: the reader's limits (and the pool) grow by it.
        reader = context.reader if along is None else context.window_reader
        read = reader.each(sm_reads(self.collector, self.with_fabric), items, judged)
        shown = {**unusable, **{evidence.node: evidence for evidence, _ in read}}
        fabrics = {evidence.node: fabric for evidence, fabric in read}
        judged_nodes = check_subnet([shown[entry.name] for entry in nodes], desired)
        notes = _left_out(master, nodes)
        outcomes = tuple(_result(e.name, judged_nodes[e.name], fabrics.get(e.name)) for e in nodes)
        return StageOutcome(self.name, outcomes, notes)


def _result(node: str, findings: Sequence[Finding], fabric: IbCollection | None) -> SmResult:
    return SmResult(node, NodeKind.SM, tuple(findings), fabric)


def _fabric_read_along(context: StageContext, nodes: Sequence[HostEntry]) -> DesiredIbFabric | None:
    """The planned fabric when this run's ib stage reads it from one of these SM nodes: then that
    node's round trip reads it (one round trip to the reader in the whole run), else None."""
    fabric = context.plan.desired.ib_fabric
    if fabric is None or ib_stage.STAGE_NAME not in context.plan.stages:
        return None
    if not ib_stage.STAGE.runs(context.plan) or all(entry.name != fabric.reader for entry in nodes):
        return None
    return fabric


@dataclass(frozen=True)
class SmItem:
    """What the reader hands the read of one SM node: where it is, its desired state, its opensm unit,
    and the planned fabric when this node reads it too."""

    target: SshTarget
    desired: DesiredSubnetManager
    service: str
    fabric: DesiredIbFabric | None = None


def sm_reads(
    collector: Collector, with_fabric: FabricCollector = collect_sm_with_fabric
) -> NodeReads[SmItem, SmCollection]:
    """How the sm stage reads one node (one round trip through `collector`, or `with_fabric` for the
    fabric's reader) and saves it: each section with the command it ran, whether the script ran to the
    end, and why not; the fabric's read under "fabric"."""

    def read(item: SmItem, limits: TimeLimits, _ends_at: float | None) -> SmCollection:
        if item.fabric is None:
            return collector(item.target, item.desired, item.service, limits)
        return with_fabric(item.target, item.desired, item.service, item.fabric, limits)

    def record(item: SmItem, collection: SmCollection) -> dict[str, Any]:
        commands = section_commands(item.desired, item.service)
        kept: dict[str, Any] = {
            "node": collection.node,
            "complete": collection.complete,
            "error": collection.error,
            "sections": {
                name: section_record(commands.get(name, name), section)
                for name, section in collection.sections.items()
            },
        }
        if item.fabric is not None and collection.fabric is not None:
            kept["fabric"] = ib_stage.fabric_record(item.fabric, collection.fabric)
        return kept

    def replay(item: SmItem, data: Mapping[str, Any]) -> SmCollection:
        if data.get("node") != item.target.name:
            raise ValueError(f'"node" is not {item.target.name!r}')
        sections = sections_restored(data["sections"])
        saved = data.get("fabric")  # None: saved by a run whose ib stage read the fabric itself
        fabric = None if saved is None else ib_stage.fabric_replayed(item.target.name, saved)
        node, complete = item.target.name, bool(data["complete"])
        return SmCollection(node, sections, complete, optional_text(data["error"]), fabric)

    return NodeReads(STAGE_NAME, read, record, replay)


def _left_out(master: str | None, nodes: Sequence[HostEntry]) -> tuple[str, ...]:
    if master is None or any(entry.name == master for entry in nodes):
        return ()
    return (
        f"sm.master is judged from the SM nodes of this run (the master each one follows): the intended "
        f"master {master} is left out",
    )


STAGE = SmStage()
