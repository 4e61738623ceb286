"""Host faults: each one changes what the real tools would show, and heal restores every byte."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, configure_lossless, installed_bin, make_nodes, tree_bytes

from fabcheck.errors import UsageError
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.topo import parse_topo
from fabcheck_lab.mockhost import HOST_FAULTS, heal, inject
from fabcheck_lab.mockhost.faults import active_faults

# Commands whose output a fault may change; all of them are compared before/after heal.
OBSERVED = (
    ("mlnx_qos", "-i", "ens1np0"),
    ("ibv_devinfo", "-v"),
    ("nvidia-smi", "topo", "-m"),
    ("cma_roce_tos", "-d", "mlx5_0"),
    ("show_gids",),
    ("lsmod",),
    ("ethtool", "--get-tunable", "ens1np0", "pfc-prevention-tout"),
)


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def node(tmp_path: Path, bin_dir: Path) -> MockNode:
    """A rail8 node the host role already configured (so every fault has something to break)."""
    node = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])[0]
    configure_lossless(node, ["ens1np0", "ens2np0"])
    return node


ECN_FILES = tuple(f"net/ens1np0/ecn/{point}/enable/{p}" for point in ("roce_np", "roce_rp") for p in range(8))


def outputs(node: MockNode) -> dict[tuple[str, ...], str]:
    """What the tools print, plus the sysfs files checks read directly (ECN enables)."""
    shown = {argv: node.run(*argv, rc=None).stdout for argv in OBSERVED}
    shown |= {("cat", rel): node.sys_read(rel) for rel in ECN_FILES}
    return shown


def qos(node: MockNode) -> object:
    return parse_mlnx_qos(node.run("mlnx_qos", "-i", "ens1np0").stdout)


def mlx5_0_port(node: MockNode) -> object:
    return parse_ibv_devinfo(node.run("ibv_devinfo", "-d", "mlx5_0").stdout)[0].ports[0]


def check_pfc_off(node: MockNode) -> None:
    assert qos(node).pfc_enabled == ()
    assert parse_mlnx_qos(node.run("mlnx_qos", "-i", "ens2np0").stdout).pfc_enabled == (3,)


def check_pfc_storm_off(node: MockNode) -> None:
    storm = ("ethtool", "--get-tunable")
    assert node.run(*storm, "ens1np0", "pfc-prevention-tout").stdout == "pfc-prevention-tout: 0\n"
    assert node.run(*storm, "ens2np0", "pfc-prevention-tout").stdout == "pfc-prevention-tout: 8000\n"


def check_trust_pcp(node: MockNode) -> None:
    assert qos(node).trust == "pcp"


def check_dscp_map(node: MockNode) -> None:
    mapped = qos(node)
    assert mapped.trust == "dscp" and mapped.dscp2prio[26] != 3 and mapped.dscp2prio[27] == 3


def check_ecn_off(node: MockNode) -> None:
    base = "net/ens1np0/ecn"
    assert (
        node.sys_read(f"{base}/roce_rp/enable/3") == "0" and node.sys_read(f"{base}/roce_np/enable/3") == "0"
    )
    assert node.sys_read(f"{base}/roce_np/enable/4") == "1"


def check_tos(node: MockNode) -> None:
    assert node.sys_read("infiniband/mlx5_0/tc/1/traffic_class") != "106"
    assert node.run("cma_roce_tos", "-d", "mlx5_0").stdout != "106\n"


def check_mtu(node: MockNode) -> None:
    assert node.sys_read("net/ens1np0/mtu") == "1500"
    assert mlx5_0_port(node).active_mtu == 1024


def check_affinity(node: MockNode) -> None:
    matrix = parse_topo(node.run("nvidia-smi", "topo", "-m").stdout)
    assert matrix.link("GPU0", "mlx5_0") == "SYS"
    assert matrix.link("GPU1", "mlx5_1") == "PIX"
    assert node.sys_read("net/ens1np0/device/numa_node") == "1"


def check_no_rdma(node: MockNode) -> None:
    assert node.run("ibv_devinfo", rc=255).stderr == "No IB devices found\n"
    assert not any((node.paths.sys_class / "infiniband").iterdir())
    assert node.run("show_gids").stdout.endswith("n_gids_found=0\n")
    assert "mlx5_ib" not in node.run("lsmod").stdout


CHECKS: dict[str, Callable[[MockNode], None]] = {
    "pfc-off": check_pfc_off,
    "pfc-storm-off": check_pfc_storm_off,
    "trust-pcp": check_trust_pcp,
    "dscp-map": check_dscp_map,
    "ecn-off": check_ecn_off,
    "tos": check_tos,
    "mtu": check_mtu,
    "affinity": check_affinity,
    "no-rdma": check_no_rdma,
}


# Faults that need a node state the rail8 fixture has not (a converged host's boot files, an SM node):
# each is proven by the lab test named here, which must exercise it by name.
TESTED_ELSEWHERE = {
    "host-persist-stale": "test_persistence_lab.py",
    "sm-conf-drift": "test_mock_opensm.py",
    "link-down": "test_mock_port_faults.py",  # one port, and which port; an IB fabric too
    "link-speed": "test_mock_port_faults.py",  # and the perftest cap, two nodes
    # the wire: counters that rise with time and heal keeping their counts (no byte-exact heal)
    "link-errors": "test_mockhost_wire.py",
    "link-flap": "test_mockhost_wire.py",
    "optic-rx-low": "test_mockhost_wire.py",
    "fw-mismatch": "test_mock_firmware.py",  # the NIC's firmware state, flint and mlxconfig (issue 36)
    "fw-config-drift": "test_mock_firmware.py",
    "dmabuf-host": "test_mock_gpudirect.py",  # a host variant that must pass, not a fault (issue 36)
    # the PCIe bus (issue 36): lspci, sysfs and the cmdline, and the bandwidth the faults cost
    "pcie-degraded": "test_mock_pcie.py",
    "acs-on": "test_mock_pcie.py",
    "iommu-translated": "test_mock_pcie.py",
    "gpu-ecc": "test_mock_gpu_health.py",  # nvidia-smi -q of GPU0, judged by host.gpu_health (issue 36)
    "xid": "test_mock_gpu_health.py",  # an Xid 79 line for GPU0 in dmesg
    # NVLink (issue 38): nvidia-smi nvlink -s and the -q Fabric section, parsed by fabcheck's parsers
    "nvlink-down": "test_mock_nvlink_faults.py",
    "clique-mismatch": "test_mock_nvlink_faults.py",
}


def test_every_contract_fault_has_a_check() -> None:
    assert set(HOST_FAULTS) == set(CHECKS) | set(TESTED_ELSEWHERE)
    assert not set(CHECKS) & set(TESTED_ELSEWHERE)
    here = Path(__file__).parent
    for fault, test_file in TESTED_ELSEWHERE.items():
        assert f'"{fault}"' in (here / test_file).read_text(), f"{test_file} does not exercise {fault}"


@pytest.mark.parametrize("fault", list(CHECKS))
def test_fault_changes_tools_and_heal_restores_bytes(node: MockNode, fault: str) -> None:
    before_files = tree_bytes(node.paths.state, node.paths.sys_class)
    before = outputs(node)
    inject(node.paths, fault)
    assert active_faults(node.paths) == [fault]
    CHECKS[fault](node)
    assert outputs(node) != before
    heal(node.paths, fault)
    assert active_faults(node.paths) == []
    assert outputs(node) == before
    assert tree_bytes(node.paths.state, node.paths.sys_class) == before_files


def test_faults_on_a_factory_node_heal_back_to_factory(tmp_path: Path, bin_dir: Path) -> None:
    node = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])[0]
    before = tree_bytes(node.paths.state, node.paths.sys_class)
    for fault in ("pfc-off", "dscp-map", "tos"):
        inject(node.paths, fault)
    assert qos(node).dscp2prio[26] == 0
    heal(node.paths)
    assert tree_bytes(node.paths.state, node.paths.sys_class) == before


def test_overlapping_faults_heal_in_any_order(node: MockNode) -> None:
    before = tree_bytes(node.paths.state, node.paths.sys_class)
    inject(node.paths, "pfc-off")
    inject(node.paths, "trust-pcp")
    inject(node.paths, "mtu")
    inject(node.paths, "no-rdma")
    inject(node.paths, "pfc-off")  # already active: no change, no second record
    assert active_faults(node.paths) == ["pfc-off", "trust-pcp", "mtu", "no-rdma"]
    heal(node.paths, "pfc-off")
    assert qos(node).trust == "pcp" and qos(node).pfc_enabled == (3,)
    heal(node.paths, "pfc-off")  # healing a fault that is not active changes nothing
    heal(node.paths)
    assert tree_bytes(node.paths.state, node.paths.sys_class) == before


def test_fault_keeps_role_changes_made_while_active(node: MockNode) -> None:
    inject(node.paths, "trust-pcp")
    node.run("mlnx_qos", "-i", "ens1np0", "--cable_len", "20")
    heal(node.paths, "trust-pcp")
    healed = qos(node)
    assert healed.trust == "dscp" and healed.cable_len == 20


def test_unknown_or_inapplicable_fault_is_a_usage_error(tmp_path: Path, bin_dir: Path) -> None:
    ib, sm = make_nodes(tmp_path, bin_dir, [("ib1", "ib"), ("sm1", "sm")])
    with pytest.raises(UsageError, match="unknown host fault 'pfc-on'"):
        inject(ib.paths, "pfc-on")
    with pytest.raises(UsageError, match="needs a RoCE NIC"):
        inject(ib.paths, "pfc-off")
    with pytest.raises(UsageError, match="needs GPUs"):
        inject(sm.paths, "affinity")
    assert active_faults(ib.paths) == [] and active_faults(sm.paths) == []
    inject(ib.paths, "affinity")
    assert parse_topo(ib.run("nvidia-smi", "topo", "-m").stdout).link("GPU0", "mlx5_0") == "SYS"
    heal(ib.paths)
