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
    results: list[Analysis | dict[str, object]] = []  # in file order; a dict is an unreadable file
    for name in args.files:
        try:
            results.append(analyze(args.kind, _lines(name), name, intent, options))
        except ParseError as err:
            results.append(_unreadable(args, name, f"cannot read it as {args.kind}: {err}", line=err.line))
        except OSError as err:
            results.append(_unreadable(args, name, f"cannot open: {err.strerror or err}"))
    analyses = [r for r in results if isinstance(r, Analysis)]
    if args.json:
        for result in results:
            print(json.dumps(result.to_json() if isinstance(result, Analysis) else result))
    elif analyses:
        print(text.render(analyses, verbose=args.verbose))
    if len(analyses) < len(results):
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


def _unreadable(
    args: argparse.Namespace, name: str, message: str, line: int | None = None
) -> dict[str, object]:
    """Report an input that could not be read (stderr now, JSON in file order) as a parse error."""
    print(f"fabcheck: {name}: {message}", file=sys.stderr)
    return {
        "file": name,
        "kind": args.kind,
        "verdict": "error",
        "parse_error": True,
        "line": line,
        "error": message,
    }
