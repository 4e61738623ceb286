"""`fabcheck report RUN_DIR`: BusBW curves, regimes, anomalies, scaling and A/B comparison of a
directory of nccl-tests outputs, offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from fabcheck.errors import UsageError
from fabcheck.intent.loader import load_inventory
from fabcheck.perf.curves import load_run_dir
from fabcheck.perf.report import Limit, build_report
from fabcheck.report.model import EXIT_CODES_HELP, exit_code

EPILOG = f"""\
RUN_DIR holds nccl-tests outputs (all_reduce_perf, all_gather_perf, ... stdout, NCCL_DEBUG lines and
launcher prefixes are fine), in any layout and with any names: op, ranks and nodes are read from the
outputs. Files that are not nccl-tests output are named and skipped; truncated ones are used and flagged.
A dip or wrong data is a failure, a truncated output an error (sizes not measured).

{EXIT_CODES_HELP}
examples:
  fabcheck report runs/2026-12-01 --html report.html
  fabcheck report runs/new --compare runs/old --markdown ticket.md -i inventory/example
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "report",
        help="report a directory of nccl-tests outputs (BusBW curves, regimes, anomalies, scaling)",
        description="Report a directory of nccl-tests outputs: per op BusBW vs size, the representative "
        "size, efficiency, regimes, anomalies and scaling; --compare for A vs B.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="directory of nccl-tests outputs (run A)")
    parser.add_argument("--compare", metavar="OTHER", help="a second run directory (B) to compare A against")
    parser.add_argument("-i", "--inventory", help="inventory whose intent gives NICs per node and line rate")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (SVG plots)")
    parser.add_argument("--markdown", metavar="FILE", help="also write a Markdown report")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.set_defaults(func=run)


# option destination -> flag of the files written besides stdout
FILE_FLAGS = {"html": "--html", "markdown": "--markdown"}


def run(args: argparse.Namespace) -> int:
    # matplotlib is imported here, not when the CLI is built: every other command stays quick to start
    from fabcheck.perf import render

    _check_paths(args)
    limit = None
    if args.inventory:
        intent = load_inventory(args.inventory).intent
        limit = Limit(intent.nics_per_node, intent.link.speed_gbps)
    other = load_run_dir(args.compare) if args.compare else None
    report = build_report(load_run_dir(args.run_dir), limit, other)
    print(render.json_document(report) if args.json else render.text(report))
    for dest, flag in FILE_FLAGS.items():
        name, reporter = getattr(args, dest), render.REPORTERS[dest]
        if name is not None:
            try:
                Path(name).write_text(reporter(report), encoding="utf-8")
            except OSError as err:
                raise UsageError(f"{flag} {name}: cannot write it: {err.strerror or err}") from None
    return exit_code(report.run)


def _check_paths(args: argparse.Namespace) -> None:
    """Refuse a report file that could not be written before reading anything (exit 2)."""
    for dest, flag in FILE_FLAGS.items():
        name = getattr(args, dest)
        if name is None:
            continue
        path = Path(name)
        if not name.strip() or path.is_dir() or not path.parent.is_dir():
            raise UsageError(f"{flag} {name!r}: expected a file path to write in an existing directory")
