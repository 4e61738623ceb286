"""`fabcheck bench nccl`: the run loop. Per op and node count one nccl-tests launch, its raw output kept
under RUN_DIR/raw/, a summary (RUN_DIR/fabcheck-bench.json) rewritten after every point so a killed run
resumes where it stopped: a point is redone only when it has no finished record and output.

The loop talks to the cluster through PointLauncher (a request -> output text and rc), so it is tested
with a stand-in; launcher.py adapts fabcheck.launch (mpirun, srun) to it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fabcheck.checks.model import errored
from fabcheck.checks.nccl_log import check_nccl_log
from fabcheck.errors import ParseError, UsageError
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_log import nccl_log_facts, parse_nccl_log
from fabcheck.parsers.nccl_tests import parse_nccl_tests
from fabcheck.perf.curves import BENCH_SUMMARY as SUMMARY_NAME
from fabcheck.perf.curves import PARTIAL_SUFFIX

RAW_DIR = "raw"
DONE, FAILED, SKIPPED = "done", "failed", "skipped"
OPS = ("all_reduce", "all_gather", "alltoall", "sendrecv", "hypercube", "reduce_scatter", "broadcast")
POWER_OF_TWO_OPS = {"hypercube"}  # nccl-tests' hypercube pairs ranks by XOR of their bits


@dataclass(frozen=True)
class PointRequest:
    """One launch: `program` with `args` on `hosts`, `ranks_per_host` ranks each, with `env`."""

    program: str
    args: tuple[str, ...]
    hosts: tuple[str, ...]
    ranks_per_host: int
    env: Mapping[str, str]


@dataclass(frozen=True)
class PointOutput:
    text: str  # stdout of every rank, launcher tags removed (the nccl-tests table and NCCL lines)
    rc: int | None  # None: killed at its timeout
    argv: tuple[str, ...] = ()  # the exact command line, for the summary
    seconds: float = 0.0
    stderr: str = ""


class PointLauncher(Protocol):
    def launch(self, request: PointRequest) -> PointOutput: ...


@dataclass(frozen=True)
class Point:
    op: str
    nodes: int

    @property
    def name(self) -> str:
        return f"{self.op}-{self.nodes}n"


@dataclass(frozen=True)
class BenchPlan:
    """What to run: ops x node counts over the first N hosts, and what every summary carries."""

    ops: tuple[str, ...]
    node_counts: tuple[int, ...]
    hosts: tuple[str, ...]
    ranks_per_host: int
    min_bytes: int
    max_bytes: int
    env: Mapping[str, str]
    binary_dir: str = ""  # where the nccl-tests binaries are on the hosts ("" : on PATH)
    context: Mapping[str, Any] = field(default_factory=dict)  # intent, versions: for the summary

    def points(self) -> list[Point]:
        return [Point(op, nodes) for op in self.ops for nodes in self.node_counts]

    def request(self, point: Point) -> PointRequest:
        program = f"{self.binary_dir.rstrip('/')}/{point.op}_perf" if self.binary_dir else f"{point.op}_perf"
        args = ("-b", str(self.min_bytes), "-e", str(self.max_bytes), "-f", "2", "-g", "1")
        return PointRequest(program, args, self.hosts[: point.nodes], self.ranks_per_host, self.env)


def skip_reason(plan: BenchPlan, point: Point) -> str | None:
    ranks = point.nodes * plan.ranks_per_host
    if point.op in POWER_OF_TWO_OPS and ranks & (ranks - 1):
        shape = f"{point.nodes} x {plan.ranks_per_host}"
        return f"{ranks} ranks ({shape}) is not a power of two; hypercube needs one"
    return None


Progress = Callable[[int, int, Point, Mapping[str, Any]], None]


def run_bench(
    plan: BenchPlan,
    launcher: PointLauncher,
    out_dir: Path,
    intent: FabricIntent,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run every point not yet finished in `out_dir`; return the summary as written."""
    (out_dir / RAW_DIR).mkdir(parents=True, exist_ok=True)
    summary = _load_summary(out_dir, plan)
    points = plan.points()
    for index, point in enumerate(points, start=1):
        record = summary["points"].get(point.name)
        if record is not None and _finished(out_dir, record):
            record = {**record, "resumed": True}
        elif (reason := skip_reason(plan, point)) is not None:
            record = {"op": point.op, "nodes": point.nodes, "status": SKIPPED, "reason": reason}
        else:
            record = _run_point(plan, launcher, out_dir, intent, point)
        summary["points"][point.name] = record
        _write_summary(out_dir, summary)
        if progress is not None:
            progress(index, len(points), point, record)
    return summary


def _run_point(
    plan: BenchPlan, launcher: PointLauncher, out_dir: Path, intent: FabricIntent, point: Point
) -> dict[str, Any]:
    request = plan.request(point)
    output = launcher.launch(request)
    raw = out_dir / RAW_DIR / f"{point.name}.txt"
    _write_atomic(raw, output.text)
    record: dict[str, Any] = {
        "op": point.op,
        "nodes": point.nodes,
        "hosts": list(request.hosts),
        "ranks": len(request.hosts) * request.ranks_per_host,
        "argv": list(output.argv) or [request.program, *request.args],
        "rc": output.rc,
        "seconds": round(output.seconds, 3),
        "raw": f"{RAW_DIR}/{raw.name}",
        "raw_sha256": hashlib.sha256(output.text.encode("utf-8")).hexdigest(),
        "transport": transport_proof(output.text, raw.name, intent),
    }
    try:
        run = parse_nccl_tests(output.text, source=raw.name)
    except ParseError as err:
        return {
            **record,
            "status": FAILED,
            "reason": _launch_failure(output) or f"no result table: {err.message}",
        }
    largest = run.rows[-1] if run.rows else None
    record |= {
        "nccl_version": run.nccl_version,
        "sizes": len(run.rows),
        "largest_bytes": largest.bytes if largest else None,
        "busbw_at_largest": largest.oop_busbw if largest else None,
        "wrong": run.wrong_total,
    }
    failure = _launch_failure(output)
    return {**record, "status": FAILED, "reason": failure} if failure else {**record, "status": DONE}


def _launch_failure(output: PointOutput) -> str | None:
    if output.rc is None:
        return "killed at the launcher timeout"
    if output.rc != 0:
        tail = output.stderr.strip().splitlines()[-1:] or ["no stderr"]
        return f"exit status {output.rc}: {tail[0][:300]}"
    return None


def transport_proof(text: str, source: str, intent: FabricIntent) -> dict[str, Any]:
    """What the NCCL_DEBUG=INFO lines of one run prove: network, RDMA, GDR, HCAs, and the verdicts."""
    try:
        log = parse_nccl_log(text, source=source)
    except ParseError as err:
        unproven = errored(
            "nccl.transport",
            "NCCL",
            "the NCCL_DEBUG=INFO transport lines in the output",
            err.message,
            "NCCL_DEBUG=INFO must reach every rank (the launcher's env passing: mpirun -x, srun --export)",
        )
        return {"error": err.message, "findings": [unproven.to_json()]}
    return {
        **nccl_log_facts(log),
        "findings": [finding.to_json() for finding in check_nccl_log(log, intent)],
    }


def _finished(out_dir: Path, record: Mapping[str, Any]) -> bool:
    """Done, with its raw output still there and unchanged (a killed run may leave neither)."""
    if record.get("status") != DONE:
        return False
    raw = out_dir / str(record.get("raw", ""))
    if not raw.is_file():
        return False
    return hashlib.sha256(raw.read_bytes()).hexdigest() == record.get("raw_sha256")


def _load_summary(out_dir: Path, plan: BenchPlan) -> dict[str, Any]:
    path = out_dir / SUMMARY_NAME
    fresh = {**plan.context, "plan": _plan_json(plan), "points": {}}
    if not path.exists():
        return fresh
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"{path}: cannot read the summary of the run to resume: {err}") from None
    if not isinstance(old, dict) or not isinstance(old.get("points"), dict):
        raise UsageError(f"{path}: not a fabcheck bench summary (no 'points'); use another --out")
    if old.get("plan", {}).get("sweep") != _plan_json(plan)["sweep"]:
        raise UsageError(
            f"{path}: that run swept {old.get('plan', {}).get('sweep')}, this one "
            f"{_plan_json(plan)['sweep']}; resume with the same sizes, hosts and ranks, or use another --out"
        )
    return {**fresh, "points": old["points"]}


def _plan_json(plan: BenchPlan) -> dict[str, Any]:
    """`sweep` must match for a resume (the same points mean the same thing); the rest may grow."""
    return {
        "ops": list(plan.ops),
        "node_counts": list(plan.node_counts),
        "sweep": {
            "min_bytes": plan.min_bytes,
            "max_bytes": plan.max_bytes,
            "hosts": list(plan.hosts),
            "ranks_per_host": plan.ranks_per_host,
            "env": dict(plan.env),
        },
    }


def _write_summary(out_dir: Path, summary: Mapping[str, Any]) -> None:
    _write_atomic(out_dir / SUMMARY_NAME, json.dumps(summary, indent=1) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    """Write beside, then rename: a kill leaves the old file or the new one, never half of one."""
    partial = path.with_name(path.name + PARTIAL_SUFFIX)
    with partial.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def parse_size(text: str) -> int:
    """nccl-tests' size notation: 8M, 8G, 512K or bytes (powers of 1024, as -b/-e read them)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    body, unit = (text[:-1], units[text[-1].upper()]) if text and text[-1].upper() in units else (text, 1)
    if not body.isascii() or not body.isdigit() or int(body) == 0:
        raise ValueError(f"{text!r} is not a size; expected bytes or a number with K, M or G, e.g. 8M, 8G")
    return int(body) * unit


def validate_plan(ops: Sequence[str], node_counts: Sequence[int], hosts: Sequence[str]) -> None:
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise UsageError(f"--ops: unknown {', '.join(unknown)}; expected some of {', '.join(OPS)}")
    too_many = [n for n in node_counts if n > len(hosts)]
    if too_many:
        raise UsageError(
            f"--nodes {','.join(map(str, too_many))}: the inventory has {len(hosts)} GPU host(s) "
            f"({', '.join(hosts) or 'none'})"
        )
