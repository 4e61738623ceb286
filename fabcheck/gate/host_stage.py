"""The host stage of the gate: inventory -> ssh targets -> one collection per host -> records -> checks.

Orchestration only: the probes and their readers live in fabcheck.collect.host, the checks in
fabcheck.checks.host. Each host is judged alone as it arrives; the fleet checks (what must agree
across hosts) run once every host is in.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabcheck.checks.host import HostEvidence, check_fleet, check_host
from fabcheck.checks.model import Finding, Status, errored, verdict
from fabcheck.collect import host as collect
from fabcheck.collect.host import ConnectionVarError, HostCollection, SshTarget, TimeLimits, last_line
from fabcheck.errors import UsageError
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.intent.model import FabricIntent

GPU_HOSTS = "gpu_hosts"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
WORKERS = 16
COLLECTION_CHECK = "host.collection"
INVENTORY_CHECK = "host.inventory"

Collector = Callable[[SshTarget, int, TimeLimits], HostCollection]


@dataclass(frozen=True)
class HostResult:
    host: str
    findings: tuple[Finding, ...]
    # What the host showed, parsed (None: nothing was collected). Later stages read it: the link stage
    # compares each NIC with its switch port, the HTML report draws the topology.
    evidence: HostEvidence | None = field(default=None, compare=False, repr=False)

    @property
    def verdict(self) -> Status:
        return verdict(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "verdict": self.verdict.value,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(frozen=True)
class Plan:
    """Which inventory hosts the gate judges now, and which it leaves for later versions."""

    hosts: tuple[HostEntry, ...]
    not_checked: tuple[HostEntry, ...]


def plan(inventory: Inventory, limit: str | None = None) -> Plan:
    """Hosts of gpu_hosts, narrowed by an Ansible --limit pattern exactly as ansible-playbook narrows
    them (names, globs, groups, `!x`, `&g`, `a:b`, `@file`). UsageError for an empty limit, a pattern
    that matches nothing, or no GPU host left."""
    chosen = limited_hosts(inventory, limit)
    hosts = tuple(h for h in chosen if GPU_HOSTS in h.groups)
    rest = tuple(h for h in chosen if GPU_HOSTS not in h.groups)
    if not hosts:
        scope = "" if limit is None else f" matching --limit {limit!r}"
        raise UsageError(f"no host of group {GPU_HOSTS}{scope} to check in {inventory.source}")
    return Plan(hosts, rest)


def limited_hosts(inventory: Inventory, limit: str | None) -> list[HostEntry]:
    """Every host of the inventory, or those an Ansible --limit pattern selects (UsageError when the
    pattern is empty or matches nothing)."""
    if limit is None:
        return list(inventory.hosts)
    if not limit.strip():
        raise UsageError("--limit is empty: give host names, groups or patterns, or leave --limit out")
    manager = inventory.manager
    if manager is None:
        raise UsageError(f"--limit needs the inventory loaded through ansible-core ({inventory.source})")
    try:
        manager.subset(limit)
        names = {host.name for host in manager.get_hosts("all")}
    except Exception as err:  # ansible reports bad patterns and missing @files with its own types
        raise UsageError(f"--limit {limit!r}: {err}") from None
    finally:
        manager.subset(None)
    if not names:
        known = ", ".join(h.name for h in inventory.hosts) or "none"
        raise UsageError(f"--limit {limit!r} matches no host in {inventory.source} (hosts: {known})")
    return [h for h in inventory.hosts if h.name in names]


def validate(
    hosts: Sequence[HostEntry],
    limits: TimeLimits | None = None,
    collector: Collector | None = None,  # None: ssh (collect.collect_host, looked up per call)
    deadline_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    workers: int = WORKERS,
    on_done: Callable[[HostResult], None] = lambda _result: None,
) -> list[HostResult]:
    """Collect from every host in parallel (one round trip each) and judge it against its intent.

    One host's bad inventory variables, unreadable output or an unexpected error is an error for that
    host only. With ``deadline_s`` every round trip is cut to end by the deadline; a host not collected
    by then is an error saying so.
    """
    from concurrent.futures import ThreadPoolExecutor

    limits = limits or TimeLimits()
    collector = collector or collect.collect_host
    end = None if deadline_s is None else clock() + deadline_s

    def one(entry: HostEntry) -> HostResult:
        try:
            result = _one_host(entry, limits, collector, end, deadline_s, clock)
        except Exception as err:  # one host must never take the whole run down
            result = HostResult(entry.name, (_internal_error(entry.name, err),))
        on_done(result)  # e.g. the progress bar, as each host is judged
        return result

    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(hosts)))) as pool:
        results = list(pool.map(one, hosts))
    return judge_fleet(results, {entry.name: entry.intent for entry in hosts})


def judge_fleet(results: Sequence[HostResult], intents: Mapping[str, FabricIntent]) -> list[HostResult]:
    """Pure: the fleet checks over every host that was read, each host's findings appended to its result."""
    read = {r.host: r.evidence for r in results if r.evidence is not None}
    fleet = check_fleet(read, intents)
    return [
        dataclasses.replace(r, findings=r.findings + tuple(fleet[r.host])) if r.host in fleet else r
        for r in results
    ]


def _one_host(
    entry: HostEntry,
    limits: TimeLimits,
    collector: Collector,
    end: float | None,
    deadline_s: float | None,
    clock: Callable[[], float],
) -> HostResult:
    try:
        target = SshTarget.from_host_vars(entry.name, entry.variables)
    except ConnectionVarError as err:
        return HostResult(entry.name, (_bad_inventory(entry.name, err),))
    host_limits = limits
    if end is not None:
        left = end - clock()
        if left <= 0:
            late = HostCollection(
                entry.name, {}, False, _not_before_deadline(deadline_s), expired=collect.COMMAND
            )
            return judge(late, entry.intent)
        host_limits = limits.within(left)
    collection = collector(target, entry.intent.lossless.priority, host_limits)
    if collection.expired and host_limits.cap_s is not None:
        reason = f"{_not_before_deadline(deadline_s)}: {collection.error or 'time limit expired'}"
        collection = dataclasses.replace(collection, error=reason)
    return judge(collection, entry.intent)


def _not_before_deadline(deadline_s: float | None) -> str:
    return f"not collected before the deadline (--deadline {deadline_s:g} s)"


def _bad_inventory(host: str, err: ConnectionVarError) -> Finding:
    return errored(
        INVENTORY_CHECK,
        host,
        f"{err.variable}: {err.allowed}",
        str(err),
        f"fix {err.variable} for {host} in the inventory (ansible-playbook cannot reach it either)",
    )


def _internal_error(host: str, err: Exception) -> Finding:
    detail = f"{type(err).__name__}: {err}"
    return errored(
        COLLECTION_CHECK,
        host,
        "this host collected and judged",
        f"fabcheck failed on this host: {detail[:300]}",
        "a fabcheck bug: report it with the host's collected output; other hosts were still judged",
    )


def judge(collection: HostCollection, intent: FabricIntent) -> HostResult:
    """Pure: one host's collection + its intent -> its result. An unreachable host is one ERROR."""
    if not collection.sections:
        reason = collection.error or "the host printed nothing"
        return HostResult(collection.host, (_unreachable(collection, reason),))
    shown = evidence(collection)
    findings = check_host(shown, intent)
    if collection.error:
        findings.insert(0, _unreachable(collection, f"{collection.error}; output incomplete"))
    unbounded = _unbounded(collection)
    if unbounded:
        findings.insert(0, unbounded)
    return HostResult(collection.host, tuple(findings), shown)


_HINTS = {
    collect.CONNECT: "the host did not accept ssh within the connect timeout: check that it is up and that "
    "ansible_host/ansible_port are right (raise --connect-timeout only for a slow network)",
    collect.COMMAND: "a tool on the host hangs or the host is overloaded: see the section it stopped in; "
    "raise --timeout only when the host is merely slow",
}


def _unreachable(collection: HostCollection, reason: str) -> Finding:
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


def overall(results: Iterable[HostResult]) -> Status:
    return verdict(f for r in results for f in r.findings)


EXIT_CODES = {Status.PASS: 0, Status.FAIL: 1, Status.ERROR: 3}


def exit_code(results: Sequence[HostResult]) -> int:
    """0 every host passes, 1 any check failed, 3 nothing failed but something could not be checked."""
    return EXIT_CODES.get(overall(results), 3)
