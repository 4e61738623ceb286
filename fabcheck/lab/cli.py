"""`fabcheck lab up|down|status|faults|inject|heal`: the built-in lab of mock GPU hosts and switches."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from fabcheck.lab.state import LabPaths, project_root

if TYPE_CHECKING:
    from fabcheck.lab.lifecycle import LabStatus

HOSTS_HELP = "GPU hosts (default 4; roce: rail8, the last one pcie when more than 2; ib: ib hosts)"


def register(subparsers: Any) -> None:
    lab = subparsers.add_parser("lab", help="mock GPU hosts and switches on this machine (needs root)")
    commands = lab.add_subparsers(dest="lab_command", required=True)

    up = commands.add_parser("up", help="start the lab (no-op when the same lab is already up)")
    up.add_argument("--profile", choices=("roce", "ib"), default="roce", help="roce (default) or ib fabric")
    up.add_argument("--hosts", type=int, default=4, metavar="N", help=HOSTS_HELP)
    up.add_argument("--switches", type=int, metavar="N", help="mock switches (roce default 2; ib has none)")
    up.add_argument("--net", choices=("lo",), default="lo", help="node addresses on loopback (127.0.x.y)")
    up.set_defaults(func=_up)

    down = commands.add_parser("down", help="stop the lab and remove everything it created")
    down.set_defaults(func=_down)

    status = commands.add_parser("status", help="which nodes answer, active faults, addresses")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=_status)

    faults = commands.add_parser("faults", help="list every fault the lab can inject")
    faults.set_defaults(func=_faults)

    inject = commands.add_parser("inject", help="inject a fault into one node")
    inject.add_argument("fault")
    inject.add_argument("--node", required=True, help="lab node name (see `fabcheck lab status`)")
    inject.set_defaults(func=_inject)

    heal = commands.add_parser("heal", help="heal active faults (all of them unless narrowed)")
    heal.add_argument("fault", nargs="?", help="only this fault")
    heal.add_argument("--node", help="only on this node")
    heal.set_defaults(func=_heal)


def _paths() -> LabPaths:
    return LabPaths.for_project(project_root())


def _relative(path: os.PathLike[str] | str) -> str:
    return os.path.relpath(path) if str(path).startswith(os.getcwd()) else str(path)


def _up(args: argparse.Namespace) -> int:
    from fabcheck.lab import lifecycle

    paths = _paths()
    result = lifecycle.up(paths, profile=args.profile, hosts=args.hosts, switches=args.switches,
                          network=args.net)  # fmt: skip
    state = result.state
    verb = "already up" if result.already_up else f"up in {result.seconds:.1f} s"
    print(f"lab {verb}: profile {state.profile}, {len(state.host_nodes())} host nodes, "
          f"{len(state.switch_nodes())} switches (run dir {paths.run_dir})")  # fmt: skip
    inventory_dir = _relative(paths.inventory.parent)
    print(f"  inventory:  {_relative(paths.inventory)}   (ansible all -m ping -i {inventory_dir})")
    print(f"  ssh:        ssh -F {paths.ssh_config} {state.host_nodes()[0].name}")
    if state.switch_nodes():
        print(f"  switches:   password in {paths.switch_password} (or set FABCHECK_LAB_SWITCH_PASSWORD)")
    return 0


def _down(_args: argparse.Namespace) -> int:
    from fabcheck.lab import lifecycle

    result = lifecycle.down(_paths())
    if not result.found:
        print("no lab to take down")
    else:
        print(f"lab down in {result.seconds:.1f} s ({result.stopped} processes stopped)")
    for item in result.leftovers:
        print(f"  could not remove: {item}")
    return 1 if result.leftovers else 0


def status_document(report: LabStatus) -> dict[str, Any]:
    state = report.state
    return {
        "up": report.healthy,
        "profile": state.profile,
        "run_dir": state.run_dir,
        "supervisor_alive": report.supervisor_alive,
        "nodes": [
            {
                "name": h.node.name,
                "kind": h.node.kind,
                "profile": h.node.profile,
                "group": h.node.group,
                "address": h.node.address,
                "port": h.node.port,
                "answers": h.answers,
                "faults": list(h.faults),
            }
            for h in report.nodes
        ],
        "faults": [{"fault": f.fault, "node": f.node} for f in state.faults],
    }


def _status(args: argparse.Namespace) -> int:
    from fabcheck.lab import lifecycle

    report = lifecycle.status(_paths())
    if report is None:
        print(json.dumps({"up": False, "nodes": [], "faults": []}) if args.json else "no lab is up")
        return 1
    if args.json:
        print(json.dumps(status_document(report), indent=2))
        return 0 if report.healthy else 1
    answering = sum(h.answers for h in report.nodes)
    print(f"lab {'up' if report.healthy else 'DEGRADED'}: profile {report.state.profile}, "
          f"{answering}/{len(report.nodes)} nodes answer, supervisor "
          f"{'alive' if report.supervisor_alive else 'DEAD'}")  # fmt: skip
    width = max(len(h.node.name) for h in report.nodes)
    for h in report.nodes:
        node = h.node
        where = f"{node.address}:{node.port}"
        answer = "answers" if h.answers else "silent"
        faults = ",".join(h.faults) or "-"
        print(f"  {node.name:<{width}}  {node.kind:<6}  {node.profile:<5}  {where:<19} {answer:<7} {faults}")
    return 0 if report.healthy else 1


def _faults(_args: argparse.Namespace) -> int:
    from fabcheck.lab import faults

    listing = faults.catalog()
    width = max(len(name) for name in listing)
    for name, (applies_to, text) in listing.items():
        print(f"{name:<{width}}  {applies_to:<8}  {text}")
    return 0


def _inject(args: argparse.Namespace) -> int:
    from fabcheck.lab import faults

    if faults.inject(_paths(), args.fault, args.node):
        print(f"injected {args.fault} on {args.node}")
    else:
        print(f"{args.fault} is already active on {args.node}")
    return 0


def _heal(args: argparse.Namespace) -> int:
    from fabcheck.lab import faults

    healed = faults.heal(_paths(), node_name=args.node, fault=args.fault)
    for active in healed:
        print(f"healed {active.fault} on {active.node}")
    if not healed:
        print("no matching active fault")
    return 0
