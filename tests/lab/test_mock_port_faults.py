"""Mock ports as the gate reads them: InfiniBand host ports follow the subnet manager (INIT while no SM
runs, ACTIVE with one), and the port faults "link-down" and "link-speed" show on exactly one port in
ibv_devinfo / ibstat / rdma link / ethtool and in the mock perftest's bandwidth, fail exactly
host.port_state / host.port_speed of that port on the RoCE intent, then heal byte for byte. Mock nodes on
tmp dirs (no lab)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import hostgate
import pytest
import yaml
from test_mockhost_support import MockNode, installed_bin, kill_quietly, make_nodes, tree_bytes

from fabcheck.checks import host as host_checks
from fabcheck.checks.model import Status
from fabcheck.collect.host import IBV_DEVINFO, RDMA_LINK, HostCollection
from fabcheck.collect.script import Section
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.ibstat import parse_ibstat
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo
from fabcheck.parsers.perftest import parse_perftest
from fabcheck.parsers.rdma_link import parse_rdma_link
from fabcheck_lab import faults, nodes
from fabcheck_lab.mockhost import heal, inject
from fabcheck_lab.state import LabError, LabState


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def ib_fabric(tmp_path: Path, bin_dir: Path) -> Iterator[tuple[MockNode, MockNode]]:
    sm, host = make_nodes(tmp_path, bin_dir, [("sm1", "sm"), ("ib1", "ib")])
    yield sm, host
    sm.run("systemctl", "stop", "opensm")


def link_states(node: MockNode) -> dict[str, tuple[str, str]]:
    return {
        link.dev: (link.state, link.physical_state)
        for link in parse_rdma_link(node.run("rdma", "link").stdout)
    }


def devinfo_states(node: MockNode) -> dict[str, str]:
    return {d.hca_id: d.ports[0].state for d in parse_ibv_devinfo(node.run("ibv_devinfo").stdout)}


def test_infiniband_ports_stay_init_until_a_subnet_manager_runs(ib_fabric: tuple[MockNode, MockNode]) -> None:
    sm, host = ib_fabric
    assert set(link_states(host).values()) == {("INIT", "LINK_UP")}
    assert set(devinfo_states(host).values()) == {"PORT_INIT"}
    assert {ca.ports[0].state for ca in parse_ibstat(host.run("ibstat").stdout)} == {"Initializing"}
    assert "state:\t\t 2: INIT\n" in host.run("ibstatus", "mlx5_0").stdout
    sm.run("systemctl", "start", "opensm")
    assert set(link_states(host).values()) == {("ACTIVE", "LINK_UP")}
    assert set(devinfo_states(host).values()) == {"PORT_ACTIVE"}
    assert link_states(sm) == {"mlx5_0": ("ACTIVE", "LINK_UP")}  # the SM's own port too
    sm.run("systemctl", "stop", "opensm")
    assert set(devinfo_states(host).values()) == {"PORT_INIT"}


@pytest.fixture
def rail8(tmp_path: Path, bin_dir: Path) -> MockNode:
    return make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])[0]


def test_link_down_downs_exactly_one_port_and_heals_every_byte(rail8: MockNode) -> None:
    before = tree_bytes(rail8.paths.state, rail8.paths.sys_class)
    inject(rail8.paths, "link-down")
    states = link_states(rail8)
    assert states.pop("mlx5_0") == ("DOWN", "DISABLED")
    assert set(states.values()) == {("ACTIVE", "LINK_UP")}
    assert devinfo_states(rail8)["mlx5_0"] == "PORT_DOWN"
    assert "state DOWN" in rail8.run("ip", "link", "show", "ens1np0").stdout
    heal(rail8.paths, "link-down")
    assert tree_bytes(rail8.paths.state, rail8.paths.sys_class) == before


def test_ip_link_set_down_downs_the_rdma_port_of_that_netdev(rail8: MockNode) -> None:
    rail8.run("ip", "link", "set", "dev", "ens3np0", "down")
    assert link_states(rail8)["mlx5_2"] == ("DOWN", "DISABLED")
    assert devinfo_states(rail8)["mlx5_2"] == "PORT_DOWN"
    rail8.run("ip", "link", "set", "dev", "ens3np0", "up")
    assert link_states(rail8)["mlx5_2"] == ("ACTIVE", "LINK_UP")


def test_link_down_on_an_infiniband_host_is_down_polling(ib_fabric: tuple[MockNode, MockNode]) -> None:
    sm, host = ib_fabric
    sm.run("systemctl", "start", "opensm")
    inject(host.paths, "link-down")
    states = link_states(host)
    assert states.pop("mlx5_0") == ("DOWN", "POLLING")
    assert set(states.values()) == {("ACTIVE", "LINK_UP")}
    heal(host.paths)
    assert link_states(host)["mlx5_0"] == ("ACTIVE", "LINK_UP")


def rates(node: MockNode) -> dict[str, float | None]:
    devices = parse_ibv_devinfo(node.run("ibv_devinfo", "-v").stdout)
    return {d.hca_id: d.ports[0].link_rate_gbps for d in devices}


def test_link_speed_slows_exactly_one_port_and_heals_every_byte(rail8: MockNode) -> None:
    before = tree_bytes(rail8.paths.state, rail8.paths.sys_class)
    inject(rail8.paths, "link-speed")
    shown = rates(rail8)
    assert shown.pop("mlx5_0") == 100
    assert set(shown.values()) == {400}
    port = parse_ibv_devinfo(rail8.run("ibv_devinfo", "-v", "-d", "mlx5_0").stdout)[0].ports[0]
    assert (port.active_width, port.active_speed) == ("4X", "25.0 Gbps")
    assert "Speed: 100000Mb/s" in rail8.run("ethtool", "ens1np0").stdout
    assert "Speed: 400000Mb/s" in rail8.run("ethtool", "ens2np0").stdout
    heal(rail8.paths, "link-speed")
    assert tree_bytes(rail8.paths.state, rail8.paths.sys_class) == before


def write_bw(server: MockNode, client: MockNode, device: str) -> float:
    port = str(random.randrange(20000, 40000))
    args = ("ib_write_bw", "-d", device, "--report_gbits", "-p", port)
    proc = server.start(*args)
    try:
        banner = [proc.stdout.readline() for _ in range(4)] if proc.stdout else []
        assert "* Waiting for client to connect... *\n" in banner
        out = client.run(*args, server.address).stdout
        proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    row = parse_perftest(out).rows[-1]
    assert row.bw_avg is not None
    return row.bw_avg


def test_link_speed_caps_the_mock_perftest_at_the_slower_rate(tmp_path: Path, bin_dir: Path) -> None:
    server, client = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8"), ("gpu2", "rail8")])
    inject(client.paths, "link-speed")
    slowed = write_bw(server, client, "mlx5_0")
    full = write_bw(server, client, "mlx5_1")
    assert slowed < 100 < full


def test_sm_stopped_applies_to_sm_nodes_only() -> None:
    state = LabState("/repo", "/dev/shm/x", "ib", 2, 0, "lo", nodes.plan_nodes("ib", 2, 0))
    assert faults.catalog()["sm-stopped"][0] == "host"
    faults._check_target("sm-stopped", state.node("sm02"), state)
    with pytest.raises(LabError, match=r"applies to SM nodes \(sm01, sm02\), not to gpu01"):
        faults._check_target("sm-stopped", state.node("gpu01"), state)


REPO = Path(__file__).resolve().parents[2]
ROCE_INTENT = FabricIntent.model_validate(
    yaml.safe_load((REPO / "inventory/lab/group_vars/all/fabric.yml").read_text())["lab_intents"]["roce"]
)


def host_verdicts(node: MockNode) -> set[tuple[str, str]]:
    """The node's `rdma link` and `ibv_devinfo -v` (the port checks' evidence) judged as validate judges
    a collection: every (check, subject) that is not a pass. The sections not read here are the same
    errors before and after a fault; the tests compare the two."""
    sections = {
        name: Section(done.returncode, done.stdout, done.stderr)
        for name, argv in ((RDMA_LINK, ("rdma", "link")), (IBV_DEVINFO, ("ibv_devinfo", "-v")))
        for done in [node.run(*argv)]
    }
    result = hostgate.judge(HostCollection(node.name, sections, True), ROCE_INTENT)
    return {(f.check, f.subject) for f in result.findings if f.status != Status.PASS}


@pytest.mark.parametrize(
    ("fault", "check"), [("link-down", host_checks.PORT_STATE), ("link-speed", host_checks.PORT_SPEED)]
)
def test_a_roce_port_fault_fails_exactly_its_host_check_on_that_port(
    rail8: MockNode, fault: str, check: str
) -> None:
    before = host_verdicts(rail8)
    inject(rail8.paths, fault)
    shown = host_verdicts(rail8)
    heal(rail8.paths)
    assert (shown - before, before - shown) == ({(check, "mlx5_0/1")}, set())
    assert host_verdicts(rail8) == before


def test_a_netdev_set_down_in_the_node_fails_the_port_state_of_its_rdma_port(rail8: MockNode) -> None:
    before = host_verdicts(rail8)
    rail8.run("ip", "link", "set", "dev", "ens2np0", "down")
    assert host_verdicts(rail8) - before == {(host_checks.PORT_STATE, "mlx5_1/1")}
