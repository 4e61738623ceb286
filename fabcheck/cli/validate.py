"""`fabcheck validate -i INVENTORY`: the pre-flight gate over every GPU host, one ssh round trip each."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Sequence

from fabcheck.cli.options import add_counter_window, add_time_limits, positive_count, seconds, time_limits
from fabcheck.desired.nic import DEFAULT_COUNTER_WINDOW_S
from fabcheck.errors import UsageError
from fabcheck.gate import snapshot
from fabcheck.gate.catalog import EVERY_CHECK, Selection, patterns
from fabcheck.gate.extra_stage import add_extra_checks_argument, extra_checks_of
from fabcheck.gate.fabric import DEFAULT_CONCURRENCY, GateResult, gate_report, knee_concurrency, run_gate
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.plan import GatePlan, plan_gate
from fabcheck.gate.sources import add_source_arguments, choose_source
from fabcheck.gate.stages import NodeOutcome, StageOutcome, all_stages, default_stage_names, stage_names
from fabcheck.intent.loader import load_inventory
from fabcheck.parsers.topo import TopoMatrix
from fabcheck.report import metrics, text
from fabcheck.report.model import EXIT_CODES_HELP, Affinity
from fabcheck.report.outputs import (
    add_output_arguments,
    check_file_path,
    check_report_paths,
    emit,
    write_atomically,
)
from fabcheck.report.progress import Progress

EPILOG = f"""\
A progress bar is drawn on stderr while hosts are collected, only when stderr is a terminal.

{EXIT_CODES_HELP}
examples:
  fabcheck validate -i inventory/lab
  fabcheck validate -i inventory/lab --limit gpu02 --group-by check -v
  fabcheck validate -i inventory/lab --junit-xml gate.xml --html gate.html --markdown gate.md
  fabcheck validate -i inventory/lab --backend paramiko --save-snapshot evidence/
  fabcheck validate -i inventory/lab --from-snapshot evidence/
  fabcheck validate -i inventory/lab --metrics /var/lib/node_exporter/textfile/fabcheck.prom
  fabcheck validate -i inventory/lab --via ansible --extra-checks my_checks/
  fabcheck validate -i inventory/lab --via slurm --partition batch --json
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "validate",
        help="pre-flight gate: check every GPU host's RDMA/QoS state against the intent",
        description="Pre-flight gate: check every GPU host's RDMA/QoS state against the fabric intent.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_gate_arguments(parser, stages_option=True)
    # Each traffic stage (it loads the fabric, so the default gate leaves it out) is also a command of
    # its own: `fabcheck nccl ...` is `fabcheck validate --stages host,nccl ...`, nothing more.
    for stage in all_stages():
        if not stage.traffic:
            continue
        stages = (*stage.requires, stage.name)
        alone = sub.add_parser(
            stage.name,
            help=f"the gate's {stage.name} stage alone (validate --stages {','.join(stages)})",
            description=f"The gate's {stage.name} stage with what it reads: "
            f"`fabcheck validate --stages {','.join(stages)}`, with the same options and exit codes.",
            epilog=f"{EXIT_CODES_HELP}\nexamples:\n  fabcheck {stage.name} -i inventory/lab\n"
            f"  fabcheck {stage.name} -i inventory/lab --limit 'gpu0*' --html {stage.name}.html\n",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_gate_arguments(alone, stages_option=False)
        alone.set_defaults(stages=stages)


def _add_gate_arguments(parser: argparse.ArgumentParser, *, stages_option: bool) -> None:
    parser.add_argument("-i", "--inventory", required=True, help="Ansible inventory with the fabric intent")
    parser.add_argument(
        "--limit",
        metavar="PATTERN",
        help="only these hosts, as for ansible-playbook --limit (names, groups, globs, !x, &g, a:b, @file)",
    )
    add_time_limits(
        parser,
        "seconds the collection may run on each host once connected, enforced there too",
        "ssh ConnectTimeout for each host",
    )
    parser.add_argument(
        "--deadline",
        type=seconds,
        metavar="S",
        help="seconds for the whole run; hosts not collected by then are errors (default: none)",
    )
    add_counter_window(parser)
    if stages_option:
        parser.add_argument(
            "--stages",
            type=_stages,
            default=None,
            metavar="LIST",
            help=f"which stages run, a comma list of {', '.join(stage_names())} (default "
            f"{','.join(default_stage_names())}; link needs host and switch; ib reads the whole InfiniBand "
            "fabric from one node, ib_fabric.read_from)",
        )
    parser.add_argument(
        "--concurrency",
        type=positive_count,
        default=None,
        metavar="N",
        help="nodes collected at once, open connections never more (default "
        f"{DEFAULT_CONCURRENCY}: this controller's cores x a round trip / the controller CPU a host costs; "
        "hosts and switches, which wait the counter window, that many more: "
        f"{knee_concurrency(window_s=DEFAULT_COUNTER_WINDOW_S)} with the default window)",
    )
    parser.add_argument(
        "--checks",
        type=_check_patterns("--checks"),
        metavar="IDS",
        help="report only these checks: a comma list of ids or globs, e.g. host.pfc,switch.* "
        "(`python -m fabcheck.gate.catalog` lists them); a node that cannot be read is reported anyway",
    )
    parser.add_argument(
        "--skip", type=_check_patterns("--skip"), metavar="IDS", help="leave these checks out (ids or globs)"
    )
    add_source_arguments(parser)
    add_extra_checks_argument(parser)
    add_output_arguments(parser, json_help="one JSON object per node, one per line")
    parser.add_argument(
        "--metrics",
        metavar="FILE",
        help="also write Prometheus metrics (text format; check statuses, the counters read, the run's "
        "time), atomically: for node_exporter's textfile collector",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_report_paths(args)
    if args.metrics is not None:
        check_file_path("--metrics", args.metrics)
    replaying = args.from_snapshot is not None
    # A replay runs only the stages a snapshot holds: naming a traffic stage is refused before any work.
    stages = snapshot.replayed_stages(args.stages) if replaying else args.stages
    inventory = load_inventory(args.inventory)
    if args.extra_checks is not None:
        # The extra stage runs last, over what the other stages read.
        stages = (*(stages or default_stage_names()), "extra")
    chosen = plan_gate(inventory, args.limit, stages, args.counter_window)
    notes = _notes(chosen)
    for note in notes:
        # stdout stays one JSON object per line with --json; notes go to stderr there.
        print(note, file=sys.stderr if args.json else sys.stdout)
    limits = time_limits(args)
    source = choose_source(args, inventory, chosen, limits)
    progress = Progress(sys.stderr)
    started_at, start, started_s = time.strftime("%Y-%m-%dT%H:%M:%S"), time.monotonic(), time.time()
    progress.on_start(len(chosen.hosts))
    try:
        result = run_gate(
            inventory,
            chosen,
            limits,
            deadline_s=args.deadline,
            concurrency=args.concurrency,
            reads=source.reads(lambda host: progress.on_done(host.host, host.verdict)),
            tape=source.tape,
            extra_checks=extra_checks_of(args, source),
        )
    finally:
        progress.close()
    source.finish()
    for line in source.afterword():
        print(line, file=sys.stderr)
    result = _selected(result, Selection(args.checks, args.skip or ()))
    report = gate_report(result, _affinities(result.hosts, chosen), notes=notes)
    report = dataclasses.replace(report, started_at=started_at, elapsed_s=time.monotonic() - start)
    code = emit(report, args)
    if args.metrics is not None:
        write_atomically(
            "--metrics", args.metrics, metrics.render(report, readings(result), started_s=started_s)
        )
    return code


def readings(result: GateResult) -> metrics.Readings:
    """Every counter the host and switch stages read, for the metrics: the records their checks judged."""
    total = metrics.Readings()
    for host in result.hosts:
        if host.evidence is not None:
            total += metrics.host_readings(host.host, host.evidence)
    for switch in result.switches:
        total += metrics.switch_readings(switch.switch, switch.evidence)
    return total


def _check_patterns(option: str) -> Callable[[str], tuple[str, ...]]:
    def read(text: str) -> tuple[str, ...]:
        try:
            return patterns(text, option)
        except UsageError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return read


def _selected(result: GateResult, selection: Selection) -> GateResult:
    """The run as --checks/--skip select it; a node left with nothing to report is left out."""
    if selection == EVERY_CHECK:
        return result
    return GateResult(tuple(_selected_outcome(outcome, selection) for outcome in result.stages))


def _selected_outcome(outcome: StageOutcome, selection: Selection) -> StageOutcome:
    nodes = []
    for node in outcome.nodes:
        kept = selection.filter(node.findings)
        if kept:
            nodes.append(
                dataclasses.replace(node, findings=kept)
                if dataclasses.is_dataclass(node)
                else NodeOutcome(node.node, node.kind, kept)
            )
    return dataclasses.replace(outcome, nodes=tuple(nodes))


def _affinities(results: Sequence[HostResult], plan: GatePlan) -> dict[str, Affinity]:
    """Each host's parsed topology with its rails, for the HTML GPU-NIC picture."""
    pictures = {}
    for result in results:
        topo = result.evidence.topo if result.evidence is not None else None
        if isinstance(topo, TopoMatrix):
            pictures[result.host] = Affinity(topo, plan.desired.hosts[result.host].rails)
    return pictures


def _stages(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    known = stage_names()
    unknown = [stage for stage in chosen if stage not in known]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a comma list of {', '.join(known)}")
    return chosen


def _notes(chosen: GatePlan) -> tuple[str, ...]:
    notes = []
    if chosen.not_checked:
        names = ", ".join(h.name for h in chosen.not_checked)
        notes.append(f"not checked (no stage of {','.join(chosen.stages)} judges them): {names}")
    if "link" in chosen.stages and chosen.hosts and chosen.switches and not chosen.fabric.links:
        notes.append("links not checked: no cable of fabric_links has both ends in this run")
    if chosen.counter_window_s == 0 and ({"host", "switch"} & set(chosen.stages)):
        notes.append(
            "--counter-window 0: the wire counters are read once and their lifetime totals reported, "
            "not judged over a window"
        )
    return tuple(notes)


def render(results: Sequence[HostResult], verbose: bool = False, group_by: str = "node") -> str:
    """The text report of host results (what `fabcheck validate` prints without --json)."""
    hosts = GateResult((StageOutcome("host", tuple(results)),))
    return text.render(gate_report(hosts), group_by=group_by, verbose=verbose)
