"""plan_fabric against NVIDIA's published DGX SuperPOD compute fabrics (QM9700, NDR 400G, 8 GPUs and 8
compute NICs per DGX, rail-optimised, non-blocking).

- DGX SuperPOD H100 reference architecture, "Table 4. Compute fabric component count":
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html
- DGX SuperPOD B200 reference architecture, compute fabric table:
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html
"""

from __future__ import annotations

import pytest
from plan_invariants import assert_plan_invariants

from fabcheck.fabricplan.catalog import CATALOG
from fabcheck.fabricplan.model import PlanInput
from fabcheck.fabricplan.sizing import plan_fabric

QM9700 = CATALOG["qm9700"]

# (GPUs, leaves, spines, cores, leaf-spine cables, spine-core cables)
PUBLISHED = [
    pytest.param(256, 8, 4, 0, 256, 0, id="H100-1SU"),
    pytest.param(1024, 32, 16, 0, 1024, 0, id="H100-4SU"),
    pytest.param(512, 16, 8, 0, 512, 0, id="B200-2SU"),
    pytest.param(2048, 64, 32, 0, 2048, 0, id="B200-8SU"),
    pytest.param(4096, 128, 128, 64, 4096, 4096, id="B200-16SU"),
    pytest.param(8192, 256, 256, 128, 8192, 8192, id="B200-32SU"),
    pytest.param(16384, 512, 512, 256, 16384, 16384, id="B200-64SU"),
]


@pytest.mark.parametrize(("gpus", "leaves", "spines", "cores", "leaf_spine", "spine_core"), PUBLISHED)
def test_superpod_compute_fabric(
    gpus: int, leaves: int, spines: int, cores: int, leaf_spine: int, spine_core: int
) -> None:
    plan = plan_fabric(PlanInput("ib", gpus, 8, 8, 400, QM9700, QM9700))
    assert plan.bom.switches == {
        "leaf": leaves,
        "spine": spines,
        "core": cores,
        "total": leaves + spines + cores,
    }
    assert plan.bom.links["leaf_spine"] == leaf_spine
    assert plan.bom.links["spine_core"] == spine_core
    assert plan.bom.links["host"] == gpus
    assert_plan_invariants(plan)


def test_one_scalable_unit_is_eight_rail_leaves_of_32_nodes() -> None:
    # An SU is 32 DGX: leaf-01-rK carries NIC K of all 32 on ports 1-32, 32 uplinks, 8 to each spine.
    plan = plan_fabric(PlanInput("ib", 256, 8, 8, 400, QM9700, QM9700))
    assert [s.name for s in plan.switches if s.tier == "leaf"] == [f"leaf-01-r{k}" for k in range(8)]
    to_spines = [c.b.device for c in plan.cables if c.a.device == "leaf-01-r0"]
    assert sorted(set(to_spines)) == ["spine-01", "spine-02", "spine-03", "spine-04"]
    assert all(to_spines.count(spine) == 8 for spine in set(to_spines))
