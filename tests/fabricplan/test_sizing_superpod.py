"""plan_fabric against NVIDIA's published DGX SuperPOD compute fabrics: 8 GPUs and 8 compute NICs per
DGX, rail-optimised, non-blocking, every figure read from the pages below.

- H100 (QM9700, NDR 400G, SUs of 32 nodes), "Table 4. Compute fabric component count":
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html
  The table lists 31 nodes per SU (one slot holds the UFM appliance) and sizes the fabric for 32: its
  "Compute and UFM" cables are 252 per SU; the plan counts 32 nodes, 256 host links.
- B200 (QM9700, NDR 400G, SUs of 32 nodes), the "SU Count / Node Count / GPU Count" table:
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html
- B300 XDR (Quantum-X800, XDR 800G, SUs of 72 nodes), "Table 3 Example Compute Fabric Components":
  https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300-xdr/latest/dgx-superpod-architecture.html
  (its 18 SU row prints 9216 GPUs beside 1296 nodes and 10368 node-leaf cables: 1296 x 8 = 10368.)
"""

from __future__ import annotations

import pytest
from plan_invariants import assert_plan_invariants

from fabcheck.fabricplan.catalog import CATALOG
from fabcheck.fabricplan.model import PlanInput, SwitchModel
from fabcheck.fabricplan.sizing import plan_fabric

QM9700 = CATALOG["qm9700"]
Q3400 = CATALOG["q3400"]

# (switch, NIC speed, GPUs, leaves, spines, cores, leaf-spine cables, spine-core cables)
PUBLISHED = [
    pytest.param(QM9700, 400, 256, 8, 4, 0, 256, 0, id="H100-1SU"),
    pytest.param(QM9700, 400, 512, 16, 8, 0, 512, 0, id="H100-2SU"),
    pytest.param(QM9700, 400, 1024, 32, 16, 0, 1024, 0, id="H100-4SU"),
    pytest.param(QM9700, 400, 512, 16, 8, 0, 512, 0, id="B200-2SU"),
    pytest.param(QM9700, 400, 1024, 32, 16, 0, 1024, 0, id="B200-4SU"),
    pytest.param(QM9700, 400, 2048, 64, 32, 0, 2048, 0, id="B200-8SU"),
    pytest.param(QM9700, 400, 4096, 128, 128, 64, 4096, 4096, id="B200-16SU"),
    pytest.param(QM9700, 400, 8192, 256, 256, 128, 8192, 8192, id="B200-32SU"),
    pytest.param(QM9700, 400, 16384, 512, 512, 256, 16384, 16384, id="B200-64SU"),
    pytest.param(Q3400, 800, 576, 8, 4, 0, 576, 0, id="B300XDR-1SU"),
    pytest.param(Q3400, 800, 1152, 16, 8, 0, 1152, 0, id="B300XDR-2SU"),
    pytest.param(Q3400, 800, 10368, 144, 72, 0, 10368, 0, id="B300XDR-18SU"),
]


@pytest.mark.parametrize(
    ("model", "gbps", "gpus", "leaves", "spines", "cores", "leaf_spine", "spine_core"), PUBLISHED
)
def test_superpod_compute_fabric(
    model: SwitchModel,
    gbps: int,
    gpus: int,
    leaves: int,
    spines: int,
    cores: int,
    leaf_spine: int,
    spine_core: int,
) -> None:
    plan = plan_fabric(PlanInput("ib", gpus, 8, 8, gbps, model, model))
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


# Where NVIDIA chooses more spines than the fewest that carry the uplinks, so that every leaf sends the
# same number of cables to every spine (or to leave room for the next SU). The rules keep the fewest
# (README "Fabric plan"); these rows pin both numbers so a change to either side is seen.
# (switch, NIC speed, GPUs, leaves, spines by the rules, spines published)
PUBLISHED_WITH_MORE_SPINES = [
    pytest.param(QM9700, 400, 768, 24, 12, 16, id="H100-3SU"),
    pytest.param(Q3400, 800, 2304, 32, 16, 18, id="B300XDR-4SU"),
    pytest.param(Q3400, 800, 4608, 64, 32, 36, id="B300XDR-8SU"),
]


@pytest.mark.parametrize(
    ("model", "gbps", "gpus", "leaves", "spines", "published"), PUBLISHED_WITH_MORE_SPINES
)
def test_superpod_rows_the_rules_size_with_fewer_spines(
    model: SwitchModel, gbps: int, gpus: int, leaves: int, spines: int, published: int
) -> None:
    plan = plan_fabric(PlanInput("ib", gpus, 8, 8, gbps, model, model))
    assert plan.bom.switches["leaf"] == leaves and plan.bom.links["leaf_spine"] == gpus
    assert plan.bom.switches["spine"] == spines < published
    assert_plan_invariants(plan)


def test_one_scalable_unit_is_eight_rail_leaves_of_32_nodes() -> None:
    # An SU is 32 DGX: leaf-01-rK carries NIC K of all 32 on ports 1-32, 32 uplinks, 8 to each spine.
    plan = plan_fabric(PlanInput("ib", 256, 8, 8, 400, QM9700, QM9700))
    assert [s.name for s in plan.switches if s.tier == "leaf"] == [f"leaf-01-r{k}" for k in range(8)]
    to_spines = [c.b.device for c in plan.cables if c.a.device == "leaf-01-r0"]
    assert sorted(set(to_spines)) == ["spine-01", "spine-02", "spine-03", "spine-04"]
    assert all(to_spines.count(spine) == 8 for spine in set(to_spines))
    # One twin-port module per used cage: 16 host cages + 16 uplink cages per leaf, 32 per spine.
    assert plan.bom.transceivers == {"nic": 256, "switch": 8 * 32 + 4 * 32, "total": 256 + 384}
