"""Checks across the hosts of one run: what must agree from host to host (the GID index NCCL uses,
one driver version per NIC driver; the NIC firmware in firmware.py). Each host's findings name what
differs there."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from fabcheck.checks.declare import ALL_KINDS, ROCE, Check, Inputs
from fabcheck.checks.host.evidence import HostEvidence, present_nics, unreadable_error
from fabcheck.checks.host.judges import cmd
from fabcheck.checks.model import Finding, failed, passed, skipped
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.host_sysfs import DriverInfo
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.show_gids import GidEntry

GID_INDEX = "host.gid_index"  # the RoCE v2 GID NCCL uses sits at one index on every host
VERSIONS = "host.versions"  # one driver version per NIC driver across the hosts

InputsT = TypeVar("InputsT", bound=Inputs)

# host -> evidence, host -> desired state, host -> intent, the inputs -> host -> its findings
FleetJudge = Callable[
    [Mapping[str, HostEvidence], Mapping[str, DesiredHost], Mapping[str, FabricIntent], InputsT],
    dict[str, list[Finding]],
]
# The stage holds checks over different inputs: each declaration binds its own (fleet_check).
FleetCheck = Check[FleetJudge[Any]]


def fleet_check(
    check_id: str,
    scope: str,
    reads: tuple[str, ...],
    summary: str,
    role: str | None,
    tag: str | None,
    judge: FleetJudge[InputsT],
    inputs: InputsT,
    kinds: tuple[str, ...] = ALL_KINDS,
) -> FleetCheck:
    """A check across the hosts: the declaration binds the judge and its inputs, so the judge
    receives them typed."""
    return FleetCheck(check_id, "fleet", scope, reads, summary, role, tag, judge, inputs, kinds=kinds)


@dataclass(frozen=True)
class FleetInputs(Inputs):
    named_hosts: int = 5  # hosts named per odd value; a larger group is counted, so a hint stays readable
    # Odd values listed; the rest are counted. Every host's finding quotes the spread: bounded, the
    # fleet's findings stay O(N) in size however many values 16,384 hosts show.
    named_values: int = 5


def _fleet_value(readings: Mapping[str, str], plausible: Callable[[str], bool]) -> str | None:
    """The value more hosts show than any other, among values a fleet can hold; None on a tie."""
    counts = Counter(value for value in readings.values() if plausible(value))
    ranked = counts.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _spread(readings: Mapping[str, str], common: str | None, inputs: FleetInputs) -> str:
    """ "a on 6 host(s); b on gpu03": the fleet's value counted, the other values (the most common
    first, at most `named_values`, then counted) with their hosts. O(N log N) in the hosts."""
    by_value: dict[str, list[str]] = {}
    for host, value in sorted(readings.items()):
        by_value.setdefault(value, []).append(host)
    parts = [] if common is None else [f"{common} on {len(by_value.pop(common))} host(s)"]
    odd = sorted(by_value.items(), key=lambda item: (-len(item[1]), item[0]))
    for value, hosts in odd[: inputs.named_values]:
        named = ", ".join(hosts[: inputs.named_hosts]) + (
            f" and {len(hosts) - inputs.named_hosts} more" if len(hosts) > inputs.named_hosts else ""
        )
        parts.append(f"{value} on {named}")
    rest = odd[inputs.named_values :]
    if rest:
        parts.append(f"{len(rest)} other value(s) on {sum(len(hosts) for _, hosts in rest)} host(s)")
    return "; ".join(parts)


def _compare(
    check_id: str,
    subject: str,
    readings: Mapping[str, str | Unreadable],
    what: str,
    hint: Callable[[str, str | None], str],
    inputs: FleetInputs,
    plausible: Callable[[str], bool] = lambda _value: True,
) -> dict[str, Finding]:
    """One finding per host for one value that must agree across hosts: a host that differs from what
    most hosts show fails, naming the spread. With no value ahead (a tie) every host fails."""
    read = {host: value for host, value in readings.items() if isinstance(value, str)}
    findings: dict[str, Finding] = {}
    for host, value in readings.items():
        if isinstance(value, Unreadable):
            findings[host] = unreadable_error(check_id, subject, f"one {what} on every host", value)
    if len(read) < 2:
        for host in read:
            findings[host] = skipped(
                check_id, subject, f"{what}: only this host read in this run, nothing to compare"
            )
        return findings
    common = _fleet_value(read, plausible)
    expected = f"one {what} on every host" if common is None else f"{what} {common}, as on the other hosts"
    spread = _spread(read, common, inputs)
    for host, value in read.items():
        if value == common:
            findings[host] = passed(check_id, subject, expected, f"{value} ({spread})")
        else:
            findings[host] = failed(check_id, subject, expected, f"{value} ({spread})", hint(host, common))
    return findings


def _versions(evidence: HostEvidence, desired: DesiredHost) -> dict[str, str | Unreadable]:
    """subject -> version on one host: "driver <name>" per driver (the NIC firmware is host.nic_firmware's,
    checks/host/firmware.py)."""
    shown: dict[str, str | Unreadable] = {}
    for nic in present_nics(evidence, desired):
        if nic.netdev is None:
            continue
        driver = evidence.record(probes.DRIVER, nic.netdev)
        if isinstance(driver, Unreadable):
            shown.setdefault("driver", driver)
        elif isinstance(driver, DriverInfo):
            key = f"driver {driver.driver}"
            shown[key] = _joined(shown.get(key), driver.version)
    return shown


def _joined(earlier: str | Unreadable | None, version: str) -> str | Unreadable:
    """NICs of one model on one host with different versions read as "a/b": odd against any fleet."""
    if earlier is None or isinstance(earlier, Unreadable):
        return earlier if isinstance(earlier, Unreadable) else version
    return earlier if version in earlier.split("/") else "/".join(sorted({*earlier.split("/"), version}))


def check_versions(
    evidence: Mapping[str, HostEvidence],
    desired: Mapping[str, DesiredHost],
    _intents: Mapping[str, FabricIntent],
    inputs: FleetInputs,
) -> dict[str, list[Finding]]:
    """Driver versions that differ across the hosts: the odd host is named."""
    per_host = {host: _versions(shown, desired[host]) for host, shown in evidence.items()}
    subjects = sorted({subject for shown in per_host.values() for subject in shown})
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    for subject in subjects:
        readings = {host: shown[subject] for host, shown in per_host.items() if subject in shown}
        compared = _compare(
            VERSIONS, subject, readings, f"{subject} version", _version_hint, inputs, _one_version
        )
        for host, finding in compared.items():
            result[host].append(finding)
    for findings in result.values():
        if not findings:  # host.rdma_device says why
            findings.append(skipped(VERSIONS, "host", "no rail NIC read on this host: nothing to compare"))
    return result


def _one_version(value: str) -> bool:
    return "/" not in value  # NICs of one model on one host disagreeing cannot be the fleet's version


def _version_hint(host: str, common: str | None) -> str:
    fleet = f"the fleet's {common}" if common else "one version chosen for the fleet"
    return (
        f"bring {host} to {fleet}: the driver package (DOCA-OFED); no fabcheck role sets versions; "
        "on this host: `ethtool -i <netdev>`"
    )


def _gid_rows(
    evidence: HostEvidence, desired: DesiredHost
) -> list[tuple[RdmaLink, list[GidEntry] | Unreadable]]:
    table = evidence.record(probes.SHOW_GIDS)
    rows: list[tuple[RdmaLink, list[GidEntry] | Unreadable]] = []
    for nic in present_nics(evidence, desired):
        for link in nic.links:
            if isinstance(table, Unreadable):
                rows.append((link, table))
            else:
                rows.append((link, [g for g in table if g.dev == link.dev and g.port == link.port]))
    return rows


def check_gid_index(
    evidence: Mapping[str, HostEvidence],
    desired: Mapping[str, DesiredHost],
    intents: Mapping[str, FabricIntent],
    inputs: FleetInputs,
) -> dict[str, list[Finding]]:
    """The GID NCCL uses (nccl.gid_index) is a RoCE v2 GID on every rail port of every host; with
    gid_index null (NCCL picks), the first IPv4 RoCE v2 GID sits at the same index on every host."""
    result: dict[str, list[Finding]] = {host: [] for host in evidence}
    auto: dict[str, dict[str, str | Unreadable]] = {}
    for host, shown in evidence.items():
        index = intents[host].nccl.gid_index  # NCCL's setting: the intent's, no desired NIC record holds it
        for link, gids in _gid_rows(shown, desired[host]):
            if index is None:
                auto.setdefault(link.name, {})[host] = (
                    gids if isinstance(gids, Unreadable) else _first_v2(gids)
                )
            else:
                result[host].append(_gid_at(link, gids, index))
    for port, readings in sorted(auto.items()):

        def hint(_host: str, index: str | None, port: str = port) -> str:
            return _gid_hint(port, index)

        what = "first IPv4 RoCE v2 GID at index"
        compared = _compare(GID_INDEX, port, readings, what, hint, inputs, lambda i: i != NO_GID)
        for host, finding in compared.items():
            result[host].append(finding)
    return result


NO_GID = "none"


def _first_v2(gids: list[GidEntry]) -> str:
    return next((str(g.index) for g in gids if g.version == "v2" and g.ipv4), NO_GID)


def _gid_at(link: RdmaLink, gids: list[GidEntry] | Unreadable, index: int) -> Finding:
    expected = f"a RoCE v2 GID at index {index} (nccl.gid_index, NCCL_IB_GID_INDEX)"
    if isinstance(gids, Unreadable):
        return unreadable_error(GID_INDEX, link.name, expected, gids)
    entry = next((g for g in gids if g.index == index), None)
    if entry is not None and entry.version == "v2":
        return passed(
            GID_INDEX, link.name, expected, f"{entry.gid} v2" + (f" ({entry.ipv4})" if entry.ipv4 else "")
        )
    actual = "no GID at that index" if entry is None else f"{entry.gid} {entry.version or 'of unknown type'}"
    return failed(GID_INDEX, link.name, expected, actual, _gid_hint(link.name, str(index)))


def _gid_hint(port: str, index: str | None) -> str:
    at = f"GID index {index}" if index is not None else "one GID index"
    return (
        f"NCCL needs {at} to be the IPv4 RoCE v2 GID on every host: give each rail netdev its IPv4 "
        f"address (and no other) so that GID lands there, or fix nccl.gid_index; on this host: "
        f"`{cmd('show_gids', port.split('/')[0])}`"
    )


GID_INDEX_CHECK = fleet_check(
    GID_INDEX,
    "port",
    (probes.SHOW_GIDS,),
    "a RoCE v2 GID at `nccl.gid_index` on every rail port of every host (null: the first IPv4 v2 "
    "GID at one index everywhere)",
    None,
    None,
    check_gid_index,
    FleetInputs(),
    kinds=ROCE,
)
VERSIONS_CHECK = fleet_check(
    VERSIONS,
    "nic",
    (probes.IBV_DEVINFO, probes.DRIVER),
    "one driver version per NIC driver on every host; the odd host is named (firmware: host.nic_firmware)",
    None,
    None,
    check_versions,
    FleetInputs(),
)
