"""`fabcheck render`: print what the switch play would push to each switch, without connecting.

The output is the whole config: what a push scoped by `--tags` sends depends on what the switch
runs, so `ansible-playbook site.yml --tags pfc --check --diff` is the way to see that."""

from __future__ import annotations

import argparse
import json
import sys

from fabcheck.desired.switch import desired_switch
from fabcheck.errors import UsageError
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.platforms import PLATFORMS as SWITCH_PLATFORMS
from fabcheck.switch.render import render_switch

EPILOG = """\
examples:
  fabcheck render -i inventory/example
  fabcheck render -i inventory/lab --limit leaf01
  fabcheck render -i inventory/lab --platform eos --json

exit codes: 0 rendered, 2 usage error, invalid intent or inventory
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "render",
        help="print the switch configs the switch play would push (no switch is contacted)",
        description="Render each switch's desired state with its platform's templates/<platform>/.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-i", "--inventory", required=True, help="Ansible inventory (file or folder)")
    parser.add_argument("--limit", default="", help="comma-separated switch names")
    parser.add_argument("--platform", choices=sorted(SWITCH_PLATFORMS), help="only switches of this platform")
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per switch (desired state + config)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    fabric = fabric_of(inventory)
    wanted = [name.strip() for name in args.limit.split(",") if name.strip()]
    names = [s.name for s in fabric.switches]
    unknown = [name for name in wanted if name not in names]
    if unknown:
        raise UsageError(
            f"--limit: {', '.join(unknown)} not a switch of {args.inventory} "
            f"(switches: {', '.join(names) or 'none'})"
        )
    chosen = [
        s for s in fabric.switches if (not wanted or s.name in wanted) and args.platform in (None, s.platform)
    ]
    if not chosen:
        raise UsageError(f"no switch to render in {args.inventory}")
    for switch in chosen:
        desired = desired_switch(inventory.intent, fabric, switch.name)
        rendered = render_switch(desired)
        if args.json:
            print(
                json.dumps(
                    {
                        "switch": switch.name,
                        "platform": switch.platform,
                        "desired": desired.to_json(),
                        "config": rendered.text,
                    },
                    allow_nan=False,
                )
            )
        else:
            print(f"# {switch.name} ({switch.platform}, {switch.device_type})")
            sys.stdout.write(rendered.text if rendered.text.endswith("\n") else rendered.text + "\n")
    return 0
