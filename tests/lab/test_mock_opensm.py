"""The mock opensm follows its file and elects like OpenSM; the mock `ip` makes IPoIB children; the
sm-conf-drift fault edits opensm.conf and heals back byte for byte. Mock nodes on tmp dirs (no lab)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes

from fabcheck.errors import UsageError
from fabcheck_lab.mockhost import faults

OPENSM_CONF = Path("opensm") / "opensm.conf"


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def fabric(tmp_path: Path, bin_dir: Path) -> Iterator[list[MockNode]]:
    """sm1, sm2 (SM nodes) and ib1 (an IB host); every opensm is stopped afterwards."""
    nodes = make_nodes(tmp_path, bin_dir, [("sm1", "sm"), ("sm2", "sm"), ("ib1", "ib")])
    yield nodes
    for node in nodes[:2]:
        node.run("systemctl", "stop", "opensm")


def set_conf(node: MockNode, **values: object) -> None:
    conf = node.paths.etc / OPENSM_CONF
    lines = [line for line in conf.read_text().splitlines() if line.split()[:1] not in ([k] for k in values)]
    conf.write_text("\n".join([*lines, *(f"{key} {value}" for key, value in values.items())]) + "\n")


def sminfo_state(node: MockNode, lid: int | None = None) -> str:
    """`priority P state S NAME` of what sminfo reports."""
    text = node.run("sminfo", *([str(lid)] if lid is not None else [])).stdout
    return text.split(", activity count ")[1].split(" ", 1)[1].strip()


def lid_of(node: MockNode) -> int:
    return int(node.sys_read("infiniband/mlx5_0/ports/1/lid"), 16)


def port_guid(node: MockNode) -> int:
    return int(json.loads((node.paths.state / "topology.json").read_text())["nics"][0]["port_guid"], 16)


def main_pid(node: MockNode) -> int:
    return int(node.run("systemctl", "show", "opensm", "-p", "MainPID").stdout.strip().split("=")[1])


def test_each_daemon_derives_its_own_state_from_the_priorities(fabric: list[MockNode]) -> None:
    sm1, sm2, host = fabric
    set_conf(sm1, sm_priority=14)
    set_conf(sm2, sm_priority=15)
    sm1.run("systemctl", "start", "opensm")
    sm2.run("systemctl", "start", "opensm")
    assert sminfo_state(host) == "priority 15 state 3 SMINFO_MASTER"
    assert sminfo_state(host, lid_of(sm1)) == "priority 14 state 2 SMINFO_STANDBY"
    assert sminfo_state(host, lid_of(sm2)) == "priority 15 state 3 SMINFO_MASTER"
    log = (sm1.paths.state / "opensm.log").read_text()
    assert "Loading Cached Option:sm_priority = 14\n" in log


def test_equal_priorities_go_to_the_lowest_guid(fabric: list[MockNode]) -> None:
    sm1, sm2, host = fabric
    for node in (sm1, sm2):
        set_conf(node, sm_priority=7)
        node.run("systemctl", "start", "opensm")
    guids = {node.name: port_guid(node) for node in (sm1, sm2)}
    lowest = min(guids, key=guids.__getitem__)
    master, standby = (sm1, sm2) if lowest == "sm1" else (sm2, sm1)
    assert sminfo_state(host, lid_of(master)) == "priority 7 state 3 SMINFO_MASTER"
    assert sminfo_state(host, lid_of(standby)) == "priority 7 state 2 SMINFO_STANDBY"


def test_a_restart_picks_up_the_new_file_and_a_stale_daemon_keeps_the_old(fabric: list[MockNode]) -> None:
    sm1, sm2, host = fabric
    set_conf(sm1, sm_priority=15)
    set_conf(sm2, sm_priority=14)
    sm1.run("systemctl", "start", "opensm")
    sm2.run("systemctl", "start", "opensm")
    before = main_pid(sm2)
    set_conf(sm2, sm_priority=15, routing_engine="updn")
    assert sminfo_state(host, lid_of(sm2)) == "priority 14 state 2 SMINFO_STANDBY"  # not restarted yet
    sm2.run("systemctl", "restart", "opensm")
    assert main_pid(sm2) != before
    assert (
        sminfo_state(host, lid_of(sm2)) == "priority 15 state 2 SMINFO_STANDBY"
    )  # tie: sm1 has the lower GUID
    assert "Loading Cached Option:routing_engine = updn\n" in (sm2.paths.state / "opensm.log").read_text()
    sm1.run("systemctl", "stop", "opensm")
    assert sminfo_state(host) == "priority 15 state 3 SMINFO_MASTER"


def test_sm_conf_drift_edits_the_file_and_heals_exactly(fabric: list[MockNode]) -> None:
    sm1, _sm2, host = fabric
    set_conf(sm1, sm_priority=15, routing_engine="ftree")
    conf = sm1.paths.etc / OPENSM_CONF
    intended = conf.read_text()
    faults.inject(sm1.paths, "sm-conf-drift")
    drifted = conf.read_text()
    assert "sm_priority 0\n" in drifted and "routing_engine minhop\n" in drifted
    assert "sm_priority 15" not in drifted and "routing_engine ftree" not in drifted
    faults.heal(sm1.paths, "sm-conf-drift")
    assert conf.read_text() == intended
    with pytest.raises(UsageError, match="needs an SM node"):
        faults.inject(host.paths, "sm-conf-drift")


def test_ip_link_add_makes_an_ipoib_child_as_the_kernel_does(fabric: list[MockNode]) -> None:
    host = fabric[2]
    host.run("ip", "link", "add", "link", "ib0", "name", "ib0.8001", "type", "ipoib", "pkey", "0x0001")
    assert host.sys_read("net/ib0.8001/pkey") == "0x8001"  # full-member bit set, as create_child does
    assert host.sys_read("net/ib0.8001/parent") == "ib0"
    assert host.sys_read("net/ib0.8001/broadcast").split(":")[8:10] == ["80", "01"]
    assert host.sys_read("net/ib0.8001/address") != host.sys_read("net/ib0/address")
    shown = host.run("ip", "link", "show", "ib0.8001").stdout
    assert ": ib0.8001@ib0: <BROADCAST,MULTICAST> mtu 2044" in shown and "state DOWN" in shown
    host.run("ip", "link", "set", "dev", "ib0.8001", "up")
    assert "state UP" in host.run("ip", "link", "show", "ib0.8001").stdout


@pytest.mark.parametrize(
    ("args", "rc", "says"),
    [
        (
            ["link", "ib9", "name", "ib9.8001", "type", "ipoib", "pkey", "0x8001"],
            1,
            'Cannot find device "ib9"',
        ),
        (["link", "ib0", "name", "ib0.8000", "type", "ipoib", "pkey", "0x8000"], 255, "pkey is invalid"),
        (["link", "ib0", "name", "ib0.x", "type", "ipoib", "pkey", "zz"], 255, "pkey is invalid"),
        (["link", "ib0", "name", "ib0.8001", "type", "vlan", "pkey", "0x8001"], 2, "Operation not permitted"),
        (["link", "ib0", "name", "ib0.8001", "type", "ipoib", "pkey", "0x8001", "up"], 255, "garbage"),
    ],
)
def test_ip_link_add_refuses_what_the_kernel_refuses(
    fabric: list[MockNode], args: list[str], rc: int, says: str
) -> None:
    host = fabric[2]
    assert says in host.run("ip", "link", "add", *args, rc=rc).stderr
    assert not (host.paths.sys_class / "net" / "ib0.8001").exists()


def test_ip_link_add_twice_is_file_exists_and_ethernet_parents_are_refused(
    fabric: list[MockNode], tmp_path: Path, bin_dir: Path
) -> None:
    host = fabric[2]
    add = ["ip", "link", "add", "link", "ib0", "name", "ib0.8002", "type", "ipoib", "pkey", "0x8002"]
    host.run(*add)
    assert "File exists" in host.run(*add, rc=2).stderr
    roce = make_nodes(tmp_path / "roce", bin_dir, [("gpu1", "rail8")])[0]
    refused = roce.run(
        "ip", "link", "add", "link", "ens1np0", "name", "e.8001", "type", "ipoib", "pkey", "1", rc=2
    )
    assert "Operation not supported" in refused.stderr
