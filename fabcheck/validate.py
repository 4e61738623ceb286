"""The pre-flight gate: inventory -> ssh targets -> one collection per host -> parse -> check -> results.

v0 judges the hosts of group `gpu_hosts`; switches and subnet managers are listed as not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fabcheck.checks.host import HostEvidence, NetdevEvidence, Unreadable, check_host
from fabcheck.checks.model import Finding, Status, errored, verdict
from fabcheck.collect import host as collect
from fabcheck.collect.host import HostCollection, Section, SshTarget
from fabcheck.errors import ParseError, UsageError
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.ibv_devinfo import NO_DEVICES, parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.rdma_link import parse_rdma_link
from fabcheck.parsers.topo import parse_topo

GPU_HOSTS = "gpu_hosts"
DEFAULT_TIMEOUT_S = 30.0
WORKERS = 16
COLLECTION_CHECK = "host.collection"

T = TypeVar("T")


@dataclass(frozen=True)
class HostResult:
    host: str
    findings: tuple[Finding, ...]

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


def plan(inventory: Inventory, limit: Sequence[str] = ()) -> Plan:
    """Hosts of gpu_hosts (narrowed by --limit names); raises UsageError for unknown names."""
    chosen = [inventory.host(name) for name in dict.fromkeys(limit)] if limit else list(inventory.hosts)
    hosts = tuple(h for h in chosen if GPU_HOSTS in h.groups)
    rest = tuple(h for h in chosen if GPU_HOSTS not in h.groups)
    if not hosts:
        raise UsageError(f"no host of group {GPU_HOSTS} to check in {inventory.source}")
    return Plan(hosts, rest)


def validate(
    hosts: Sequence[HostEntry],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    collector: Callable[[SshTarget, int, float], HostCollection] = collect.collect_host,
) -> list[HostResult]:
    """Collect from every host in parallel (one round trip each) and judge it against its intent."""
    from concurrent.futures import ThreadPoolExecutor

    def one(entry: HostEntry) -> HostResult:
        target = SshTarget.from_host_vars(entry.name, entry.variables)
        collection = collector(target, entry.intent.lossless.priority, timeout_s)
        return judge(collection, entry.intent)

    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(hosts))) as pool:
        return list(pool.map(one, hosts))


def judge(collection: HostCollection, intent: FabricIntent) -> HostResult:
    """Pure: one host's collection + its intent -> its result. An unreachable host is one ERROR."""
    if not collection.sections:
        reason = collection.error or "the host printed nothing"
        return HostResult(collection.host, (_unreachable(collection.host, reason),))
    findings = check_host(evidence(collection), intent)
    if collection.error:
        findings.insert(0, _unreachable(collection.host, f"{collection.error}; output incomplete"))
    return HostResult(collection.host, tuple(findings))


def _unreachable(host: str, reason: str) -> Finding:
    return errored(
        COLLECTION_CHECK,
        host,
        "one ssh round trip with every section",
        reason,
        "check that the host answers `ssh` with the inventory's connection variables "
        "(BatchMode, known host key)",
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
    )


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


def _read(
    sections: Mapping[str, Section],
    name: str,
    prio: int,
    parse: Callable[[str, str], T],
    empty_when: str | None = None,
) -> T | Unreadable:
    """Parse one section. `empty_when`: the tool's own "nothing here" message, printed with a failing
    exit code (``ibv_devinfo`` says "No IB devices found" on stderr and exits 255): an empty reading."""
    command = collect.section_command(name, prio)
    section = sections.get(name)
    if section is None:
        return Unreadable(command, "not in the collected output")
    if section.rc is None:
        return Unreadable(command, "output truncated (no end marker)")
    if empty_when is not None and section.rc != 0 and section.stderr.strip() == empty_when:
        return parse(empty_when, command)
    if section.rc != 0:
        detail = _last_line(section.stderr) or _last_line(section.stdout)
        return Unreadable(command, f"exit {section.rc}" + (f": {detail}" if detail else ""))
    try:
        return parse(section.stdout, command)
    except ParseError as err:
        return Unreadable(command, err.message if err.line is None else f"line {err.line}: {err.message}")


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def _links(text: str, source: str) -> tuple[Any, ...]:
    # `rdma link` prints nothing at all on a host without RDMA devices: an empty, valid listing.
    return () if not text.strip() else parse_rdma_link(text, source)


def sysfs_int(text: str, source: str) -> int:
    """A sysfs attribute that holds one decimal integer ("%d\\n")."""
    value = text.strip()
    if not value.lstrip("-").isdigit() or len(value) > 20:
        raise ParseError(f"expected one integer, got {value[:40]!r}", source=source)
    return int(value)


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
