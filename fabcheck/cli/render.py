"""`fabcheck render`: print what the switch play would push to each switch, without connecting.

The output is the whole config: what a push scoped by `--tags` sends depends on what the switch
runs, so `ansible-playbook site.yml --tags pfc --check --diff` is the way to see that."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from fabcheck.desired.switch import desired_switch
from fabcheck.errors import UsageError
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.platforms import NVUE, SONIC
from fabcheck.intent.platforms import PLATFORMS as SWITCH_PLATFORMS
from fabcheck.switch import nvue_openapi
from fabcheck.switch.platforms.nvue import WATCHDOG_SINCE
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck.switch.sonic_patch import SonicError, parse_fragment
from fabcheck.switch.sonic_yang import SonicYangError, validate_config_db

EPILOG = """\
examples:
  fabcheck render -i inventory/example
  fabcheck render -i inventory/lab --limit leaf01
  fabcheck render -i inventory/lab --platform eos --json
  fabcheck render -i inventory/lab --platform sonic --validate
  fabcheck render -i inventory/lab --platform nvue --validate --nvue-release 5.11

--validate judges each render with its platform's own schema: a SONiC render is translated to YANG
instance data and validated by yanglint against sonic-buildimage's models (vendor/sonic-yang/). An
NVUE render's `nv set` lines are walked, strictly, down NVIDIA's NVUE OpenAPI of the switch's Cumulus
Linux release (the nvueschema package's models: pip install 'fabcheck[nvue-schema]'): --nvue-release
names it (repeatable); without it every release the package carries from CL 5.6 (the PFC watchdog)
on. A release the package lacks, or no package, is NOT validated (exit 3). fabcheck holds no schema
of EOS: its renders are reported as NOT validated (exit 3).

exit codes:
  0  rendered (with --validate: every render validated and valid)
  1  --validate: a render was refused (yanglint's message is printed)
  2  usage error, invalid intent or inventory
  3  --validate: nothing was refused, but a render could not be validated (a platform without a
     schema, or yanglint missing: scripts/setup installs Debian's libyang-tools)
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
    parser.add_argument(
        "--validate",
        action="store_true",
        help="validate each render with its platform's schema (SONiC: YANG via yanglint; NVUE: NVIDIA's "
        "NVUE OpenAPI via nvueschema; EOS: reported as not available)",
    )
    parser.add_argument(
        "--nvue-release",
        action="append",
        default=[],
        metavar="X.Y",
        help="--validate: the Cumulus Linux release(s) to judge NVUE renders against (repeatable; "
        "default: every release nvueschema carries from 5.6 on)",
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
    outcomes: list[Validation] = []
    for switch in chosen:
        desired = desired_switch(inventory.intent, fabric, switch.name)
        rendered = render_switch(desired)
        validation = validate_render(rendered, tuple(args.nvue_release)) if args.validate else None
        if args.json:
            record = {
                "switch": switch.name,
                "platform": switch.platform,
                "desired": desired.to_json(),
                "config": rendered.text,
            }
            if validation is not None:
                record["validation"] = validation.to_json()
            print(json.dumps(record, allow_nan=False))
        else:
            print(f"# {switch.name} ({switch.platform}, {switch.device_type})")
            sys.stdout.write(rendered.text if rendered.text.endswith("\n") else rendered.text + "\n")
        if validation is not None:
            outcomes.append(validation)
            sys.stdout.flush()
            print(f"fabcheck: {switch.name}: {validation.summary}", file=sys.stderr)
            for message in validation.messages:
                print(f"  {message}", file=sys.stderr)
    if any(o.status == REFUSED for o in outcomes):
        return 1
    if any(o.status != VALID for o in outcomes):
        return 3
    return 0


VALID, REFUSED, NOT_VALIDATED = "valid", "refused", "not_validated"


@dataclass(frozen=True)
class Validation:
    """One render judged by its platform's schema, or why it could not be."""

    status: str  # VALID, REFUSED or NOT_VALIDATED
    summary: str
    messages: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "summary": self.summary, "messages": list(self.messages)}


def validate_render(rendered: RenderedConfig, nvue_releases: tuple[str, ...] = ()) -> Validation:
    """SONiC: the fragment through yanglint and SONiC's YANG; NVUE: the lines down NVIDIA's NVUE OpenAPI
    of each release; other platforms: not validated, said so."""
    if rendered.platform == NVUE.name:
        return validate_nvue_render(rendered, nvue_releases)
    if rendered.platform != SONIC.name:
        return Validation(
            NOT_VALIDATED,
            f"validation is not available for platform {rendered.platform} (fabcheck holds SONiC's "
            f"YANG models only, vendor/sonic-yang/): NOT validated",
        )
    try:
        fragment = parse_fragment(rendered)
    except SonicError as err:  # not a CONFIG_DB fragment at all: refused before any schema
        return Validation(REFUSED, f"REFUSED: {err}")
    try:
        verdict = validate_config_db(fragment, fragment=True)
    except SonicYangError as err:  # no yanglint, a too old one: the render was not judged
        return Validation(NOT_VALIDATED, f"NOT validated: {err}")
    return Validation(VALID if verdict.valid else REFUSED, verdict.summary(), verdict.messages)


def nvue_default_releases() -> tuple[str, ...]:
    """Every release nvueschema carries from the one fabcheck's NVUE renders need (CL 5.6)."""
    return tuple(
        name for name in nvue_openapi.releases() if tuple(map(int, name.split("."))) >= WATCHDOG_SINCE
    )


def validate_nvue_render(rendered: RenderedConfig, releases: tuple[str, ...] = ()) -> Validation:
    """Each `nv set` line walked down NVIDIA's NVUE OpenAPI of each release (fabcheck.switch.nvue_openapi):
    REFUSED naming the release and the line; a release nvueschema lacks is NOT validated, never valid."""
    wanted = releases or nvue_default_releases()
    if not wanted:
        return Validation(
            NOT_VALIDATED,
            f"NOT validated: the NVUE schema package is not installed (pip install '{nvue_openapi.PINNED}')",
        )
    refused: list[str] = []
    skipped: list[str] = []
    judged: list[str] = []
    for release in wanted:
        try:
            problems = nvue_openapi.lines_problems(rendered.lines, release)
        except nvue_openapi.NvueSchemaUnavailable as err:
            skipped.append(f"CL {release}: NOT validated: {err}")
            continue
        judged.append(release)
        refused += [f"CL {release}: {problem}" for problem in problems]
    source = f"NVIDIA's NVUE OpenAPI ({nvue_openapi.PINNED})"
    if refused:
        return Validation(REFUSED, f"REFUSED by {source}: {len(refused)} line(s)", tuple(refused + skipped))
    if skipped:
        summary = f"NOT validated for {len(skipped)} release(s)" + (
            f"; valid against {source} of CL {', '.join(judged)}" if judged else ""
        )
        return Validation(NOT_VALIDATED, summary, tuple(skipped))
    return Validation(VALID, f"valid against {source} of CL {', '.join(judged)}")
