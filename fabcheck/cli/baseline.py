"""`fabcheck baseline record|show|diff`: layer 3 of perftest, the per-link history a user commits.

record measures the inventory's GPU hosts (the perftest stage's rounds and re-pairings) and appends
every pair that passed the floor and the peers to the file; show prints the history; diff measures
now and compares each link with its recorded median."""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Sequence
from pathlib import Path

from fabcheck.checks.perftest import DRIFT_INPUTS
from fabcheck.cli.options import add_time_limits, positive_count, time_limits
from fabcheck.errors import UsageError
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.fabric import GPU_HOSTS
from fabcheck.intent.loader import load_inventory
from fabcheck.pairs import baseline as stored
from fabcheck.pairs.localise import Diagnosis, localise
from fabcheck.pairs.rounds import FAST, MODES
from fabcheck.pairs.session import Session, open_session
from fabcheck.pairs.verdict import Measurement

EPILOG = f"""\
The file defaults to {stored.FILE_NAME} in the inventory's folder; commit it with the inventory.
A record keeps the last {stored.HISTORY_LIMIT} samples of each link; diff flags a link more than
{DRIFT_INPUTS.max_drop:.0%} below its recorded median. `fabcheck validate --stages host,perftest` judges the
same drift when the file exists.

exit codes:
  0  recorded / shown / no link drifted
  1  record: some pairs were slow and left out of the record; diff: a link drifted
  2  usage error, unreadable inventory or baseline file
  3  record/diff: some hosts could not be tested

examples:
  fabcheck baseline record -i inventory/lab
  fabcheck baseline show -i inventory/lab
  fabcheck baseline diff -i inventory/lab --limit 'gpu0*'
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "baseline",
        help="record, show or diff the per-link perftest baseline",
        description="Record, show or diff the stored per-link perftest bandwidth baseline.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="baseline_command", required=True, metavar="{record,show,diff}")
    for name, summary, run, measures in (
        ("record", "measure the hosts and append to the baseline", run_record, True),
        ("show", "print each link's history", run_show, False),
        ("diff", "measure now and compare each link with its history", run_diff, True),
    ):
        action = actions.add_parser(
            name, help=summary, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        if measures:
            _measuring(action)
        else:
            _where(action, inventory_required=False)
        action.set_defaults(func=run)


def _where(parser: argparse.ArgumentParser, *, inventory_required: bool) -> None:
    parser.add_argument(
        "-i", "--inventory", required=inventory_required, help="Ansible inventory with the fabric intent"
    )
    parser.add_argument(
        "--file", type=Path, help=f"the baseline file (default: {stored.FILE_NAME} next to the inventory)"
    )


def _measuring(parser: argparse.ArgumentParser) -> None:
    _where(parser, inventory_required=True)
    parser.add_argument(
        "--limit", metavar="PATTERN", help="only these hosts, as for ansible-playbook --limit"
    )
    parser.add_argument(
        "--mode", choices=MODES, default=FAST, help="fast: one matching per rail (default); all: every pair"
    )
    add_time_limits(parser, "seconds one perftest may run", "ssh ConnectTimeout")
    parser.add_argument(
        "--concurrency", type=positive_count, default=16, metavar="N", help="pairs run at once (default 16)"
    )


def _path(args: argparse.Namespace) -> Path:
    if args.file is not None:
        return Path(args.file)
    if args.inventory is None:
        raise UsageError("give -i INVENTORY or --file BASELINE")
    return stored.default_path(args.inventory)


def _measure(args: argparse.Namespace) -> tuple[Session, Diagnosis]:
    inventory = load_inventory(args.inventory)
    # The perftest stage's plan: its GPU hosts and their bandwidth floors, derived once there.
    plan = plan_gate(inventory, args.limit, ("host", "perftest"))
    hosts = list(plan.hosts)
    if len(hosts) < 2:
        raise UsageError(f"perftest needs two GPU hosts (group {GPU_HOSTS}); {len(hosts)} selected")
    limits = time_limits(args)
    session = open_session(hosts, limits, args.concurrency, args.mode, plan.desired.perftest)
    diagnosis = localise(session.rounds, session.measure, session.judge_of, session.endpoints)
    for host, reason in sorted(session.left_out.items()):
        print(f"not tested: {host}: {reason}")
    return session, diagnosis


def _passing(session: Session, diagnosis: Diagnosis) -> tuple[list[Measurement], list[Measurement]]:
    survey = [m for m in diagnosis.measurements if m.round <= len(session.rounds)]
    judge = session.judge_of(survey)
    good: list[Measurement] = []
    slow: list[Measurement] = []
    for m in diagnosis.measurements:
        (slow if judge.slow_reason(m) else good).append(m)
    return good, slow


def run_record(args: argparse.Namespace) -> int:
    path = _path(args)
    before = stored.load_baseline(path)  # a damaged file stops here, before anything is measured
    session, diagnosis = _measure(args)
    good, slow = _passing(session, diagnosis)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    stored.write_baseline(path, stored.recorded(before, good, now))
    print(f"recorded {len(good)} links in {path}")
    for m in slow:
        print(f"left out (slow): {m.pair}: {m.error or f'{m.gbps:.2f} Gb/sec'}")
    return 3 if session.left_out else 1 if slow else 0


def run_show(args: argparse.Namespace) -> int:
    path = _path(args)
    baseline = stored.load_baseline(path)
    if baseline is None:
        raise UsageError(f"{path}: no baseline yet (fabcheck baseline record -i INVENTORY)")
    print(show_table(baseline))
    return 0


def show_table(baseline: stored.Baseline) -> str:
    rows = [("link", "samples", "median Gb/s", "latest Gb/s", "latest at")]
    for link, samples in sorted(baseline.links.items()):
        median = baseline.reference(link) or 0.0
        rows.append((link, str(len(samples)), f"{median:.2f}", f"{samples[-1].gbps:.2f}", samples[-1].at))
    return _table(rows)


def run_diff(args: argparse.Namespace) -> int:
    path = _path(args)
    baseline = stored.load_baseline(path)
    if baseline is None:
        raise UsageError(f"{path}: no baseline to compare with (fabcheck baseline record -i INVENTORY)")
    session, diagnosis = _measure(args)
    drifts = stored.drifts(baseline, diagnosis.measurements)
    print(diff_table(drifts))
    known = {d.link for d in drifts}
    new = sorted({stored.link_name(m.pair.key) for m in diagnosis.measurements} - known)
    if new:
        print(
            f"{len(new)} links measured now have no history: "
            + ", ".join(new[:8])
            + (" ..." if len(new) > 8 else "")
        )
    if any(d.drifted for d in drifts):
        return 1
    return 3 if session.left_out else 0


def diff_table(drifts: Sequence[stored.Drift]) -> str:
    rows = [("link", "now Gb/s", "median Gb/s", "change", "verdict")]
    for d in sorted(drifts, key=lambda d: d.link):
        rows.append(
            (d.link, f"{d.gbps:.2f}", f"{d.reference:.2f}", f"{-d.drop:+.1%}", "DRIFT" if d.drifted else "ok")
        )
    return _table(rows)


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )
