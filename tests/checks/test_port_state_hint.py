"""An InfiniBand port that trained but stays INIT points at the subnet manager, not at the cable."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS
from fabcheck.checks.host import PORT_STATE, RailNic, check_port_state
from fabcheck.checks.model import Status
from fabcheck.desired.nic import desired_host
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.rdma_link import RdmaLink


def judged(state: str, physical: str) -> tuple[Status, str]:
    link = RdmaLink("mlx5_0", 1, state, physical, netdev="ib0")
    desired = desired_host(FabricIntent.model_validate({}), "gpu01")
    [finding] = check_port_state([RailNic("mlx5_0", (link,), ())], desired, NO_INPUTS)
    assert finding.check == PORT_STATE
    return finding.status, finding.hint


def test_init_port_names_the_subnet_manager() -> None:
    status, hint = judged("INIT", "LINK_UP")
    assert status is Status.FAIL
    assert "opensm" in hint and "--tags sm" in hint and "sminfo" in hint and "cable" not in hint


def test_down_port_names_the_cable() -> None:
    status, hint = judged("DOWN", "DISABLED")
    assert status is Status.FAIL and "cable" in hint and "opensm" not in hint
    assert judged("ACTIVE", "LINK_UP")[0] is Status.PASS
