"""The mock host's link speed and modules as an operator changes them: `ethtool -s IF speed N` retrains
the link (sysfs `speed` and the RDMA port `rate` together, so ethtool, ibv_devinfo and ibstat agree),
an unsupported speed is refused as ethtool's netlink error, and kmod's `rmmod` refuses a module in use
or not loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def node(tmp_path: Path, bin_dir: Path) -> MockNode:
    return make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])[0]


def test_ethtool_s_speed_retrains_the_link_and_every_tool_agrees(node: MockNode) -> None:
    assert "Speed: 400000Mb/s" in node.run("ethtool", "ens1np0").stdout
    assert node.run("ethtool", "-s", "ens1np0", "speed", "100000", "autoneg", "off").returncode == 0
    assert "Speed: 100000Mb/s" in node.run("ethtool", "ens1np0").stdout
    assert node.sys_read("net/ens1np0/speed") == "100000"
    assert node.sys_read("infiniband/mlx5_0/ports/1/rate") == "100 Gb/sec (4X EDR)"
    text = node.run("ibv_devinfo", "-v", "-d", "mlx5_0").stdout
    assert "active_width:\t\t4X (2)" in text and "active_speed:\t\t25.0 Gbps (32)" in text, text
    assert "Rate: 100" in node.run("ibstat", "mlx5_0").stdout


def test_ethtool_s_refuses_a_speed_the_nic_has_no_link_mode_for(node: MockNode) -> None:
    done = node.run("ethtool", "-s", "ens1np0", "speed", "123", rc=1)
    assert done.returncode == 1 and "netlink error: Invalid argument" in done.stderr
    assert node.sys_read("net/ens1np0/speed") == "400000"


def test_rmmod_refuses_a_module_in_use_and_one_not_loaded(node: MockNode) -> None:
    node.run("modprobe", "mlx5_ib")
    in_use = node.run("rmmod", "mlx5_core", rc=1)
    assert in_use.returncode == 1 and "Module mlx5_core is in use by: mlx5_ib" in in_use.stderr
    assert node.run("rmmod", "mlx5_ib").returncode == 0
    assert "mlx5_ib" not in node.run("lsmod").stdout
    gone = node.run("rmmod", "mlx5_ib", rc=1)
    assert gone.returncode == 1 and "Module mlx5_ib is not currently loaded" in gone.stderr
