"""GPU-NIC affinity check: rails against the allowed link class, nearest NIC without rails."""

from __future__ import annotations

from fabcheck.checks.model import Status, verdict
from fabcheck.checks.topo import check_topo
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.topo import parse_topo

RAIL = (
    "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\tPIX\tSYS\t0-55\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tSYS\tPIX\t56-111\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\t X \tSYS\n"
    "NIC1\tSYS\tPIX\tSYS\t X \n"
    "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n"
)


def statuses(findings: list) -> dict[str, Status]:
    return {f.subject: f.status for f in findings}


def test_rails_pass_when_each_gpu_has_its_nic_on_pix() -> None:
    intent = FabricIntent(rails={0: "mlx5_0", 1: "mlx5_1"})
    findings = check_topo(parse_topo(RAIL), intent)
    assert statuses(findings) == {"GPU0": Status.PASS, "GPU1": Status.PASS}
    assert findings[0].actual == "GPU0 -> mlx5_0 PIX"


def test_swapped_rails_fail_with_the_crossing_link_and_a_hint() -> None:
    intent = FabricIntent(rails={0: "mlx5_1", 1: "mlx5_0"})
    findings = check_topo(parse_topo(RAIL), intent)
    assert verdict(findings) is Status.FAIL
    assert findings[0].actual == "GPU0 -> mlx5_1 SYS"
    assert findings[0].expected == "GPU0 -> mlx5_1 at PXB or better"
    assert "crosses SYS" in findings[0].hint and "fabric_intent.rails" in findings[0].hint


def test_rail_nic_missing_and_gpu_missing_fail() -> None:
    intent = FabricIntent(rails={0: "mlx5_7", 5: "mlx5_0"})
    findings = check_topo(parse_topo(RAIL), intent)
    assert [f.status for f in findings] == [Status.FAIL, Status.FAIL]
    assert "mlx5_7 not in topology" in findings[0].actual
    assert "GPU5 not in topology" in findings[1].actual


def test_nearest_nic_rule_without_rails_respects_max_link() -> None:
    assert verdict(check_topo(parse_topo(RAIL), FabricIntent())) is Status.PASS
    strict = FabricIntent(max_gpu_nic_link="PIX")
    assert verdict(check_topo(parse_topo(RAIL), strict)) is Status.PASS
    pcie = RAIL.replace("PIX", "NODE")
    assert verdict(check_topo(parse_topo(pcie), FabricIntent())) is Status.FAIL
    assert verdict(check_topo(parse_topo(pcie), FabricIntent(max_gpu_nic_link="NODE"))) is Status.PASS


def test_no_nic_at_all_fails() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV2\t0-7\t0\nGPU1\tNV2\t X \t0-7\t0\n"
    findings = check_topo(parse_topo(text), FabricIntent())
    assert verdict(findings) is Status.FAIL
    assert findings[0].actual == "no NIC in topology"


def test_rails_against_unnamed_nics_is_an_error_not_a_pass() -> None:
    text = RAIL.split("\nLegend")[0] + "\n"
    findings = check_topo(parse_topo(text), FabricIntent(rails={0: "mlx5_0"}))
    assert verdict(findings) is Status.ERROR


def test_rails_against_a_topology_without_nics_fail() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV2\t0-7\t0\nGPU1\tNV2\t X \t0-7\t0\n"
    findings = check_topo(parse_topo(text), FabricIntent(rails={0: "mlx5_0"}))
    assert verdict(findings) is Status.FAIL
    assert "mlx5_0 not in topology (NICs: none)" in findings[0].actual
