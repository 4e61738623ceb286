"""A fabric plan for people: the bill of materials as a text table (stdout) or Markdown (a ticket, a
design note), one plan or two fabrics side by side (`fabcheck plan --compare roce,ib`).

Pure: every figure is read from the FabricPlan (its Bom, its switches and cables); nothing is counted
twice. The JSON of a plan is planfile.plan_to_json's; a comparison's JSON holds both plans whole.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.fabricplan.model import TIERS, FabricPlan, SwitchModel
from fabcheck.fabricplan.planfile import plan_to_json

# (section, item, Bom attribute, key of that attribute's mapping; None: the attribute is the count)
BOM_ROWS: tuple[tuple[str, str, str, str | None], ...] = (
    ("switches", "leaf", "switches", "leaf"),
    ("switches", "spine", "switches", "spine"),
    ("switches", "core", "switches", "core"),
    ("switches", "total", "switches", "total"),
    ("links", "host (NIC to leaf)", "links", "host"),
    ("links", "leaf to spine", "links", "leaf_spine"),
    ("links", "spine to core", "links", "spine_core"),
    ("links", "total", "links", "total"),
    ("transceivers", "NIC ends", "transceivers", "nic"),
    ("transceivers", "switch cages", "transceivers", "switch"),
    ("transceivers", "total", "transceivers", "total"),
    ("cables", "", "cables", None),
)
# What --compare prints a difference for (the issue's: switches, transceivers, cables); links are shown
# side by side too, and differ only when the tiers do.
COMPARED_SECTIONS = ("switches", "transceivers", "cables")
NOT_APPLICABLE = "-"
GENERIC = "generic"  # catalog.generic_model's name: --switch-ports/--switch-port-gbps


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric_from: int  # columns from this one on are right-aligned


def bom_figures(plan: FabricPlan) -> list[tuple[str, str, int]]:
    """(section, item, count) per row of BOM_ROWS."""
    figures = []
    for section, item, attribute, key in BOM_ROWS:
        value: Any = getattr(plan.bom, attribute)
        figures.append((section, item, int(value if key is None else value[key])))
    return figures


def percent_difference(base: int, other: int) -> float | None:
    """How much `other` differs from `base`, in percent of base; None when base is 0."""
    if base == 0:
        return None
    return (other - base) * 100.0 / base


def percent_text(difference: float | None) -> str:
    return NOT_APPLICABLE if difference is None else f"{difference:+.1f}%"


# ---- one plan ---------------------------------------------------------------------------------------


def model_label(model: SwitchModel) -> str:
    """The catalog key with its title; a generic model's title alone (it has no key)."""
    return model.title if model.name == GENERIC else f"{model.name} ({model.title})"


def describe_model(model: SwitchModel, nic_gbps: int) -> str:
    lanes = model.lanes(nic_gbps)
    label = "generic" if model.name == GENERIC else model_label(model)  # its title repeats the cages
    return (
        f"{label}, {model.cages} x {model.cage_gbps}G cages = "
        f"{model.ports(nic_gbps)} ports of {nic_gbps}G ({lanes} a cage)"
    )


def oversubscription_text(ratio: float) -> str:
    return "non-blocking (1:1)" if ratio == 1 else f"oversubscribed {ratio:g}:1"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {nouns or noun + 's'}"


def summary_lines(plan: FabricPlan) -> list[str]:
    request = plan.input
    lines = [
        f"fabric plan: {request.fabric}, {request.gpus} GPUs = {len(plan.nodes)} nodes x "
        f"{request.gpus_per_node} GPUs, {plural(request.nics_per_node, 'rail')} of {request.nic_gbps}G NICs"
    ]
    if plan.tiers == 1 or request.spine_model == request.leaf_model:
        lines.append(f"switch: {describe_model(request.leaf_model, request.nic_gbps)}")
    else:
        above = "spine" if plan.tiers == 2 else "spine and core"
        lines.append(f"leaf switch: {describe_model(request.leaf_model, request.nic_gbps)}")
        lines.append(f"{above} switch: {describe_model(request.spine_model, request.nic_gbps)}")
    if plan.tiers == 1:
        lines.append("design: 1 tier, no uplinks")
    else:
        design = "rail-optimised" if request.rail_optimised else "not rail-optimised"
        ratio = oversubscription_text(request.oversubscription)
        lines.append(f"design: {plural(plan.tiers, 'tier')}, {ratio}, {design}")
    lines.append(f"leaves: {leaves_text(plan)}")
    return lines


def leaves_text(plan: FabricPlan) -> str:
    """How the host links sit on the leaves: per rail (rail-optimised), else node after node."""
    leaves = [s for s in plan.switches if s.tier == "leaf"]
    hosts = Counter(c.b.device for c in plan.cables if c.tier == "host")
    most = max(hosts.values(), default=0)
    if plan.tiers == 1:
        return f"one switch carries all {plan.bom.links['host']} host links"
    if not plan.input.rail_optimised:
        return f"{len(leaves)}, each node's NICs on consecutive ports (up to {most} host links a leaf)"
    groups = len({s.group for s in leaves})
    per_rail = Counter(s.rail for s in leaves if s.rail is not None)
    each = "/".join(str(count) for count in sorted(set(per_rail.values())))
    return f"{each} per rail ({plural(groups, 'group')} of nodes, up to {most} host links a leaf)"


def ports_table(plan: FabricPlan) -> Table:
    """Per tier: switches, the ports they have at the link speed and the ports the cables use."""
    used = Counter(end.device for cable in plan.cables for end in (cable.a, cable.b))
    rows = []
    for tier in TIERS:
        switches = [s for s in plan.switches if s.tier == tier]
        if not switches:
            continue
        have = sum(s.ports for s in switches)
        taken = sum(used[s.name] for s in switches)
        share = f"{taken * 100 / have:.0f}%" if have else NOT_APPLICABLE
        rows.append((tier, str(len(switches)), str(have), str(taken), share))
    return Table(("tier", "switches", "ports", "ports used", "used"), tuple(rows), numeric_from=1)


def bom_table(plan: FabricPlan) -> Table:
    rows = tuple((section, item, str(count)) for section, item, count in _shown(bom_figures(plan)))
    return Table(("bill of materials", "", "count"), rows, numeric_from=2)


def _shown(figures: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """The figures with each section named on its first row only (a table a person reads)."""
    shown, previous = [], None
    for section, item, count in figures:
        shown.append((section if section != previous else "", item, count))
        previous = section
    return shown


def text(plan: FabricPlan) -> str:
    parts = ["\n".join(summary_lines(plan)), text_table(bom_table(plan)), text_table(ports_table(plan))]
    return "\n\n".join(parts) + "\n"


def markdown(plan: FabricPlan) -> str:
    request = plan.input
    head = f"# Fabric plan: {request.fabric}, {request.gpus} GPUs"
    summary = "\n".join(f"- {line}" for line in summary_lines(plan))
    parts = [head, summary, markdown_table(bom_table(plan)), markdown_table(ports_table(plan))]
    return "\n\n".join(parts) + "\n"


def json_document(plan: FabricPlan) -> str:
    return json.dumps(plan_to_json(plan), indent=2, allow_nan=False) + "\n"


# ---- two fabrics side by side -----------------------------------------------------------------------


def comparison_table(base: FabricPlan, other: FabricPlan) -> Table:
    """Both BOMs, and the other's difference from the base in percent for switches, transceivers
    and cables."""
    left, right = base.input.fabric, other.input.fabric
    rows = []
    ours, theirs = bom_figures(base), bom_figures(other)
    for (section, _item, a), (_s, _i, b), (label, item, _a) in zip(ours, theirs, _shown(ours), strict=True):
        difference = percent_text(percent_difference(a, b)) if section in COMPARED_SECTIONS else ""
        rows.append((label, item, str(a), str(b), difference))
    header = ("bill of materials", "", left, right, f"{right} vs {left}")
    return Table(header, tuple(rows), numeric_from=2)


def comparison_lines(base: FabricPlan, other: FabricPlan) -> list[str]:
    request = base.input
    lines = [
        f"fabric comparison: {request.gpus} GPUs = {len(base.nodes)} nodes x {request.gpus_per_node} "
        f"GPUs, {plural(request.nics_per_node, 'rail')} of {request.nic_gbps}G NICs, "
        f"{oversubscription_text(request.oversubscription)}"
    ]
    for plan in (base, other):
        leaf, spine = plan.input.leaf_model, plan.input.spine_model
        models = model_label(leaf)
        if spine != leaf and plan.tiers > 1:
            models = f"{models} leaves, {model_label(spine)} above them"
        lines.append(f"{plan.input.fabric}: {models}, {plural(plan.tiers, 'tier')}")
    return lines


def comparison_text(base: FabricPlan, other: FabricPlan) -> str:
    summary = "\n".join(comparison_lines(base, other))
    return f"{summary}\n\n{text_table(comparison_table(base, other))}\n"


def comparison_markdown(base: FabricPlan, other: FabricPlan) -> str:
    head = f"# Fabric comparison: {base.input.fabric} and {other.input.fabric}, {base.input.gpus} GPUs"
    summary = "\n".join(f"- {line}" for line in comparison_lines(base, other))
    return "\n\n".join([head, summary, markdown_table(comparison_table(base, other))]) + "\n"


def comparison_json(base: FabricPlan, other: FabricPlan) -> dict[str, Any]:
    """Both plans whole (plan_to_json) and the differences the table prints, in percent of the
    first fabric's figure (null where that is 0)."""
    differences: dict[str, Any] = {}
    for section, _item, attribute, key in BOM_ROWS:
        if section not in COMPARED_SECTIONS:
            continue
        a, b = getattr(base.bom, attribute), getattr(other.bom, attribute)
        value = percent_difference(int(a if key is None else a[key]), int(b if key is None else b[key]))
        rounded = None if value is None else round(value, 1)
        if key is None:
            differences[section] = rounded
        else:
            differences.setdefault(section, {})[key] = rounded
    fabrics = [base.input.fabric, other.input.fabric]
    return {
        "compare": fabrics,
        "difference_percent": {"of": fabrics[1], "from": fabrics[0], **differences},
        fabrics[0]: plan_to_json(base),
        fabrics[1]: plan_to_json(other),
    }


def comparison_json_document(base: FabricPlan, other: FabricPlan) -> str:
    return json.dumps(comparison_json(base, other), indent=2, allow_nan=False) + "\n"


# ---- the catalog ------------------------------------------------------------------------------------


def catalog_table(models: Sequence[SwitchModel]) -> Table:
    """The switch models `--switch` takes: cages, what a cage carries, the logical ports at each link
    speed it breaks out to, the inventory platform and the datasheet each rests on."""
    rows = []
    for model in models:
        ports = ", ".join(f"{model.ports(speed)} x {speed}G" for speed in model.link_gbps)
        platform = model.platform or "- (InfiniBand)"
        rows.append(
            (
                f"`{model.name}`",
                model.title,
                model.fabric,
                str(model.cages),
                f"{model.cage_gbps}G",
                ports,
                platform,
                model.source,
            )
        )
    header = (
        "--switch",
        "model",
        "fabric",
        "cages",
        "a cage",
        "ports at each link speed",
        "platform",
        "source",
    )
    return Table(header, tuple(rows), numeric_from=len(header))


# ---- layout -----------------------------------------------------------------------------------------


def text_table(table: Table) -> str:
    rows = [table.header, *table.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(table.header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(width) if i >= table.numeric_from else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return "\n".join(line(row) for row in rows)


def markdown_table(table: Table) -> str:
    align = ["---:" if i >= table.numeric_from else "---" for i in range(len(table.header))]
    lines = ["| " + " | ".join(table.header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
    return "\n".join(lines)
