"""The generated blocks of the documentation site (docs/*.md): every table of checks, owned fields,
intent keys and command-line options is written here from the code that defines it, never by hand.

A block sits between two markers in a page:

    <!-- NAME (generated: scripts/gen_docs) -->
    ...the table...
    <!-- /NAME -->

    scripts/gen_docs            # rewrite every block of docs/*.md from the code
    scripts/gen_docs --check    # exit 1 naming each stale block (tests/docs/test_generated.py)

Not part of the product: the wheel ships `fabcheck` only, and nothing in it needs its own docs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
COMMAND = "scripts/gen_docs"
_BLOCK = re.compile(
    r"^<!-- (?P<name>[\w:.-]+) \(generated[^\n]*-->\n(?P<body>.*?)<!-- /(?P=name) -->", re.S | re.M
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ---- checks ---------------------------------------------------------------------------------------


def catalog_table(table: str) -> str:
    """The catalog's own table (host; switch and link; sm), as `python -m fabcheck.gate.catalog
    --markdown TABLE` prints it."""
    from fabcheck.gate import catalog

    return catalog.markdown(catalog.TABLES[table])


def wire_checks_table() -> str:
    from fabcheck.gate import catalog

    return catalog.markdown(("host", "switch", "link"), catalog.WIRE_CHECK_IDS)


def bus_checks_table() -> str:
    from fabcheck.gate import catalog

    return catalog.markdown(("host",), catalog.BUS_CHECK_IDS)


def nvlink_checks_table() -> str:
    from fabcheck.gate import catalog

    return catalog.markdown(("host",), catalog.NVLINK_CHECK_IDS)


def _inputs(inputs: object) -> str:
    if not dataclasses.is_dataclass(inputs):
        return "-"
    fields = dataclasses.fields(inputs)
    if not fields:
        return "-"
    return ", ".join(f"`{type(inputs).__name__}.{f.name}` = {getattr(inputs, f.name)!r}" for f in fields)


def stage_checks_table(stage: str) -> str:
    """The checks a traffic stage (nccl, perftest, incast) declares: the catalog selects them by
    their stage's prefix, so they are listed here from the declarations themselves."""
    from fabcheck.checks.declared import DECLARED

    rows = []
    for check in DECLARED:
        if check.stage != stage:
            continue
        fixed = "no role" if check.role is None else f"`{check.role}`"
        fixed += f" tag `{check.tag}`" if check.role and check.tag else ""
        reads = ", ".join(check.reads)
        rows.append((f"`{check.id}`", check.scope, reads, fixed, _inputs(check.inputs), check.summary))
    return _table(("check", "per", "reads", "fixed by", "inputs (default)", "expected"), rows)


def switch_owned_fields() -> str:
    """Every field role switch_qos owns, with its tag, check and the test that drifts it alone."""
    from fabcheck.checks import switch

    tests = {(o.platform, o.field): "`tests/invariant/test_switch_fields.py`" for o in switch.OWNED_FIELDS}
    return switch.owned_fields_markdown(tests)


def host_owned_fields() -> str:
    """Every NIC setting role roce_host owns, and the NIC values a host check judges that no role writes."""
    from fabcheck.checks import host
    from fabcheck.checks.host.owned import host_owned_fields_markdown

    tags = {check.id: check.tag for check in host.HOST_CHECK_DECLS}
    return host_owned_fields_markdown(tags, "`tests/invariant/test_host_fields.py`")


# ---- intent keys ----------------------------------------------------------------------------------

# What each key of fabric_intent means, before the description its Field may carry. A key here that
# the model lacks, or a model key with no meaning at all, fails tests/docs/test_generated.py.
INTENT_MEANINGS: dict[str, str] = {
    "kind": "`roce` or `ib`: the fabric's link layer; RoCE-only checks skip on `ib`",
    "nccl.gdr_mechanism": "how GPUDirect RDMA maps GPU memory: `dmabuf` (kernel >= 5.12, open GPU "
    "kernel module), `peermem` (nvidia_peermem) or `any`; role gpu_rdma loads nvidia_peermem only where "
    "needed (host.gpudirect)",
    "pcie.iommu": "`passthrough` (identity domain or no IOMMU), `translated_with_ats` (a DMA domain with "
    "ATS on the NIC) or `any` (host.iommu)",
    "nic_firmware[].psid": "the NIC part (board id / PSID) the entry pins",
    "nic_firmware[].config": "mlxconfig parameter -> value (name or number) the NIC must hold "
    "(host.nic_fw_config; role roce_host sets them, effective after a firmware reset or reboot)",
    "gpu_health.ignored_xids": "Xid codes that do not fail host.gpu_health (application-caused or "
    "informational in NVIDIA's Xid catalog)",
    "trust": "host and switch classification field",
    "lossless.dscp": "the RoCE data class's DSCPs (lossless)",
    "lossless.priority": "the lossless 802.1p priority / traffic class",
    "lossless.pfc": "PFC on the lossless priority (hosts and switches)",
    "lossless.pfc_storm_prevention_ms": (
        "NIC PFC storm prevention (`ethtool --set-tunable IF pfc-prevention-tout MS`): after this long a "
        'stalled NIC stops sending pauses; `0` off, else `80`..`8000` (mlx5\'s range; 100 is its "auto", '
        "a NIC ships at 8000); `null` leaves it alone; not managed without PFC. The `pfc-prevention-tout: "
        "N` line fabcheck reads is known from ethtool's source, not yet from a captured transcript "
        "(unverified)"
    ),
    "cnp.dscp": "DSCP of congestion notification packets (must differ from the lossless class)",
    "cnp.priority": "priority of congestion notification packets (must differ from the lossless one)",
    "congestion_control": "`dcqcn`, `pfc_only` (Meta-style, NIC RP/NP off) or `ecn_only` (lossy RoCE)",
    "ecn.enabled": "switches mark ECN on the lossless queue (also under `pfc_only`: marks feed counters)",
    "ecn.min_bytes": "switch ECN ramp start on the lossless queue",
    "ecn.max_bytes": "switch ECN ramp end on the lossless queue",
    "ecn.probability": "marking probability at the ramp's end, percent",
    "dcqcn.rp_enable": "NIC DCQCN reaction point (`roce_rp/enable/<priority>`)",
    "dcqcn.np_enable": "NIC DCQCN notification point (`roce_np/enable/<priority>`)",
    "roce_tos": "`cma_roce_tos` / `traffic_class` byte ((26 << 2) \\| ECT(0))",
    "mtu.netdev": "netdev MTU: must carry the RDMA MTU + 96 B of RoCE headers",
    "mtu.rdma": "RDMA (IB) MTU the ports must reach",
    "mtu.switch": "switch port MTU (EOS caps 9216 at 9214)",
    "rails": "GPU index -> rail NIC name; per host override: host var `fabric_rails`",
    "link.link_layer": "per-NIC link layer; unset: from `kind`",
    "nccl.transport": "NCCL's transport: RDMA only",
    "nccl.gdr_required": "GPUDirect RDMA required (dma-buf or `nvidia_peermem`, host.gpudirect; `/GDRDMA` "
    "channels)",
    "nccl.gid_index": "`NCCL_IB_GID_INDEX` (RoCE); null: the first IPv4 RoCE v2 GID at one index everywhere",
    "nccl.allowed_networks": "networks NCCL may choose (prefixes of its network name)",
    "performance.perftest_min_fraction": "perftest bandwidth floor, fraction of line rate",
    "performance.nccl_busbw_min_fraction": (
        "all_reduce busbw floor, fraction of the node's aggregate NIC line rate"
    ),
    "performance.nccl_min_bytes": "the largest all_reduce size the nccl stage runs and judges",
    "subnet_manager.routing_engine": "OpenSM routing engine (a comma list is tried in order)",
    "subnet_manager.sm_priorities": "SM host -> priority; exactly one top priority: the intended master",
    "subnet_manager.lmc": "OpenSM LID mask control",
    "subnet_manager.sweep_interval": "OpenSM sweep interval, seconds",
    "subnet_manager.qos": "OpenSM QoS; the `qos_*` keys need it true",
    "subnet_manager.qos_max_vls": "OpenSM `qos_max_vls`",
    "subnet_manager.qos_high_limit": "OpenSM `qos_high_limit`",
    "subnet_manager.qos_vlarb_high": "OpenSM `qos_vlarb_high` (VL:weight pairs)",
    "subnet_manager.qos_vlarb_low": "OpenSM `qos_vlarb_low` (VL:weight pairs)",
    "subnet_manager.qos_sl2vl": "OpenSM `qos_sl2vl`: one VL per SL",
    "subnet_manager.partitions": (
        "the partitions of `partitions.conf` (a Default 0x7fff rule is added unless stated)"
    ),
    "subnet_manager.partitions[].name": "partition name",
    "subnet_manager.partitions[].pkey": (
        "15-bit partition key `0x0001..0x7fff` (the full-member bit is no part of it)"
    ),
    "subnet_manager.partitions[].members": "OpenSM member list, e.g. `ALL=full`",
    "subnet_manager.partitions[].ipoib": "IPoIB on this partition",
    "subnet_manager.partitions[].mtu": "partition MTU (written as OpenSM's enum)",
    "subnet_manager.partitions[].sl": "service level",
    "subnet_manager.partitions[].ipoib_parents": "host interfaces that get an IPoIB child of this partition",
}


def _model_class(annotation: Any) -> type | None:
    from pydantic import BaseModel

    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _type_text(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin is typing.Literal:
        return " / ".join(f"`{json.dumps(value)}`" for value in args)
    if origin in (typing.Union, types.UnionType):
        texts = [_type_text(arg) for arg in args if arg is not type(None)]
        return " or ".join(texts) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_text(args[0])}"
    if origin is dict:
        return f"map {_type_text(args[0])} -> {_type_text(args[1])}"
    names = {int: "integer", float: "number", bool: "boolean", str: "string"}
    if annotation in names:
        return names[annotation]
    model = _model_class(annotation)
    return model.__name__ if model else str(annotation)


_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"), ("min_length", "at least"), ("pattern", "~"))


def _constraints(metadata: Sequence[Any]) -> list[str]:
    found = []
    for item in metadata:
        for attribute, word in _BOUNDS:
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(f"{word} {value}" if attribute != "pattern" else f"`{value}`")
    return found


def _inner_constraints(annotation: Any) -> list[str]:
    """Bounds written inside the type (Annotated[int, Field(ge=0, le=7)], also in a list or union)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _constraints(args[1:]) + _inner_constraints(args[0])
    if origin in (typing.Union, types.UnionType):
        return [c for arg in args for c in _inner_constraints(arg)]
    return []


def _default_text(value: Any) -> str:
    if isinstance(value, (str, int, float, bool, list, dict)) or value is None:
        return f"`{json.dumps(value)}`"
    return "see its keys"


def intent_keys() -> Iterator[tuple[str, str, str, str]]:
    """Every key of fabric_intent, depth first in the model's order: (key, type and bounds, default,
    meaning)."""
    from fabcheck.intent.model import FabricIntent

    def walk(model: type, prefix: str) -> Iterator[tuple[str, str, str, str]]:
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            key = prefix + name
            annotation = field.annotation
            nested = _model_class(annotation)
            item = typing.get_args(annotation)[0] if typing.get_origin(annotation) is list else None
            bounds = _constraints(field.metadata) + _inner_constraints(annotation)
            kind = _type_text(annotation) + (f" ({', '.join(bounds)})" if bounds else "")
            meaning = "; ".join(text for text in (INTENT_MEANINGS.get(key), field.description) if text)
            if nested is not None:
                yield from walk(nested, key + ".")
                continue
            if field.is_required():
                default = "required"
            else:
                default = _default_text(field.get_default(call_default_factory=True))
            yield key, kind, default, meaning
            if item is not None and _model_class(item) is not None:
                yield from walk(item, key + "[].")

    yield from walk(FabricIntent, "")


def ib_inventory_table() -> str:
    """The inventory variables of the InfiniBand plan (fabcheck.intent.ib_fabric.INVENTORY_VARIABLES)."""
    from fabcheck.intent.ib_fabric import INVENTORY_VARIABLES

    rows = [
        (f"`{var}`" if " " not in var else var, on, default, meaning)
        for var, on, default, meaning in INVENTORY_VARIABLES
    ]
    return _table(("variable", "set on", "default", "meaning"), rows)


def nvlink_inventory_table() -> str:
    """The inventory variables of the NVLink domains (fabcheck.intent.nvlink.INVENTORY_VARIABLES)."""
    from fabcheck.intent.nvlink import INVENTORY_VARIABLES

    rows = [
        (f"`{var}`" if " " not in var else var, on, default, meaning)
        for var, on, default, meaning in INVENTORY_VARIABLES
    ]
    return _table(("variable", "set on", "default", "meaning"), rows)


def switch_inventory_table() -> str:
    """The inventory variables of Ethernet switches and cabling (intent.fabric.INVENTORY_VARIABLES)."""
    from fabcheck.intent.fabric import INVENTORY_VARIABLES

    rows = [
        (f"`{var}`" if " " not in var else var, on, default, meaning)
        for var, on, default, meaning in INVENTORY_VARIABLES
    ]
    return _table(("variable", "set on", "default", "meaning"), rows)


def intent_table() -> str:
    return _table(
        ("key", "type", "default", "meaning"),
        [(f"`{key}`", kind, default, meaning) for key, kind, default, meaning in intent_keys()],
    )


# ---- command-line options -------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each sub-command's one-line help, as `fabcheck COMMAND --help` lists it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def _help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help:
        return ""
    params = {**vars(action), "prog": parser.prog}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params


def _option_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str, str, str]]:
    rows = []
    for action in parser._actions:
        skipped = isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        if skipped or action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.dest.upper()}`"
        if action.nargs == 0:
            value = "-"
        elif action.choices is not None:
            value = ", ".join(f"`{choice}`" for choice in action.choices)
        else:
            metavar = action.metavar or action.dest.upper()
            value = f"`{' '.join(metavar) if isinstance(metavar, tuple) else metavar}`"
            if action.nargs in ("*", "+"):
                value += " ..."
        if action.required:
            default = "required"
        elif action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
            default = "-"
        else:
            default = f"`{action.default}`"
        repeatable = isinstance(action, (argparse._AppendAction, argparse._CountAction))
        repeat = " (repeatable)" if repeatable else ""
        rows.append((names, value, default, _help_text(parser, action) + repeat))
    return rows


Command = tuple[tuple[str, ...], argparse.ArgumentParser, str]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...], summary: str) -> Iterator[Command]:
    subs, summaries = _subcommands(parser), _summaries(parser)
    if not subs:
        yield path, parser, summary
        return
    for name, sub in subs.items():
        yield from _commands(sub, (*path, name), summaries.get(name, ""))


def cli_table(command: str) -> str:
    """The options of `fabcheck COMMAND` (and of each of its sub-commands), from the argparse parser the
    CLI builds."""
    from fabcheck.cli import build_parser

    parser = build_parser()
    top = _subcommands(parser)[command]
    parts = []
    for path, sub, summary in _commands(top, (command,), _summaries(parser).get(command, "")):
        title = f"`fabcheck {' '.join(path)}`"
        described = (sub.description or summary).strip().split("\n\n")[0].replace("\n", " ")
        rows = _option_rows(sub)
        options = _table(("option", "value", "default", "meaning"), rows) if rows else "No options.\n"
        parts.append(f"**{title}**: {described}\n\n{options}")
    return "\n".join(parts)


def cli_commands() -> tuple[str, ...]:
    from fabcheck.cli import build_parser

    return tuple(_subcommands(build_parser()))


# ---- the fabric plan ------------------------------------------------------------------------------


def plan_catalog_table() -> str:
    """The switch models `fabcheck plan --switch` takes (fabcheck.fabricplan.catalog)."""
    from fabcheck.fabricplan import render
    from fabcheck.fabricplan.catalog import CATALOG

    return render.markdown_table(render.catalog_table(list(CATALOG.values()))) + "\n"


# ---- the blocks -----------------------------------------------------------------------------------


def generators() -> dict[str, Callable[[], str]]:
    """Every block name a page may hold, and what writes it."""
    blocks: dict[str, Callable[[], str]] = {
        "checks:host": lambda: catalog_table("host"),
        "checks:switch": lambda: catalog_table("switch"),
        "checks:sm": lambda: catalog_table("sm"),
        "checks:wire": wire_checks_table,
        "checks:bus": bus_checks_table,
        "checks:ib": lambda: catalog_table("ib"),
        "checks:nvlink": nvlink_checks_table,
        "owned-fields": switch_owned_fields,
        "host-owned-fields": host_owned_fields,
        "intent-keys": intent_table,
        "ib-inventory": ib_inventory_table,
        "nvlink-inventory": nvlink_inventory_table,
        "switch-inventory": switch_inventory_table,
        "plan-catalog": plan_catalog_table,
    }
    for stage in ("nccl", "perftest", "incast"):
        blocks[f"checks:{stage}"] = lambda stage=stage: stage_checks_table(stage)
    for command in cli_commands():
        blocks[f"cli:{command}"] = lambda command=command: cli_table(command)
    return blocks


@dataclasses.dataclass(frozen=True)
class Stale:
    page: Path
    block: str
    why: str


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def regenerate(text: str, blocks: dict[str, Callable[[], str]], cache: dict[str, str]) -> tuple[str, Changes]:
    """The page with every generated block rewritten, and which blocks changed or have no generator."""
    changes = Changes([], [])

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in blocks:
            changes.unknown.append(name)
            return match.group(0)
        if name not in cache:
            cache[name] = blocks[name]().rstrip("\n") + "\n"
        if match.group("body") != cache[name]:
            changes.stale.append(name)
        head = match.group(0)[: match.start("body") - match.start()]
        return f"{head}{cache[name]}<!-- /{name} -->"

    return _BLOCK.sub(replace, text), changes


@dataclasses.dataclass(frozen=True)
class Changes:
    stale: list[str]
    unknown: list[str]


def run(check: bool) -> list[Stale]:
    """Rewrite (or, with check, only compare) every block of every page; what is stale or unknown, and
    every generator no page uses."""
    blocks, cache, problems, used = generators(), {}, [], set()
    for page in pages():
        text = page.read_text()
        new, changes = regenerate(text, blocks, cache)
        used |= {match.group("name") for match in _BLOCK.finditer(text)}
        problems += [Stale(page, name, "no generator of that name") for name in changes.unknown]
        problems += [Stale(page, name, "stale") for name in changes.stale]
        if new != text and not check:
            page.write_text(new)
    unused = sorted(set(blocks) - used)
    problems += [Stale(DOCS, name, "no page holds this generated block") for name in unused]
    return problems


# Defaults the CLI derives from the machine (validate's --concurrency from the controller's cores) are
# written for this controller, so that a page generated anywhere is the same page.
DOCUMENTED_CORES = 2


def _as_documented_controller() -> None:
    """Before fabcheck is imported: the process sees DOCUMENTED_CORES cores."""
    import os

    assert "fabcheck.gate.fabric" not in sys.modules, "call before fabcheck is imported"
    os.sched_getaffinity = lambda _pid: set(range(DOCUMENTED_CORES))  # type: ignore[attr-defined]
    os.cpu_count = lambda: DOCUMENTED_CORES


def main(argv: Sequence[str] | None = None) -> int:
    _as_documented_controller()
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each stale block")
    args = parser.parse_args(argv)
    problems = run(check=args.check)
    for problem in problems:
        where = problem.page.relative_to(REPO)
        print(f"{where}: {problem.block}: {problem.why}" + (f" (run {COMMAND})" if args.check else ""))
    if args.check:
        return 1 if problems else 0
    return 1 if any(p.why != "stale" for p in problems) else 0


if __name__ == "__main__":
    raise SystemExit(main())
