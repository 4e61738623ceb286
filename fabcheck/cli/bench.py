"""`fabcheck bench nccl -i INVENTORY`: nccl-tests sweeps per op and node count through the inventory's
launcher, into a run directory that `fabcheck report` reads."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fabcheck import __version__
from fabcheck.checks.model import Finding, failed, passed, skipped
from fabcheck.errors import UsageError
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck.launch import launcher_config
from fabcheck.perf.bench import (
    DONE,
    OPS,
    SKIPPED,
    SUMMARY_NAME,
    BenchPlan,
    Point,
    parse_size,
    run_bench,
    validate_plan,
)
from fabcheck.perf.launcher import InventoryLauncher
from fabcheck.perf.report import finding_of, format_size
from fabcheck.report.model import EXIT_CODES_HELP, NodeKind, Run, Subject, exit_code

GPU_GROUP = "gpu_hosts"

EPILOG = f"""\
Each point (op x node count) runs <op>_perf -b MIN -e MAX -f 2 -g 1 on the first N hosts of the
{GPU_GROUP} group, one rank per GPU, with NCCL_DEBUG=INFO (your NCCL_* variables win). RUN_DIR gets
raw/<op>-<N>n.txt per point and {SUMMARY_NAME} (intent, hosts, versions, env, the transport proof per
point); run the same command again to resume: finished points are not redone. hypercube is skipped,
with the reason, where the rank count is not a power of two.

{EXIT_CODES_HELP}
examples:
  fabcheck bench nccl -i inventory/prod --nodes 1,2,4,8 --out runs/fabric-a
  fabcheck bench nccl -i inventory/lab --ops all_reduce,alltoall --min 1M --max 64M
  fabcheck report runs/fabric-a --html fabric-a.html
"""


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="run fabric benchmarks (nccl-tests sweeps) into a run directory")
    kinds = bench.add_subparsers(dest="bench_kind", required=True, metavar="KIND")
    parser = kinds.add_parser(
        "nccl",
        help="nccl-tests per op and node count through the inventory's launcher",
        description="Run nccl-tests per op and node count through the inventory's launcher (mpirun, srun).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-i", "--inventory", required=True, help="inventory with the GPU hosts and the intent"
    )
    parser.add_argument("--ops", type=_ops, default=OPS, help=f"comma-separated (default: {','.join(OPS)})")
    parser.add_argument("--min", type=_size, default=8 << 20, metavar="SIZE", help="first size (default 8M)")
    parser.add_argument("--max", type=_size, default=8 << 30, metavar="SIZE", help="last size (default 8G)")
    parser.add_argument(
        "--nodes", type=_node_counts, help="node counts, e.g. 1,2,4 (default: 1, 2, 4, ... and all hosts)"
    )
    parser.add_argument("--ranks-per-node", type=int, help="ranks (GPUs) per host (default: the rail count)")
    parser.add_argument("--tests-dir", default="", help="directory of the nccl-tests binaries on the hosts")
    parser.add_argument("--out", help="run directory (default: runs/nccl-YYYYmmdd-HHMMSS)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # The environment every rank gets (NCCL_DEBUG=INFO, the intent's GID index and traffic class) is
    # derived once, in fabcheck.desired.nccl, for the gate's nccl stage and this bench alike.
    from fabcheck.desired.nccl import desired_nccl_job

    if args.min > args.max:
        raise UsageError(f"--min {args.min} is above --max {args.max}; expected MIN <= MAX")
    inventory = load_inventory(args.inventory)
    entries = inventory.group(GPU_GROUP)
    hosts = tuple(entry.name for entry in entries)
    if not hosts:
        raise UsageError(f"{args.inventory}: no host in group {GPU_GROUP}; expected the GPU hosts there")
    node_counts = args.nodes or default_node_counts(len(hosts))
    validate_plan(args.ops, node_counts, hosts)
    ranks = args.ranks_per_node or len(entries[0].intent.rails)
    if ranks < 1:
        raise UsageError(
            "--ranks-per-node: the intent has no rails to count GPUs by; give --ranks-per-node N"
        )
    env = {**desired_nccl_job([(e.name, e.intent) for e in entries]).env, **_user_nccl(os.environ)}
    config = launcher_config(entries)
    plan = BenchPlan(
        tuple(args.ops),
        tuple(node_counts),
        hosts,
        ranks,
        args.min,
        args.max,
        env,
        args.tests_dir,
        _context(inventory, hosts, config.kind, config.binary),
    )
    out = Path(args.out or time.strftime("runs/nccl-%Y%m%d-%H%M%S"))
    print(f"fabcheck bench nccl: {len(plan.points())} point(s) into {out}", file=sys.stderr)
    summary = run_bench(plan, InventoryLauncher(config, entries), out, inventory.intent, _progress)
    outcome = bench_run(summary["points"])
    print(f"fabcheck bench nccl: {outcome.verdict.value.upper()}; report it with: fabcheck report {out}")
    return exit_code(outcome)


def default_node_counts(hosts: int) -> list[int]:
    counts, n = [], 1
    while n < hosts:
        counts.append(n)
        n *= 2
    return [*counts, hosts]


def bench_run(points: Mapping[str, Mapping[str, Any]]) -> Run:
    """Per point: launched and measured, and its transport proof, as findings for the exit policy."""
    subjects = []
    for name, record in points.items():
        findings: list[Finding] = []
        if record["status"] == SKIPPED:
            findings.append(skipped("bench.point", name, record["reason"]))
        elif record["status"] == DONE:
            findings.append(passed("bench.point", name, "a result table, exit 0", f"{record['sizes']} sizes"))
        else:
            findings.append(
                failed("bench.point", name, "a result table, exit 0", record["reason"], "see the raw output")
            )
        transport = record.get("transport", {}).get("findings", [])
        findings += [finding_of(f) for f in transport]
        subjects.append(Subject(name, NodeKind.FILE, tuple(findings), label="nccl-tests"))
    return Run("bench", tuple(subjects))


def _progress(index: int, total: int, point: Point, record: Mapping[str, Any]) -> None:
    head = f"[{index}/{total}] {point.op} on {point.nodes} node(s)"
    if record["status"] == SKIPPED:
        line = f"skipped: {record['reason']}"
    elif record["status"] == DONE:
        transport = record.get("transport", {})
        size = format_size(record["largest_bytes"]) if record.get("largest_bytes") else "?"
        state = "resumed" if record.get("resumed") else "done"
        line = (
            f"{state}: {record['busbw_at_largest']:.2f} GB/s at {size}, "
            f"network {transport.get('network') or '?'}, GDR {_on_off(transport.get('gdr'))} "
            f"({record['seconds']:.1f} s)"
        )
    else:
        line = f"FAILED: {record['reason']}"
    print(f"{head}: {line}", file=sys.stderr, flush=True)


def _on_off(value: object) -> str:
    if value is None:
        return "not shown"
    return "on" if value else "off"


def _context(inventory: Inventory, hosts: tuple[str, ...], kind: str, binary: str) -> dict[str, Any]:
    return {
        "intent": inventory.intent_json(),
        "inventory": inventory.source,
        "hosts": list(hosts),
        "versions": {"fabcheck": __version__, "launcher": f"{kind} ({binary})"},
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _user_nccl(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if name.startswith("NCCL_")}


def _ops(text: str) -> tuple[str, ...]:
    ops = tuple(op.strip() for op in text.split(",") if op.strip())
    unknown = [op for op in ops if op not in OPS]
    if not ops or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown op(s) {', '.join(unknown) or text!r}; expected {','.join(OPS)}"
        )
    return ops


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _node_counts(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r}: expected node counts above 0, e.g. 1,2,4")
    return sorted({int(p) for p in parts})
