"""The pre-flight gate: inventory -> ssh targets -> one collection per host -> parse -> check -> results.

v0 judges the hosts of group `gpu_hosts`; switches and subnet managers are listed as not checked.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fabcheck.checks.host import HostEvidence, NetdevEvidence, PersistEvidence, Unreadable, check_host
from fabcheck.checks.model import Finding, Status, errored, verdict
from fabcheck.collect import host as collect
from fabcheck.collect.host import ConnectionVarError, HostCollection, Section, SshTarget, TimeLimits
from fabcheck.desired.nic import PERSIST_PATHS
from fabcheck.errors import ParseError, UsageError
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.ibv_devinfo import NO_DEVICES, parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.nic_persist import (
    missing_file,
    parse_boot_settings,
    parse_present_files,
    parse_unit_state,
)
from fabcheck.parsers.numbers import read_int
from fabcheck.parsers.rdma_link import parse_rdma_link
from fabcheck.parsers.topo import parse_topo

GPU_HOSTS = "gpu_hosts"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
WORKERS = 16
COLLECTION_CHECK = "host.collection"
INVENTORY_CHECK = "host.inventory"

T = TypeVar("T")
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
        return list(pool.map(one, hosts))


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
    reason = "not reported" if section is None else (_last_line(section.stderr) or f"exit {section.rc}")
    return errored(
        COLLECTION_CHECK,
        collection.host,
        "`timeout` on the host, so the collection is time-bounded there",
        f"`command -v timeout`: {reason}",
        "install coreutils (or busybox) on the host so a hung tool cannot outlive the round trip",
    )


def evidence(collection: HostCollection) -> HostEvidence:
    """Parse every section of a collection; what cannot be read becomes Unreadable."""
    sections, prio = collection.sections, collection.priority
    links = _read(sections, collect.RDMA_LINK, prio, _links)
    netdevs = {} if isinstance(links, Unreadable) else _netdevs(sections, links, prio)
    return HostEvidence(
        topo=_read(sections, collect.TOPO, prio, parse_topo),
        links=links,
        devices=_read(sections, collect.IBV_DEVINFO, prio, parse_ibv_devinfo, empty_when=NO_DEVICES),
        modules=_read(sections, collect.LSMOD, prio, loaded_modules),
        netdevs=netdevs,
        traffic_class=_traffic_classes(sections, links, prio),
        persistence=_persistence(sections, prio),
    )


def _persistence(sections: Mapping[str, Section], prio: int) -> PersistEvidence:
    """The boot file, the unit state and the boot files present. A missing file, a disabled or absent
    unit are answers; only output that says neither is Unreadable."""
    config_section = sections.get(collect.PERSIST_CONFIG)
    if config_section is not None and missing_file(config_section.rc, config_section.stderr):
        config: dict[str, Any] | Unreadable | None = None
    else:
        config = _read(sections, collect.PERSIST_CONFIG, prio, parse_boot_settings)
    wanted = [PERSIST_PATHS[key] for key in collect.PERSIST_FILE_ORDER]
    return PersistEvidence(
        settings=config,
        unit_state=_read_answer(sections, collect.PERSIST_UNIT_STATE, prio, parse_unit_state),
        present=_read_answer(
            sections,
            collect.PERSIST_FILES,
            prio,
            lambda rc, out, err, source: parse_present_files(rc, out, err, wanted, source),
        ),
    )


def _read_answer(
    sections: Mapping[str, Section],
    name: str,
    prio: int,
    parse: Callable[[int, str, str, str], T],
) -> T | Unreadable:
    """Like _read for a command whose non-zero exit is itself an answer (`systemctl is-enabled`, `ls`)."""
    command, section = _ended_section(sections, name, prio)
    if isinstance(section, Unreadable):
        return section
    assert section.rc is not None
    try:
        return parse(section.rc, section.stdout, section.stderr, command)
    except ParseError as err:
        return Unreadable(command, _short(err.message))


def _netdevs(sections: Mapping[str, Section], links: Iterable[Any], prio: int) -> dict[str, NetdevEvidence]:
    result = {}
    for netdev in sorted({link.netdev for link in links if link.netdev}):

        def read(kind: str, parse: Callable[[str, str], T], netdev: str = netdev) -> T | Unreadable:
            return _read(sections, f"{kind}:{netdev}", prio, parse)

        result[netdev] = NetdevEvidence(
            qos=read(collect.MLNX_QOS, parse_mlnx_qos),
            mtu=read(collect.NETDEV_MTU, sysfs_int),
            np_enable=read(collect.ECN_NP_ENABLE, sysfs_int),
            rp_enable=read(collect.ECN_RP_ENABLE, sysfs_int),
            cnp_dscp=read(collect.CNP_DSCP, sysfs_int),
            cnp_prio=read(collect.CNP_PRIO, sysfs_int),
        )
    return result


def _traffic_classes(sections: Mapping[str, Section], links: Any, prio: int) -> dict[str, int | Unreadable]:
    if isinstance(links, Unreadable):
        return {}
    return {
        link.name: _read(sections, f"{collect.TRAFFIC_CLASS}:{link.name}", prio, traffic_class)
        for link in links
    }


def _ended_section(sections: Mapping[str, Section], name: str, prio: int) -> tuple[str, Section | Unreadable]:
    """The command a section ran, and the section, or Unreadable when it is missing or cut off."""
    command = collect.section_command(name, prio)
    section = sections.get(name)
    if section is None:
        return command, Unreadable(command, "not in the collected output")
    if section.rc is None:
        return command, Unreadable(command, "output truncated (no end marker)")
    return command, section


def _read(
    sections: Mapping[str, Section],
    name: str,
    prio: int,
    parse: Callable[[str, str], T],
    empty_when: str | None = None,
) -> T | Unreadable:
    """Parse one section. `empty_when`: the tool's own "nothing here" message, printed with a failing
    exit code (``ibv_devinfo`` says "No IB devices found" on stderr and exits 255): an empty reading."""
    command, section = _ended_section(sections, name, prio)
    if isinstance(section, Unreadable):
        return section
    if empty_when is not None and section.rc != 0 and section.stderr.strip() == empty_when:
        return parse(empty_when, command)
    if section.rc != 0:
        detail = _last_line(section.stderr) or _last_line(section.stdout)
        return Unreadable(command, _short(f"exit {section.rc}" + (f": {detail}" if detail else "")))
    try:
        return parse(section.stdout, command)
    except ParseError as err:
        where = "" if err.line is None else f"line {err.line}: "
        return Unreadable(command, _short(where + err.message))
    except Exception as err:  # any output a parser did not foresee is unreadable, never a crash of the run
        return Unreadable(command, f"unreadable output ({_short(f'{type(err).__name__}: {err}')})")


REASON_CHARS = 300  # a hostile host's 5000-digit value is quoted, never echoed whole


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else f"{text[:REASON_CHARS]}... ({len(text)} characters)"


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def _links(text: str, source: str) -> tuple[Any, ...]:
    # `rdma link` prints nothing at all on a host without RDMA devices: an empty, valid listing.
    return () if not text.strip() else parse_rdma_link(text, source)


def sysfs_int(text: str, source: str) -> int:
    """A sysfs attribute that holds one decimal integer ("%d\\n"): ASCII digits, at most 20."""
    return read_int(text.strip(), source=source, what="sysfs value", signed=True)


def traffic_class(text: str, source: str) -> int:
    """tc/<port>/traffic_class: "106" (upstream style) or "Global tclass=106" (MLNX_OFED)."""
    value = text.strip()
    value = value.removeprefix("Global tclass=").strip()
    number = sysfs_int(value, source)
    if not 0 <= number <= 255:
        raise ParseError(f"traffic class {number} is not 0..255", source=source)
    return number


def loaded_modules(text: str, source: str) -> frozenset[str]:
    """Module names from `lsmod` (first column after the 'Module  Size  Used by' header)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or lines[0].split()[:2] != ["Module", "Size"]:
        raise ParseError("no 'Module  Size  Used by' header", source=source, line=1)
    return frozenset(line.split()[0] for line in lines[1:])


def overall(results: Iterable[HostResult]) -> Status:
    return verdict(f for r in results for f in r.findings)


EXIT_CODES = {Status.PASS: 0, Status.FAIL: 1, Status.ERROR: 3}


def exit_code(results: Sequence[HostResult]) -> int:
    """0 every host passes, 1 any check failed, 3 nothing failed but something could not be checked."""
    return EXIT_CODES.get(overall(results), 3)
