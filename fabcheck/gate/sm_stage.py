"""The gate's `sm` stage: every InfiniBand subnet-manager node in one ssh round trip, then the SM checks.

Claims the nodes of group subnet_managers whose intent is InfiniBand. Per node a static POSIX sh script
prints marked sections (the host collector's markers and launcher, so a hung tool is stopped on the node
and truncated output is seen as such): `sminfo` (the master the node's port follows), `sminfo LID` of the
node's own first port (its own SM), opensm.conf, partitions.conf and the service state. Its inputs are
positional arguments it validates itself: the token, the per-tool limit, fabcheck's fixed file paths
and the unit name (role variable opensm_service). The checks (fabcheck.checks.sm) judge all SM nodes
together, so that the one-master rule sees the whole subnet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fabcheck.checks.host import Unreadable
from fabcheck.checks.sm import NoAnswer, SmEvidence, check_subnet
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
    section_commands,
)
from fabcheck.collect.ssh import ConnectionVarError, SshTarget, TimeLimits
from fabcheck.desired.sm import DesiredSubnetManager
from fabcheck.errors import ParseError
from fabcheck.gate.reader import NodeReads, NotRead
from fabcheck.gate.snapshot import optional_text, section_record, sections_restored
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import SUBNET_MANAGERS, Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.parsers.opensm_conf import parse_opensm_conf, parse_partitions_conf
from fabcheck.parsers.sminfo import SmInfo, no_sm_answered, parse_sminfo
from fabcheck.report.model import NodeKind

STAGE_NAME = "sm"
DEFAULT_SERVICE = "opensm"  # the opensm role's opensm_service default
SERVICE_VARIABLE = "opensm_service"
_PLAIN_UNIT = re.compile(r"[A-Za-z0-9_.@-]{1,64}", re.ASCII)

Collector = Callable[[SshTarget, DesiredSubnetManager, str, TimeLimits], SmCollection]
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
            return Unreadable(command, _said(section))
        try:
            return parse(section.stdout, f"{source}: {command}")
        except ParseError as err:
            return Unreadable(command, f"unparsable output: {err.message}")

    def sminfo(name: str) -> SmInfo | NoAnswer | Unreadable:
        section = sections.get(name)
        if section is not None and section.rc not in (None, 0) and no_sm_answered(section.stderr):
            return NoAnswer(commands[name], _said(section))
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


def _said(section: Section) -> str:
    lines = [line.strip() for line in section.stderr.splitlines() if line.strip()]
    return lines[-1][:200] if lines else f"exit {section.rc}"


def _word(section: Section | None, command: str) -> str | Unreadable:
    """systemctl is-enabled/is-active print one word and exit non-zero for every other answer than
    enabled/active: the word is the evidence; no word at all is unreadable."""
    if section is None or section.rc is None:
        return Unreadable(command, "not in the output")
    words = section.stdout.split()
    if not words:
        return Unreadable(command, _said(section))
    return words[0]


def service_of(entry: HostEntry) -> str:
    """The opensm unit name: the role's opensm_service when the inventory sets it, else opensm."""
    value = entry.variables.get(SERVICE_VARIABLE, DEFAULT_SERVICE)
    if not isinstance(value, str) or not _PLAIN_UNIT.fullmatch(value) or value.startswith("-"):
        raise ConnectionVarError(SERVICE_VARIABLE, value, "a systemd unit name (letters, digits, _ . @ -)")
    return value


@dataclass(frozen=True)
class SmStage:
    name: str = STAGE_NAME
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False
    collector: Collector = field(default=collect_sm)

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return SUBNET_MANAGERS in entry.groups and entry.intent.kind == "ib"

    def run(self, context: StageContext) -> StageOutcome:
        nodes = [entry for entry in context.plan.chosen if self.claims(entry, context.plan.fabric)]
        if not nodes:
            return StageOutcome(self.name, ())
        desired = context.plan.desired.subnet_managers
        master = nodes[0].intent.subnet_manager.intended_master
        unusable: dict[str, SmEvidence] = {}
        items: list[tuple[str, SmItem]] = []
        for entry in nodes:
            want = desired[entry.name]
            try:
                target = SshTarget.from_host_vars(entry.name, entry.variables)
                items.append((entry.name, SmItem(target, want, service_of(entry))))
            except ConnectionVarError as err:  # read by no collector
                unread = SmCollection(entry.name, {}, False, f"bad inventory variable: {err}")
                unusable[entry.name] = evidence_of(unread, want, "")

        def judged(node: str, got: SmCollection | NotRead) -> SmEvidence:
            item = dict(items)[node]
            if isinstance(got, NotRead):
                got = SmCollection(node, {}, False, _not_read(got, context.deadline_s))
            return evidence_of(got, item.desired, item.service)

        read = context.reader.each(sm_reads(self.collector), items, judged)
        shown = {**unusable, **{evidence.node: evidence for evidence in read}}
        judged_nodes = check_subnet([shown[entry.name] for entry in nodes], desired)
        notes = _left_out(master, nodes)
        outcomes = tuple(NodeOutcome(e.name, NodeKind.SM, tuple(judged_nodes[e.name])) for e in nodes)
        return StageOutcome(self.name, outcomes, notes)


@dataclass(frozen=True)
class SmItem:
    """What the reader hands the read of one SM node: where it is, its desired state, its opensm unit."""

    target: SshTarget
    desired: DesiredSubnetManager
    service: str


def sm_reads(collector: Collector) -> NodeReads[SmItem, SmCollection]:
    """How the sm stage reads one node (one round trip through `collector`) and saves it: each
    section with the command it ran, whether the script ran to the end, and why not."""

    def read(item: SmItem, limits: TimeLimits, _ends_at: float | None) -> SmCollection:
        return collector(item.target, item.desired, item.service, limits)

    def record(item: SmItem, collection: SmCollection) -> dict[str, Any]:
        commands = section_commands(item.desired, item.service)
        return {
            "node": collection.node,
            "complete": collection.complete,
            "error": collection.error,
            "sections": {
                name: section_record(commands.get(name, name), section)
                for name, section in collection.sections.items()
            },
        }

    def replay(item: SmItem, data: Mapping[str, Any]) -> SmCollection:
        if data.get("node") != item.target.name:
            raise ValueError(f'"node" is not {item.target.name!r}')
        sections = sections_restored(data["sections"])
        return SmCollection(item.target.name, sections, bool(data["complete"]), optional_text(data["error"]))

    return NodeReads(STAGE_NAME, read, record, replay)


def _not_read(got: NotRead, deadline_s: float | None) -> str:
    if got.late:
        given = "" if deadline_s is None else f" (--deadline {deadline_s:g} s)"
        return f"not read: the run's deadline{given} passed before this node's turn"
    return f"fabcheck failed reading this node: {got.said[:300]}"


def _left_out(master: str | None, nodes: Sequence[HostEntry]) -> tuple[str, ...]:
    if master is None or any(entry.name == master for entry in nodes):
        return ()
    return (
        f"sm.master is judged from the SM nodes of this run (the master each one follows): the intended "
        f"master {master} is left out",
    )


STAGE = SmStage()
