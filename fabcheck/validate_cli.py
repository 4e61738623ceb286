"""`fabcheck validate -i INVENTORY`: the pre-flight gate over every GPU host, one ssh round trip each."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

from fabcheck import validate
from fabcheck.collect.host import TimeLimits
from fabcheck.intent.loader import HostEntry, load_inventory
from fabcheck.report.text import render_findings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "validate", help="pre-flight gate: check every GPU host's RDMA/QoS state against the intent"
    )
    parser.add_argument("-i", "--inventory", required=True, help="Ansible inventory with the fabric intent")
    parser.add_argument(
        "--limit",
        metavar="PATTERN",
        help="only these hosts, as for ansible-playbook --limit (names, groups, globs, !x, &g, a:b, @file)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per host, one per line")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list passing checks")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=validate.DEFAULT_TIMEOUT_S,
        metavar="S",
        help="seconds the collection may run on each host once connected, enforced there too "
        f"(default {validate.DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=_seconds,
        default=validate.DEFAULT_CONNECT_TIMEOUT_S,
        metavar="S",
        help=f"ssh ConnectTimeout for each host (default {validate.DEFAULT_CONNECT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--deadline",
        type=_seconds,
        metavar="S",
        help="seconds for the whole run; hosts not collected by then are errors (default: none)",
    )
    parser.set_defaults(func=run)


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse reports anything else as a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive, finite number of seconds")
    return value


def run(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    chosen = validate.plan(inventory, args.limit)
    if chosen.not_checked:
        # stdout stays one JSON object per line with --json; the note goes to stderr there.
        print(_not_checked_line(chosen.not_checked), file=sys.stderr if args.json else sys.stdout)
    limits = TimeLimits(connect_s=args.connect_timeout, command_s=args.timeout)
    results = validate.validate(chosen.hosts, limits, deadline_s=args.deadline)
    if args.json:
        for result in results:
            print(json.dumps(result.to_json()))
    else:
        print(render(results, verbose=args.verbose))
    return validate.exit_code(results)


def _not_checked_line(hosts: Sequence[HostEntry]) -> str:
    names = ", ".join(h.name for h in hosts)
    scope = f"validate v0 judges {validate.GPU_HOSTS} only; switches and subnet managers later"
    return f"not checked ({scope}): {names}"


def render(results: Sequence[validate.HostResult], verbose: bool = False) -> str:
    out: list[str] = []
    for result in results:
        out.append(f"{result.verdict.value.upper():5} {result.host}")
        out += render_findings(result.findings, verbose)
    overall = validate.overall(results)
    counts = {s: sum(r.verdict is s for r in results) for s in (validate.Status.PASS, validate.Status.FAIL)}
    errors = len(results) - sum(counts.values())
    out.append(
        f"{overall.value.upper()}: {len(results)} host(s): {counts[validate.Status.PASS]} pass, "
        f"{counts[validate.Status.FAIL]} fail, {errors} could not be checked"
    )
    return "\n".join(out)
