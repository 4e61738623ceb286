"""link.health: the wire of each cable, both ends together, and the direction of a fault.

Pure. For each cable of the cabling map, the host NIC's wire (its netdev's counters over the window and
its module's diagnostics) and the switch port's are judged with the same judges as host.link_errors,
host.link_flaps, host.optics and their switch twins (fabcheck.checks.wire), so the cable fails exactly
when either end's wire checks fail. What each end's judges found is then read across the cable:

- receive errors at the switch port with a clean host transmitter: the cable or the host's optic (the
  TX side of gpu01:mlx5_0); receive errors at the host NIC with a clean switch port: the cable or the
  switch port's optic; receive errors at both ends: the cable;
- low RX power at one end with normal TX power at the other: the fibre (clean it, then replace it); with
  low TX power at the other end: that end's optic;
- a hot module or one outside its own thresholds: that end's module;
- flaps: the cable and both its ends.

An end whose wire could not be read is an ERROR naming it (unless the other end fails); a cable neither
of whose ends shows any wire data is a named SKIP, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from fabcheck.checks.declare import ROCE, Check
from fabcheck.checks.model import Finding, Status, Where, errored, failed, passed, skipped
from fabcheck.checks.wire import RECEIVE, Judged, Problem, judge_errors, judge_flaps, judge_optics
from fabcheck.collect.host import Unreadable
from fabcheck.intent.fabric import Fabric, Link
from fabcheck.intent.model import LinkHealth
from fabcheck.parsers.wire_records import LinkDelta, ModuleOptics

HEALTH = "link.health"


@dataclass(frozen=True)
class WireEnd:
    """One end of a cable as its stage read it. None: the device shows no such data at all (a platform
    whose views give no counters, a port without a module view): judged as a skip."""

    name: str  # "gpu01:mlx5_0" or "leaf01:swp1"
    counters: LinkDelta | Unreadable | None
    optics: ModuleOptics | Unreadable | None
    limits: LinkHealth

    def judged(self) -> tuple[Judged, ...]:
        """errors, flaps, optics: what host/switch .link_errors, .link_flaps, .optics say of this end."""
        no_counters = Judged(Status.SKIP, "", f"{self.name} shows no wire counters")
        no_optics = Judged(Status.SKIP, "", f"{self.name} shows no module diagnostics")
        return (
            no_counters if self.counters is None else judge_errors(self.counters, self.limits, self.name),
            no_counters if self.counters is None else judge_flaps(self.counters, self.limits, self.name),
            no_optics if self.optics is None else judge_optics(self.optics, self.limits, self.name),
        )


def _problems(judged: tuple[Judged, ...]) -> frozenset[Problem]:
    return frozenset(p for j in judged if j.status is Status.FAIL for p in j.problems)


def _optics_read(judged: tuple[Judged, ...]) -> bool:
    """The end's optics were judged (so its TX power is known)."""
    return judged[2].status in (Status.PASS, Status.FAIL)


def _direction(
    host: WireEnd, switch: WireEnd, of_host: tuple[Judged, ...], of_switch: tuple[Judged, ...]
) -> str:
    """Which part of the cable to clean, reseat or replace, from what each end's judges found."""
    h, s = _problems(of_host), _problems(of_switch)
    advice: list[str] = []
    for near, far, at_near, at_far, read_far in (
        (host, switch, h, s, _optics_read(of_switch)),
        (switch, host, s, h, _optics_read(of_host)),
    ):
        if at_near & RECEIVE and not at_far & RECEIVE:
            if "tx_power" in at_far:
                advice.append(
                    f"receive errors at {near.name} and {far.name}'s transmit power outside its thresholds: "
                    f"replace {far.name}'s optic"
                )
            else:
                advice.append(
                    f"receive errors at {near.name} with a clean {far.name}: the cable or {far.name}'s optic "
                    f"(the TX side of {far.name}): clean and reseat both ends, then replace {far.name}'s "
                    "optic, then the cable"
                )
        if at_near & {"rx_power", "no_light"}:
            if "tx_power" in at_far:
                advice.append(
                    f"low RX power at {near.name} and low TX power at {far.name}: replace {far.name}'s optic"
                )
            elif read_far:
                advice.append(
                    f"low RX power at {near.name} with normal TX power at {far.name}: the fibre between "
                    "them; clean both connectors, replace the fibre if it stays low"
                )
            else:
                advice.append(
                    f"low RX power at {near.name} ({far.name}'s TX power is not shown): the fibre or "
                    f"{far.name}'s optic; clean both connectors, then replace the fibre, then that optic"
                )
        if "hot" in at_near:
            advice.append(
                f"the module at {near.name} runs hot: check its airflow, reseat it, then replace it"
            )
        if "module" in at_near or (
            "tx_power" in at_near and not at_far & (RECEIVE | {"rx_power", "no_light"})
        ):
            advice.append(
                f"the module at {near.name} is outside its own thresholds: reseat it, then replace it"
            )
        if at_near & {"discards", "host_drops", "tx_errors"}:
            advice.append(f"{near.name}: {_own_hint(of_host if near is host else of_switch)}")
    if (h | s) & {"flap", "flaps_lifetime"}:
        advice.append(
            f"the link flaps: reseat the cable at both ends ({host.name}, {switch.name}), then replace the "
            "cable, then the optics"
        )
    if h & RECEIVE and s & RECEIVE:
        advice.append("receive errors at both ends: the cable (replace it), or both optics")
    return "; ".join(dict.fromkeys(advice))


def _own_hint(judged: tuple[Judged, ...]) -> str:
    return "; ".join(
        j.hint
        for j in judged
        if j.status is Status.FAIL and j.problems & {"discards", "host_drops", "tx_errors"}
    )


def judge_cable(link: Link, host: WireEnd, switch: WireEnd) -> Finding:
    subject = f"{link.host}:{link.nic} <-> {link.switch_end}"
    expected = (
        f"the wire clean at both ends ({host.name}, {switch.name}): errors, flaps and optics as the limits"
    )
    of_host, of_switch = host.judged(), switch.judged()
    ends = ((host, of_host), (switch, of_switch))
    statuses = {j.status for _end, judged in ends for j in judged}
    if Status.FAIL in statuses:
        shown = "; ".join(
            f"{end.name}: {j.actual}" for end, judged in ends for j in judged if j.status is Status.FAIL
        )
        return failed(HEALTH, subject, expected, shown, _direction(host, switch, of_host, of_switch))
    if Status.ERROR in statuses:
        shown = "; ".join(
            f"{end.name}: {j.actual}" for end, judged in ends for j in judged if j.status is Status.ERROR
        )
        return errored(
            HEALTH, subject, expected, shown, "read both ends of the cable, then run validate again"
        )
    if statuses == {Status.SKIP}:
        reasons = "; ".join(dict.fromkeys(j.actual for _end, judged in ends for j in judged))
        return skipped(HEALTH, subject, f"neither end shows any wire data: {reasons}")
    judged_parts = [
        f"{end.name} {what}"
        for end, judged in ends
        for what, j in zip(("errors", "flaps", "optics"), judged, strict=True)
        if j.status is Status.PASS
    ]
    return passed(HEALTH, subject, expected, "clean: " + ", ".join(judged_parts))


def check_link_health(
    fabric: Fabric,
    hosts: Mapping[tuple[str, str], WireEnd],
    switches: Mapping[tuple[str, str], WireEnd],
    unread: Mapping[str, str] | None = None,
) -> list[Finding]:
    """One link.health finding per cable of the map. `hosts` by (host, NIC), `switches` by (switch,
    port); `unread`: why a node (host or switch) could not be read at all."""
    why = unread or {}
    findings = []
    for link in fabric.links:
        subject = f"{link.host}:{link.nic} <-> {link.switch_end}"
        host, switch = hosts.get((link.host, link.nic)), switches.get((link.switch, link.port))
        if host is None or switch is None:
            missing = (
                f"host {link.host} did not report {link.nic}"
                + (f" ({why[link.host]})" if link.host in why else "")
                if host is None
                else f"switch {link.switch} was not read"
                + (f" ({why[link.switch]})" if link.switch in why else "")
            )
            found = errored(HEALTH, subject, "both ends of the cable read", "not read", missing)
        else:
            found = judge_cable(link, host, switch)
        findings.append(replace(found, where=Where(link.host, link.nic, link.switch_end)))
    return findings


HealthJudge = Callable[
    [Fabric, Mapping[tuple[str, str], WireEnd], Mapping[tuple[str, str], WireEnd], Mapping[str, str] | None],
    list[Finding],
]
HEALTH_CHECK: Check[HealthJudge] = Check(
    HEALTH,
    "link",
    "cable",
    ("the host and switch stages' wire counters and module diagnostics",),
    "both ends' wire clean (errors, flaps, optics as host/switch .link_errors, .link_flaps, .optics); "
    "a failure names the direction and what to clean, reseat or replace",
    None,
    None,
    check_link_health,
    kinds=ROCE,
)
LINK_HEALTH_CHECK_DECLS: tuple[Check[HealthJudge], ...] = (HEALTH_CHECK,)
