"""`fabcheck plan`: size a rail-optimised fabric for N GPUs on a switch model, print its bill of
materials (table, --markdown, --json with the whole cabling map), compare RoCE and InfiniBand
(--compare roce,ib), and write the plan as inventory (--inventory DIR).

Every value is checked here, before sizing, so that a bad one is one line naming its option (PlanError,
exit 2); sizing (fabcheck.fabricplan.sizing) refuses what only it can know: more GPUs than three tiers
of that radix hold.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from fabcheck.fabricplan import render
from fabcheck.fabricplan.catalog import CATALOG, default_model, generic_model
from fabcheck.fabricplan.inventory import GROUP_VARS_FILE, HOSTS_FILE, write_plan_inventory
from fabcheck.fabricplan.model import FABRICS, FabricPlan, PlanError, PlanInput, SwitchModel
from fabcheck.fabricplan.safewrite import refuse_unsafe, write_safely
from fabcheck.fabricplan.sizing import plan_fabric

ETHERNET_PLATFORMS = ("nvue", "sonic", "eos")
FABRIC_NAMES = {"roce": "a RoCE (Ethernet)", "ib": "an InfiniBand"}

EPILOG = """\
The plan: nodes = GPUs / GPUs per node; rail k of every node is NIC mlx5_k; every link runs at the NIC
speed, a switch cage breaking out to cage speed / NIC speed links (one module per used cage). One tier
when every host link fits one switch; else leaves (rail-optimised: one per rail per group of nodes)
with down ports = ports x X / (X + 1) for oversubscription X, spines over them, and a third tier
(pods, cores) when the leaves outnumber a spine's ports. docs/plan.md has the rules and the catalog.

exit codes:
  0  planned (printed; --markdown and --inventory written)
  2  a value the plan cannot use (zero, GPUs not a multiple of GPUs per node, a NIC speed the switch
     cannot break out to, a model of the other fabric, more GPUs than three tiers of that radix hold)

examples:
  fabcheck plan --fabric roce --gpus 512 --gpus-per-node 8 --nic-gbps 400 --switch sn5600
  fabcheck plan --fabric ib --gpus 1024 --gpus-per-node 8 --nic-gbps 400 --switch qm9700 --json > plan.json
  fabcheck plan --compare roce,ib --gpus 512 --gpus-per-node 8 --nic-gbps 400
  fabcheck plan --fabric roce --gpus 64 --gpus-per-node 8 --nic-gbps 400 --switch sn5600 --inventory inv/
  fabcheck plan --fabric roce --gpus 4096 --gpus-per-node 8 --nic-gbps 400 \\
      --switch-ports 576 --switch-port-gbps 800 --platform sonic --markdown plan.md
"""


def register(sub: argparse._SubParsersAction) -> None:
    names = ", ".join(CATALOG)
    parser = sub.add_parser(
        "plan",
        help="size a rail-optimised fabric for N GPUs: bill of materials and cabling map",
        description="Size a rail-optimised RoCE or InfiniBand fabric for N GPUs on a switch model: the "
        "fewest switches in one, two or three tiers, every cable, and the bill of materials (switches, "
        "links, transceivers and cables per tier).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--fabric", metavar="roce|ib", help="the fabric to plan (or --compare roce,ib)")
    parser.add_argument(
        "--compare",
        metavar="roce,ib",
        help="plan both fabrics and print their bills of materials side by side, with the second's "
        "difference from the first in percent",
    )
    parser.add_argument("--gpus", metavar="N", help="GPUs in all (a multiple of --gpus-per-node)")
    parser.add_argument("--gpus-per-node", metavar="G", help="GPUs per node")
    parser.add_argument("--nics-per-node", metavar="R", help="fabric NICs (rails) per node (default: G)")
    parser.add_argument(
        "--nic-gbps", metavar="S", help="NIC speed in Gb/s: every link of the plan runs at it"
    )
    parser.add_argument("--switch", metavar="MODEL", help=f"the switch model from the catalog: {names}")
    parser.add_argument(
        "--switch-ports",
        metavar="P",
        help="a switch outside the catalog (a modular chassis): its port (cage) count",
    )
    parser.add_argument(
        "--switch-port-gbps", metavar="B", help="with --switch-ports: what one port (cage) carries, Gb/s"
    )
    parser.add_argument(
        "--platform",
        metavar="|".join(ETHERNET_PLATFORMS),
        help="with --switch-ports and RoCE: the switch platform its inventory names",
    )
    parser.add_argument(
        "--spine-switch",
        metavar="MODEL",
        help="the catalog model of the spines and cores (default: the leaf's)",
    )
    parser.add_argument(
        "--oversubscription",
        metavar="X",
        default="1",
        help="leaf downlink to uplink capacity, X:1 (1: non-blocking)",
    )
    parser.add_argument(
        "--rail-optimised",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="NIC k of every node on rail k's leaves (--no-rail-optimised: each node's NICs on "
        "consecutive ports of one leaf)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON (with every cable)")
    parser.add_argument("--markdown", metavar="FILE", help="also write the bill of materials as Markdown")
    parser.add_argument(
        "--inventory",
        metavar="DIR",
        help="also write the plan as inventory: DIR/hosts.yml (switches by tier, every cable in "
        "fabric_links) and DIR/group_vars/all.yml (a skeleton fabric_intent to complete)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="with --inventory or --markdown: replace the files it writes if they exist (never through a "
        "symbolic link)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    _check_markdown_path(args.markdown, args.overwrite)
    _check_inventory_dir(args)
    if args.compare is not None:
        return _run_compare(args)
    if args.fabric is None:
        raise PlanError("--fabric: expected roce or ib (or --compare roce,ib for both)")
    plan = plan_fabric(plan_input(args, _fabric(args.fabric, "--fabric")))
    written = _write_inventory(args, plan)  # first: a refusal leaves nothing printed
    sys.stdout.write(render.json_document(plan) if args.json else render.text(plan))
    _write_markdown(args.markdown, render.markdown(plan), args.overwrite)
    if written:
        note = f"inventory written: {', '.join(str(path) for path in written)}"
        print(note, file=sys.stderr if args.json else sys.stdout)
    return 0


def _run_compare(args: argparse.Namespace) -> int:
    if args.fabric is not None:
        raise PlanError("--fabric and --compare: give one (--compare plans both fabrics)")
    if args.inventory is not None:
        raise PlanError("--inventory: one fabric's plan only; give --fabric instead of --compare")
    fabrics = [_fabric(name.strip(), "--compare") for name in args.compare.split(",")]
    if len(fabrics) != 2 or fabrics[0] == fabrics[1]:
        raise PlanError(f"--compare {args.compare}: expected two fabrics, roce,ib or ib,roce")
    base, other = (plan_fabric(plan_input(args, fabric, comparing=True)) for fabric in fabrics)
    shown = render.comparison_json_document if args.json else render.comparison_text
    sys.stdout.write(shown(base, other))
    _write_markdown(args.markdown, render.comparison_markdown(base, other), args.overwrite)
    return 0


def plan_input(args: argparse.Namespace, fabric: str, comparing: bool = False) -> PlanInput:
    """The planner's question from the options, each value checked and a bad one named."""
    gpus = _count(args.gpus, "--gpus")
    per_node = _count(args.gpus_per_node, "--gpus-per-node")
    if gpus % per_node:
        raise PlanError(
            f"--gpus {gpus}: expected a multiple of --gpus-per-node {per_node} (whole nodes: "
            f"{gpus // per_node * per_node} or {(gpus // per_node + 1) * per_node})"
        )
    rails = per_node if args.nics_per_node is None else _count(args.nics_per_node, "--nics-per-node")
    speed = _count(args.nic_gbps, "--nic-gbps")
    choice = _Models(args, fabric, speed, comparing)
    leaf = choice.leaf()
    spine = choice.spine(leaf)
    return PlanInput(
        fabric=fabric,
        gpus=gpus,
        gpus_per_node=per_node,
        nics_per_node=rails,
        nic_gbps=speed,
        leaf_model=leaf,
        spine_model=spine,
        oversubscription=_ratio(args.oversubscription),
        rail_optimised=args.rail_optimised,
    )


@dataclass(frozen=True)
class _Models:
    """The leaf and spine models of one fabric from --switch, --switch-ports and --spine-switch. When
    comparing, a catalog model of the other fabric is left to that fabric's side, and a side with no
    model of its own gets the catalog's default for the NIC speed."""

    args: argparse.Namespace
    fabric: str
    speed: int
    comparing: bool

    def leaf(self) -> SwitchModel:
        args = self.args
        generic = args.switch_ports is not None or args.switch_port_gbps is not None
        if args.switch is not None and generic:
            raise PlanError("--switch and --switch-ports: give one (a catalog model or a generic switch)")
        if args.platform is not None and not generic:
            raise PlanError("--platform: only with --switch-ports (a catalog model names its own platform)")
        if generic:
            return self._generic()
        if args.switch is not None:
            model = self._catalog(args.switch, "--switch")
            if model is not None:
                return model
        elif not self.comparing:
            raise PlanError(
                f"--switch: expected a model ({', '.join(CATALOG)}) or --switch-ports P --switch-port-gbps B"
            )
        return self._checked(default_model(self.fabric, self.speed), "--nic-gbps")

    def spine(self, leaf: SwitchModel) -> SwitchModel:
        if self.args.spine_switch is None:
            return leaf
        model = self._catalog(self.args.spine_switch, "--spine-switch")
        return leaf if model is None else model

    def _generic(self) -> SwitchModel:
        args = self.args
        if args.switch_ports is None or args.switch_port_gbps is None:
            raise PlanError("--switch-ports P and --switch-port-gbps B: give both (a generic switch)")
        ports = _count(args.switch_ports, "--switch-ports")
        port_gbps = _count(args.switch_port_gbps, "--switch-port-gbps")
        platform = args.platform
        if platform is not None and platform not in ETHERNET_PLATFORMS:
            raise PlanError(f"--platform {platform}: expected one of {', '.join(ETHERNET_PLATFORMS)}")
        if platform is not None and self.fabric == "ib" and not self.comparing:
            raise PlanError(f"--platform {platform}: an Ethernet switch platform; --fabric ib has none")
        model = generic_model(ports, port_gbps, self.fabric, platform if self.fabric == "roce" else None)
        return self._checked(model, "--switch-port-gbps")

    def _catalog(self, name: str, option: str) -> SwitchModel | None:
        """The catalog model; None when comparing and it is the other fabric's (that side uses it)."""
        model = CATALOG.get(name.lower())
        if model is None:
            raise PlanError(f"{option} {name}: expected one of {', '.join(CATALOG)}")
        if model.fabric not in (self.fabric, "any"):
            if self.comparing:
                return None
            fitting = ", ".join(key for key, other in CATALOG.items() if other.fabric == self.fabric)
            raise PlanError(
                f"{option} {name}: {model.title} is {FABRIC_NAMES[model.fabric]} switch, not "
                f"{self.fabric}; --fabric {self.fabric} takes {fitting}"
            )
        return self._checked(model, option, name)

    def _checked(self, model: SwitchModel, option: str, value: str | None = None) -> SwitchModel:
        if model.lanes(self.speed):
            return model
        named = option if value is None else f"{option} {value}"
        speeds = ", ".join(f"{s}G" for s in model.link_gbps)
        raise PlanError(
            f"{named}: {model.title} cannot carry --nic-gbps {self.speed} links: its "
            f"{model.cage_gbps}G cages break out to {speeds}"
        )


def _fabric(name: str, option: str) -> str:
    if name not in FABRICS:
        raise PlanError(f"{option} {name}: expected one of {', '.join(FABRICS)}")
    return name


def _count(text: str | None, option: str) -> int:
    if text is None:
        raise PlanError(f"{option}: required; expected a whole number, at least 1")
    value = text.strip()
    if not (value.isascii() and value.isdigit()) or int(value) < 1:  # int() refuses "²"
        raise PlanError(f"{option} {text!r}: expected a whole number, at least 1")
    return int(value)


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 1 <= value < math.inf:
        raise PlanError(f"--oversubscription {text!r}: expected a number, at least 1 (1: non-blocking)")
    return value


def _check_markdown_path(name: str | None, overwrite: bool) -> None:
    """Refuse a file that could not be written before planning anything."""
    if name is None:
        return
    path = Path(name)
    if not name.strip() or path.is_dir() or not path.parent.is_dir():
        raise PlanError(f"--markdown {name!r}: expected a file path to write in an existing directory")
    refuse_unsafe(path, "--markdown", overwrite, "without --overwrite")


def _check_inventory_dir(args: argparse.Namespace) -> None:
    """Refuse, before planning, a directory the inventory could not be written in or that already
    holds it (the writer refuses that too; here the refusal names --overwrite)."""
    if args.inventory is None:
        if args.overwrite and args.markdown is None:
            raise PlanError("--overwrite: only with --inventory DIR or --markdown FILE")
        return
    directory = Path(args.inventory)
    if not args.inventory.strip() or (directory.exists() and not directory.is_dir()):
        raise PlanError(f"--inventory {args.inventory!r}: expected a directory to write the inventory in")
    if (directory / GROUP_VARS_FILE).parent.is_symlink():
        raise PlanError(
            f"--inventory: {(directory / GROUP_VARS_FILE).parent} is a symbolic link; not written through it"
        )
    for name in (HOSTS_FILE, GROUP_VARS_FILE):  # lexists: a dangling link counts (refused as a link)
        refuse_unsafe(directory / name, "--inventory", args.overwrite, "without --overwrite")


def _write_inventory(args: argparse.Namespace, plan: FabricPlan) -> tuple[Path, ...]:
    if args.inventory is None:
        return ()
    return write_plan_inventory(plan, Path(args.inventory), overwrite=args.overwrite)


def _write_markdown(name: str | None, text: str, overwrite: bool) -> None:
    if name is None:
        return
    write_safely(Path(name), text, "--markdown", overwrite, "without --overwrite")
