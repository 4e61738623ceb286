"""Both ends of every cabled link: the host NIC and its switch port agree with each other and the intent.

Pure. For each link of the cabling map, the NIC's records (what the host gate parsed from mlnx_qos and
`ip link`) and the switch port's records (the switch stage's evidence) are compared concern by
concern: trust, PFC priorities, the RoCE/CNP DSCP classification and MTU. A mismatch names both ends,
what each holds, and which role fixes which side. A NIC the host gate read that the cabling map does
not cable is reported, never passed over; so is a port whose LLDP neighbour is not the NIC the map
cables there, and a port the map leaves empty that hears one of the run's hosts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from fabcheck.checks.declare import ROCE, Check
from fabcheck.checks.model import Finding, Status, Where, errored, failed, passed, skipped
from fabcheck.checks.roles import HOST_QOS_ROLE, SWITCH_QOS_ROLE
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.desired.nic import DesiredNic
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.intent.fabric import Fabric, Link
from fabcheck.parsers.mlnx_qos import MlnxQos
from fabcheck.parsers.switch_records import DscpMap, LldpNeighbor, Mtu, PfcPriorities, PortSpeed, Trust

TRUST = "link.trust"
PFC = "link.pfc"
DSCP = "link.dscp_map"
MTU = "link.mtu"
LLDP = "link.lldp"
CABLED = "link.cabled"


@dataclass(frozen=True)
class NicEnd:
    """The host end of a link as the host gate read it; None: that part could not be read."""

    host: str
    nic: str
    trust: str | None
    pfc_priorities: tuple[int, ...] | None
    dscp_to_priority: tuple[tuple[int, int], ...] | None
    mtu: int | None  # the netdev MTU (`ip link`)
    netdev: str | None = None  # the NIC's interface name, what LLDP sends as its port id

    @classmethod
    def of(
        cls, host: str, nic: str, qos: MlnxQos | None, mtu: int | None, netdev: str | None = None
    ) -> NicEnd:
        if qos is None:
            return cls(host, nic, None, None, None, mtu, netdev)
        mapping = tuple(sorted(qos.dscp2prio.items())) if qos.dscp2prio_shown else None
        return cls(host, nic, qos.trust, qos.pfc_enabled, mapping, mtu, netdev)


@dataclass(frozen=True)
class _Ends:
    link: Link
    nic: NicEnd
    desired_nic: DesiredNic
    switch: SwitchEvidence
    desired_switch: DesiredSwitch

    @property
    def subject(self) -> str:
        return f"{self.link.host}:{self.link.nic} <-> {self.link.switch_end}"

    def port_record(self, kind: type) -> object | None:
        record, _own = self.switch.get(kind, self.link.port)
        return record


def check_links(
    fabric: Fabric,
    nics: Mapping[tuple[str, str], NicEnd],
    desired_nics: Mapping[tuple[str, str], DesiredNic],
    switches: Mapping[str, SwitchEvidence],
    desired_switches: Mapping[str, DesiredSwitch],
) -> list[Finding]:
    """Every link of the cabling map, then every NIC read on a host that no cable names."""
    findings: list[Finding] = []
    for link in fabric.links:
        key = (link.host, link.nic)
        subject = f"{link.host}:{link.nic} <-> {link.switch_end}"
        where = Where(link.host, link.nic, link.switch_end)
        nic, evidence = nics.get(key), switches.get(link.switch)
        if nic is None or evidence is None or evidence.unreachable is not None:
            side = (
                f"host {link.host} did not report {link.nic}"
                if nic is None
                else f"switch {link.switch} was not read"
            )
            if evidence is not None and evidence.unreachable:
                side += f" ({evidence.unreachable})"
            unread = [
                errored(check.id, subject, "both ends read", "not read", side) for check in CABLE_CHECK_DECLS
            ]
            findings += [replace(finding, where=where) for finding in unread]
            continue
        ends = _Ends(link, nic, desired_nics[key], evidence, desired_switches[link.switch])
        findings += [replace(_judge_cable(check, ends), where=where) for check in CABLE_CHECK_DECLS]
    swaps = host_swaps(fabric, nics, switches)
    findings = [_swap_named(finding, swaps) for finding in findings]
    findings += _uncabled(fabric, nics.keys())
    findings += _heard_off_the_map(fabric, {host for host, _nic in nics}, switches)
    return findings


def _heard_at(link: Link, switches: Mapping[str, SwitchEvidence]) -> LldpNeighbor | None:
    evidence = switches.get(link.switch)
    if evidence is None or evidence.unreachable is not None:
        return None
    record, own = evidence.get(LldpNeighbor, link.port)
    return record if isinstance(record, LldpNeighbor) and own and not record.ambiguous else None


def _sends(link: Link, nics: Mapping[tuple[str, str], NicEnd], record: LldpNeighbor) -> bool:
    """The neighbour is this link's NIC by its system name and interface name (a MAC names no NIC)."""
    nic = nics.get((link.host, link.nic))
    names = {link.nic} | ({nic.netdev} if nic is not None and nic.netdev else set())
    return same_system(record.system, link.host) and record.port in names


@dataclass(frozen=True)
class HostHearing:
    """What the switch ports of the host cables hear, beyond each cable's link.lldp verdict, for the
    run's summary (link.as_planned): swapped pairs; cables whose neighbour is the planned host but whose
    port id names no NIC (a MAC, lldpd's default, or a NIC whose interface the host did not name), which
    link.lldp passes yet which prove the host only, so two of its NICs' cables swapped between leaves
    read the same; and cables whose port is down and hears nothing (pulled, or never plugged)."""

    swaps: Mapping[Link, Link]
    host_only: frozenset[Link] = frozenset()
    down: frozenset[Link] = frozenset()


def host_hearing(
    fabric: Fabric, nics: Mapping[tuple[str, str], NicEnd], switches: Mapping[str, SwitchEvidence]
) -> HostHearing:
    host_only: set[Link] = set()
    down: set[Link] = set()
    for link in fabric.links:
        evidence = switches.get(link.switch)
        if evidence is None or evidence.unreachable is not None:
            continue
        record, own = evidence.get(LldpNeighbor, link.port)
        if isinstance(record, LldpNeighbor) and own:
            heard_host = not record.ambiguous and same_system(record.system, link.host)
            if heard_host and not _sends(link, nics, record):
                host_only.add(link)
        elif port_down(evidence, link.port):
            down.add(link)
    return HostHearing(host_swaps(fabric, nics, switches), frozenset(host_only), frozenset(down))


def port_down(evidence: SwitchEvidence, port: str) -> bool:
    """The switch shows the port down: a trained rate of 0, what the EOS parser reads from `show
    interfaces | json` for a port not `connected` with line protocol `up` (napalm's real notconnect
    sample, tests/data/real/eos/INDEX.tsv). SONiC's CONFIG_DB speed is the configured one and an NVUE
    port that has not trained shows no speed at all, so there the gate cannot tell a port is down."""
    record, own = evidence.get(PortSpeed, port)
    return own and isinstance(record, PortSpeed) and record.mbps == 0


def host_swaps(
    fabric: Fabric, nics: Mapping[tuple[str, str], NicEnd], switches: Mapping[str, SwitchEvidence]
) -> dict[Link, Link]:
    """Host cables swapped in pairs: L's port hears M's NIC and M's port hears L's NIC (each link ->
    the one it is swapped with). Only interface-name port ids identify a NIC."""
    heard = {link: _heard_at(link, switches) for link in fabric.links}
    swaps: dict[Link, Link] = {}
    for link, record in heard.items():
        if record is None or _sends(link, nics, record):
            continue
        other = next((m for m in fabric.links if m != link and _sends(m, nics, record)), None)
        back = heard.get(other) if other is not None else None
        if other is not None and back is not None and _sends(link, nics, back):
            swaps[link] = other
    return swaps


def _swap_named(finding: Finding, swaps: Mapping[Link, Link]) -> Finding:
    """A failing link.lldp of a swapped cable names the other cable and where each belongs."""
    if finding.check != LLDP or finding.status is not Status.FAIL or finding.where is None:
        return finding
    link = next((k for k in swaps if (k.host, k.nic, k.switch_end) == _where_key(finding.where)), None)
    if link is None:
        return finding
    other = swaps[link]
    actual = (
        f"{finding.actual}: swapped with {other.host}:{other.nic} <-> {other.switch_end}, "
        f"where {other.switch_end} hears {link.host}"
    )
    hint = (
        f"swap the cables at {link.switch_end} and {other.switch_end}: {link.host}:{link.nic} belongs on "
        f"{link.switch_end} and {other.host}:{other.nic} on {other.switch_end}, as fabric_links plans"
    )
    return replace(finding, actual=actual, hint=hint)


def _where_key(where: Where) -> tuple[str, str, str]:
    return (where.node, where.part, where.peer)


def _uncabled(fabric: Fabric, read: Iterable[tuple[str, str]]) -> list[Finding]:
    cabled = {(link.host, link.nic) for link in fabric.links}
    return [
        failed(
            CABLED,
            f"{host}:{nic}",
            "a switch port in the cabling map (fabric_links)",
            "no cable: the gate cannot compare this NIC with any switch port",
            f"add `{nic}: <switch>:<port>` to {host}'s fabric_links, or leave the NIC out of the rails",
        )
        for host, nic in sorted(set(read) - cabled)
    ]


def _hint(ends: _Ends, check: str, host_wrong: bool, switch_wrong: bool) -> str:
    tag = _DECLARED[check].tag
    tags = ["--tags", tag] if tag else []  # a check without a tag runs the whole role
    parts = []
    if host_wrong:
        command = shlex.join(["ansible-playbook", "site.yml", "--limit", ends.link.host, *tags])
        parts.append(f"host side: role {HOST_QOS_ROLE} `{command}`")
    if switch_wrong:
        command = shlex.join(["ansible-playbook", "site.yml", "--limit", ends.link.switch, *tags])
        parts.append(f"switch side: role {SWITCH_QOS_ROLE} `{command}`")
    return "; ".join(parts) or "the ends disagree with each other"


def _judge(
    ends: _Ends, check: str, expected: str, host: object, switch: object, host_ok: bool, switch_ok: bool
) -> Finding:
    actual = f"{ends.link.host}:{ends.link.nic} holds {host}; {ends.link.switch_end} holds {switch}"
    if host_ok and switch_ok:
        return passed(check, ends.subject, expected, actual)
    return failed(check, ends.subject, expected, actual, _hint(ends, check, not host_ok, not switch_ok))


def _missing(ends: _Ends, check: str, expected: str, what: str) -> Finding:
    return errored(check, ends.subject, expected, "not read", what)


def _trust(ends: _Ends) -> Finding:
    want_host, want_switch = ends.desired_nic.trust, ends.desired_switch.port(ends.link.port).trust
    record = ends.port_record(Trust)
    if ends.nic.trust is None or not isinstance(record, Trust):
        return _missing(
            ends,
            TRUST,
            f"trust {want_host} on both ends",
            _what_missing(ends, ends.nic.trust, record, "trust"),
        )
    return _judge(
        ends,
        TRUST,
        f"trust {want_host} on both ends",
        ends.nic.trust,
        record.mode,
        ends.nic.trust == want_host,
        record.mode == want_switch,
    )


def _pfc(ends: _Ends) -> Finding:
    want = set(ends.desired_nic.pfc_priorities)
    expected = f"PFC on priorities {_ids(want)} on both ends"
    record = ends.port_record(PfcPriorities)
    if ends.nic.pfc_priorities is None or not isinstance(record, PfcPriorities):
        return _missing(ends, PFC, expected, _what_missing(ends, ends.nic.pfc_priorities, record, "PFC"))
    want_switch = set(ends.desired_switch.port(ends.link.port).pfc_priorities)
    # A switch PFC profile that neither sends nor honours pauses in one direction is not lossless.
    off = record.directions_off if record.priorities else ()
    return _judge(
        ends,
        PFC,
        expected,
        f"PFC on {_ids(ends.nic.pfc_priorities)}",
        f"PFC on {_ids(record.priorities)}" + (f" ({' and '.join(off)} disabled)" if off else ""),
        set(ends.nic.pfc_priorities) == want,
        set(record.priorities) == want_switch and not off,
    )


def _dscp(ends: _Ends) -> Finding:
    """Each DSCP the intent classifies lands in the same class on the NIC and on the switch."""
    desired = ends.desired_switch
    wanted = dict(ends.desired_nic.dscp_to_priority_pairs)
    expected = "DSCP " + ", ".join(f"{d}->priority {p}" for d, p in sorted(wanted.items())) + " on both ends"
    if ends.desired_nic.trust != "dscp":
        return skipped(DSCP, ends.subject, f"the intent trusts {ends.desired_nic.trust}: no DSCP map in use")
    if ends.nic.trust is not None and ends.nic.trust != "dscp":
        # As host.dscp2prio: a NIC that trusts PCP prints no DSCP map and uses none; link.trust fails it.
        reason = (
            f"{ends.link.host}:{ends.link.nic} trusts {ends.nic.trust}: its DSCP map is not in use ({TRUST})"
        )
        return skipped(DSCP, ends.subject, reason)
    record = ends.port_record(DscpMap)
    if ends.nic.dscp_to_priority is None or not isinstance(record, DscpMap):
        return _missing(
            ends, DSCP, expected, _what_missing(ends, ends.nic.dscp_to_priority, record, "DSCP map")
        )
    host_map, switch_map = dict(ends.nic.dscp_to_priority), record.mapping
    # The switch's class for a DSCP, in priority terms: NVUE maps to switch priorities; EOS and SONiC
    # map to traffic classes, which the desired state derives from the same priorities.
    switch_wants = (
        desired.dscp_to_switch_priority
        if record.target == "switch-priority"
        else desired.dscp_to_traffic_class
    )
    host_shown = ", ".join(f"{d}->{host_map.get(d, 'unmapped')}" for d in sorted(wanted))
    switch_shown = ", ".join(f"{d}->{record.target} {switch_map.get(d, 'unmapped')}" for d in sorted(wanted))
    host_ok = all(host_map.get(d) == p for d, p in wanted.items())
    switch_ok = all(switch_map.get(d) == switch_wants.get(d) for d in wanted)
    return _judge(ends, DSCP, expected, host_shown, switch_shown, host_ok, switch_ok)


def _mtu(ends: _Ends) -> Finding:
    """The switch port carries the host's frames: its MTU is the intent's and not below the host's."""
    want_host, want_switch = ends.desired_nic.netdev_mtu, ends.desired_switch.port(ends.link.port).mtu
    expected = f"host MTU {want_host}, switch port MTU {want_switch} (at least the host's)"
    record = ends.port_record(Mtu)
    if ends.nic.mtu is None or not isinstance(record, Mtu):
        return _missing(ends, MTU, expected, _what_missing(ends, ends.nic.mtu, record, "MTU"))
    host_ok = ends.nic.mtu == want_host
    switch_ok = record.mtu == want_switch
    if host_ok and switch_ok and record.mtu < ends.nic.mtu:
        # Both ends hold what their roles push: the intent itself gives the host the larger MTU.
        return failed(
            MTU,
            ends.subject,
            expected,
            f"host MTU {ends.nic.mtu} above switch port MTU {record.mtu}",
            "fabric_intent.mtu: the switch MTU must be at least the host's; both roles hold their values",
        )
    # The hint names only the end that is off: a host above its intent is the host role's to fix.
    return _judge(ends, MTU, expected, f"MTU {ends.nic.mtu}", f"MTU {record.mtu}", host_ok, switch_ok)


MAC = re.compile(
    r"[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}|(?:[0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}"
)


def same_system(heard: str, host: str) -> bool:
    """LLDP carries the host name, often fully qualified: gpu01.example.net is gpu01."""
    return heard.split(".", 1)[0].lower() == host.split(".", 1)[0].lower()


def _lldp(ends: _Ends) -> Finding:
    """The port hears the NIC the cabling map puts there (system name, and the interface name unless
    the neighbour sends a MAC as its port id)."""
    link = ends.link
    port_id = ends.nic.netdev or link.nic
    expected = f"LLDP on {link.switch_end} hears {link.host} {port_id}"
    if LldpNeighbor not in ends.switch.provided:
        return skipped(LLDP, ends.subject, f"switch {link.switch} ({ends.switch.platform}) shows no LLDP")
    record, own = ends.switch.get(LldpNeighbor, link.port)
    if not isinstance(record, LldpNeighbor) or not own:
        reason, _switch_wide = ends.switch.why_missing((LldpNeighbor,), link.port)
        if any(LldpNeighbor in types for types, _port, _why in ends.switch.missing):
            return errored(LLDP, ends.subject, expected, "not read", reason)
        if port_down(ends.switch, link.port):  # no link: the planned cable is not there
            return failed(
                LLDP,
                ends.subject,
                expected,
                f"{link.switch_end} is down and hears no LLDP neighbour",
                f"plug (or reseat) {link.host}'s {port_id} cable into {link.switch_end}, or bring the "
                f"port up; if the NIC is plugged elsewhere, correct {link.host}'s fabric_links ({link.nic})",
            )
        return skipped(
            LLDP,
            ends.subject,
            f"no LLDP neighbour on {link.switch_end}: run lldpd on {link.host} (portidsubtype ifname) "
            "so the gate can prove this cable",
        )
    if record.ambiguous:
        heard = "; ".join(_heard(system, port) for system, port in _neighbours(record))
        return errored(
            LLDP,
            ends.subject,
            expected,
            f"{link.switch_end} hears {len(record.others) + 1} LLDP neighbours: {heard}",
            "one cable cannot carry several neighbours (a hub, a shared segment or a miswired breakout): "
            f"the gate cannot prove which is {link.host}; cable {link.switch_end} point to point",
        )
    actual = f"{link.switch_end} hears {_heard(record.system, record.port)}"
    system_ok = same_system(record.system, link.host)
    # A MAC port id (lldpd's default), or a NIC whose interface the host did not name, proves the
    # host only.
    port_ok = (
        ends.nic.netdev is None or bool(MAC.fullmatch(record.port)) or record.port in (port_id, link.nic)
    )
    if system_ok and port_ok:
        return passed(LLDP, ends.subject, expected, actual)
    return failed(
        LLDP,
        ends.subject,
        expected,
        actual,
        f"the cable on {link.switch_end} is not the one fabric_links names: recable it, or correct "
        f"{link.host}'s fabric_links ({link.nic}) to where the NIC is plugged",
    )


def _heard_off_the_map(
    fabric: Fabric, hosts: Iterable[str], switches: Mapping[str, SwitchEvidence]
) -> list[Finding]:
    """A port the map leaves empty that hears one of this run's hosts: the map lacks that cable."""
    judged = set(hosts)
    mapped = {(link.switch, link.port) for link in fabric.links}
    # A planned switch-to-switch port hearing a host: link.switch_lldp names it on its own cable.
    mapped |= {end for c in fabric.switch_links for end in ((c.a_switch, c.a_port), (c.b_switch, c.b_port))}
    findings = []
    for name, evidence in switches.items():
        for (_kind, port), record in evidence.records.items():
            if not isinstance(record, LldpNeighbor) or port is None or (name, port) in mapped:
                continue
            if MANAGEMENT_PORT.fullmatch(port):
                continue  # the switch's own management port: never a fabric cable
            for system, remote in _neighbours(record):
                host = next((h for h in sorted(judged) if same_system(system, h)), None)
                if host is None:
                    continue
                findings.append(
                    failed(
                        LLDP,
                        f"{name}:{port}",
                        f"fabric_links cables no NIC to {name}:{port}",
                        f"LLDP on {name}:{port} hears {_heard(system, remote)}",
                        f"add the NIC of {host} behind {remote} to {host}'s fabric_links as "
                        f"`<nic>: {name}:{port}`",
                    )
                )
    return findings


# A switch's out-of-band management port, as SONiC and Cumulus (eth0) and EOS (Management1, 1/1)
# name it: it hears the management network, never a fabric NIC.
MANAGEMENT_PORT = re.compile(r"eth[0-9]+|Management[0-9]+(?:/[0-9]+)*", re.ASCII)


def _neighbours(record: LldpNeighbor) -> list[tuple[str, str]]:
    return [(record.system, record.port), *record.others]


def _heard(system: str, port: str) -> str:
    return f"{system or '(no system name)'} {port}"


def _what_missing(ends: _Ends, host_value: object, record: object, what: str) -> str:
    if host_value is None:
        return f"host {ends.link.host} did not report the {what} of {ends.link.nic}"
    reason, _switch_wide = ends.switch.why_missing((_KINDS[what],), ends.link.port)
    return f"switch {ends.link.switch} did not report the {what} of {ends.link.port}: {reason}"


_KINDS: Mapping[str, type] = {"trust": Trust, "PFC": PfcPriorities, "DSCP map": DscpMap, "MTU": Mtu}


def _ids(values: Iterable[int]) -> str:
    ordered = sorted(values)
    return ",".join(map(str, ordered)) if ordered else "none"


# ---- the declarations -----------------------------------------------------------------------------

CableJudge = Callable[[_Ends], Finding]  # both ends of one cable -> its finding
LINK_SCOPE = "cable"
LINK_READS = ("the host and switch stages' records",)


def _judge_cable(check: Check[CableJudge], ends: _Ends) -> Finding:
    assert check.judge is not None  # every cable check is judged here
    return check.judge(ends)


def _cable_check(check_id: str, tag: str | None, summary: str, judge: CableJudge) -> Check[CableJudge]:
    # The host side is fixed by role roce_host, the switch side by role switch_qos, both with `tag`;
    # without a tag the fix is the cabling or fabric_links.
    role = HOST_QOS_ROLE if tag else None
    return Check(check_id, "link", LINK_SCOPE, LINK_READS, summary, role, tag, judge, kinds=ROCE)


# Judged per cable of the map, in this order; link.cabled then judges the NICs no cable names.
CABLE_CHECK_DECLS: tuple[Check[CableJudge], ...] = (
    _cable_check(TRUST, "dscp", "host NIC and switch port trust the same field, the intent's", _trust),
    _cable_check(PFC, "pfc", "host NIC and switch port run PFC on the same priorities, the intent's", _pfc),
    _cable_check(
        DSCP, "dscp", "host NIC and switch port classify the RoCE and CNP DSCPs alike, as the intent", _dscp
    ),
    _cable_check(MTU, "mtu", "the switch port MTU carries the host netdev MTU", _mtu),
    _cable_check(
        LLDP, None, "the switch port's LLDP neighbour is the host and NIC the map cables there", _lldp
    ),
)
CABLED_CHECK: Check[Callable[[Fabric, Iterable[tuple[str, str]]], list[Finding]]] = Check(
    CABLED,
    "link",
    "NIC",
    LINK_READS,
    "every RoCE NIC a host shows is cabled in fabric_links",
    None,
    None,
    _uncabled,
    kinds=ROCE,
)
LINK_CHECK_DECLS: tuple[Check[Any], ...] = (*CABLE_CHECK_DECLS, CABLED_CHECK)
LINK_CHECKS = tuple(check.id for check in LINK_CHECK_DECLS)
_DECLARED = {check.id: check for check in LINK_CHECK_DECLS}
