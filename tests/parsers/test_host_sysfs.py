"""Host readings of the gate's collection: a value is read whole or refused with a ParseError, never half."""

from __future__ import annotations

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers import host_sysfs
from fabcheck.parsers.host_sysfs import DriverInfo
from tests.checks.host.hostdata import LSMOD

RP = "/sys/class/net/ens1np0/ecn/roce_rp"


def test_a_roce_rp_listing_reads_every_attribute_by_its_name_below_the_folder() -> None:
    text = f"{RP}/rpg_gd:11\n{RP}/enable/3:1\n{RP}/rpg_min_rate:-1\n"
    assert host_sysfs.sysfs_listing(text, "grep", "roce_rp") == {
        "rpg_gd": 11,
        "enable/3": 1,
        "rpg_min_rate": -1,
    }
    assert host_sysfs.sysfs_listing("", "grep", "roce_rp") == {}


@pytest.mark.parametrize(
    "text",
    [
        f"{RP}/rpg_gd\n",  # no value
        f"{RP}/rpg_gd:eleven\n",
        f"{RP}/rpg_gd:1 2\n",
        "/sys/class/net/ens1np0/ecn/roce_np/cnp_dscp:48\n",  # another folder
        f"{RP}/:3\n",
        f"{RP}/rpg_gd:11\n{RP}/rpg_gd:12\n",  # the same name twice
        f"{RP}/rpg_gd:{'9' * 30}\n",
    ],
)
def test_a_listing_line_of_another_shape_refuses_the_whole_listing(text: str) -> None:
    with pytest.raises(ParseError) as raised:
        host_sysfs.sysfs_listing(text, "grep -r -H '' x", "roce_rp")
    assert raised.value.source == "grep -r -H '' x"


def test_rdma_cm_readings() -> None:
    assert host_sysfs.rdma_cm_tos("106\n", "t") == 106
    assert host_sysfs.rdma_cm_mode("RoCE v2\n", "m") == "RoCE v2"
    assert host_sysfs.rdma_cm_mode("IB/RoCE v1\n", "m") == "IB/RoCE v1"
    for bad in ("", "256", "106\n106", "-1", "x"):
        with pytest.raises(ParseError):
            host_sysfs.rdma_cm_tos(bad, "t")
    for bad in ("", "RoCE v3", "RoCE v2\nRoCE v2", "v2"):
        with pytest.raises(ParseError):
            host_sysfs.rdma_cm_mode(bad, "m")


def test_ethtool_driver_needs_a_driver_and_its_version() -> None:
    text = (
        "driver: mlx5_core\nversion: 24.04-0.6.6\nfirmware-version: 28.39.1002 (MT_0000000838)\n"
        "bus-info: 0000:1a:00.0\n"
    )
    assert host_sysfs.ethtool_driver(text, "e") == DriverInfo(
        "mlx5_core", "24.04-0.6.6", "28.39.1002 (MT_0000000838)", "0000:1a:00.0"
    )
    for bad in ("", "driver: mlx5_core\n", "version: 1\n", "driver:\nversion: 1\n"):
        with pytest.raises(ParseError):
            host_sysfs.ethtool_driver(bad, "e")


def test_rdma_links_of_a_host_without_rdma_is_empty() -> None:
    assert host_sysfs.rdma_links("\n", "rdma link") == ()
    [link] = host_sysfs.rdma_links("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0\n", "r")
    assert (link.name, link.netdev) == ("mlx5_0/1", "ens1np0")


def test_sysfs_int_and_traffic_class_readers() -> None:
    assert host_sysfs.sysfs_int("9000\n", "x") == 9000
    assert host_sysfs.traffic_class("Global tclass=106\n", "x") == 106
    assert host_sysfs.traffic_class("106\n", "x") == 106
    for bad in ("", "abc", "1 2", "Global tclass=", "1" * 30):
        with pytest.raises(ParseError):
            host_sysfs.sysfs_int(bad, "x")
    with pytest.raises(ParseError):
        host_sysfs.traffic_class("Global tclass=300", "x")
    assert host_sysfs.loaded_modules(LSMOD, "lsmod") == {"nvidia_peermem", "nvidia", "mlx5_ib"}
