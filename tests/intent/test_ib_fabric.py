"""The inventory's InfiniBand plan (issue 37): IB switches by tier and every cable, host to leaf and
switch to switch; every problem one IntentError line naming file:line and the variable."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.errors import IntentError
from fabcheck.intent.fabric import InventoryNode, fabric_of, read_fabric
from fabcheck.intent.ib_fabric import IbCable, IbEnd, carries_ib_links, is_ib_switch
from fabcheck.intent.loader import load_inventory

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "inventory/example-ib"
INTENT = (EXAMPLE / "group_vars/all/fabric.yml").read_text()

GOOD = """\
all:
  children:
    gpu_hosts:
      hosts:
        gpu01:
          fabric_links: {mlx5_0: leaf01/1, mlx5_1: leaf02/1}
    subnet_managers:
      hosts:
        sm01:
          fabric_links: {mlx5_0: leaf01/2}
        sm02: {}
    ib_switches:
      children:
        ib_leaves:
          hosts:
            leaf01:
              ib_node_description: "MF0;leaf01:MQM9700/U1"
              fabric_links: {33: spine01/1}
            leaf02:
              ib_port_count: 40
              fabric_links: {33: spine01/2, 1: gpu01/mlx5_1}
        ib_spines:
          hosts:
            spine01: {}
"""


def inventory(tmp_path: Path, hosts: str, intent: str = INTENT) -> Path:
    root = tmp_path / "inv"
    (root / "group_vars/all").mkdir(parents=True)
    (root / "group_vars/all/fabric.yml").write_text(intent)
    (root / "hosts.yml").write_text(textwrap.dedent(hosts))
    return root


def problems_of(source: Path) -> list[str]:
    with pytest.raises(IntentError) as err:
        fabric_of(load_inventory(source))
    return err.value.problems


def line_of(source: Path, text: str) -> int:
    """The 1-based line of hosts.yml holding `text` (where the problem must point)."""
    lines = (source / "hosts.yml").read_text().splitlines()
    last = text.strip().splitlines()[-1]
    (number,) = (n for n, line in enumerate(lines, start=1) if last in line)
    return number


def test_example_inventory_plans_two_leaves_two_spines_and_every_cable() -> None:
    plan = fabric_of(load_inventory(EXAMPLE)).ib
    assert [(s.name, s.tier, s.port_count) for s in plan.switches] == [
        ("leaf01", "leaf", 64),
        ("leaf02", "leaf", 64),
        ("spine01", "spine", 64),
        ("spine02", "spine", 64),
    ]
    assert plan.switch("spine02").description == "MF0;spine02:MQM9700/U1"
    hosts = [c for c in plan.cables if c.a.nic is not None]
    uplinks = [c for c in plan.cables if c.a.nic is None]
    assert (len(hosts), len(uplinks)) == (18, 16)  # 2 x 8 HCAs + 2 SM HCAs; as many uplinks as host ports
    assert IbCable(IbEnd("ibgpu02", 1, "mlx5_7"), IbEnd("leaf02", 8)) in plan.cables
    assert IbCable(IbEnd("leaf02", 37), IbEnd("spine02", 5)) in plan.cables
    assert plan.cables[0].label == "ibgpu01/mlx5_0 ↔ leaf01/1"
    assert {c.b.node for c in uplinks} == {"spine01", "spine02"}


def test_cable_declared_at_either_end_or_both_is_one_cable(tmp_path: Path) -> None:
    both = GOOD.replace("spine01: {}", "spine01: {fabric_links: {1: leaf01/33}}")
    fabric = fabric_of(load_inventory(inventory(tmp_path, both)))
    plan = fabric.ib
    assert [c.label for c in plan.cables] == [
        "gpu01/mlx5_0 ↔ leaf01/1",
        "gpu01/mlx5_1 ↔ leaf02/1",  # declared at gpu01 and at leaf02: one cable
        "sm01/mlx5_0 ↔ leaf01/2",
        "leaf01/33 ↔ spine01/1",  # the lower tier is always `a`, whichever end declares it
        "leaf02/33 ↔ spine01/2",
    ]
    assert plan.switch("leaf02").port_count == 40
    assert plan.switch("leaf02").description == "leaf02"  # default: the inventory name
    assert fabric.switches == () and fabric.links == ()  # never an Ethernet switch or cable


def test_ib_switches_are_neither_ethernet_switches_nor_hosts(tmp_path: Path) -> None:
    loaded = load_inventory(inventory(tmp_path, GOOD))
    leaf = loaded.host("leaf01")
    assert not leaf.is_switch  # the Ethernet switch summary and plays never take it
    nodes = [InventoryNode(h.name, h.groups, h.variables, {}, h.intent) for h in loaded.hosts]
    assert [n.name for n in nodes if is_ib_switch(n)] == ["leaf01", "leaf02", "spine01"]
    assert carries_ib_links(next(n for n in nodes if n.name == "gpu01"))
    # Without an intent (already-templated variables), the `node/port` spelling tells IB from Ethernet.
    assert carries_ib_links(InventoryNode("g", ("gpu_hosts",), {"fabric_links": {"mlx5_0": "leaf01/1"}}, {}))
    ethernet = InventoryNode("g", ("gpu_hosts",), {"fabric_links": {"mlx5_0": "leaf01:Ethernet1/1"}}, {})
    assert not carries_ib_links(ethernet)


def test_a_non_rail_hca_may_be_cabled(tmp_path: Path) -> None:
    hosts = GOOD.replace("mlx5_1: leaf02/1}", "mlx5_1: leaf02/1, mlx5_9: leaf02/2}")
    plan = fabric_of(load_inventory(inventory(tmp_path, hosts))).ib
    assert IbCable(IbEnd("gpu01", 1, "mlx5_9"), IbEnd("leaf02", 2)) in plan.cables


HOST_PORT, UPLINK = "mlx5_0: leaf01/1,", "{33: spine01/2,"
LEAF01_DESCRIPTION = 'ib_node_description: "MF0;leaf01:MQM9700/U1"'
BAD = [
    # (what GOOD says, what the bad inventory says instead, what the problem must say)
    (HOST_PORT, "mlx5_0: leaf09/1,", "gpu01: fabric_links.mlx5_0 = 'leaf09/1': unknown IB switch 'leaf09'"),
    (
        HOST_PORT,
        "mlx5_0: leaf01/65,",
        "gpu01: fabric_links.mlx5_0 = 'leaf01/65': '65' is not a port of leaf01 (1..64",
    ),
    (HOST_PORT, "mlx5_0: leaf01:1,", "gpu01: fabric_links.mlx5_0 = 'leaf01:1': expected 'switch/port'"),
    (HOST_PORT, "mlx5_0: spine01/1,", "IB port spine01/1: cabled to 2 ports"),
    (HOST_PORT, "mlx5_0: leaf01/2,", "IB port leaf01/2: cabled to 2 ports"),
    (UPLINK, "{41: spine01/2,", "leaf02: fabric_links.41: 41 is not a port of leaf02 (1..40, ib_port_count)"),
    (UPLINK, "{33: leaf01/34,", "a cable between two leaf switches (leaf01/34 ↔ leaf02/33)"),
    (UPLINK, "{33: spine09/2,", "leaf02: fabric_links.33 = 'spine09/2': unknown IB switch or host 'spine09'"),
    ("1: gpu01/mlx5_1}", "1: gpu01/mlx5_0}", "IB port gpu01/mlx5_0: its two ends declare different cables"),
    (
        "ib_port_count: 40",
        "ib_port_count: many",
        "leaf02: ib_port_count = 'many': expected its number of ports, an integer 1..255",
    ),
    (
        LEAF01_DESCRIPTION,
        "ib_node_description: leaf02",
        "leaf01: ib_node_description = 'leaf02': leaf02 shows it too (its default: the inventory name)",
    ),
    (LEAF01_DESCRIPTION, f"ib_node_description: {'x' * 65}", "leaf01: ib_node_description = 'xxxx"),
    (
        "leaf02:\n",
        "leaf02:\n              ib_node_description: sm01 mlx5_0\n",
        "IB node description 'sm01 mlx5_0' is shown by 2 planned nodes (leaf02, sm01/mlx5_0)",
    ),
    (
        "fabric_links: {mlx5_0: leaf01/2}",
        "{ib_hostname: 'sm 01', fabric_links: {mlx5_0: leaf01/2}}",
        "sm01: ib_hostname = 'sm 01': expected the host name",
    ),
]


@pytest.mark.parametrize(("good", "bad", "message"), BAD, ids=[m.split(": ")[-1][:40] for _g, _b, m in BAD])
def test_each_problem_is_one_line_naming_file_line_and_variable(
    tmp_path: Path, good: str, bad: str, message: str
) -> None:
    assert good in GOOD
    source = inventory(tmp_path, GOOD.replace(good, bad, 1))
    found = problems_of(source)
    (problem,) = (p for p in found if message in p)
    # A port cabled twice names every declaration, each with its file:line.
    assert problem.startswith(f"{source}/") and f"{source}/hosts.yml:{line_of(source, bad)}: " in problem, (
        found
    )
    assert "\n" not in problem and "Traceback" not in problem


def test_a_cable_declared_differently_at_its_two_ends_names_both_declarations(tmp_path: Path) -> None:
    hosts = GOOD.replace("spine01: {}", "spine01: {fabric_links: {1: leaf02/34}}")
    (problem,) = problems_of(inventory(tmp_path, hosts))
    assert "IB port spine01/1: its two ends declare different cables" in problem
    assert "leaf01: fabric_links.33 = 'spine01/1'" in problem
    assert "spine01: fabric_links.1 = 'leaf02/34'" in problem


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        (
            GOOD.replace("        ib_spines:\n          hosts:\n", "      hosts:\n"),
            "spine01: groups: an IB switch is in exactly one tier group of ib_leaves, ib_spines, ib_cores "
            "(it is in: none)",
        ),
        (
            GOOD + "    ib_cores:\n      hosts:\n        core01: {}\n",
            "core01: groups ib_cores: an IB tier group must be a child of group ib_switches",
        ),
        (
            GOOD + "    ib_spines:\n      children:\n        ib_leaves: {}\n",
            "leaf01: groups: an IB switch is in exactly one tier group of ib_leaves, ib_spines, ib_cores "
            "(it is in: ib_leaves, ib_spines)",
        ),
        (
            GOOD + "    switches:\n      children:\n        ib_switches: {}\n",
            "leaf01: groups: an IB switch of group ib_switches is read in-band, never logged in to: it "
            "cannot also be a GPU host, SM node or Ethernet switch (switches)",
        ),
        (
            GOOD.replace("        sm02: {}\n", "        sm02: {}\n        spine01: {}\n"),
            "spine01: groups: an IB switch of group ib_switches is read in-band, never logged in to: it "
            "cannot also be a GPU host, SM node or Ethernet switch (subnet_managers)",
        ),
    ],
    ids=["no tier", "tier outside ib_switches", "two tiers", "under switches", "also an SM node"],
)
def test_switch_groups(tmp_path: Path, hosts: str, message: str) -> None:
    assert any(message in p for p in problems_of(inventory(tmp_path, hosts)))


def test_intent_problems_name_the_intent_key(tmp_path: Path) -> None:
    intent = INTENT + (
        "  ib_fabric:\n    read_from: leaf01\n    firmware:\n"
        "      - {device_id: 54002, version: 31.2012.1024}\n"
        "      - {device_id: 54002, version: 31.2010.1000}\n"
    )
    source = inventory(tmp_path, GOOD, intent)
    found = problems_of(source)
    fabric_yml = f"{source}/group_vars/all/fabric.yml"
    lines = (source / "group_vars/all/fabric.yml").read_text().splitlines()
    read_from = next(n for n, line in enumerate(lines, start=1) if "read_from" in line)
    assert any(
        p.startswith(f"{fabric_yml}:{read_from}: fabric_intent.ib_fabric.read_from = 'leaf01': not a node")
        for p in found
    ), found
    assert any(
        "fabric_intent.ib_fabric.firmware: device id(s) 54002 pinned more than once" in p for p in found
    )


def test_ib_switches_need_an_ib_intent(tmp_path: Path) -> None:
    roce = (REPO / "inventory/example/group_vars/all/fabric.yml").read_text()
    hosts = "all:\n  children:\n    ib_switches:\n      children:\n        ib_leaves:\n          hosts:\n"
    hosts += "            leaf01: {}\n"
    (problem,) = problems_of(inventory(tmp_path, hosts, roce))
    assert (
        "fabric_intent.kind = 'roce': the inventory has IB switches (group ib_switches): expected kind ib"
        in problem
    )
    assert problem.startswith(f"{tmp_path}/inv/group_vars/all/fabric.yml:")


def test_intent_check_prints_the_plan_and_refuses_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["intent", "check", "-i", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "4 IB switch(es)" in out
    assert (
        "IB switches: 2 leaf, 2 spine (ib_switches); cabling map: 18 host-to-switch and 16 switch-to-switch"
        in out
    )
    source = inventory(tmp_path, GOOD.replace("leaf01/1,", "leaf09/1,"))
    assert main(["intent", "check", "-i", str(source)]) == 2
    err = capsys.readouterr().err
    assert f"{source}/hosts.yml:{line_of(source, 'leaf09/1')}: gpu01: fabric_links.mlx5_0" in err
    assert "Traceback" not in err


def test_read_fabric_without_an_intent_reads_the_ib_plan() -> None:
    """The roles' filters pass already-templated variables and no intent: the plan still reads."""
    nodes = [
        InventoryNode("gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": "leaf01/1"}}, {0: "mlx5_0"}),
        InventoryNode("leaf01", ("ib_leaves", "ib_switches"), {"fabric_links": {2: "spine01/1"}}, {}),
        InventoryNode("spine01", ("ib_spines", "ib_switches"), {}, {}),
    ]
    fabric = read_fabric(nodes, lambda _value: "")
    assert [c.label for c in fabric.ib.cables] == ["gpu01/mlx5_0 ↔ leaf01/1", "leaf01/2 ↔ spine01/1"]
    assert fabric.links == ()


def test_a_partial_templated_view_without_ib_switches_is_not_judged() -> None:
    """The switch play's filter passes GPU hosts and Ethernet switches only, templated, without intent:
    IB-cabled hosts there are not 'unknown IB switch' errors (intent check judged the whole plan)."""
    gpu = InventoryNode("gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": "leaf01/1"}}, {0: "mlx5_0"})
    fabric = read_fabric([gpu], lambda _value: "")
    assert fabric.ib.cables == () and fabric.links == ()
