"""`fabcheck validate -i INVENTORY`: the pre-flight gate over every GPU host, one ssh round trip each."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Sequence

from fabcheck import validate
from fabcheck.checks.model import Status
from fabcheck.collect import host as collect
from fabcheck.collect.host import HostCollection, SshTarget, TimeLimits
from fabcheck.desired.nic import desired_host
from fabcheck.intent.loader import HostEntry, load_inventory
from fabcheck.parsers.topo import TopoMatrix
from fabcheck.report import text
from fabcheck.report.adapters import validate_run
from fabcheck.report.model import EXIT_CODES_HELP, Affinity
from fabcheck.report.outputs import add_output_arguments, check_report_paths, emit
from fabcheck.report.progress import Progress

EPILOG = f"""\
A progress bar is drawn on stderr while hosts are collected, only when stderr is a terminal.

{EXIT_CODES_HELP}
examples:
  fabcheck validate -i inventory/lab
  fabcheck validate -i inventory/lab --limit gpu02 --group-by check -v
  fabcheck validate -i inventory/lab --junit-xml gate.xml --html gate.html --markdown gate.md
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "validate",
        help="pre-flight gate: check every GPU host's RDMA/QoS state against the intent",
        description="Pre-flight gate: check every GPU host's RDMA/QoS state against the fabric intent.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-i", "--inventory", required=True, help="Ansible inventory with the fabric intent")
    parser.add_argument(
        "--limit",
        metavar="PATTERN",
        help="only these hosts, as for ansible-playbook --limit (names, groups, globs, !x, &g, a:b, @file)",
    )
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
    add_output_arguments(parser, json_help="one JSON object per host, one per line")
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
    check_report_paths(args)
    inventory = load_inventory(args.inventory)
    chosen = validate.plan(inventory, args.limit)
    notes: tuple[str, ...] = ()
    if chosen.not_checked:
        notes = (_not_checked_line(chosen.not_checked),)
        # stdout stays one JSON object per line with --json; the note goes to stderr there.
        print(notes[0], file=sys.stderr if args.json else sys.stdout)
    limits = TimeLimits(connect_s=args.connect_timeout, command_s=args.timeout)
    watcher = CollectionWatcher(chosen.hosts, Progress(sys.stderr), keep_topology=args.html is not None)
    started_at, start = time.strftime("%Y-%m-%dT%H:%M:%S"), time.monotonic()
    watcher.progress.on_start(len(chosen.hosts))
    try:
        results = validate.validate(chosen.hosts, limits, watcher.collect, deadline_s=args.deadline)
    finally:
        watcher.progress.close()
    report = validate_run(results, watcher.affinities, notes=notes)
    report = dataclasses.replace(report, started_at=started_at, elapsed_s=time.monotonic() - start)
    return emit(report, args)


class CollectionWatcher:
    """Wraps the gate's collector: advances the progress bar as each host is collected and keeps each
    host's parsed topology for the HTML picture.

    Both belong in the runner (validate.py does not call progress hooks, and HostResult does not carry
    the topo record yet); this wrapper does it from outside, through validate()'s `collector` seam.
    """

    def __init__(self, hosts: Sequence[HostEntry], progress: Progress, keep_topology: bool) -> None:
        self.progress = progress
        self.affinities: dict[str, Affinity] = {}
        self._hosts = {h.name: h for h in hosts}
        self._keep_topology = keep_topology

    def collect(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        status = Status.ERROR  # a collector that raised is an error for that host in the gate too
        try:
            collection = collect.collect_host(target, priority, limits)
            entry = self._hosts[target.name]
            if self.progress.enabled:
                status = validate.judge(collection, entry.intent).verdict
            if self._keep_topology:
                self._keep(entry, collection)
            return collection
        finally:
            self.progress.on_done(target.name, status)

    def _keep(self, entry: HostEntry, collection: HostCollection) -> None:
        topo = validate.evidence(collection).topo if collection.sections else None
        if isinstance(topo, TopoMatrix):
            self.affinities[entry.name] = Affinity(topo, desired_host(entry.intent, entry.name).rails)


def _not_checked_line(hosts: Sequence[HostEntry]) -> str:
    names = ", ".join(h.name for h in hosts)
    scope = f"validate v0 judges {validate.GPU_HOSTS} only; switches and subnet managers later"
    return f"not checked ({scope}): {names}"


def render(results: Sequence[validate.HostResult], verbose: bool = False, group_by: str = "node") -> str:
    """The text report of host results (what `fabcheck validate` prints without --json)."""
    return text.render(validate_run(results), group_by=group_by, verbose=verbose)
