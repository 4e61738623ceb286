"""The scheduler topology from the cabling map and the verdicts (fabcheck.report.topology): only cables
whose checks passed count, a node with a rail cable that did not pass is left out and named, the tree
and block files follow Slurm's rules (SchedMD/slurm:doc/man/man5/topology.conf.5 and
src/plugins/topology/{tree/switch_record.c,block/block_record.c}@284c3b95f08a2dc2478499837b03355e1b9c5c75).

The verdicts come from the checks themselves where a fixture exists: fabcheck.checks.link.check_links
over the switch outputs replayed from tests/data/switch (a miswired port heard by LLDP), and the ib
checks' own placement of a cable's finding (fabcheck.checks.ib.link_where)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import SWITCHES, desired, fabric, intent, replayed
from test_link_checks import nic_end

from fabcheck.checks.ib import link_where
from fabcheck.checks.link import check_links
from fabcheck.checks.model import Finding, Status, Where, errored, failed, passed, skipped
from fabcheck.desired.ib import desired_ib_fabric
from fabcheck.desired.nic import desired_nic
from fabcheck.parsers.switch_records import LldpNeighbor
from fabcheck.report import topology
from fabcheck.report.hostlist import expand
from fabcheck.report.topology import CablingMap, HostCable, UpCable, block_sizes, build_topology

# ---- one host, three leaves, verdicts from check_links over replayed switch outputs ------------------


def real_link_findings(heard: dict[tuple[str, str], LldpNeighbor] | None = None) -> list[Finding]:
    """check_links over the converged switches of tests/data/switch (as test_link_checks judges them),
    with some ports hearing another neighbour."""
    switches = {name: replayed("converged", name) for name in SWITCHES}
    for (name, port), record in (heard or {}).items():
        records = dict(switches[name].records)
        records[(LldpNeighbor, port)] = record
        switches[name] = replace(switches[name], records=records)
    nics = {link.nic: link for link in fabric().links}
    ends = {("gpu01", nic): nic_end(nic) for nic in nics}
    return check_links(
        fabric(),
        ends,
        {("gpu01", nic): desired_nic(intent(), "gpu01", nic) for nic in nics},
        switches,
        {name: desired(name) for name in SWITCHES},
    )


def switchfabric_map() -> CablingMap:
    cables = tuple(
        HostCable(
            "gpu01",
            lk.nic,
            lk.switch,
            f"gpu01:{lk.nic} <-> {lk.switch_end}",
            ("gpu01", lk.nic, lk.switch_end),
            "link",
        )
        for lk in fabric().links
    )
    return CablingMap(hosts=(("gpu01", "gpu01"),), host_cables=cables)


def test_a_host_whose_cables_all_passed_is_listed_under_its_first_rails_leaf() -> None:
    findings = real_link_findings()
    assert {f.status for f in findings} == {Status.PASS}
    built = build_topology(switchfabric_map(), findings)
    assert [(s.name, s.nodes) for s in built.switches] == [("leaf01", ("gpu01",))]
    assert built.left_out == () and built.verified
    assert topology.slurm_tree(built, "snapshot s").splitlines()[-1] == "SwitchName=leaf01 Nodes=gpu01"


def test_a_miswired_cable_leaves_its_host_out_named_with_what_the_port_hears() -> None:
    findings = real_link_findings({("leaf02", "Ethernet0"): LldpNeighbor("gpu07.example.net", "ens5np0")})
    built = build_topology(switchfabric_map(), findings)
    assert built.switches == ()
    [left] = built.left_out
    assert left.node == "gpu01"
    assert left.why == (
        "gpu01:mlx5_1 <-> leaf02:Ethernet0: link.lldp fail: leaf02:Ethernet0 hears gpu07.example.net ens5np0",
    )
    kept = build_topology(switchfabric_map(), findings, include_failed=True)
    assert kept.nodes == ("gpu01",) and kept.kept_failed[0].why == left.why
    text = topology.slurm_tree(kept, "snapshot s")
    assert (
        "# kept (--include-failed): gpu01 (gpu01): gpu01:mlx5_1 <-> leaf02:Ethernet0: link.lldp fail" in text
    )


# ---- a pod: four hosts, two rails each, two leaves, two spines --------------------------------------


def pod(*, spines: bool = True, hosts: int = 4) -> CablingMap:
    cables = []
    for n in range(1, hosts + 1):
        for rail, leaf in enumerate(("leaf01", "leaf02")):
            end = f"{leaf}:swp{n}"
            cables.append(
                HostCable(
                    f"gpu{n:02d}",
                    f"mlx5_{rail}",
                    leaf,
                    f"gpu{n:02d}:mlx5_{rail} <-> {end}",
                    (f"gpu{n:02d}", f"mlx5_{rail}", end),
                    "link",
                )
            )
    ups = []
    if spines:
        for leaf in ("leaf01", "leaf02"):
            for s, spine in enumerate(("spine01", "spine02")):
                ups.append(
                    UpCable(
                        leaf,
                        spine,
                        f"{leaf}:swp3{s} -- {spine}:swp{leaf[-1]}",
                        ((leaf, f"swp3{s}"), (spine, f"swp{leaf[-1]}")),
                        "link",
                    )
                )
    names = tuple((f"gpu{n:02d}", f"gpu{n:02d}") for n in range(1, hosts + 1))
    return CablingMap(hosts=names, host_cables=tuple(cables), up_cables=tuple(ups))


def verdicts(cabling: CablingMap, status: Status = Status.PASS, **bad: tuple[str, str]) -> list[Finding]:
    """Every cable of the map judged by link.lldp (passing), but for the cables named in `bad`
    (label -> (status, actual)); switch cables by link.switch_lldp at their lower end."""
    out = []
    for cable in cabling.host_cables:
        node, part, peer = cable.key
        state, actual = bad.get(cable.label, (status.value, "hears it"))
        out.append(
            Finding("link.lldp", Status(state), cable.label, "x", actual, where=Where(node, part, peer))
        )
    for up in cabling.up_cables:
        node, part = up.keys[0]
        state, actual = bad.get(up.label, (status.value, "hears it"))
        out.append(
            Finding(
                "link.switch_lldp", Status(state), up.label, "x", actual, where=Where(node, part, up.label)
            )
        )
    return out


def test_the_tree_lists_leaves_with_their_nodes_and_spines_with_their_leaves() -> None:
    cabling = pod()
    text = topology.slurm_tree(build_topology(cabling, verdicts(cabling)), "snapshot evidence")
    assert text.splitlines()[2:] == [
        "SwitchName=leaf01 Nodes=gpu[01-04]",
        "SwitchName=spine01 Switches=leaf01",
        "SwitchName=spine02 Switches=leaf01",
    ]
    assert text.startswith(
        "# Slurm topology.conf for topology/tree, written by `fabcheck topology` from snapshot evidence."
    )


def test_one_failing_rail_cable_leaves_the_node_out_and_the_range_splits() -> None:
    cabling = pod()
    findings = verdicts(cabling, **{"gpu02:mlx5_1 <-> leaf02:swp2": ("fail", "leaf02:swp2 hears nobody")})
    built = build_topology(cabling, findings)
    text = topology.slurm_tree(built, "snapshot s")
    assert "SwitchName=leaf01 Nodes=gpu[01,03-04]" in text.splitlines()
    assert (
        "# left out: gpu02 (gpu02): gpu02:mlx5_1 <-> leaf02:swp2: link.lldp fail: leaf02:swp2 hears nobody"
        in text
    )
    assert sorted(expand("gpu[01,03-04]")) == sorted(built.nodes)


def test_a_cable_that_could_not_be_judged_is_no_pass() -> None:
    cabling = pod(hosts=2)
    unread = [errored("link.pfc", c.label, "both ends read", "not read", "") for c in cabling.host_cables[:1]]
    findings = [*verdicts(cabling), replace(unread[0], where=Where(*cabling.host_cables[0].key))]
    built = build_topology(cabling, findings)
    assert [x.node for x in built.left_out] == ["gpu01"]
    assert built.left_out[0].why == ("gpu01:mlx5_0 <-> leaf01:swp1: link.pfc error: not read",)


def test_a_cable_no_check_judged_is_left_out_and_a_skip_alone_is_no_pass() -> None:
    cabling = pod(hosts=2)
    findings = [f for f in verdicts(cabling) if not f.subject.endswith(("leaf02:swp1", "leaf02:swp2"))]
    skip = skipped("link.health", "gpu01:mlx5_1", "counter window 0")
    findings += [replace(skip, where=Where("gpu01", "mlx5_1", "leaf02:swp1"))]
    built = build_topology(cabling, findings)
    assert [(x.node, x.why) for x in built.left_out] == [
        ("gpu01", ("gpu01:mlx5_1 <-> leaf02:swp1: link.health skip: counter window 0",)),
        ("gpu02", ("gpu02:mlx5_1 <-> leaf02:swp2: no check judged it (was its stage in the snapshot?)",)),
    ]


def test_findings_of_other_checks_or_other_cables_do_not_judge_a_cable() -> None:
    cabling = pod(hosts=1)
    # host.pfc at the same NIC is the host's check; a link finding at another port is another cable's
    noise = [
        Finding("host.pfc", Status.FAIL, "mlx5_0", "x", "off", where=Where("gpu01", "mlx5_0", "leaf01:swp1")),
        failed("link.lldp", "other", "x", "y", "z"),
    ]
    noise[1] = replace(noise[1], where=Where("gpu01", "mlx5_0", "leaf01:swp9"))
    built = build_topology(cabling, verdicts(cabling) + noise)
    assert built.nodes == ("gpu01",) and built.left_out == ()


def test_a_failed_switch_cable_is_dropped_and_a_spine_that_reaches_no_node_goes() -> None:
    cabling = pod()
    bad = {
        up.label: ("fail", "hears spine09")
        for up in cabling.up_cables
        if up.upper == "spine02" and up.lower == "leaf01"
    }
    built = build_topology(cabling, verdicts(cabling, **bad))
    assert [s.name for s in built.switches] == ["leaf01", "spine01"]
    text = topology.slurm_tree(built, "s")
    assert (
        "# switch cable left out: leaf01:swp31 -- spine02:swp1: link.switch_lldp fail: hears spine09" in text
    )


def test_a_switch_cable_no_check_judged_counts_as_cabled_and_is_counted() -> None:
    cabling = pod()
    findings = [f for f in verdicts(cabling) if f.check != "link.switch_lldp"]
    built = build_topology(cabling, findings)
    assert [s.name for s in built.switches] == ["leaf01", "spine01", "spine02"]
    assert len(built.unjudged_up_cables) == 4
    assert (
        "# 4 switch-to-switch cable(s) no check passed or failed: counted as cabled"
        in topology.slurm_tree(built, "s")
    )


def test_without_switch_cables_one_root_over_the_leaves_and_it_says_so() -> None:
    cables = (
        HostCable("gpu01", "mlx5_0", "leaf01", "a", ("gpu01", "mlx5_0", "leaf01:swp1"), "link"),
        HostCable("gpu02", "mlx5_0", "leaf02", "b", ("gpu02", "mlx5_0", "leaf02:swp1"), "link"),
    )
    cabling = CablingMap(hosts=(("gpu01", "gpu01"), ("gpu02", "gpu02")), host_cables=cables)
    text = topology.slurm_tree(build_topology(cabling, None), "inventory i")
    assert text.splitlines()[-3:] == [
        "SwitchName=leaf01 Nodes=gpu01",
        "SwitchName=leaf02 Nodes=gpu02",
        "SwitchName=fabric Switches=leaf[01-02]",
    ]
    assert "# UNVERIFIED: no --snapshot given" in text
    assert "# note: fabric is no cabled switch" in text


def test_a_leaf_named_like_the_root_keeps_its_name() -> None:
    cables = (
        HostCable("gpu01", "mlx5_0", "fabric", "a", ("gpu01", "mlx5_0", "fabric:swp1"), "link"),
        HostCable("gpu02", "mlx5_0", "leaf02", "b", ("gpu02", "mlx5_0", "leaf02:swp1"), "link"),
    )
    cabling = CablingMap(hosts=(("gpu01", "gpu01"), ("gpu02", "gpu02")), host_cables=cables)
    built = build_topology(cabling, None)
    assert built.switches[-1].name == "fabric-root" and built.switches[-1].synthetic


def test_slurm_node_names_are_what_the_files_list() -> None:
    cabling = replace(pod(hosts=2, spines=False), hosts=(("gpu01", "node-a1"), ("gpu02", "node-a2")))
    built = build_topology(cabling, None)
    assert "SwitchName=leaf01 Nodes=node-a[1-2]" in topology.slurm_tree(built, "s")


@pytest.mark.parametrize(("name", "what"), [("gpu 01", "node"), ("l" * 64, "switch")])
def test_a_name_slurm_cannot_read_is_refused_naming_it(name: str, what: str) -> None:
    cabling = pod(hosts=1, spines=False)
    if what == "node":
        cabling = replace(cabling, hosts=(("gpu01", name),))
    else:
        cabling = replace(cabling, host_cables=tuple(replace(c, leaf=name) for c in cabling.host_cables))
    with pytest.raises(ValueError, match=what):
        build_topology(cabling, None)


# ---- blocks -----------------------------------------------------------------------------------------


def test_blocks_are_the_nodes_of_a_leaf_with_slurms_block_sizes() -> None:
    cables = tuple(
        HostCable(f"gpu{n:02d}", "mlx5_0", leaf, f"c{n}", (f"gpu{n:02d}", "mlx5_0", f"{leaf}:swp{n}"), "link")
        for n, leaf in [
            (1, "leaf01"),
            (2, "leaf01"),
            (3, "leaf02"),
            (4, "leaf02"),
            (5, "leaf03"),
            (6, "leaf03"),
        ]
    )
    cabling = CablingMap(hosts=tuple((f"gpu{n:02d}", f"gpu{n:02d}") for n in range(1, 7)), host_cables=cables)
    text = topology.slurm_block(build_topology(cabling, None), "s")
    assert text.splitlines()[-5:] == [
        "# one block per the nodes of one leaf",
        "BlockName=leaf01 Nodes=gpu[01-02]",
        "BlockName=leaf02 Nodes=gpu[03-04]",
        "BlockName=leaf03 Nodes=gpu[05-06]",
        "BlockSizes=2,4",
    ]


def test_block_sizes_follow_block_record_c() -> None:
    # the base is the smallest block (every block holds at least it); each next size is base x 2^k, k <= 15
    assert block_sizes([("a", ["n1", "n2", "n3"]), ("b", ["n4", "n5"])]) == (2, 4)
    assert block_sizes([("a", ["n1"])]) == (1,)
    assert block_sizes([(f"b{i}", ["x"] * 4) for i in range(8)]) == (4, 8, 16, 32)
    assert block_sizes([]) == ()
    many = block_sizes([(f"b{i}", ["x"]) for i in range(1 << 17)])
    assert len(many) == 16 and many[-1] == 1 << 15


def test_blocks_are_nvlink_domains_where_the_intent_declares_them() -> None:
    cabling = replace(
        pod(hosts=4, spines=False),
        nvlink_domains=(("nvl-a", ("gpu01", "gpu02")), ("nvl-b", ("gpu03", "gpu04"))),
    )
    findings = verdicts(cabling, **{"gpu03:mlx5_0 <-> leaf01:swp3": ("fail", "down")})
    text = topology.slurm_block(build_topology(cabling, findings), "s")
    assert text.splitlines()[-4:] == [
        "# one block per NVLink domain",
        "BlockName=nvl-a Nodes=gpu[01-02]",
        "BlockName=nvl-b Nodes=gpu04",
        "BlockSizes=1,2",
    ]


# ---- InfiniBand: the cables where the ib checks put their findings -------------------------------------


def test_ib_verdicts_are_matched_where_the_ib_checks_put_them() -> None:
    from fabcheck.cli.topology import cabling_map
    from fabcheck.intent.fabric import fabric_of
    from fabcheck.intent.loader import load_inventory

    inventory = load_inventory(str(Path(__file__).resolve().parents[2] / "inventory" / "example-ib"))
    fab = fabric_of(inventory)
    cabling = cabling_map(inventory, fab)
    plan = desired_ib_fabric(inventory.intent, fab.ib, subnet_managers=("sm01", "sm02"))
    assert plan is not None
    findings = []
    for link in plan.links:
        bad = link.a.node == "ibgpu02" and link.a.nic == "mlx5_5"
        bad_up = link.a.node == "leaf01" and link.b.node == "spine02"
        finding = (
            failed("ib.link", link.label, "4x NDR", "2x NDR", "")
            if bad
            else passed("ib.link", link.label, "4x NDR", "4x NDR")
        )
        if bad_up:
            finding = failed("ib.topology", link.label, "up", "no cable", "")
        findings.append(replace(finding, where=link_where(link)))
    built = build_topology(cabling, findings)
    assert [x.node for x in built.left_out] == ["ibgpu02"]
    assert built.left_out[0].why == ("ibgpu02/mlx5_5 ↔ leaf02/6: ib.link fail: 2x NDR",)
    assert [(s.name, s.nodes, s.switches) for s in built.switches] == [
        ("leaf01", ("ibgpu01",), ()),
        ("spine01", (), ("leaf01",)),
    ]
    assert len(built.dropped_up_cables) == 4  # the four leaf01 -> spine02 cables
    assert {s.tier for s in built.switches} == {"leaf", "spine"}


# ---- every file read back with Slurm's tree rules ---------------------------------------------------


def slurm_tree_rules(text: str) -> dict[str, set[str]]:
    """topology.conf read back as src/plugins/topology/tree (switch_record.c, topology_tree.c of 22.05.8)
    reads it: comments stripped at '#', one `SwitchName=` per line with exactly one of Nodes/Switches,
    unique names under 64 characters, children defined, no loop (20 levels), no node under two leaves.
    Returns each switch's nodes through its descendants."""
    leaves: dict[str, list[str]] = {}
    parents: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = dict(part.split("=", 1) for part in line.split())
        name = fields.pop("SwitchName")
        assert len(name) < 64 and name not in leaves and name not in parents
        assert len(fields) == 1 and set(fields) <= {"Nodes", "Switches"}, line
        if "Nodes" in fields:
            leaves[name] = expand(fields["Nodes"])
        else:
            parents[name] = expand(fields["Switches"])
    every = [node for nodes in leaves.values() for node in nodes]
    assert len(every) == len(set(every)), "Multiple leaf switches contain nodes"
    reach: dict[str, set[str]] = {name: set(nodes) for name, nodes in leaves.items()}
    for _depth in range(20):
        for name, kids in parents.items():
            assert all(kid in leaves or kid in parents for kid in kids), f"{name} has an invalid child"
            if name not in reach and all(kid in reach for kid in kids):
                reach[name] = set().union(*(reach[kid] for kid in kids))
    assert set(reach) == set(leaves) | set(parents), "Switch configuration is not a tree"
    return reach


@st.composite
def fabrics(draw: st.DrawFn) -> tuple[CablingMap, list[Finding]]:
    """Random pods: 1-12 hosts, 1-3 rails each on 1-4 leaves, 0-3 spines each cabled to some leaves,
    every cable passing or failing at random."""
    hosts = draw(st.integers(1, 12))
    rails = draw(st.integers(1, 3))
    leaves = draw(st.integers(1, 4))
    spines = draw(st.integers(0, 3))
    cables = []
    for n in range(1, hosts + 1):
        for rail in range(rails):
            leaf = f"leaf{draw(st.integers(1, leaves)):02d}"
            end = f"{leaf}:swp{n}{rail}"
            host = f"gpu{n:02d}"
            cables.append(
                HostCable(
                    host,
                    f"mlx5_{rail}",
                    leaf,
                    f"{host}:mlx5_{rail} <-> {end}",
                    (host, f"mlx5_{rail}", end),
                    "link",
                )
            )
    ups = []
    for s in range(1, spines + 1):
        for leaf in range(1, leaves + 1):
            if draw(st.booleans()):
                lower, upper = f"leaf{leaf:02d}", f"spine{s:02d}"
                ups.append(
                    UpCable(
                        lower,
                        upper,
                        f"{lower}:up{s} -- {upper}:d{leaf}",
                        ((lower, f"up{s}"), (upper, f"d{leaf}")),
                        "link",
                    )
                )
    cabling = CablingMap(
        tuple((f"gpu{n:02d}", f"gpu{n:02d}") for n in range(1, hosts + 1)), tuple(cables), tuple(ups)
    )
    bad = {c.label: ("fail", "down") for c in [*cables, *ups] if draw(st.integers(0, 4)) == 0}
    return cabling, verdicts(cabling, **bad)


@given(fabrics(), st.booleans())
def test_every_tree_written_reads_back_under_slurms_rules(
    fabric: tuple[CablingMap, list[Finding]], keep: bool
) -> None:
    cabling, findings = fabric
    built = build_topology(cabling, findings, include_failed=keep)
    reach = slurm_tree_rules(topology.slurm_tree(built, "s"))
    failed_hosts = {
        c.host
        for c in cabling.host_cables
        for f in findings
        if f.status is Status.FAIL and f.subject == c.label
    }
    listed = set().union(set(), *reach.values())
    assert listed == {h for h, _n in cabling.hosts if keep or h not in failed_hosts}
    assert {x.node for x in built.left_out} == (set() if keep else failed_hosts)
    if not cabling.up_cables and listed:
        assert any(nodes == listed for nodes in reach.values())  # one switch (a leaf or the root) reaches all


# ---- RoCE switch cables: verdicts from link.switch_lldp itself (fabcheck.checks.uplinks) ---------------


def test_uplink_verdicts_are_matched_where_link_switch_lldp_puts_them() -> None:
    from fabcheck.checks.uplinks import check_switch_links
    from tests.checks.test_uplink_lldp import as_cabled, evidence
    from tests.checks.test_uplink_lldp import fabric as leaf_spine

    heard = as_cabled()
    heard[("leaf-02", "swp34")] = heard[("spine-02", "swp2")] = None  # leaf-02 -- spine-02 unplugged
    findings = [judged.finding for judged in check_switch_links(leaf_spine(), evidence(heard))]
    assert [f.status for f in findings] == [Status.PASS, Status.PASS, Status.PASS, Status.FAIL]
    hosts = tuple(
        HostCable(host, "mlx5_0", leaf, f"{host} <-> {leaf}:swp1", (host, "mlx5_0", f"{leaf}:swp1"), "link")
        for host, leaf in (("gpu01", "leaf-01"), ("gpu02", "leaf-02"))
    )
    cabling = CablingMap(
        (("gpu01", "gpu01"), ("gpu02", "gpu02")), hosts, topology.switch_cables(leaf_spine())
    )
    passing = [passed("link.lldp", c.label, "x", "y") for c in hosts]
    passing = [replace(f, where=Where(*c.key)) for f, c in zip(passing, hosts, strict=True)]
    built = build_topology(cabling, [*passing, *findings])
    assert [(s.name, s.switches) for s in built.switches if s.switches] == [
        ("spine-01", ("leaf-01", "leaf-02")),
        ("spine-02", ("leaf-01",)),
    ]
    [(label, why)] = built.dropped_up_cables
    assert label == "leaf-02:swp34 -- spine-02:swp2" and why[0].startswith("link.switch_lldp fail: no link")
