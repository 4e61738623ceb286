"""plan_fabric over a grid of sizes, radixes, oversubscriptions and rail layouts: every plan keeps the
issue's properties (plan_invariants), and impossible plans are refused naming the option."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_invariants import assert_plan_invariants

from fabcheck.fabricplan.catalog import CATALOG, generic_model
from fabcheck.fabricplan.model import PlanError, PlanInput
from fabcheck.fabricplan.sizing import plan_fabric

GRID_GPUS = (8, 24, 64, 136, 256, 520, 1024, 2048, 4096)
GRID_PORTS = (8, 12, 16, 32, 64)


def _request(
    gpus: int,
    ports: int,
    *,
    per_node: int = 8,
    nics: int | None = None,
    x: float = 1.0,
    rail: bool = True,
    spine_ports: int | None = None,
    gbps: int = 400,
) -> PlanInput:
    leaf = generic_model(ports, gbps, "roce", "nvue")
    spine = generic_model(spine_ports or ports, gbps, "roce", "nvue")
    return PlanInput("roce", gpus, per_node, nics or per_node, gbps, leaf, spine, x, rail)


def _plan_or_too_big(request: PlanInput) -> None:
    try:
        plan = plan_fabric(request)
    except PlanError as error:
        assert str(error).startswith("--gpus:") and "at most" in str(error)
        most = int(str(error).split("at most ")[1].split()[0])
        assert most < request.gpus
        return
    assert_plan_invariants(plan)


@pytest.mark.parametrize("ports", GRID_PORTS)
@pytest.mark.parametrize("gpus", GRID_GPUS)
@pytest.mark.parametrize("x", [1.0, 3.0])
@pytest.mark.parametrize("rail", [True, False])
def test_grid_keeps_the_plan_properties(gpus: int, ports: int, x: float, rail: bool) -> None:
    _plan_or_too_big(_request(gpus, ports, x=x, rail=rail))


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 300),
    per_node=st.sampled_from([1, 2, 4, 8]),
    nics=st.integers(1, 8),
    ports=st.integers(3, 40),
    spine_ports=st.integers(2, 40),
    x=st.sampled_from([1.0, 1.5, 2.0, 3.0, 7.0]),
    rail=st.booleans(),
)
def test_random_plans_keep_the_properties(
    nodes: int, per_node: int, nics: int, ports: int, spine_ports: int, x: float, rail: bool
) -> None:
    _plan_or_too_big(
        _request(
            nodes * per_node, ports, per_node=per_node, nics=nics, x=x, rail=rail, spine_ports=spine_ports
        )
    )


def test_the_largest_three_tier_fabric_is_planned_and_one_node_more_refused() -> None:
    # 8-port switches at X=1: leaves of 4 hosts, spines of 4 down; 8 pods x 4 leaves x 4 hosts = P^3/4 = 128.
    plan = plan_fabric(_request(128, 8, per_node=1, rail=False))
    assert plan.tiers == 3 and plan.bom.links["host"] == 128
    assert_plan_invariants(plan)
    with pytest.raises(PlanError, match=r"^--gpus: 129 GPUs .* at most 128 GPUs"):
        plan_fabric(_request(129, 8, per_node=1, rail=False))


def test_one_tier_when_every_host_link_fits_one_switch() -> None:
    plan = plan_fabric(_request(32, 32, per_node=8))
    assert plan.tiers == 1 and [s.name for s in plan.switches] == ["leaf-01"]
    assert plan.cables[0].b.port == "1" and plan.cables[-1].b.port == "32"
    assert plan_fabric(_request(40, 32, per_node=8)).tiers == 2


def test_rail_optimised_names_and_ports() -> None:
    plan = plan_fabric(_request(512, 64, per_node=8))  # 64 nodes: two groups of 32, 8 rails
    names = [s.name for s in plan.switches]
    assert names[:9] == [*(f"leaf-01-r{k}" for k in range(8)), "leaf-02-r0"]
    first = {(c.a.device, c.a.port): (c.b.device, c.b.port) for c in plan.cables if c.tier == "host"}
    assert first[("gpu01", "mlx5_0")] == ("leaf-01-r0", "1")
    assert first[("gpu32", "mlx5_7")] == ("leaf-01-r7", "32")
    assert first[("gpu33", "mlx5_3")] == ("leaf-02-r3", "1")
    uplinks = [c for c in plan.cables if c.a.device == "leaf-01-r0"]
    assert [c.a.port for c in uplinks] == [str(p) for p in range(33, 65)]


def test_not_rail_optimised_puts_a_nodes_nics_on_consecutive_ports() -> None:
    plan = plan_fabric(_request(64, 16, per_node=8, rail=False))  # 8 nodes x 8 NICs, 8 down per leaf
    host = {(c.a.device, c.a.port): (c.b.device, c.b.port) for c in plan.cables if c.tier == "host"}
    assert host[("gpu01", "mlx5_7")] == ("leaf-01", "8") and host[("gpu02", "mlx5_0")] == ("leaf-02", "1")


def test_node_names_pad_to_the_widest_number() -> None:
    plan = plan_fabric(_request(8 * 128, 64))
    assert plan.nodes[0] == "gpu001" and plan.nodes[-1] == "gpu128"


def test_oversubscription_shrinks_the_uplinks() -> None:
    plan = plan_fabric(_request(1024, 64, x=3.0))  # D = floor(64 x 3 / 4) = 48 hosts, 16 uplinks
    leaf = plan.switches[0]
    assert sum(1 for c in plan.cables if c.b.device == leaf.name) == 48
    assert sum(1 for c in plan.cables if c.a.device == leaf.name) == 16


@pytest.mark.parametrize(
    ("change", "option"),
    [
        ({"gpus": 0}, "--gpus"),
        ({"gpus": 100}, "--gpus"),  # 100 GPUs do not divide into nodes of 8
        ({"gpus_per_node": 0}, "--gpus-per-node"),
        ({"nics_per_node": 0}, "--nics-per-node"),
        ({"nic_gbps": 0}, "--nic-gbps"),
        ({"nic_gbps": 300}, "--nic-gbps"),  # an 800G cage does not break out to 300G
        ({"oversubscription": 0.5}, "--oversubscription"),
        ({"leaf_model": CATALOG["qm9700"]}, "--switch"),  # an IB switch in a RoCE plan
        ({"spine_model": CATALOG["qm9700"]}, "--spine-switch"),
    ],
)
def test_impossible_plans_are_refused_naming_the_option(change: dict[str, object], option: str) -> None:
    values = {**_request(256, 64, gbps=400).__dict__, **change}
    values["leaf_model"] = change.get("leaf_model", generic_model(64, 800, "roce", "nvue"))
    values["spine_model"] = change.get("spine_model", generic_model(64, 800, "roce", "nvue"))
    with pytest.raises(PlanError, match=rf"^{option}: "):
        plan_fabric(PlanInput(**values))  # type: ignore[arg-type]


def test_a_switch_too_small_for_a_leaf_is_refused() -> None:
    with pytest.raises(PlanError, match=r"^--switch-ports: .* too few for 8 host links"):
        plan_fabric(_request(8, 1, per_node=1))


@settings(max_examples=25, deadline=None)
@given(
    ports=st.integers(4, 16),
    spine_ports=st.integers(2, 16),
    per_node=st.sampled_from([1, 2, 4]),
    nics=st.integers(1, 4),
    rail=st.booleans(),
)
def test_the_refusal_names_a_maximum_that_plans(
    ports: int, spine_ports: int, per_node: int, nics: int, rail: bool
) -> None:
    # Far past any three-tier fabric of these radixes: refused, naming the most that three tiers hold;
    # that many GPUs plan (if any), one node more is refused.
    too_many = per_node * ports**3 * spine_ports
    with pytest.raises(PlanError, match=r"^--gpus: .* at most (\d+) GPUs") as refusal:
        plan_fabric(
            _request(too_many, ports, per_node=per_node, nics=nics, rail=rail, spine_ports=spine_ports)
        )
    most = int(str(refusal.value).split("at most ")[1].split()[0])
    if most:
        request = _request(most, ports, per_node=per_node, nics=nics, rail=rail, spine_ports=spine_ports)
        assert_plan_invariants(plan_fabric(request))
    with pytest.raises(PlanError, match=r"^--gpus: "):
        plan_fabric(
            _request(most + per_node, ports, per_node=per_node, nics=nics, rail=rail, spine_ports=spine_ports)
        )


def test_refusals_name_the_generic_options_and_the_fabric() -> None:
    with pytest.raises(PlanError, match=r"^--switch-ports: generic 1 x 400G has 1 port\(s\) at 400G"):
        plan_fabric(_request(8, 1, per_node=1))
    ib = PlanInput("roce", 64, 8, 8, 400, CATALOG["qm9700"], CATALOG["qm9700"])
    with pytest.raises(
        PlanError, match=r"^--switch: NVIDIA Quantum-2 QM9700 is an InfiniBand switch; .*roce"
    ):
        plan_fabric(ib)
