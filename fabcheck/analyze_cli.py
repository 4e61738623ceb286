"""`fabcheck analyze KIND FILE...`: judge outputs a user pasted, against the intent or the default one."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from fabcheck.analyze import ANALYZERS, Analysis, Options, analyze
from fabcheck.errors import ParseError, UsageError
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.model import FabricIntent, default_intent
from fabcheck.report import text

READ_CHUNK_CHARS = 1 << 20


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("analyze", help="judge recorded tool output against the fabric intent")
    parser.add_argument("kind", choices=sorted(ANALYZERS), help="what the files hold")
    parser.add_argument("files", nargs="+", help="files to analyze ('-' reads standard input)")
    parser.add_argument(
        "-i", "--inventory", help="inventory with the fabric intent (default: canonical recipe)"
    )
    parser.add_argument("--host", help="inventory host whose intent (rails) applies")
    parser.add_argument("--line-rate-gbps", type=float, help="perftest: NIC line rate (default: intent)")
    parser.add_argument("--json", action="store_true", help="one JSON object per file, one per line")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list passing checks")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    intent = _intent(args)
    options = Options(line_rate_gbps=args.line_rate_gbps)
    analyses: list[Analysis] = []
    unreadable = False
    for name in args.files:
        try:
            analyses.append(analyze(args.kind, _lines(name), name, intent, options))
        except ParseError as err:
            unreadable = True
            _emit_error(args, name, f"cannot read it as {args.kind}: {err}")
        except OSError as err:
            unreadable = True
            _emit_error(args, name, f"cannot open: {err.strerror or err}")
    if args.json:
        for analysis in analyses:
            print(json.dumps(analysis.to_json()))
    elif analyses:
        print(text.render(analyses, verbose=args.verbose))
    if unreadable:
        return 2
    return 0 if all(a.verdict == "pass" for a in analyses) else 1


def _intent(args: argparse.Namespace) -> FabricIntent:
    if not args.inventory:
        if args.host:
            raise UsageError("--host needs -i INVENTORY")
        return default_intent()
    inventory = load_inventory(args.inventory)
    return inventory.host(args.host).intent if args.host else inventory.intent


def _lines(name: str) -> Iterator[str]:
    if name == "-":
        while piece := sys.stdin.read(READ_CHUNK_CHARS):
            yield piece
        return
    path = Path(name)
    if path.is_dir():
        raise UsageError(f"{name} is a directory; pass the output files")
    # Logs are streamed in 1 MiB pieces so a multi-GB NCCL log never sits in memory.
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        while piece := handle.read(READ_CHUNK_CHARS):
            yield piece


def _emit_error(args: argparse.Namespace, name: str, message: str) -> None:
    if args.json:
        print(json.dumps({"file": name, "kind": args.kind, "verdict": "error", "error": message}))
    print(f"fabcheck: {name}: {message}", file=sys.stderr)
