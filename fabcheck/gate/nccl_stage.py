"""The gate's `nccl` stage: all_reduce_perf across the planned GPU hosts through the inventory's launcher
(Open MPI mpirun or Slurm srun, fabcheck.launch), one rank per GPU, NCCL_DEBUG=INFO with
NCCL_DEBUG_SUBSYS=INIT,NET, judged per rank (fabcheck.checks.nccl_ranks): the RDMA network, GDR on every
inter-node channel, each GPU on its affine rail NIC per the host stage's topo -m, no stray device in the
HCA list, the intent's GID index and traffic class, and the busbw floor at the largest size.

Not run by default (it loads the fabric): `fabcheck validate --stages host,nccl`. The user's NCCL_*
variables (the controller's environment) reach every rank and win over the stage's; one that lowers
NCCL_DEBUG or drops INIT/NET from NCCL_DEBUG_SUBSYS is named in a note, since the proof then lacks its lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, failed, passed
from fabcheck.checks.nccl_ranks import (
    BUSBW,
    LAUNCH,
    PairClassOf,
    check_busbw,
    check_host_ranks,
    check_pair_transport,
)
from fabcheck.desired.nccl import (
    DEBUG_ENV,
    PROGRAM,
    DesiredNcclHost,
    DesiredNcclJob,
    desired_nccl_job,
)
from fabcheck.desired.nvlink import PAIR_HOST, PAIR_NETWORK, DesiredNvlinkHost
from fabcheck.errors import DeadlinePassed, FabcheckError, ParseError
from fabcheck.gate.nccl_figure import busbw_figure
from fabcheck.gate.stages import NodeOutcome, StageContext, StageOutcome
from fabcheck.intent.fabric import GPU_HOSTS, Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.launch import (
    LauncherConfig,
    LaunchRequest,
    LaunchResult,
    launch_hosts,
    launcher_config,
    launcher_for,
)
from fabcheck.parsers.nccl_ranks import RankFacts, parse_nccl_ranks
from fabcheck.parsers.nccl_tests import NcclTestsRun, parse_nccl_tests
from fabcheck.parsers.topo import TopoMatrix
from fabcheck.report.model import NodeKind

# NCCL_DEBUG levels that print INFO lines (NONE < VERSION < WARN < INFO < ABORT < TRACE).
INFO_LEVELS = ("INFO", "ABORT", "TRACE")
NEEDED_SUBSYSTEMS = ("INIT", "NET")
STDERR_TAIL = 600  # characters of the launcher's stderr quoted in a failed launch


Launch = Callable[[LauncherConfig, LaunchRequest], LaunchResult]


def run_launch(config: LauncherConfig, request: LaunchRequest) -> LaunchResult:
    return launcher_for(config).run(request)


def user_nccl_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if name.startswith("NCCL_")}


def lowered_debug(user: Mapping[str, str]) -> list[str]:
    """Notes for each user NCCL_* value that hides lines the proof reads."""
    notes = []
    level = user.get("NCCL_DEBUG")
    if level is not None and level.upper() not in INFO_LEVELS:
        notes.append(
            f"nccl: your NCCL_DEBUG={level} lowers the stage's INFO: {level} hides the transport banner "
            "(Using network, NET/IB : Using, the channels), so the per-rank checks cannot be proven"
        )
    subsys = user.get("NCCL_DEBUG_SUBSYS")
    hidden = hidden_subsystems(subsys) if subsys is not None else []
    if hidden:
        notes.append(
            f"nccl: your NCCL_DEBUG_SUBSYS={subsys} hides {', '.join(hidden)}: the stage needs INIT,NET"
        )
    return notes


def hidden_subsystems(subsys: str) -> list[str]:
    """The needed subsystems a NCCL_DEBUG_SUBSYS value leaves out (`^A,B` excludes A and B)."""
    words = [word.strip().upper() for word in subsys.split(",") if word.strip()]
    if words and words[0].startswith("^"):
        excluded = {word.lstrip("^") for word in words}
        return [name for name in NEEDED_SUBSYSTEMS if name in excluded]
    if "ALL" in words:
        return []
    return [name for name in NEEDED_SUBSYSTEMS if name not in words]


def ranks_per_host(entries: Sequence[HostEntry], topologies: Mapping[str, TopoMatrix | None]) -> int:
    """One rank per GPU: the GPUs of each host's topo -m (else its rail map); every host alike."""
    counts: dict[str, int] = {}
    for entry in entries:
        topo = topologies.get(entry.name)
        counts[entry.name] = len(topo.gpus) if topo is not None else len(entry.intent.rails)
    if not any(counts.values()):
        raise FabcheckError("nccl: no GPU count for any host (topo -m unread and no fabric_intent.rails)")
    if len(set(counts.values())) != 1:
        shown = ", ".join(f"{host} {count}" for host, count in counts.items())
        raise FabcheckError(
            f"nccl: the hosts have different GPU counts ({shown}); one job runs alike on each"
        )
    return next(iter(counts.values()))


def topologies_of(context: StageContext) -> dict[str, TopoMatrix | None]:
    found: dict[str, TopoMatrix | None] = {}
    for result in context.hosts:
        topo = result.evidence.topo if result.evidence is not None else None
        found[result.host] = topo if isinstance(topo, TopoMatrix) else None
    return found


def table_of(result: LaunchResult) -> NcclTestsRun | None:
    """Rank 0 prints the nccl-tests table (NCCL INFO lines between its rows are read past)."""
    lines = result.ranks.get(0)
    if not lines:
        return None
    try:
        return parse_nccl_tests("\n".join(lines) + "\n", source="rank 0")
    except ParseError:
        return None


def launch_finding(result: LaunchResult, subject: str, launcher: str) -> Finding:
    expected = f"{launcher} exits 0 within the stage's time limit"
    tail = " ".join(result.stderr.strip().split())[-STDERR_TAIL:]
    if result.timed_out:
        return failed(
            LAUNCH,
            subject,
            expected,
            f"killed after {result.seconds:.0f} s" + (f"; stderr: {tail}" if tail else ""),
            "the collective hung: a rank waits on a peer it cannot reach (firewall, NCCL_SOCKET_IFNAME, a "
            "down link); read the per-rank findings for the host that did not finish",
        )
    if result.rc != 0:
        return failed(
            LAUNCH,
            subject,
            expected,
            f"exit {result.rc}" + (f"; stderr: {tail}" if tail else ""),
            "the launcher or a rank failed: the stderr tail says which; ssh to the hosts as the launcher "
            "does",
        )
    return passed(LAUNCH, subject, expected, f"exit 0 in {result.seconds:.1f} s")


def judge(
    entries: Sequence[HostEntry],
    result: LaunchResult,
    per_host: int,
    job: DesiredNcclJob,
    topologies: Mapping[str, TopoMatrix | None],
    launcher: str,
    desired: Mapping[str, DesiredNcclHost],
    nvlink: Mapping[str, DesiredNvlinkHost] = MappingProxyType({}),
) -> dict[str, list[Finding]]:
    """Pure: the launch's output -> findings per host. Rank r runs on host r // per_host, as the launchers
    place ranks (mpirun --map-by ppr:G:node over the hostfile in order, srun's block distribution); each
    pair of ranks is judged by its hosts' class (GateDesired.nvlink: NVLink inside a domain)."""
    ranks = parse_nccl_ranks(result.merged)
    class_of = pair_class_of(nvlink)

    def host_of(rank: int) -> str | None:
        index = rank // per_host
        return entries[index].name if 0 <= index < len(entries) else None

    subject = f"all_reduce_perf on {len(entries)} hosts x {per_host} ranks"
    job_findings = [launch_finding(result, subject, launcher), fabric_busbw(table_of(result), job, subject)]
    findings: dict[str, list[Finding]] = {}
    for index, entry in enumerate(entries):
        expected_ranks = list(range(index * per_host, (index + 1) * per_host))
        mine: list[RankFacts] = [r for r in ranks if r.rank in expected_ranks]
        rank_findings = check_host_ranks(
            entry.name, mine, expected_ranks, desired[entry.name], topologies.get(entry.name)
        )
        pairs = check_pair_transport(entry.name, mine, host_of, class_of) if mine else None
        findings[entry.name] = [*job_findings, *rank_findings, *([pairs] if pairs else [])]
    return findings


def pair_class_of(nvlink: Mapping[str, DesiredNvlinkHost]) -> PairClassOf:
    """How two hosts' ranks must talk: their desired NVLink domain says (a host with no entry is a
    domain of its own, with no NVLink the checks could expect)."""

    def class_of(host: str, peer: str) -> str:
        mine = nvlink.get(host)
        if mine is not None:
            return mine.pair_class(peer)
        return PAIR_HOST if host == peer else PAIR_NETWORK

    return class_of


def fabric_busbw(table: NcclTestsRun | None, job: DesiredNcclJob, subject: str) -> Finding:
    """The busbw floor, but never from a table whose ranks all ran on one host: such a run measured
    NVLink/NVLS, not the NICs, and is no fabric proof however fast it was."""
    finding = check_busbw(table, job, subject)
    if table is not None and table.scope == "intra-node":
        return failed(
            BUSBW,
            subject,
            finding.expected,
            f"every rank ran on {table.hosts[0]}: an intra-node result (NVLink/NVLS/PCIe), no fabric proof",
            "the launcher placed all ranks on one host: check the hostfile / srun node list and -np",
        )
    return finding  # a floor set by one slow node names it in `expected` (job_busbw_floor)


@dataclass(frozen=True)
class NcclStage:
    name: str = "nccl"
    requires: tuple[str, ...] = ("host",)
    by_default: bool = False
    traffic: bool = True
    launch: Launch = field(default=run_launch)
    environ: Callable[[], Mapping[str, str]] = field(default=lambda: os.environ)

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return GPU_HOSTS in entry.groups

    def run(self, context: StageContext) -> StageOutcome:
        entries = [entry for entry in context.plan.hosts if self.claims(entry, context.plan.fabric)]
        if len(entries) < 2:
            # The stage was asked for but cannot prove the inter-node path: not judged, never a pass.
            nodes = tuple(
                NodeOutcome(
                    e.name,
                    NodeKind.HOST,
                    (
                        not_judged(
                            LAUNCH,
                            e.name,
                            "an all_reduce across at least two GPU hosts",
                            "one GPU host planned: NCCL's inter-node path needs two",
                            "plan two or more GPU hosts (--limit), or leave the nccl stage out of --stages",
                        ),
                    ),
                )
                for e in entries
            )
            return StageOutcome(self.name, nodes)
        topologies = topologies_of(context)
        per_host = ranks_per_host(entries, topologies)
        job = desired_nccl_job([(e.name, e.intent) for e in entries], context.plan.desired.nvlink)
        user = user_nccl_env(self.environ())
        config = launcher_config(entries)
        left = context.seconds_left("the NCCL job started")
        timeout = config.timeout_s if left is None else min(config.timeout_s, left)
        request = LaunchRequest(
            PROGRAM, job.args, launch_hosts(entries), per_host, {**job.env, **user}, timeout_s=timeout
        )
        result = self.launch(config, request)
        if result.timed_out and timeout < config.timeout_s:
            # Killed by the run's deadline, not by the launcher's own limit: nothing says it hung.
            raise DeadlinePassed(
                f"the run's deadline (--deadline {context.deadline_s:g} s) ended the NCCL job after "
                f"{result.seconds:.0f} s"
            )
        findings = judge(
            entries,
            result,
            per_host,
            job,
            topologies,
            config.kind,
            context.plan.desired.nccl,
            context.plan.desired.nvlink,
        )
        table = table_of(result)
        figure = busbw_figure(table, job.busbw_floor_gbytes, job.min_bytes) if table is not None else None
        nodes = tuple(NodeOutcome(e.name, NodeKind.HOST, tuple(findings[e.name])) for e in entries)
        debug = dict(DEBUG_ENV)
        overridden = sorted(name for name in user if name in job.env and name not in debug)
        notes = [
            f"nccl: {PROGRAM} through {config.kind} on {len(entries)} hosts x {per_host} ranks, "
            f"{result.seconds:.1f} s: {' '.join(result.argv)}",
            f"nccl: busbw floor {job.busbw_floor_gbytes:.2f} GB/s ({job.floor_basis}), bound by "
            f"{job.bounding_host}",
            *lowered_debug(user),
            *(
                f"nccl: {name}={user[name]} comes from your environment, not the intent"
                for name in overridden
            ),
        ]
        return StageOutcome(self.name, nodes, tuple(notes), (figure,) if figure is not None else ())


STAGE = NcclStage()
