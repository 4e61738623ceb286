"""`fabcheck intent check|show`: validate and print the fabric intent of an inventory."""

from __future__ import annotations

import argparse
import json
import sys

from fabcheck.errors import IntentError
from fabcheck.intent.loader import load_inventory


def register(sub: argparse._SubParsersAction) -> None:
    intent = sub.add_parser("intent", help="validate or show the fabric intent of an inventory")
    actions = intent.add_subparsers(dest="intent_command", required=True)
    check = actions.add_parser("check", help="validate the intent; exit 2 when invalid")
    check.add_argument("-i", "--inventory", required=True, help="Ansible inventory (file or folder)")
    check.set_defaults(func=run_check)
    show = actions.add_parser("show", help="print the resolved intent (defaults filled in) as JSON")
    show.add_argument("-i", "--inventory", required=True)
    show.add_argument("--host", help="resolve for this host (its rails)")
    show.set_defaults(func=run_show)


def run_check(args: argparse.Namespace) -> int:
    try:
        inventory = load_inventory(args.inventory)
    except IntentError as err:
        print(f"{args.inventory}: fabric intent is INVALID", file=sys.stderr)
        for problem in err.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    intent = inventory.intent
    lossless = intent.lossless
    print(f"{args.inventory}: fabric intent is valid")
    print(f"  kind {intent.kind}, trust {intent.trust}, congestion control {intent.congestion_control}")
    pfc = "on" if lossless.pfc else "off"
    print(
        f"  lossless DSCP {lossless.dscp} -> priority {lossless.priority}, PFC {pfc};"
        f" CNP DSCP {intent.cnp.dscp} -> priority {intent.cnp.priority}"
    )
    print(
        f"  MTU netdev {intent.mtu.netdev} / RDMA {intent.mtu.rdma} / switch {intent.mtu.switch};"
        f" link {intent.link.speed_gbps} Gb/s {intent.link_layer}"
    )
    print(
        f"  {len(inventory.hosts)} host(s); rails per host: "
        + (", ".join(f"{h.name}={len(h.intent.rails)}" for h in inventory.hosts) or "none")
    )
    return 0


def run_show(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    intent = inventory.host(args.host).intent if args.host else inventory.intent
    print(json.dumps(intent.model_dump(mode="json"), indent=2, sort_keys=True))
    return 0
