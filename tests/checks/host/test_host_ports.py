"""fabcheck.checks.host.ports: the rail NICs are present, their ports up (an INIT port points at the subnet
manager, a DOWN one at the cable), Ethernet, at the intended speed and MTUs (netdev and RDMA)."""

from __future__ import annotations

import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.declare import NO_INPUTS
from fabcheck.checks.host import PORT_STATE, RailNic, check_port_state
from fabcheck.checks.model import Status
from fabcheck.collect.script import Section
from fabcheck.desired.nic import desired_host
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.rdma_link import RdmaLink
from tests.checks.host.hostdata import (
    Fault,
    device,
    failing,
    links,
    not_passing,
    ok,
    one_wrong_setting_test,
    only,
    run_checks,
)
from tests.parsers.renderers import render_ibv_devinfo, render_rdma_link

FAULTS: list[Fault] = [
    (
        "netdev-mtu",
        {"mtu:ens1np0": ok("1500\n")},
        checks.NETDEV_MTU,
        "mlx5_0",
        "ens1np0 MTU 1500",
        "ip link set dev ens1np0 mtu 9000",
    ),
    (
        "rdma-mtu",
        {"ibv_devinfo": ok(render_ibv_devinfo([device("mlx5_0", 0, active_mtu=1024), device("mlx5_1", 1)]))},
        checks.RDMA_MTU,
        "mlx5_0/1",
        "active_mtu 1024 (max_mtu 4096)",
        "ip link set dev ens1np0 mtu 9000",
    ),
    (
        "port-down",
        {"rdma_link": ok(links(mlx5_1="DOWN"))},
        checks.PORT_STATE,
        "mlx5_1/1",
        "DOWN/DISABLED",
        "rdma link show mlx5_1/1",
    ),
    (
        "link-layer",
        {
            "ibv_devinfo": ok(
                render_ibv_devinfo([device("mlx5_0", 0), device("mlx5_1", 1, link_layer="InfiniBand")])
            )
        },
        checks.LINK_LAYER,
        "mlx5_1/1",
        "InfiniBand",
        "mlxconfig -d mlx5_1 set 'LINK_TYPE_P1=ETH(2)'",  # quoted: ( ) are shell syntax
    ),
]


test_one_wrong_setting_fails_exactly_its_check = one_wrong_setting_test(FAULTS)


def test_missing_rail_nic_fails_device_check_and_skips_nothing_silently() -> None:
    rdma = render_rdma_link([RdmaLink("mlx5_0", 1, "ACTIVE", "LINK_UP", "ens1np0")])
    devinfo = render_ibv_devinfo([device("mlx5_0", 0)])
    findings = run_checks({"rdma_link": ok(rdma), "ibv_devinfo": ok(devinfo)})
    assert not_passing(findings) == {(checks.RDMA_DEVICE, "mlx5_1"): Status.FAIL}
    missing = only(findings, checks.RDMA_DEVICE, "mlx5_1")
    assert missing.actual == "not listed by `rdma link` and `ibv_devinfo`"
    assert "role gpu_rdma" in missing.hint


NO_NIC_TOPO = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\t0-55\t0\t\tN/A\n"
    "GPU1\tNV18\t X \t56-111\t1\t\tN/A\n"
    "\nLegend:\n\n  X    = Self\n"
)


def test_host_without_rdma_devices_fails_devices_and_affinity() -> None:
    # As the tools print it: `rdma link` prints nothing; ibv_devinfo says so on stderr and exits 255.
    findings = run_checks(
        {
            "rdma_link": ok(""),
            "ibv_devinfo": Section(255, "", "No IB devices found\n"),
            "topo": ok(NO_NIC_TOPO),
        }
    )
    assert failing(findings) == {
        (checks.RDMA_DEVICE, "mlx5_0"): Status.FAIL,
        (checks.RDMA_DEVICE, "mlx5_1"): Status.FAIL,
        (checks.AFFINITY, "GPU0"): Status.FAIL,
        (checks.AFFINITY, "GPU1"): Status.FAIL,
    }
    assert "no NIC in topology" in only(findings, checks.AFFINITY, "GPU0").actual
    assert not any(f.check in checks.ROCE_ONLY_CHECKS for f in findings)  # nothing to judge, nothing passed


def test_ibv_devinfo_failing_for_another_reason_is_an_error() -> None:
    broken = Section(255, "", "Failed to get IB devices list: Function not implemented\n")
    device = only(run_checks({"ibv_devinfo": broken}), checks.RDMA_DEVICE, "host")
    assert device.status is Status.ERROR
    assert device.actual.endswith("exit 255: Failed to get IB devices list: Function not implemented")


@pytest.mark.parametrize(
    ("width", "speed", "status"),
    [
        ("4X", "100.0 Gbps", Status.PASS),  # 400G as intended
        ("4X", "25.0 Gbps", Status.FAIL),  # a 400G intent with the port at 100G
        ("1X", "100.0 Gbps", Status.FAIL),  # one lane trained
        ("8X", "100.0 Gbps", Status.FAIL),  # 800G: not what the intent sized the fabric for
        (None, None, Status.ERROR),  # not shown: never a pass
    ],
)
def test_every_rail_port_runs_at_the_intended_speed(
    width: str | None, speed: str | None, status: Status
) -> None:
    devinfo = render_ibv_devinfo(
        [device("mlx5_0", 0, active_width=width, active_speed=speed), device("mlx5_1", 1)]
    )
    findings = run_checks({"ibv_devinfo": ok(devinfo)})
    judged = only(findings, checks.PORT_SPEED, "mlx5_0/1")
    assert judged.status is status, judged
    assert only(findings, checks.PORT_SPEED, "mlx5_1/1").status is Status.PASS
    if status is Status.FAIL:
        assert "ethtool" in judged.hint and "Gb/s" in judged.actual


# An InfiniBand port that trained but stays INIT points at the subnet manager, not at the cable.


def port_state_judged(state: str, physical: str) -> tuple[Status, str]:
    link = RdmaLink("mlx5_0", 1, state, physical, netdev="ib0")
    desired = desired_host(FabricIntent.model_validate({}), "gpu01")
    [finding] = check_port_state([RailNic("mlx5_0", (link,), ())], desired, NO_INPUTS)
    assert finding.check == PORT_STATE
    return finding.status, finding.hint


def test_init_port_names_the_subnet_manager() -> None:
    status, hint = port_state_judged("INIT", "LINK_UP")
    assert status is Status.FAIL
    assert "opensm" in hint and "--tags sm" in hint and "sminfo" in hint and "cable" not in hint


def test_down_port_names_the_cable() -> None:
    status, hint = port_state_judged("DOWN", "DISABLED")
    assert status is Status.FAIL and "cable" in hint and "opensm" not in hint
    assert port_state_judged("ACTIVE", "LINK_UP")[0] is Status.PASS
