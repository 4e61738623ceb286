"""`fabcheck topology -i INVENTORY`: the scheduler's topology (Slurm topology.conf, tree or block, or
JSON) from the cabling map and the verdicts of a validate's snapshot (fabcheck.report.topology)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fabcheck.checks.model import Finding
from fabcheck.cli.options import window_seconds
from fabcheck.collect.backends.slurm import node_name
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.nic import DEFAULT_COUNTER_WINDOW_S
from fabcheck.errors import UsageError
from fabcheck.gate import snapshot
from fabcheck.gate.fabric import run_gate
from fabcheck.gate.plan import plan_gate
from fabcheck.gate.sources import Source
from fabcheck.intent.fabric import GPU_HOSTS, Fabric, fabric_of
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck.report import outputs, topology
from fabcheck.report.topology import CablingMap, HostCable

FORMATS = ("slurm-tree", "slurm-block", "json")
# The stages whose verdicts judge cables (host and switch read what the link stage judges).
CABLE_STAGES = ("host", "switch", "link", "ib")
TIER_VAR = "switch_tier"  # an Ethernet switch's tier (leaf, spine, core), as the fabric plan writes it

EPILOG = """\
Only cables whose checks passed in the snapshot's run count: a GPU host with a rail cable that failed
(or could not be judged) is left out and named in a `#` comment (--include-failed keeps it, named too).
Without --snapshot every cable of the cabling map counts and the file says it is unverified.
Nodes are named by the inventory variable slurm_node_name (default: the inventory name).

exit codes:
  0  the topology was written
  1  no node kept (every one left out): nothing written, an existing file stays as it is
  2  usage error, invalid inventory, or a snapshot that cannot be read

examples:
  fabcheck validate -i inventory/lab --save-snapshot evidence/
  fabcheck topology -i inventory/lab --snapshot evidence/ -o /etc/slurm/topology.conf
  fabcheck topology -i inventory/lab --snapshot evidence/ --format slurm-block
  fabcheck topology -i inventory/lab --snapshot evidence/ --format json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "topology",
        help="the scheduler's topology (Slurm topology.conf, JSON) from the cables that passed",
        description="Write the scheduler's network topology from the cabling map (fabric_links) and the "
        "verdicts of a validate run saved with --save-snapshot.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-i", "--inventory", required=True, help="Ansible inventory with the fabric intent")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="slurm-tree",
        help="slurm-tree: topology.conf for TopologyPlugin=topology/tree (default); slurm-block: for "
        "topology/block (Slurm 23.11 and later), a block per NVLink domain, else per leaf; json",
    )
    parser.add_argument(
        "--snapshot",
        type=Path,
        metavar="DIR",
        help="a validate run's --save-snapshot DIR: its host, switch, link and ib verdicts, replayed",
    )
    parser.add_argument(
        "--include-failed",
        action="store_true",
        help="keep a node whose rail cables did not pass (still named in a comment)",
    )
    parser.add_argument(
        "--counter-window",
        type=window_seconds,
        default=DEFAULT_COUNTER_WINDOW_S,
        metavar="S",
        help="the --counter-window of the validate run that saved the snapshot: its two counter readings "
        f"are judged again over it, as validate --from-snapshot does (default {DEFAULT_COUNTER_WINDOW_S})",
    )
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (default: stdout)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    fabric = fabric_of(inventory)
    cabling = cabling_map(inventory, fabric)
    findings = (
        None if args.snapshot is None else replayed_findings(inventory, args.snapshot, args.counter_window)
    )
    source = f"snapshot {args.snapshot}" if args.snapshot is not None else f"inventory {args.inventory}"
    try:
        built = topology.build_topology(cabling, findings, include_failed=args.include_failed)
        text = render(built, args.format, source)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if not built.switches:
        # slurmctld refuses a topology.conf with no switch ("No switches configured"): keep the old one.
        why = "; ".join(f"{left.node}: {left.why[0]}" for left in built.left_out[:3])
        print(f"fabcheck topology: no node kept, nothing written ({why or 'no GPU host'})", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(text)
    else:
        outputs.write_atomically("-o", str(args.output), text)
    summary = f"topology: {len(set(built.nodes))} node(s) under {len(built.switches)} switch(es)"
    if built.left_out:
        summary += f"; left out: {', '.join(left.node for left in built.left_out)}"
    print(summary, file=sys.stderr)
    return 0


def render(built: topology.Topology, form: str, source: str) -> str:
    if form == "slurm-tree":
        return topology.slurm_tree(built, source)
    if form == "slurm-block":
        return topology.slurm_block(built, source)
    return json.dumps(topology.to_json(built, source), indent=1) + "\n"


def cabling_map(inventory: Inventory, fabric: Fabric) -> CablingMap:
    """Each GPU host's rail cables in rail order (RoCE links, IB host cables), the switch-to-switch
    cables, the declared NVLink domains and the switches' tiers."""
    gpu = [entry for entry in inventory.hosts if GPU_HOSTS in entry.groups]
    ethernet = {(link.host, link.nic): link for link in fabric.links}
    ib = {(c.a.node, c.a.nic): c for c in fabric.ib.cables if c.a.nic is not None}
    cables: list[HostCable] = []
    for entry in gpu:
        for _rail, nic in sorted(entry.intent.rails.items()):
            link = ethernet.get((entry.name, nic))
            if link is not None:
                label = f"{entry.name}:{nic} <-> {link.switch_end}"
                key = (entry.name, nic, link.switch_end)
                cables.append(HostCable(entry.name, nic, link.switch, label, key, "link"))
                continue
            cable = ib.get((entry.name, nic))
            if cable is not None:
                key = (cable.b.node, str(cable.b.port), cable.a.label)
                cables.append(HostCable(entry.name, nic, cable.b.node, cable.label, key, "ib"))
    tiers = {switch.name: switch.tier for switch in fabric.ib.switches}
    for entry in inventory.hosts:
        tier = entry.variables.get(TIER_VAR)
        if isinstance(tier, str):
            tiers[entry.name] = tier
    domains = tuple((d.name, d.hosts) for d in fabric.nvlink.domains if d.declared)
    return CablingMap(
        hosts=tuple((entry.name, node_name(entry)) for entry in gpu),
        host_cables=tuple(cables),
        up_cables=topology.switch_cables(fabric),
        nvlink_domains=domains,
        tiers=tiers,
    )


def replayed_findings(inventory: Inventory, directory: Path, counter_window_s: int) -> tuple[Finding, ...]:
    """The findings of the cable stages the snapshot holds, judged again from its saved reads (the
    gate's own replay: `validate --from-snapshot`); UsageError when it holds none of them."""
    tape = snapshot.replay(directory)
    recorded = set(tape.recorded) | ({"host", "switch"} if tape.version == 1 else set())
    stages: list[str] = [stage for stage in ("host", "switch", "ib") if stage in recorded]
    if {"host", "switch"} <= recorded:
        stages.append("link")
    if "link" not in stages and "ib" not in stages:
        raise UsageError(
            f"--snapshot {directory}: it records no stage that judges cables (host and switch for RoCE "
            f"links, ib for InfiniBand; it holds: {', '.join(sorted(recorded)) or 'none'})"
        )
    plan = plan_gate(inventory, None, stages, counter_window_s)
    source = Source(login_of=snapshot.replay_login, tape=tape)
    result = run_gate(inventory, plan, TimeLimits(), reads=source.reads(), tape=source.tape)
    return tuple(finding for node in result.nodes() for finding in node.findings)
