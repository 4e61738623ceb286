"""`fabcheck lab up|down|status|faults|inject|heal|reboot|reload-driver|slurm`: the lab of mock GPU hosts and
switches. fabcheck's command line adds it through the fabcheck.commands entry point (lab/pyproject.toml)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabcheck_lab.state import MAX_HOST_NODES, MAX_SWITCHES, PASSWORD_ENV, LabError, LabPaths, project_root

if TYPE_CHECKING:
    from fabcheck_lab.lifecycle import LabStatus

HOSTS_HELP = (
    "GPU hosts (default 4; roce: rail8, the last one pcie when more than 2; ib: ib hosts; nvl: trays, "
    "every 2 one NVLink domain)"
)
MAX_RTT_MS = 1000.0


def count_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in low..high, refused with the allowed range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            message = f"{text!r} is not a whole number (allowed: {low}..{high})"
            raise argparse.ArgumentTypeError(message) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range (allowed: {low}..{high})")
        return value

    parse.__name__ = "count"  # argparse names the type in its own messages
    return parse


def rtt_ms(text: str) -> float:
    """An argparse type: a round-trip delay in milliseconds, 0..MAX_RTT_MS."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
    if not 0.0 <= value <= MAX_RTT_MS:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is out of range (allowed: 0..{MAX_RTT_MS:.0f} ms)")
    return value


def faults_epilog() -> str:
    from fabcheck_lab import faults

    listing = faults.catalog()
    width = max(len(name) for name in listing)
    lines = [f"  {name:<{width}}  {applies_to:<8}  {text}" for name, (applies_to, text) in listing.items()]
    return "faults (FAULT, applies to, what it does):\n" + "\n".join(lines)


# Replaced when help is printed: the fault registry is too heavy to import for every command.
FAULTS_EPILOG = "(the fault list)"


class FaultListFormatter(argparse.RawDescriptionHelpFormatter):
    """Help of `lab inject`: the epilog is the fault list, built only when help is shown."""

    def add_text(self, text: str | None) -> None:
        super().add_text(faults_epilog() if text == FAULTS_EPILOG else text)


def register(subparsers: Any) -> None:
    lab = subparsers.add_parser("lab", help="mock GPU hosts and switches on this machine (needs root)")
    commands = lab.add_subparsers(dest="lab_command", required=True)

    up = commands.add_parser("up", help="start the lab (no-op when the same lab is already up)")
    up.add_argument(
        "--profile",
        choices=("roce", "ib", "nvl"),
        help="roce (default) or ib fabric; nvl: GB200-like trays, 2 per NVLink domain, on RoCE",
    )
    up.add_argument("--hosts", type=count_in(1, MAX_HOST_NODES), metavar="N", help=HOSTS_HELP)
    up.add_argument("--switches", type=count_in(0, MAX_SWITCHES), metavar="N",
                    help=f"mock switches, 0..{MAX_SWITCHES} (roce, nvl: Ethernet, default 2; ib: InfiniBand "
                         "leaves and spines, half each, default 0)")  # fmt: skip
    rtt_help = "round-trip delay between the controller and each host node's sshd (default 0)"
    up.add_argument("--rtt-ms", type=rtt_ms, default=0.0, metavar="MS", help=rtt_help)
    up.add_argument("--net", choices=("lo",), default="lo", help="node addresses on loopback (127.0.x.y)")
    plan_help = (
        "build the lab a fabric plan describes (`fabcheck plan --json > FILE`): its hosts, switches and "
        f"cables (8-GPU, 8-NIC 400G nodes; at most {MAX_SWITCHES} switches); instead of --profile/--hosts/"
        "--switches"
    )
    up.add_argument("--plan", type=Path, metavar="FILE", help=plan_help)
    up.set_defaults(func=_up)

    down = commands.add_parser("down", help="stop the lab and remove everything it created")
    down.set_defaults(func=_down)

    status = commands.add_parser("status", help="which nodes answer, active faults, addresses")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=_status)

    faults = commands.add_parser("faults", help="list every fault the lab can inject")
    faults.set_defaults(func=_faults)

    inject = commands.add_parser("inject", help="inject a fault into one node", epilog=FAULTS_EPILOG,
                                 formatter_class=FaultListFormatter)  # fmt: skip
    inject.add_argument("fault", metavar="FAULT", help="one of the faults listed below")
    inject.add_argument("--node", required=True, help="lab node name (see `fabcheck lab status`)")
    inject.set_defaults(func=_inject)

    heal = commands.add_parser("heal", help="heal active faults (all of them unless narrowed)")
    heal.add_argument("fault", nargs="?", help="only this fault")
    heal.add_argument("--node", help="only on this node")
    heal.set_defaults(func=_heal)

    reboot = commands.add_parser(
        "reboot", help="simulate a reboot of a host: NIC state to factory, then its boot units"
    )
    reboot.add_argument("node", metavar="NODE", help="lab host node name")
    reboot.set_defaults(func=_reboot)

    reload_help = "simulate a driver reload of one NIC: its state to factory, then its udev add event"
    reload_driver = commands.add_parser("reload-driver", help=reload_help)
    reload_driver.add_argument("node", metavar="NODE", help="lab host node name")
    reload_driver.add_argument("nic", metavar="NIC", help="RDMA device, e.g. mlx5_0")
    reload_driver.set_defaults(func=_reload_driver)

    slurm_help = "a real Slurm cluster of the lab's host nodes (munged, slurmctld, slurmd)"
    slurm = commands.add_parser("slurm", help=slurm_help)
    slurm_commands = slurm.add_subparsers(dest="slurm_command", required=True)
    slurm_up = slurm_commands.add_parser(
        "up", help="start it over every host node; returns once each is idle"
    )
    slurm_up.set_defaults(func=_slurm_up)
    slurm_down = slurm_commands.add_parser("down", help="stop its daemons and remove its files")
    slurm_down.set_defaults(func=_slurm_down)
    slurm_status = slurm_commands.add_parser("status", help="each node's Slurm state, as sinfo reports it")
    slurm_status.set_defaults(func=_slurm_status)


# What `fabcheck lab` imports beyond the product's own dependencies: lab/pyproject.toml's own.
LAB_DEPENDENCY_MODULES = ("asyncssh", "cryptography", "jsonpatch")


def require_lab_dependencies() -> None:
    """One line naming the install when a module only the lab needs is missing, never an ImportError
    (a lab copied or put on PYTHONPATH without `pip install ./lab`)."""
    missing = [name for name in LAB_DEPENDENCY_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise LabError(
            f"fabcheck lab needs {', '.join(missing)}: pip install ./lab from fabcheck's repository"
        )


def _paths() -> LabPaths:
    require_lab_dependencies()
    return LabPaths.for_project(project_root())


def _relative(path: os.PathLike[str] | str) -> str:
    return os.path.relpath(path) if str(path).startswith(os.getcwd()) else str(path)


def _up(args: argparse.Namespace) -> int:
    from fabcheck_lab import lifecycle

    plan = None
    if args.plan is not None:
        from fabcheck_lab.fromplan import load_plan

        given = [f"--{name}" for name in ("profile", "hosts", "switches") if getattr(args, name) is not None]
        if given:
            raise LabError(f"--plan sets the lab's hosts and switches: drop {', '.join(given)}")
        plan = load_plan(args.plan)
    paths = _paths()
    hosts = args.hosts or lifecycle.DEFAULT_HOSTS
    result = lifecycle.up(paths, profile=args.profile or "roce", hosts=hosts, switches=args.switches,
                          network=args.net, rtt_ms=args.rtt_ms, plan=plan)  # fmt: skip
    state = result.state
    verb = "already up" if result.already_up else f"up in {result.seconds:.1f} s"
    delay = f", RTT {state.rtt_ms:g} ms to the hosts" if state.rtt_ms else ""
    switches = f"{state.switches} InfiniBand" if state.profile == "ib" else str(len(state.switch_nodes()))
    planned = f" from plan {args.plan}" if args.plan is not None else ""
    print(f"lab {verb}{planned}: profile {state.profile}, {len(state.host_nodes())} host nodes, "
          f"{switches} switches{delay} (run dir {paths.run_dir})")  # fmt: skip
    inventory_dir = _relative(paths.inventory.parent)
    print(f"  inventory:  {_relative(paths.inventory)}   (ansible all -m ping -i {inventory_dir})")
    print(f"  ssh:        ssh -F {paths.ssh_config} {state.host_nodes()[0].name}")
    if state.slow_tools:
        print(f"  mock tools: one interpreter per call ({state.slow_tools})")
    if state.switch_nodes():
        chosen = f"set {PASSWORD_ENV} before `up` to choose it"
        print(f"  switches:   password in {paths.switch_password} ({chosen})")
    return 0


def _down(_args: argparse.Namespace) -> int:
    from fabcheck_lab import lifecycle

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
        "complete": state.complete,
        "rtt_ms": state.rtt_ms,
        "slow_tools": state.slow_tools or None,
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
    from fabcheck_lab import lifecycle

    report = lifecycle.status(_paths())
    if report is None:
        print(json.dumps({"up": False, "nodes": [], "faults": []}) if args.json else "no lab is up")
        return 1
    if args.json:
        print(json.dumps(status_document(report), indent=2))
        return 0 if report.healthy else 1
    answering = sum(h.answers for h in report.nodes)
    if not report.state.complete:
        print("lab INCOMPLETE: its `up` did not finish; `fabcheck lab up` rebuilds it")
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
    names = {h.node.name for h in report.nodes}
    on_ib_switches = [f"{f.fault} on {f.node}" for f in report.state.faults if f.node not in names]
    if on_ib_switches:  # the ib profile's IB switches are fabric model entries, not nodes
        print(f"  IB switch faults: {', '.join(on_ib_switches)}")
    return 0 if report.healthy else 1


def _faults(_args: argparse.Namespace) -> int:
    require_lab_dependencies()
    from fabcheck_lab import faults

    listing = faults.catalog()
    width = max(len(name) for name in listing)
    for name, (applies_to, text) in listing.items():
        print(f"{name:<{width}}  {applies_to:<8}  {text}")
    return 0


def _inject(args: argparse.Namespace) -> int:
    from fabcheck_lab import faults

    if faults.inject(_paths(), args.fault, args.node):
        print(f"injected {args.fault} on {args.node}")
    else:
        print(f"{args.fault} is already active on {args.node}")
    return 0


def _heal(args: argparse.Namespace) -> int:
    from fabcheck_lab import faults

    healed = faults.heal(_paths(), node_name=args.node, fault=args.fault)
    for active in healed:
        print(f"healed {active.fault} on {active.node}")
    if not healed:
        print("no matching active fault")
    return 0


def _print_event(event: Any, what: str) -> int:
    print(f"{what} {event.node}: reset {', '.join(event.reset) or 'no NIC'} to factory values")
    for line in event.output.splitlines():
        print(f"  {line}")
    if not event.ok:
        print(f"  {event.node}: its own boot files did not finish cleanly (see above)")
    return 0 if event.ok else 1


def _reboot(args: argparse.Namespace) -> int:
    from fabcheck_lab import power

    return _print_event(power.reboot(_paths(), args.node), "rebooted")


def _reload_driver(args: argparse.Namespace) -> int:
    from fabcheck_lab import power

    return _print_event(
        power.reload_driver(_paths(), args.node, args.nic), f"reloaded the driver of {args.nic} on"
    )


def _slurm_up(_args: argparse.Namespace) -> int:
    from fabcheck_lab import slurm

    cluster = slurm.up(_paths())
    verb = "already up" if cluster.already_up else f"up in {cluster.seconds:.1f} s"
    print(f"slurm {verb}: {len(cluster.nodes)} nodes idle ({', '.join(cluster.nodes)})")
    print(f"  clients:    export SLURM_CONF={cluster.conf}   (srun -N{len(cluster.nodes)} hostname)")
    return 0


def _slurm_down(_args: argparse.Namespace) -> int:
    from fabcheck_lab import slurm

    print(f"slurm down ({slurm.down(_paths())} processes stopped)")
    return 0


def _slurm_status(_args: argparse.Namespace) -> int:
    from fabcheck_lab import slurm

    cluster = slurm.status(_paths())
    if cluster is None:
        print("no Slurm cluster is up in the lab")
        return 1
    if not cluster.nodes:
        print(f"slurm DEGRADED: slurmctld does not answer (SLURM_CONF={cluster.conf})")
        return 1
    print(f"slurm {'up' if cluster.ready else 'DEGRADED'} (SLURM_CONF={cluster.conf})")
    for node, state in cluster.nodes.items():
        print(f"  {node}  {state}")
    return 0 if cluster.ready else 1
