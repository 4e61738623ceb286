"""The perftest stage of the gate: survey rounds of ib_write_bw between the rail NICs of the GPU hosts,
judged against the physics floor and the peers, localised by re-pairing, and compared with the stored
baseline when there is one. Findings land on each host; the pair heatmap goes to the HTML report.

Not run by default (it loads the fabric): `fabcheck validate --stages host,perftest`. The inventory
variable perftest_mode picks fast (default: one matching per rail) or all (every pair, N-1 rounds)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabcheck.checks.model import Finding, Measure, Status, Where, errored, failed, passed, skipped
from fabcheck.checks.perftest import DRIFT, DRIFT_INPUTS, HOST, LINK, NIC
from fabcheck.errors import UsageError
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import GPU_HOSTS, Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.pairs import baseline as stored
from fabcheck.pairs.heatmap import heatmap
from fabcheck.pairs.localise import Diagnosis, localise
from fabcheck.pairs.rounds import FAST, MODES, Endpoint
from fabcheck.pairs.session import Session, open_session, within_deadline
from fabcheck.pairs.verdict import Measurement
from fabcheck.report.model import NodeKind

MODE_VARIABLE = "perftest_mode"
STAGE_CHECK = "perftest.stage"
NIC_HINT = (
    "this NIC is slow with every peer: check its port speed and width (ibstat Rate), its PCIe link "
    "(lspci LnkSta), its cable and optics, and PFC pause storms on its port"
)
HOST_HINT = (
    "every NIC of this host is slow with known-good peers: a host-wide cause (PCIe root or switch, CPU or "
    "memory placement, firmware, a shaped or congested uplink of the host)"
)
LINK_HINT = "both ends reach the floor with other peers: check the path between them (leaf and spine ports)"
UNLOCALISED_HINT = "no known-good NIC on this rail was free to tell which end is slow: rerun with more hosts"


def mode_of(entries: Sequence[HostEntry]) -> str:
    """perftest_mode of the inventory (the first host's value; a group variable in practice)."""
    value = entries[0].variables.get(MODE_VARIABLE, FAST) if entries else FAST
    if value not in MODES:
        raise UsageError(f"inventory variable {MODE_VARIABLE}={value!r}: expected one of {', '.join(MODES)}")
    return str(value)


@dataclass(frozen=True)
class PerftestStage:
    name: str = "perftest"
    requires: tuple[str, ...] = ("host",)
    by_default: bool = False
    traffic: bool = True

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return GPU_HOSTS in entry.groups

    def run(self, context: StageContext) -> StageOutcome:
        entries = list(context.plan.hosts)
        mode = mode_of(entries)
        limits = context.limits_left("perftest's host setup")
        session = open_session(entries, limits, context.concurrency, mode, context.plan.desired.perftest)
        measure = within_deadline(session, context.limits_left, "perftest")
        diagnosis = localise(session.rounds, measure, session.judge_of, session.endpoints)
        path = stored.default_path(context.inventory.source)
        recorded = stored.load_baseline(path)
        findings = judge_hosts([e.name for e in entries], session, diagnosis, recorded, str(path))
        outcomes = tuple(NodeOutcome(e.name, NodeKind.HOST, tuple(findings[e.name])) for e in entries)
        tested = [e.name for e in entries if e.name not in session.left_out]
        figure = heatmap(tested, diagnosis.measurements, session.floor_of)
        return StageOutcome(self.name, outcomes, notes(session, diagnosis, mode), (figure,))


def notes(session: Session, diagnosis: Diagnosis, mode: str) -> tuple[str, ...]:
    said = [
        f"perftest {mode} mode: {len(diagnosis.measurements)} pairs in {diagnosis.rounds} rounds "
        f"({len(session.rounds)} survey, {diagnosis.rounds - len(session.rounds)} re-pairing)"
    ]
    if session.unpinned:
        said.append(f"perftest ran unpinned (no numactl) on {', '.join(session.unpinned)}")
    return tuple(said)


def judge_hosts(
    hosts: Sequence[str],
    session: Session,
    diagnosis: Diagnosis,
    recorded: stored.Baseline | None,
    baseline_path: str,
) -> dict[str, list[Finding]]:
    """Pure: the diagnosis -> findings per host (NIC, host, link, drift)."""
    findings: dict[str, list[Finding]] = {host: [] for host in hosts}
    for host, reason in session.left_out.items():
        findings[host].append(
            errored(
                STAGE_CHECK, host, "perftest runs on this host", reason, "fix the cause and rerun the stage"
            )
        )
    by_end = _results_by_end(diagnosis.measurements)
    bad = set(diagnosis.bad_nics)
    unlocalised = set(diagnosis.unlocalised)
    for host, want in session.desired.items():
        if host in session.left_out:
            continue
        if host in diagnosis.bad_hosts:
            findings[host].append(_bad_host(host, want.nics, by_end))
            continue
        judged = [_nic_finding(session, Endpoint(host, nic), by_end, bad, unlocalised) for nic in want.nics]
        findings[host] += judged
        good = sum(f.status is Status.PASS for f in judged)
        findings[host].append(
            passed(HOST, host, "not every NIC slow", f"{good} of {len(judged)} NICs reach the floor")
        )
    for link in diagnosis.bad_links:
        finding = failed(
            LINK,
            stored.link_name(link),
            "the pair reaches what both ends reach",
            diagnosis.slow[link],
            LINK_HINT,
        )
        near, far = sorted(link, key=str)
        finding = dataclasses.replace(finding, where=Where(near.host, near.nic, f"{far.host}:{far.nic}"))
        for end in link:
            findings[end.host].append(finding)
    _drift(findings, diagnosis, recorded, baseline_path)
    return findings


def _results_by_end(measurements: Sequence[Measurement]) -> dict[Endpoint, list[Measurement]]:
    by_end: dict[Endpoint, list[Measurement]] = {}
    for m in measurements:
        for end in m.pair.ends:
            by_end.setdefault(end, []).append(m)
    return by_end


def _with(end: Endpoint, results: Sequence[Measurement]) -> str:
    """'2.05 Gb/sec with gpu02/mlx5_0 (round 1), failed with gpu03/mlx5_0 (round 2: ...)'."""
    parts = []
    for m in results:
        peer = m.pair.client if m.pair.server == end else m.pair.server
        value = f"{m.gbps:.2f} Gb/sec" if m.gbps is not None else f"no result ({m.error})"
        parts.append(f"{value} with {peer} (round {m.round})")
    return ", ".join(parts)


def _nic_finding(
    session: Session,
    end: Endpoint,
    by_end: Mapping[Endpoint, list[Measurement]],
    bad: set[Endpoint],
    unlocalised: set[Endpoint],
) -> Finding:
    results = by_end.get(end, [])
    if not results:
        return errored(
            NIC,
            end.nic,
            "a perftest pair on this rail",
            f"no other tested host has {end.nic}: nothing to pair it with",
            "add hosts with this rail to the run, or fix the intent's rails",
        )
    expected = session.floor_text(results[0].pair)
    figure = _slowest(results, session.floor_of(results[0].pair))
    where = Where(end.host, end.nic)
    if end in bad:
        found = failed(NIC, end.nic, expected, f"slow: {_with(end, results)}", NIC_HINT)
    elif end in unlocalised:
        said = f"slow, end not localised: {_with(end, results)}"
        found = failed(NIC, end.nic, expected, said, UNLOCALISED_HINT)
    else:
        found = passed(NIC, end.nic, expected, _with(end, results))
    return dataclasses.replace(found, where=where, measure=figure)


def _slowest(results: Sequence[Measurement], floor_gbps: float) -> Measure | None:
    """The NIC's lowest measured bandwidth against the pair floor (None: no pair measured)."""
    measured = [m.gbps for m in results if m.gbps is not None]
    return Measure(round(min(measured), 2), "Gb/s", round(floor_gbps, 2)) if measured else None


def _bad_host(host: str, nics: Sequence[str], by_end: Mapping[Endpoint, list[Measurement]]) -> Finding:
    shown = "; ".join(
        f"{nic}: {_with(Endpoint(host, nic), by_end.get(Endpoint(host, nic), []))}" for nic in nics
    )
    return failed(
        HOST, host, "not every NIC slow", f"every NIC slow with known-good peers: {shown}", HOST_HINT
    )


def _drift(
    findings: dict[str, list[Finding]],
    diagnosis: Diagnosis,
    recorded: stored.Baseline | None,
    path: str,
) -> None:
    """Layer 3 per measured link. A drifted link with a localised bad end is reported on that end
    only: the localisation already says which side made it slow."""
    if recorded is None:
        for host in findings:
            findings[host].append(skipped(DRIFT, host, f"no baseline at {path} (fabcheck baseline record)"))
        return
    by_link = {stored.link_name(m.pair.key): m for m in diagnosis.measurements}
    blamed = set(diagnosis.bad_nics)
    for drift in stored.drifts(recorded, diagnosis.measurements):
        expected = f"within {DRIFT_INPUTS.max_drop:.0%} of the baseline median {drift.reference:.2f} Gb/sec"
        direction = f"{drift.drop:.1%} below" if drift.drop > 0 else f"{-drift.drop:.1%} above"
        actual = f"{drift.gbps:.2f} Gb/sec ({direction}, {drift.samples} samples)"
        ends = by_link[drift.link].pair.ends
        if not drift.drifted:
            finding, hosts = passed(DRIFT, drift.link, expected, actual), {end.host for end in ends}
        else:
            hint = "the link got slower than its history: compare with switch counters and cabling changes"
            finding = failed(DRIFT, drift.link, expected, actual, hint)
            guilty = {e.host for e in ends if e in blamed or e.host in diagnosis.bad_hosts}
            hosts = guilty or {end.host for end in ends}
        for host in sorted(hosts):
            findings[host].append(finding)


STAGE = PerftestStage()
