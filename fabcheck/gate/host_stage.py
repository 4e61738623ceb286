"""The gate's host stage: inventory -> ssh targets -> one collection per host -> records -> checks.

Orchestration only: the probes and their readers live in fabcheck.collect.host, the checks in
fabcheck.checks.host. Each host is judged alone as it arrives; the fleet checks (what must agree
across hosts) run once every host is in. Its outcome's nodes are HostResults: the link, nccl and incast
stages read the evidence they carry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabcheck.checks.host import HostEvidence, check_fleet, check_host
from fabcheck.checks.model import Finding, Status, Where, errored, verdict
from fabcheck.collect import host as collect
from fabcheck.collect import ssh
from fabcheck.collect.backends import BatchCollector, Collector, native
from fabcheck.collect.backends.slurm import JUDGED_SECTION
from fabcheck.collect.host import HostCollection, last_line
from fabcheck.collect.script import CAP_NAMES
from fabcheck.collect.ssh import ConnectionVarError, SshTarget, TimeLimits
from fabcheck.desired.nic import DesiredHost
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.gate import step_judge
from fabcheck.gate.reader import NodeReads, NotRead, Reader
from fabcheck.gate.snapshot import optional_text, section_record, sections_restored
from fabcheck.gate.stages import StageContext, StageOutcome
from fabcheck.intent.fabric import GPU_HOSTS, Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent
from fabcheck.report.model import NodeKind

STAGE_NAME = "host"
COLLECTION_CHECK = "host.collection"
INVENTORY_CHECK = "host.inventory"


@dataclass(frozen=True)
class HostResult:
    host: str
    findings: tuple[Finding, ...]
    # What the host showed, parsed (None: nothing was collected). Later stages read it: the link stage
    # compares each NIC with its switch port, the HTML report draws the topology.
    evidence: HostEvidence | None = field(default=None, compare=False, repr=False)

    @property
    def node(self) -> str:
        return self.host

    @property
    def kind(self) -> NodeKind:
        return NodeKind.HOST

    @property
    def verdict(self) -> Status:
        return verdict(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "verdict": self.verdict.value,
            "findings": [f.to_json() for f in self.findings],
        }


def read_hosts(
    reader: Reader,
    hosts: Sequence[HostEntry],
    collector: Collector | None,
    desired: Mapping[str, DesiredHost],
    on_done: Callable[[HostResult], None] = lambda _result: None,
) -> list[HostResult]:
    """Collect from every host through the reader (one round trip each, at once) and judge each against
    its desired state as it arrives, then the fleet checks over every host read.

    One host's bad inventory variables, unreadable output or an unexpected error is an error for that
    host only. With a deadline every round trip is cut to end by it; a host not collected by then is an
    error saying so.
    """
    unusable: dict[str, HostResult] = {}
    items: list[tuple[str, HostRead]] = []
    for entry in hosts:
        try:
            target = SshTarget.from_host_vars(entry.name, entry.variables)
        except ConnectionVarError as err:
            unusable[entry.name] = HostResult(entry.name, (_bad_inventory(entry.name, err),))
            on_done(unusable[entry.name])
            continue
        items.append((entry.name, HostRead(target, desired[entry.name].template.ecn_priority)))
    intents = {entry.name: entry.intent for entry in hosts}

    def judged(host: str, got: HostCollection | NotRead) -> HostResult:
        if isinstance(got, NotRead) and got.late:
            late = _not_before_deadline(reader.deadline_s)
            got = HostCollection(host, {}, False, late, expired=ssh.COMMAND)
        if isinstance(got, NotRead):
            result = HostResult(host, (_internal_error(host, got.said),))
        else:
            result = judge(got, intents[host], desired[host])
        on_done(result)  # e.g. the progress bar, as each host is judged
        return result

    judged_hosts = reader.each(host_reads(collector, reader.deadline_s), items, judged)
    read = {result.host: result for result in judged_hosts}
    results = [unusable.get(entry.name) or read[entry.name] for entry in hosts]
    return judge_fleet(results, intents, desired)


@dataclass(frozen=True)
class HostRead:
    """What the reader hands the read of one host: where it is, and the lossless priority its
    collection script reads (the plan's)."""

    target: SshTarget
    priority: int


def host_reads(collector: Collector | None, deadline_s: float | None) -> NodeReads[HostRead, HostCollection]:
    """How the host stage reads one host (one round trip through `collector`, None: the native one) and
    saves it: every section with the command it ran, whether the script ran to the end, and why not."""

    def read(item: HostRead, limits: TimeLimits, _ends_at: float | None) -> HostCollection:
        collection = (collector or native.collect_host)(item.target, item.priority, limits)
        if collection.expired and limits.cap_s is not None:
            reason = f"{_not_before_deadline(deadline_s)}: {collection.error or 'time limit expired'}"
            collection = dataclasses.replace(collection, error=reason)
        return collection

    def replay(item: HostRead, data: Mapping[str, Any]) -> HostCollection:
        # A node that judged itself and sent its raw sections along (--save-snapshot asks for them) is
        # judged again from those reads, as any snapshot is.
        restored = host_restore(data, item.target.name)
        return step_judge.raw_reads(restored) or restored

    batch = _batch_start(collector) if isinstance(collector, BatchCollector) else None
    return NodeReads(STAGE_NAME, read, lambda _item, got: host_record(got), replay, batch)


def _batch_start(collector: BatchCollector) -> Callable[[Sequence[tuple[str, HostRead]], TimeLimits], None]:
    """A batch backend's start, with every host at the lossless priority the plan holds for it."""

    def batch(items: Sequence[tuple[str, HostRead]], limits: TimeLimits) -> None:
        collector.start({node: item.priority for node, item in items}, limits)

    return batch


def host_record(collection: HostCollection) -> dict[str, Any]:
    """One host's round trip as snapshot data."""
    return {
        "host": collection.host,
        "priority": collection.priority,
        "complete": collection.complete,
        "error": collection.error,
        "expired": collection.expired,
        "sections": {
            name: section_record(collect.section_command(name, collection.priority), section)
            for name, section in collection.sections.items()
        },
    }


def host_restore(data: Mapping[str, Any], host: str) -> HostCollection:
    """The HostCollection of a saved record; KeyError, TypeError or ValueError when it is not one."""
    if data.get("host") != host:
        raise ValueError(f'"host" is not {host!r}')
    priority = data["priority"]
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 7:
        raise ValueError(f'"priority" {priority!r} is not 0..7')
    return HostCollection(
        host,
        sections_restored(data["sections"]),
        bool(data["complete"]),
        optional_text(data["error"]),
        priority,
        optional_text(data["expired"]),
    )


def judge_fleet(
    results: Sequence[HostResult], intents: Mapping[str, FabricIntent], desired: Mapping[str, DesiredHost]
) -> list[HostResult]:
    """Pure: the fleet checks over every host that was read, each host's findings appended to its result."""
    read = {r.host: r.evidence for r in results if r.evidence is not None}
    fleet = check_fleet(read, desired, intents)
    return [
        dataclasses.replace(r, findings=r.findings + tuple(fleet[r.host])) if r.host in fleet else r
        for r in results
    ]


def _not_before_deadline(deadline_s: float | None) -> str:
    given = "" if deadline_s is None else f" (--deadline {deadline_s:g} s)"
    return f"not collected before the deadline{given}"


def _bad_inventory(host: str, err: ConnectionVarError) -> Finding:
    return errored(
        INVENTORY_CHECK,
        host,
        f"{err.variable}: {err.allowed}",
        str(err),
        f"fix {err.variable} for {host} in the inventory (ansible-playbook cannot reach it either)",
    )


def _internal_error(host: str, detail: str) -> Finding:
    return errored(
        COLLECTION_CHECK,
        host,
        "this host collected and judged",
        f"fabcheck failed on this host: {detail[:300]}",
        "a fabcheck bug: report it with the host's collected output; other hosts were still judged",
    )


def judge(collection: HostCollection, intent: FabricIntent, desired: DesiredHost) -> HostResult:
    """Pure: one host's collection + its intent and desired state (the gate plan's) -> its result. An
    unreachable host is one ERROR. A node that judged itself (--via slurm, fabcheck.gate.step_judge)
    brought its findings: they are read back, and the evidence from the sections it sent along."""
    if JUDGED_SECTION in collection.sections:
        if collection.error:  # the step ended the node's answer part way: what it says is the error
            return HostResult(collection.host, (_unreachable(collection, collection.error),))
        return judged_on_node(collection)
    if not collection.sections:
        reason = collection.error or "the host printed nothing"
        return HostResult(collection.host, (_unreachable(collection, reason),))
    shown = evidence(collection)
    findings = check_host(shown, desired, intent)
    if collection.error:
        findings.insert(0, _unreachable(collection, f"{collection.error}; output incomplete"))
    unbounded = _unbounded(collection)
    if unbounded:
        findings.insert(0, unbounded)
    return HostResult(collection.host, tuple(findings), shown)


def judged_on_node(collection: HostCollection) -> HostResult:
    """The result a node judged itself, as the host's own: its findings and the evidence of the sections
    it forwarded. A judgement that cannot be read is one ERROR naming why."""
    section = collection.sections[JUDGED_SECTION]
    try:
        if not section.ok:
            raise step_judge.PayloadError(f"the section ended with exit {section.rc}")
        judged = step_judge.read_payload(section.stdout, collection.host)
    except step_judge.PayloadError as err:
        return HostResult(collection.host, (_internal_error(collection.host, f"its judgement: {err}"),))
    shown = HostEvidence(judged.records(collection.priority), collection.priority)
    return HostResult(collection.host, judged.findings, shown)


_HINTS = {
    ssh.CONNECT: "the host did not accept ssh within the connect timeout: check that it is up and that "
    "ansible_host/ansible_port are right (raise --connect-timeout only for a slow network)",
    ssh.COMMAND: "a tool on the host hangs or the host is overloaded: see the section it stopped in; "
    "raise --timeout only when the host is merely slow",
}


_CAP_HINT = (
    "the host printed more than fabcheck reads of one node (a tool printing without end, or far more "
    "RDMA ports than a GPU host has): see the section named; docs/validate.md 'Bounds' states the section "
    "cap, the round trip cap and the port cap"
)


def _unreachable(collection: HostCollection, reason: str) -> Finding:
    if any(cap in reason for cap in CAP_NAMES):
        return errored(
            COLLECTION_CHECK, collection.host, "one ssh round trip within the caps", reason, _CAP_HINT
        )
    hint = _HINTS.get(
        collection.expired or "",
        "check that the host answers `ssh` with the inventory's connection variables "
        "(BatchMode, known host key)",
    )
    return errored(COLLECTION_CHECK, collection.host, "one ssh round trip with every section", reason, hint)


def _unbounded(collection: HostCollection) -> Finding | None:
    """A host without `timeout` ran the collection with no limit of its own: a hung tool there would
    outlive this run. Judged, but never a pass."""
    section = collection.sections.get(collect.TIME_LIMIT)
    if section is not None and section.rc == 0:
        return None
    reason = "not reported" if section is None else (last_line(section.stderr) or f"exit {section.rc}")
    return errored(
        COLLECTION_CHECK,
        collection.host,
        "`timeout` on the host, so the collection is time-bounded there",
        f"`command -v timeout`: {reason}",
        "install coreutils (or busybox) on the host so a hung tool cannot outlive the round trip",
    )


def evidence(collection: HostCollection) -> HostEvidence:
    """Every declared probe's record from a collection; what cannot be read becomes Unreadable."""
    return HostEvidence(collect.read_records(collection.sections, collection.priority), collection.priority)


@dataclass(frozen=True)
class HostStage:
    """Every planned GPU host: one round trip each, judged as it arrives, then the fleet checks."""

    name: str = STAGE_NAME
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return GPU_HOSTS in entry.groups

    def run(self, context: StageContext) -> StageOutcome:
        plan, reads = context.plan, context.reads
        # Each round trip waits the counter window between its two counter readings, all at once.
        reader = context.window_reader
        desired = with_nvlink(plan.desired.hosts, plan.desired.nvlink)
        results = read_hosts(reader, plan.hosts, reads.host, desired, reads.on_host_done)
        cables = {(link.host, link.nic): link.switch_end for link in context.plan.whole.links}
        return StageOutcome(self.name, tuple(located(result, cables) for result in results))


def with_nvlink(
    hosts: Mapping[str, DesiredHost], nvlink: Mapping[str, DesiredNvlinkHost]
) -> Mapping[str, DesiredHost]:
    """Each host's desired state with its NVLink domain (GateDesired.nvlink, planned once) attached, so
    the NVLink host checks read it where every host check reads its desired state."""
    return {
        host: dataclasses.replace(desired, nvlink=nvlink[host]) if host in nvlink else desired
        for host, desired in hosts.items()
    }


def located(result: HostResult, cables: Mapping[tuple[str, str], str]) -> HostResult:
    """The host's findings with their Where: the host, the part the check named (a NIC, `NIC/port`, a
    netdev, a GPU; none for the host as a whole) and, for a rail NIC's part, the switch port its cable
    goes to in the cabling map."""

    # One Where per part, and each Finding built field by field rather than by dataclasses.replace: this
    # runs for every finding of every host (~340 a rail8 host), a tenth of a --via slurm merge before.
    wheres: dict[str, Where] = {}

    def where(finding: Finding) -> Finding:
        if finding.where is not None:
            return finding
        part = "" if finding.subject in ("host", result.host) else finding.subject
        place = wheres.get(part)
        if place is None:
            peer = cables.get((result.host, part.split("/", 1)[0]), "")
            place = wheres[part] = Where(result.host, part, peer)
        return Finding(
            finding.check,
            finding.status,
            finding.subject,
            finding.expected,
            finding.actual,
            finding.hint,
            place,
            finding.measure,
        )

    return dataclasses.replace(result, findings=tuple(where(f) for f in result.findings))


STAGE = HostStage()
