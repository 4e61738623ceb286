"""The lab's PCIe server topology against the affinity check: its own stated class (NODE) passes, the
fabric's default PXB still fails the very same topology, and a NIC across the socket fails either way."""

from __future__ import annotations

import pytest

from fabcheck.checks.host import check_affinity
from fabcheck.checks.model import Status, verdict
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.topo import TopoMatrix, parse_topo
from fabcheck_lab.inventory import PROFILE_MAX_GPU_NIC_LINK
from fabcheck_lab.mockhost import MockNodePaths, prepare_node
from fabcheck_lab.mockhost.profiles import rails_for
from fabcheck_lab.mockhost.tools.common import Node
from fabcheck_lab.mockhost.tools.nvidia_smi import render_topo

PCIE_RAILS = rails_for("pcie")


@pytest.fixture(scope="module")
def pcie_topology(tmp_path_factory: pytest.TempPathFactory) -> TopoMatrix:
    """`nvidia-smi topo -m` exactly as the lab's mock prints it on a factory PCIe host."""
    paths = MockNodePaths.under(tmp_path_factory.mktemp("pcie") / "gpu04")
    prepare_node(paths, name="gpu04", profile="pcie", index=3, address="127.0.0.4", peers={})
    return parse_topo(render_topo(Node(paths.state, paths.sys_class, paths.etc)))


def test_the_pcie_host_passes_at_the_class_its_inventory_states(pcie_topology: TopoMatrix) -> None:
    stated = FabricIntent(rails=PCIE_RAILS, max_gpu_nic_link=PROFILE_MAX_GPU_NIC_LINK["pcie"])
    findings = check_affinity(pcie_topology, stated)
    assert [f.subject for f in findings] == [f"GPU{i}" for i in range(8)]
    assert all(f.status is Status.PASS for f in findings), findings
    assert findings[0].actual == "GPU0 -> mlx5_0 NODE" and findings[7].actual == "GPU7 -> mlx5_1 NODE"


def test_the_same_topology_under_the_default_intent_fails_every_gpu(pcie_topology: TopoMatrix) -> None:
    findings = check_affinity(pcie_topology, FabricIntent(rails=PCIE_RAILS))
    assert verdict(findings) is Status.FAIL
    assert all(f.status is Status.FAIL for f in findings) and len(findings) == 8
    assert findings[0].expected == "GPU0 -> mlx5_0 at PXB or better"
    assert "fabric_max_gpu_nic_link" in findings[0].hint


def test_a_rail_nic_across_the_socket_still_fails_at_node(pcie_topology: TopoMatrix) -> None:
    crossed = FabricIntent(rails={**PCIE_RAILS, 0: "mlx5_1"}, max_gpu_nic_link="NODE")
    findings = check_affinity(pcie_topology, crossed)
    assert [f.subject for f in findings if f.status is Status.FAIL] == ["GPU0"]
    assert findings[0].actual == "GPU0 -> mlx5_1 SYS"
