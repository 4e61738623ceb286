"""The lab's InfiniBand fabric model for the in-process tests: as the ib checks see it (each mock tool's
output, rendered from the model, fabcheck_lab.ib_fabric, and read by the real parsers) and as a user's
inventory plans it. Other test directories import it as tests.lab.ibmock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabcheck.checks.ib import IbEvidence
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from fabcheck.parsers.ibqueryerrors import parse_ibqueryerrors, sweep_deltas
from fabcheck.parsers.saquery import parse_saquery_nodes
from fabcheck.parsers.vendstat import parse_vendstat_general
from fabcheck_lab import ib_fabric as model

T0, WINDOW = 1000.0, 10  # the model's clock at the first sweep, and the counter window (s)
REPO = Path(__file__).resolve().parents[2]
TIER_GROUPS = {"leaf": "ib_leaves", "spine": "ib_spines", "core": "ib_cores"}


def evidence(fabric: model.Fabric) -> IbEvidence:
    before = parse_ibqueryerrors(model.render_ibqueryerrors(fabric, T0)[0], "ibqueryerrors_before")
    after = parse_ibqueryerrors(model.render_ibqueryerrors(fabric, T0 + WINDOW)[0], "ibqueryerrors_after")
    firmware = {
        s.lid: parse_vendstat_general(model.render_vendstat_general(s), f"vendstat:{s.lid}", s.lid)
        for s in fabric.switches
    }
    return IbEvidence(
        parse_ibnetdiscover_ports(model.render_ibnetdiscover_ports(fabric), "ibnetdiscover"),
        parse_saquery_nodes(model.render_saquery_nodes(fabric), "saquery"),
        before,
        after,
        sweep_deltas(before, after),
        firmware,
        WINDOW,
    )


def inventory_of(fabric: model.Fabric, root: Path) -> Path:
    """The inventory of this fabric as a user writes it: hosts cable their HCAs, switches their uplinks."""
    switches = {s.name: s for s in fabric.switches}
    hcas = {h.key: h for h in fabric.hcas}
    hosts: dict[str, dict[str, Any]] = {h.host: {"fabric_links": {}} for h in fabric.hcas}
    tiers: dict[str, dict[str, Any]] = {group: {"hosts": {}} for group in TIER_GROUPS.values()}
    for switch in fabric.switches:
        tiers[TIER_GROUPS[switch.tier]]["hosts"][switch.name] = {"fabric_links": {}}
        if switch.description != switch.name:
            tiers[TIER_GROUPS[switch.tier]]["hosts"][switch.name]["ib_node_description"] = switch.description
    for cable in fabric.cables:
        far = f"{cable.b.node}/{cable.b.port}"
        if cable.a.node in hcas:
            hca = hcas[cable.a.node]
            hosts[hca.host]["fabric_links"][hca.nic] = far
        else:
            tier = TIER_GROUPS[switches[cable.a.node].tier]
            tiers[tier]["hosts"][cable.a.node]["fabric_links"][cable.a.port] = far
    children = {group: tier for group, tier in tiers.items() if tier["hosts"]}
    tree = {"all": {"children": {"gpu_hosts": {"hosts": hosts}, "ib_switches": {"children": children}}}}
    (root / "group_vars/all").mkdir(parents=True)
    (root / "hosts.yml").write_text(yaml.safe_dump(tree, sort_keys=False))
    intent = (REPO / "inventory/example-ib/group_vars/all/fabric.yml").read_text()
    no_sm = intent.replace("sm_priorities: {sm01: 15, sm02: 14}", "sm_priorities: {}")
    assert no_sm != intent
    (root / "group_vars/all/fabric.yml").write_text(no_sm)
    return root
