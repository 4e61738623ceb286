"""A plan as JSON (`fabcheck plan --json`), and back (`fabcheck lab up --plan FILE`).

The JSON holds the issue's counting keys at the top (switches, links, transceivers, cables), the
inputs echoed under `input`, and the whole plan under `plan` (nodes, switches, every cable) so that
a plan file alone can start a lab or be written as inventory later. Reading checks every key it
needs and names the bad one (PlanError, exit 2): a plan file is user input. A file that reads but does not
hold together (an end on no planned switch, a port beyond its switch, an end cabled twice, a bill of
materials or cabling its `input` does not make: a hand edit) is refused naming the first bad key.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, NoReturn

from fabcheck.fabricplan.model import (
    CABLE_TIERS,
    FABRICS,
    HOST_NIC_PREFIX,
    TIERS,
    Bom,
    FabricPlan,
    PlanError,
    PlanInput,
    PlannedCable,
    PlannedSwitch,
    PortEnd,
    SwitchModel,
)
from fabcheck.fabricplan.sizing import plan_fabric

FORMAT_VERSION = 1


def plan_to_json(plan: FabricPlan) -> dict[str, Any]:
    request = plan.input
    return {
        "format": FORMAT_VERSION,
        "input": {
            "fabric": request.fabric,
            "gpus": request.gpus,
            "gpus_per_node": request.gpus_per_node,
            "nics_per_node": request.nics_per_node,
            "nic_gbps": request.nic_gbps,
            "leaf_switch": asdict(request.leaf_model),
            "spine_switch": asdict(request.spine_model),
            "oversubscription": request.oversubscription,
            "rail_optimised": request.rail_optimised,
        },
        "tiers": plan.tiers,
        "switches": dict(plan.bom.switches),
        "links": dict(plan.bom.links),
        "transceivers": dict(plan.bom.transceivers),
        "cables": plan.bom.cables,
        "plan": {
            "nodes": list(plan.nodes),
            "switches": [asdict(switch) for switch in plan.switches],
            "cabling": [{"a": _end_text(c.a), "b": _end_text(c.b), "tier": c.tier} for c in plan.cables],
        },
    }


def write_plan_file(plan: FabricPlan, path: Path) -> None:
    path.write_text(json.dumps(plan_to_json(plan), indent=2) + "\n")


def read_plan_file(path: Path) -> FabricPlan:
    """The plan a `fabcheck plan --json` wrote; PlanError naming the file and the key otherwise."""
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise PlanError(f"{path}: cannot read the plan file: {error.strerror or error}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PlanError(f"{path}: not a plan file (`fabcheck plan --json`): {error}") from None
    return plan_from_json(data, str(path))


def plan_from_json(data: Any, source: str) -> FabricPlan:
    reader = _Reader(source)
    top = reader.mapping(data, "")
    if top.get("format") != FORMAT_VERSION:
        reader.fail("format", f"expected {FORMAT_VERSION} (written by `fabcheck plan --json`)")
    raw = reader.mapping(top.get("input"), "input")
    request = PlanInput(
        fabric=reader.choice(raw.get("fabric"), "input.fabric", FABRICS),
        gpus=reader.count(raw.get("gpus"), "input.gpus"),
        gpus_per_node=reader.count(raw.get("gpus_per_node"), "input.gpus_per_node"),
        nics_per_node=reader.count(raw.get("nics_per_node"), "input.nics_per_node"),
        nic_gbps=reader.count(raw.get("nic_gbps"), "input.nic_gbps"),
        leaf_model=reader.model(raw.get("leaf_switch"), "input.leaf_switch"),
        spine_model=reader.model(raw.get("spine_switch"), "input.spine_switch"),
        oversubscription=reader.ratio(raw.get("oversubscription"), "input.oversubscription"),
        rail_optimised=reader.flag(raw.get("rail_optimised"), "input.rail_optimised"),
    )
    body = reader.mapping(top.get("plan"), "plan")
    nodes = tuple(reader.text(n, f"plan.nodes[{i}]") for i, n in enumerate(reader.items(body, "nodes")))
    switches = tuple(
        reader.switch(s, f"plan.switches[{i}]") for i, s in enumerate(reader.items(body, "switches"))
    )
    cables = tuple(reader.cable(c, f"plan.cabling[{i}]") for i, c in enumerate(reader.items(body, "cabling")))
    bom = Bom(
        switches=reader.counts(top.get("switches"), "switches", (*TIERS, "total")),
        links=reader.counts(top.get("links"), "links", (*CABLE_TIERS, "total")),
        transceivers=reader.counts(top.get("transceivers"), "transceivers", ("nic", "switch", "total")),
        cables=reader.count(top.get("cables"), "cables", minimum=0),
    )
    tiers = reader.count(top.get("tiers"), "tiers")
    plan = FabricPlan(request, tiers, nodes, switches, cables, bom)
    _check_ends(plan, reader)
    _check_as_planned(plan, reader)
    return plan


def _check_ends(plan: FabricPlan, reader: _Reader) -> None:
    """Every cable end names a planned node's NIC (mlx5_k, k < nics_per_node) or a planned switch's port
    (a whole number in 1..ports), and no end is cabled twice: the lab and the inventory writer index by
    them, so a hand-edited file is refused here with the cable named, not later with a traceback."""
    ports = {switch.name: switch.ports for switch in plan.switches}
    nodes = set(plan.nodes)
    rails = plan.input.nics_per_node
    used: dict[tuple[str, str], str] = {}
    for index, cable in enumerate(plan.cables):
        for side, end in (("a", cable.a), ("b", cable.b)):
            key = f"plan.cabling[{index}].{side}"
            text = _end_text(end)
            if end.device in ports:
                count = ports[end.device]
                if not (end.port.isascii() and end.port.isdigit() and 1 <= int(end.port) <= count):
                    reader.fail(key, f"{text!r}: expected a port 1..{count} of {end.device}")
            elif end.device in nodes:
                rail = end.port.removeprefix(HOST_NIC_PREFIX)
                if not (
                    end.port.startswith(HOST_NIC_PREFIX)
                    and rail.isascii()
                    and rail.isdigit()
                    and int(rail) < rails
                ):
                    reader.fail(
                        key, f"{text!r}: expected a NIC {HOST_NIC_PREFIX}0..{rails - 1} of {end.device}"
                    )
            else:
                reader.fail(
                    key, f"{text!r}: {end.device} is not a planned node or switch (plan.nodes, plan.switches)"
                )
            first = used.setdefault((end.device, end.port), key)
            if first != key:
                reader.fail(key, f"{text!r}: already cabled at {first}")


def _check_as_planned(plan: FabricPlan, reader: _Reader) -> None:
    """The plan its `input` makes, compared part by part: a file whose switches, cables or counts
    (bill of materials) disagree with it is refused naming the first difference."""
    try:
        expected = plan_fabric(plan.input)
    except PlanError as error:
        reader.fail("input", f"cannot be planned: {error}")
    if plan.tiers != expected.tiers:
        reader.fail("tiers", f"{plan.tiers}: its input plans {expected.tiers}")
    if plan.nodes != expected.nodes:
        _first_difference(reader, "plan.nodes", plan.nodes, expected.nodes, str)
    if plan.switches != expected.switches:
        _first_difference(reader, "plan.switches", plan.switches, expected.switches, repr)
    if plan.cables != expected.cables:
        _first_difference(reader, "plan.cabling", plan.cables, expected.cables, _cable_text)
    for key in ("switches", "links", "transceivers", "cables"):
        if getattr(plan.bom, key) != getattr(expected.bom, key):
            reader.fail(key, f"{getattr(plan.bom, key)}: its cabling counts {getattr(expected.bom, key)}")


def _first_difference(
    reader: _Reader, key: str, found: tuple[Any, ...], expected: tuple[Any, ...], show: Any
) -> NoReturn:
    for index, (item, wanted) in enumerate(zip(found, expected, strict=False)):
        if item != wanted:
            reader.fail(f"{key}[{index}]", f"{show(item)}: its input plans {show(wanted)} here")
    reader.fail(key, f"{len(found)} entries: its input plans {len(expected)}")


def _cable_text(cable: PlannedCable) -> str:
    return f"{_end_text(cable.a)} - {_end_text(cable.b)} ({cable.tier})"


def _end_text(end: PortEnd) -> str:
    return f"{end.device}:{end.port}"


class _Reader:
    """Typed reads of the JSON, each failure one PlanError naming the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> NoReturn:
        raise PlanError(f"{self.source}: {key or 'the document'}: {message}")

    def mapping(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key, "expected a mapping")
        return value

    def items(self, body: dict[str, Any], key: str) -> list[Any]:
        value = body.get(key)
        if not isinstance(value, list):
            self.fail(f"plan.{key}", "expected a list")
        return value

    def text(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(key, "expected a non-empty string")
        return value

    def count(self, value: Any, key: str, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"expected a whole number >= {minimum}")
        return value

    def ratio(self, value: Any, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
            self.fail(key, "expected a number >= 1")
        return float(value)

    def flag(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            self.fail(key, "expected true or false")
        return value

    def choice(self, value: Any, key: str, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            self.fail(key, f"expected one of {', '.join(allowed)}")
        return str(value)

    def counts(self, value: Any, key: str, names: tuple[str, ...]) -> dict[str, int]:
        raw = self.mapping(value, key)
        return {name: self.count(raw.get(name), f"{key}.{name}", minimum=0) for name in names}

    def model(self, value: Any, key: str) -> SwitchModel:
        raw = self.mapping(value, key)
        speeds = raw.get("link_gbps")
        if not isinstance(speeds, list) or not speeds:
            self.fail(f"{key}.link_gbps", "expected a non-empty list of speeds")
        platform = raw.get("platform")
        if platform is not None:
            platform = self.text(platform, f"{key}.platform")
        return SwitchModel(
            name=self.text(raw.get("name"), f"{key}.name"),
            title=self.text(raw.get("title"), f"{key}.title"),
            fabric=self.choice(raw.get("fabric"), f"{key}.fabric", (*FABRICS, "any")),
            cages=self.count(raw.get("cages"), f"{key}.cages"),
            cage_gbps=self.count(raw.get("cage_gbps"), f"{key}.cage_gbps"),
            link_gbps=tuple(self.count(s, f"{key}.link_gbps[{i}]") for i, s in enumerate(speeds)),
            platform=platform,
            source=str(raw.get("source") or ""),
        )

    def switch(self, value: Any, key: str) -> PlannedSwitch:
        raw = self.mapping(value, key)
        rail = raw.get("rail")
        if rail is not None:
            rail = self.count(rail, f"{key}.rail", minimum=0)
        return PlannedSwitch(
            name=self.text(raw.get("name"), f"{key}.name"),
            tier=self.choice(raw.get("tier"), f"{key}.tier", TIERS),
            model=self.text(raw.get("model"), f"{key}.model"),
            ports=self.count(raw.get("ports"), f"{key}.ports"),
            rail=rail,
            group=self.count(raw.get("group"), f"{key}.group"),
        )

    def cable(self, value: Any, key: str) -> PlannedCable:
        raw = self.mapping(value, key)
        return PlannedCable(
            a=self.end(raw.get("a"), f"{key}.a"),
            b=self.end(raw.get("b"), f"{key}.b"),
            tier=self.choice(raw.get("tier"), f"{key}.tier", CABLE_TIERS),
        )

    def end(self, value: Any, key: str) -> PortEnd:
        text = self.text(value, key)
        device, _, port = text.rpartition(":")
        if not device or not port:
            self.fail(key, f"{text!r}: expected DEVICE:PORT")
        return PortEnd(device, port)
