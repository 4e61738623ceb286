"""`fabcheck node-check` (the host checks judged on this node, optionally draining it in Slurm) and
`fabcheck desired-record` (the record node-check reads, as the gate plans it for one host)."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

from fabcheck.cli.options import add_counter_window, seconds
from fabcheck.desired.record import DEFAULT_RECORD_PATH, RecordError, read_record, record_json
from fabcheck.errors import UsageError
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.node_check import (
    DEFAULT_COMMAND_S,
    NodeVerdict,
    check_node,
    host_record,
    host_records,
    local_limits,
)
from fabcheck.gate.slurm_node import SlurmError, act_on_node
from fabcheck.intent.loader import load_inventory
from fabcheck.report import metrics, outputs
from fabcheck.report.model import EXIT_CODES_HELP, Run, Subject
from fabcheck.report.text import render_findings

NODE_CHECK_EPILOG = f"""\
Reads the desired record (written by `fabcheck desired-record` or the roce_host role), runs the host
collection here (no ssh, no inventory) bounded by --timeout plus the record's counter window, and
judges the gate's host checks; the fleet checks, which compare hosts, are left to `fabcheck validate`.
It changes no configuration. With --slurm: a failure drains this node (`fabcheck: <check> <part>:
<actual>`), a pass resumes it only when fabcheck drained it; any other drain, a down, failing,
maintenance or rebooting node is left alone; a node that could not be judged is left as it is.

{EXIT_CODES_HELP}
examples:
  fabcheck node-check
  fabcheck node-check --desired /etc/fabcheck/desired.json --json
  fabcheck node-check --slurm          (as Slurm's HealthCheckProgram: deploy/slurm/)
  fabcheck node-check --textfile /var/lib/prometheus/node-exporter
"""

TEXTFILE_NAME = "fabcheck-node-check.prom"

RECORD_EPILOG = """\
The record is the host's desired state and intent exactly as `fabcheck validate` plans them (one
derivation), versioned; node-check refuses a record of another version.

examples:
  fabcheck desired-record -i inventory/lab --host gpu01 -o /etc/fabcheck/desired.json
  fabcheck desired-record -i inventory/lab --host gpu01 --counter-window 0
  fabcheck desired-record -i inventory/lab --all -o records/     (records/gpu01.json, ...)
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "node-check",
        help="judge the host checks on this node against its desired record (Slurm health check)",
        description="Judge the gate's host checks on this node itself, against its desired record.",
        epilog=NODE_CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--desired",
        default=DEFAULT_RECORD_PATH,
        metavar="FILE",
        help=f"the record (default {DEFAULT_RECORD_PATH})",
    )
    parser.add_argument("--json", action="store_true", help="print the result as one JSON document")
    parser.add_argument("-v", "--verbose", action="store_true", help="list passing checks too")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_COMMAND_S,
        metavar="S",
        help="seconds the collection's tools may take here, besides the counter window; a hung tool is "
        f"stopped (default {DEFAULT_COMMAND_S:g}: with the default window node-check ends within 41 s, "
        "57 s with --slurm, under Slurm's 60 s HealthCheckTimeout)",
    )
    parser.add_argument(
        "--textfile",
        metavar="DIR",
        help=f"also write Prometheus metrics to DIR/{TEXTFILE_NAME} (node_exporter's textfile collector "
        "directory), atomically",
    )
    parser.add_argument(
        "--slurm", action="store_true", help="drain this node on failure, resume it on a pass"
    )
    parser.add_argument(
        "--slurm-node",
        metavar="NAME",
        help="this node's Slurm name (default $SLURMD_NODENAME, as slurmd sets it, else the short host name)",
    )
    parser.add_argument("--scontrol", default="scontrol", metavar="PATH", help="the scontrol to run")
    parser.set_defaults(func=run_node_check)

    record = sub.add_parser(
        "desired-record",
        help="write one GPU host's desired record for node-check",
        description="Write one GPU host's desired record (as the gate plans it) for `fabcheck node-check`.",
        epilog=RECORD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    record.add_argument("-i", "--inventory", required=True, help="the Ansible inventory (file or folder)")
    which = record.add_mutually_exclusive_group(required=True)
    which.add_argument("--host", help="the GPU host's inventory name")
    which.add_argument(
        "--all", action="store_true", help="every GPU host, one plan: -o DIR gets DIR/<host>.json for each"
    )
    record.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="the file (with --all: the directory) to write (default: stdout)",
    )
    add_counter_window(record)
    record.set_defaults(func=run_desired_record)


def run_node_check(args: argparse.Namespace) -> int:
    started, started_s = time.monotonic(), time.time()
    if args.textfile is not None and not Path(args.textfile).is_dir():
        raise UsageError(f"--textfile {args.textfile}: not a directory (node_exporter's textfile directory)")
    try:
        text = Path(args.desired).read_text(encoding="utf-8")
    except OSError as err:
        raise RecordError(args.desired, "", f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise RecordError(args.desired, "", "not UTF-8 text") from None
    record = read_record(text, args.desired)
    result = NodeVerdict(check_node(record, local_limits(record, args.timeout)))
    action, slurm_error = None, None
    if args.slurm:
        node = args.slurm_node or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
        try:
            action = act_on_node(node, result.result.verdict, result.result.findings, args.scontrol)
        except SlurmError as err:  # the verdict is still printed; the error then ends the run (exit 2)
            slurm_error = err
    seconds_taken = time.monotonic() - started
    if args.json:
        document = result.result.to_json() | {
            "exit_code": result.exit_code,
            "seconds": round(seconds_taken, 3),
        }
        if action is not None:
            document["slurm"] = {"action": action.kind, "why": action.why, "reason": action.reason}
        elif slurm_error is not None:
            document["slurm"] = {"error": str(slurm_error)}
        print(json.dumps(document, indent=2))
    else:
        print(f"{record.host}: {result.result.verdict.value.upper()} ({seconds_taken:.1f} s)")
        print("\n".join(render_findings(result.result.findings, args.verbose)))
        if action is not None:
            print(f"slurm: {action.why}")
    sys.stdout.flush()
    if args.textfile is not None:  # after the verdict is printed: a write error still ends in exit 2
        write_metrics(Path(args.textfile) / TEXTFILE_NAME, result.result, seconds_taken, started_s)
    if slurm_error is not None:
        raise slurm_error
    return result.exit_code


def write_metrics(path: Path, result: HostResult, elapsed_s: float, started_s: float) -> None:
    """The host's findings and the counters its collection read, in validate --metrics' format, written
    through a temporary file and a rename (node_exporter reads only `*.prom` files, so it never sees the
    temporary one: https://github.com/prometheus/node_exporter#textfile-collector)."""
    run = Run("node-check", (Subject(result.host, result.kind, result.findings),), elapsed_s=elapsed_s)
    readings = None if result.evidence is None else metrics.host_readings(result.host, result.evidence)
    outputs.write_atomically("--textfile", str(path), metrics.render(run, readings, started_s=started_s))


def run_desired_record(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    if args.all:
        if not args.output:
            raise UsageError("desired-record --all writes one file per GPU host: give -o DIRECTORY")
        records = host_records(inventory, args.counter_window)
        unsafe = [host for host in records if Path(host).name != host or host.startswith(".")]
        if unsafe:  # an inventory name is data: it never picks a path outside the directory
            raise UsageError(f"desired-record --all: host name(s) {unsafe} cannot be file names; use --host")
        for host, record in records.items():
            write_record(Path(args.output) / f"{host}.json", record_json(record))
        return 0
    text = record_json(host_record(inventory, args.host, args.counter_window))
    if not args.output:
        sys.stdout.write(text)
        return 0
    write_record(Path(args.output), text)
    return 0


def write_record(path: Path, text: str) -> None:
    """A record whole or not at all (report.outputs.write_atomically), in a folder made if missing:
    node-check under Slurm reads the old record or the new one, never half of one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"-o {path}: cannot make its folder: {err.strerror or err}") from None
    outputs.write_atomically("-o", str(path), text)
