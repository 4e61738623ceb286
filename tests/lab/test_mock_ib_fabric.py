"""The mock infiniband-diags on prepared nodes (no sshd): every node reads the same fabric state, the
tools' options, refusals and exit codes, and each IB fault shows in the parsed records exactly where
intended (parsers of fabcheck.parsers on the mocks' output)."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fabcheck.checks.ib import IbEvidence, check_ib_fabric
from fabcheck.desired.ib import desired_ib_fabric
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from fabcheck.parsers.ibqueryerrors import parse_ibqueryerrors, sweep_deltas
from fabcheck.parsers.saquery import parse_saquery_nodes
from fabcheck.parsers.vendstat import parse_vendstat_general
from fabcheck_lab import faults as lab_faults
from fabcheck_lab import ib_fabric, ib_lab, inventory
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import prepare_node
from fabcheck_lab.mockhost.tools import SERVED_TOOLS, TOOL_NAMES, dispatch, ib_diags, subnet_manager
from fabcheck_lab.mockhost.tools.common import Node, ToolError
from fabcheck_lab.nodes import plan_nodes
from fabcheck_lab.state import LabError, LabPaths, LabState, NodeRecord, load_state, save_state

REPO = Path(__file__).resolve().parents[2]

HOSTS = [("gpu01", "ib", 0), ("gpu02", "ib", 1), ("sm01", "sm", 2)]


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LabPaths, LabState]:
    """Three prepared host nodes of an ib lab with 2 leaves + 2 spines, its fabric state written on each;
    the subnet has a master (the mock opensm's socket is what the tools ask: stood in for here)."""
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    records = [NodeRecord(n, "host", p, "gpu_hosts", i, f"127.200.1.{i + 1}", 2222) for n, p, i in HOSTS]
    for record in records:
        prepare_node(
            MockNodePaths.under(paths.node_root(record.name)),
            name=record.name,
            profile=record.profile,
            index=record.index,
            address=record.address,
            peers={},
        )
    state = LabState(str(tmp_path), str(paths.run_dir), "ib", 2, 4, "lo", records)
    ib_lab.prepare(paths, state)
    monkeypatch.setattr(ib_diags, "subnet_up", lambda node: True)
    return paths, state


def node(paths: LabPaths, name: str) -> Node:
    mock = MockNodePaths.under(paths.node_root(name))
    return Node(mock.state, mock.sys_class, mock.etc)


def run(
    capsys: pytest.CaptureFixture[str], paths: LabPaths, name: str, tool: str, *args: str
) -> tuple[int, str, str]:
    try:
        code = dispatch.simple_tools()[tool](node(paths, name), list(args))
    except ToolError as exc:
        code = exc.code
        captured = capsys.readouterr()
        return (
            code,
            captured.out + (exc.message if exc.stdout else ""),
            captured.err + ("" if exc.stdout else exc.message),
        )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_tools_are_installed_and_only_ibqueryerrors_runs_in_the_node() -> None:
    for tool in ib_diags.TOOLS:
        assert tool in TOOL_NAMES
    assert "ibqueryerrors" not in SERVED_TOOLS  # it reads its threshold file by its path in the node
    assert {"ibnetdiscover", "iblinkinfo", "saquery", "vendstat", "perfquery"} <= set(SERVED_TOOLS)


def test_every_node_sees_the_one_fabric(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState]
) -> None:
    paths, _ = lab
    seen = {name: run(capsys, paths, name, "ibnetdiscover", "-p") for name, _, _ in HOSTS}
    assert {code for code, _, _ in seen.values()} == {0}
    assert len({text for _, text, _ in seen.values()}) == 1
    topology = parse_ibnetdiscover_ports(seen["gpu01"][1])
    links = topology.links()
    assert len(links) == 2 * 17  # 17 HCAs (2 x 8 + the SM's), as many uplinks
    assert all((x.width_a, x.speed_a, x.width_b, x.speed_b) == ("4x", "NDR", "4x", "NDR") for x in links)
    described = {(x.a.description, x.a.port, x.b.description, x.b.port) for x in links}
    assert ("gpu01 mlx5_0", 1, "leaf01", 1) in described
    assert ("sm01 mlx5_0", 1, "leaf02", 8) in described


def test_the_port_options_and_refusals(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState]
) -> None:
    paths, _ = lab
    assert run(capsys, paths, "gpu01", "ibnetdiscover", "-p", "-C", "mlx5_3", "-P", "1")[0] == 0
    code, out, err = run(capsys, paths, "gpu01", "ibnetdiscover", "-p", "-C", "mlx5_9", "-P", "1")
    assert code == 255 and out == "ibnetdiscover: iberror: failed: Failed to open port; mlx5_9:1\n"
    assert "can't open UMAD port (mlx5_9:1)" in err
    assert run(capsys, paths, "gpu01", "ibnetdiscover", "-p", "-P", "2")[0] == 255
    code, _, err = run(capsys, paths, "gpu01", "ibqueryerrors", "-k")  # never clears counters
    assert code == 2 and err.startswith("ibqueryerrors: invalid option -- 'k'\nUsage: ibqueryerrors")


def test_without_a_subnet_manager_the_tools_fail(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, _ = lab
    monkeypatch.setattr(ib_diags, "subnet_up", lambda node: False)
    code, out, _ = run(capsys, paths, "gpu02", "saquery")
    assert (code, out) == (255, "saquery: iberror: failed: discover failed\n\n")


def test_ibqueryerrors_counts_a_fault_over_a_window_and_heal_stops_it(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState], tmp_path: Path
) -> None:
    paths, state = lab
    empty = tmp_path / "thresholds"
    empty.write_text("")
    code, clean, _ = run(capsys, paths, "gpu01", "ibqueryerrors", "--threshold-file", str(empty))
    assert code == 0 and "## Summary: 21 nodes checked, 0 bad nodes found" in clean
    ib_lab.inject(paths, state, "ib-symbol-errors", "leaf02", now=time.time() - 10)
    code, text, _ = run(capsys, paths, "sm01", "ibqueryerrors", "--threshold-file", str(empty))
    leaf02 = ib_fabric.from_json(ib_lab.read_fabric_state(paths, state)["fabric"]).switch("leaf02")
    assert code == 1
    port = next(line for line in text.splitlines() if " port 35:" in line)
    counted = int(port.split("== ")[1].rstrip("]"))
    assert port.startswith(f"   GUID 0x{leaf02.guid:x} port 35: [SymbolErrorCounter == ") and counted >= 500
    ib_lab.heal(paths, state, "ib-symbol-errors", "leaf02")
    after_heal = run(capsys, paths, "gpu02", "ibqueryerrors", "--threshold-file", str(empty))[1]
    time.sleep(0.1)
    later = run(capsys, paths, "gpu02", "ibqueryerrors", "--threshold-file", str(empty))[1]
    assert after_heal == later  # stopped counting, kept what it counted
    assert run(capsys, paths, "gpu01", "ibqueryerrors")[0] == 255  # no threshold file: not modelled


def test_link_faults_show_in_the_parsed_topology_exactly_where_intended(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState]
) -> None:
    paths, state = lab

    def links() -> set[tuple[str, int, str, int, str | None, str | None]]:
        topology = parse_ibnetdiscover_ports(run(capsys, paths, "gpu02", "ibnetdiscover", "-p")[1])
        return {
            (x.a.description, x.a.port, x.b.description, x.b.port, x.width_a, x.speed_a)
            for x in topology.links()
        }

    factory = links()
    expected = {
        "ib-link-width": (
            {("leaf01", 33, "spine01", 1, "4x", "NDR")},
            {("leaf01", 33, "spine01", 1, "1x", "NDR")},
        ),
        "ib-link-speed": (
            {("leaf01", 34, "spine02", 1, "4x", "NDR")},
            {("leaf01", 34, "spine02", 1, "4x", "HDR")},
        ),
        "ib-link-missing": ({("leaf01", 41, "spine01", 5, "4x", "NDR")}, set()),
        "ib-miswire": (
            {("leaf01", 33, "spine01", 1, "4x", "NDR"), ("leaf02", 33, "spine01", 6, "4x", "NDR")},
            {("leaf01", 33, "spine01", 6, "4x", "NDR"), ("leaf02", 33, "spine01", 1, "4x", "NDR")},
        ),
    }
    for fault, (gone, new) in expected.items():
        ib_lab.inject(paths, state, fault, "leaf01")
        faulty = links()
        assert (factory - faulty, faulty - factory) == (gone, new), fault
        ib_lab.heal(paths, state, fault, "leaf01")
        assert links() == factory, fault


def test_dup_guid_shows_in_saquery_only(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState]
) -> None:
    paths, state = lab
    factory = run(capsys, paths, "gpu01", "saquery")[1]
    ib_lab.inject(paths, state, "ib-dup-guid", "leaf01")
    records = run(capsys, paths, "gpu01", "saquery")[1].split("NodeRecord dump:\n")[1:]
    by_description = {r.rsplit("NodeDescription.........", 1)[1].strip(): r for r in records}
    guid = by_description["gpu01 mlx5_1"].split("port_guid...............")[1].split("\n")[0]
    assert f"\t\tport_guid...............{guid}\n" in by_description["gpu01 mlx5_0"]
    assert sum(f"port_guid...............{guid}\n" in r for r in records) == 2
    ib_lab.heal(paths, state, "ib-dup-guid", "leaf01")
    assert run(capsys, paths, "gpu01", "saquery")[1] == factory


def test_vendstat_and_perfquery(capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState]) -> None:
    paths, state = lab
    fabric = ib_fabric.from_json(ib_lab.read_fabric_state(paths, state)["fabric"])
    spine = fabric.switch("spine02")
    code, text, _ = run(capsys, paths, "gpu01", "vendstat", "-N", str(spine.lid))
    assert code == 0 and "fw_version:  31.2012.1024\n" in text and "hw_dev_id:   0xd2f2\n" in text
    code, text, _ = run(capsys, paths, "gpu01", "vendstat", "-N", "1")  # an HCA's LID
    assert (code, text) == (255, "vendstat: iberror: failed: classportinfo query\n")
    code, text, _ = run(capsys, paths, "gpu01", "perfquery", "-x", str(spine.lid), "1")
    assert code == 0 and text.startswith(f"# Port extended counters: Lid {spine.lid} port 1 ")


def test_inventory_groups_and_cabling_follow_the_contract(lab: tuple[LabPaths, LabState]) -> None:
    _, state = lab
    fabric = ib_lab.lab_fabric(state)
    assert fabric is not None
    groups = ib_lab.inventory_groups(fabric)["ib_switches"]["children"]
    assert set(groups) == {"ib_leaves", "ib_spines"}
    leaf01 = groups["ib_leaves"]["hosts"]["leaf01"]
    assert leaf01["ib_node_description"] == "leaf01"
    assert leaf01["fabric_links"][33] == "spine01/1" and len(leaf01["fabric_links"]) == 9
    assert "fabric_links" not in groups["ib_spines"]["hosts"]["spine01"]
    hosts = ib_lab.host_links(fabric)
    assert hosts["gpu01"]["mlx5_0"] == "leaf01/1" and hosts["sm01"] == {"mlx5_0": "leaf02/8"}


def test_each_fault_fails_exactly_its_check_on_exactly_its_link_and_heal_passes(tmp_path: Path) -> None:
    """The lab inventory of `up --profile ib --hosts 4 --switches 4` (hosts.yml beside the lab's own
    group_vars), its desired IB fabric, the fabric the nodes read parsed and judged by checks.ib: clean,
    each fault on leaf01, and healed."""
    shutil.copytree(REPO / "inventory" / "lab", tmp_path / "inventory" / "lab")
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    state = LabState(str(tmp_path), str(paths.run_dir), "ib", 4, 4, "lo", plan_nodes("ib", 4, 4))
    inventory.write_inventory(paths, state)
    loaded = load_inventory(tmp_path / "inventory" / "lab")
    desired = desired_ib_fabric(loaded.intent, fabric_of(loaded).ib, subnet_managers=["sm01", "sm02"])
    assert desired is not None and desired.reader == "sm01" and len(desired.links) == 68
    for record in state.host_nodes():
        (paths.node_root(record.name) / "state").mkdir(parents=True)
    ib_lab.prepare(paths, state)

    def failing() -> list[tuple[str, str, str, str]]:
        fabric = ib_diags.effective(ib_lab.read_fabric_state(paths, state))
        now = time.time()  # the window: from now, 2 s on
        before = parse_ibqueryerrors(ib_fabric.render_ibqueryerrors(fabric, now)[0])
        after = parse_ibqueryerrors(ib_fabric.render_ibqueryerrors(fabric, now + 2)[0])
        firmware = {
            s.lid: parse_vendstat_general(ib_fabric.render_vendstat_general(s), lid=s.lid)
            for s in fabric.switches
        }
        evidence = IbEvidence(
            parse_ibnetdiscover_ports(ib_fabric.render_ibnetdiscover_ports(fabric)),
            parse_saquery_nodes(ib_fabric.render_saquery_nodes(fabric)),
            before,
            after,
            sweep_deltas(before, after),
            firmware,
            2,
        )
        judged = check_ib_fabric(evidence, replace(desired, counter_window_s=2))
        return sorted(
            (n, f.check, f.status.value, f.subject)
            for n, fs in judged.items()
            for f in fs
            if f.status.value != "pass"
        )

    assert failing() == []
    expected = {
        "ib-link-width": [("leaf01", "ib.link", "fail", "leaf01/33 ↔ spine01/1")],
        "ib-link-speed": [("leaf01", "ib.link", "fail", "leaf01/34 ↔ spine02/1")],
        "ib-miswire": [  # both swapped cables; their width and speed are not judged on the wrong peer
            ("leaf01", "ib.link", "skip", "leaf01/33 ↔ spine01/1"),
            ("leaf01", "ib.topology", "fail", "leaf01/33 ↔ spine01/1"),
            ("leaf02", "ib.link", "skip", "leaf02/33 ↔ spine01/10"),
            ("leaf02", "ib.topology", "fail", "leaf02/33 ↔ spine01/10"),
        ],
        "ib-link-missing": [
            ("leaf01", "ib.errors", "skip", "leaf01/49 ↔ spine01/9"),
            ("leaf01", "ib.link", "skip", "leaf01/49 ↔ spine01/9"),
            ("leaf01", "ib.topology", "fail", "leaf01/49 ↔ spine01/9"),
        ],
        "ib-symbol-errors": [("leaf01", "ib.errors", "fail", "leaf01/35 ↔ spine01/2")],
        "ib-dup-guid": [("gpu01", "ib.guids", "fail", "gpu01/mlx5_0")],
    }
    for fault, findings in expected.items():
        ib_lab.inject(paths, state, fault, "leaf01", now=time.time() - 10)
        assert failing() == findings, fault
        ib_lab.heal(paths, state, fault, "leaf01")
        assert failing() == [], fault


def test_sminfo_master_lid_is_the_sm_nodes_hca_in_the_fabric(lab: tuple[LabPaths, LabState]) -> None:
    """The SM's LID that sminfo reports (the SM node's own port LID, subnet_manager.sm_identity) is the
    LID the fabric shows for that node's HCA, and every HCA is the host's own (GUID, LID, `%h %d`)."""
    paths, state = lab
    fabric = ib_diags.effective(ib_lab.read_fabric_state(paths, state))
    by_key = {h.key: h for h in fabric.hcas}
    assert subnet_manager.sm_identity(node(paths, "sm01"))["lid"] == by_key["sm01/mlx5_0"].lid
    for name, _, _ in HOSTS:
        for nic in node(paths, name).rdma_nics():
            hca = by_key[f"{name}/{nic['name']}"]
            assert (hca.port_guid, hca.lid, hca.description) == (
                int(nic["port_guid"], 16),
                int(node(paths, name).port_value(nic, "lid"), 16),
                f"{name} {nic['name']}",
            )


def test_lab_inject_and_heal_an_ib_fault_by_its_switch(lab: tuple[LabPaths, LabState]) -> None:
    paths, state = lab
    save_state(paths, state)
    with pytest.raises(
        LabError, match=r"applies to IB switches \(leaf01, leaf02, spine01, spine02\), not to gpu01"
    ):
        lab_faults.inject(paths, "ib-link-width", "gpu01")
    with pytest.raises(LabError, match="spine01 has no uplink"):
        lab_faults.inject(paths, "ib-link-width", "spine01")
    assert lab_faults.inject(paths, "ib-link-width", "leaf01") is True
    assert lab_faults.inject(paths, "ib-link-width", "leaf01") is False  # already active
    document = ib_lab.read_fabric_state(paths, state)
    assert document["faults"][0][:2] == ["ib-link-width", "leaf01"]
    assert [(f.fault, f.node) for f in load_state(paths).faults] == [("ib-link-width", "leaf01")]  # type: ignore[union-attr]
    assert [(f.fault, f.node) for f in lab_faults.heal(paths)] == [("ib-link-width", "leaf01")]
    assert ib_lab.read_fabric_state(paths, state)["faults"] == []


def test_an_ib_lab_without_ib_switches_has_no_fabric_to_discover(
    capsys: pytest.CaptureFixture[str], lab: tuple[LabPaths, LabState]
) -> None:
    paths, _ = lab
    (paths.node_root("gpu01") / "state" / "ib_fabric.json").unlink()
    assert run(capsys, paths, "gpu01", "ibnetdiscover", "-p")[:2] == (
        255,
        "ibnetdiscover: iberror: failed: discover failed\n\n",
    )
