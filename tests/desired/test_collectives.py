"""Each op's busbw floor for a rank layout (fabcheck.desired.collectives), replaying the rules it cites:
nccl-tests' busbw factors (NVIDIA/nccl-tests:src/<op>.cu *GetBw @a0b82b2260cf5152b9f8c061bbf7eaf0ba096432)
and the share of a rank's bytes that crosses the network for the op and layout."""

from __future__ import annotations

import pytest

from fabcheck.desired.collectives import (
    BOUND_NETWORK,
    BOUND_NVLINK,
    BUSBW_FACTORS,
    OPS,
    NetworkLimit,
    NvlinkLimit,
    op_floor,
    rank_layout,
)

EIGHT_400G = NetworkLimit(400.0, 1.0, 8, 400.0)  # 8 NICs x 400 Gb/s = 400 GB/s a host, floor = bound
GB200 = NvlinkLimit(18 * 53.125, 1.0, 18, 53.125)


def two_hgx() -> list[str]:
    return ["gpu01"] * 8 + ["gpu02"] * 8


def test_the_factors_are_nccl_tests_own() -> None:
    # src/all_reduce.cu: 2(n-1)/n; all_gather, reduce_scatter, alltoall: (n-1)/n; the rest 1.
    assert BUSBW_FACTORS["all_reduce"](16) == 2 * 15 / 16
    for op in ("all_gather", "reduce_scatter", "alltoall"):
        assert BUSBW_FACTORS[op](16) == 15 / 16
    for op in ("sendrecv", "broadcast", "reduce", "hypercube"):
        assert BUSBW_FACTORS[op](16) == 1.0
    assert set(OPS) <= set(BUSBW_FACTORS)


def test_layout_counts_ranks_per_host_and_domain() -> None:
    domains = {"gpu01": "rack1", "gpu02": "rack1", "gpu03": "rack2", "gpu04": "rack2"}
    layout = rank_layout([h for h in domains for _ in range(4)], domains.__getitem__)
    assert (layout.ranks, layout.ranks_per_host, layout.hosts_per_domain) == (16, 4, 2)
    assert (layout.ranks_per_domain, layout.domains, layout.one_domain) == (8, 2, False)
    alone = rank_layout(two_hgx(), lambda host: host)
    assert (alone.ranks_per_domain, alone.domains) == (8, 2)
    with pytest.raises(ValueError):
        rank_layout([], lambda host: host)


@pytest.mark.parametrize(
    ("op", "gbytes"),
    [
        ("all_reduce", 400.0),  # ring: the host's NIC sum
        ("all_gather", 400.0),
        ("reduce_scatter", 400.0),
        ("alltoall", 50 * 15 / 8),  # 50 GB/s per GPU x (n-1)/(n-M) = 15/8
        ("hypercube", 50 * 15 / 8),
        ("sendrecv", 50.0),  # one GPU's NIC
        ("broadcast", 50.0),
        ("reduce", 50.0),
    ],
)
def test_network_floor_of_two_hgx_hosts(op: str, gbytes: float) -> None:
    floor = op_floor(op, rank_layout(two_hgx(), lambda host: host), EIGHT_400G, GB200)
    assert floor is not None and floor.bound == BOUND_NETWORK
    assert floor.gbytes == pytest.approx(gbytes)


def test_a_domain_of_trays_adds_their_nics_and_keeps_its_peers_off_the_network() -> None:
    domains = {"gpu01": "rack1", "gpu02": "rack1", "gpu03": "rack2", "gpu04": "rack2"}
    layout = rank_layout([h for h in domains for _ in range(4)], domains.__getitem__)
    four_nics = NetworkLimit(200.0, 0.5, 4, 400.0)
    ring = op_floor("all_gather", layout, four_nics, GB200)
    assert (
        ring is not None and ring.gbytes == pytest.approx(0.5 * 2 * 200) and "2 hosts x 4 NICs" in ring.basis
    )
    peers = op_floor("alltoall", layout, four_nics, GB200)
    assert peers is not None and peers.gbytes == pytest.approx(0.5 * 50 * 15 / 8)  # M = 8 of 16


def test_one_domain_is_the_nvlink_floor_or_none_without_a_rate() -> None:
    layout = rank_layout(["gpu01"] * 8, lambda host: host)
    floor = op_floor("all_reduce", layout, EIGHT_400G, NvlinkLimit(18 * 26.562, 0.6, 18, 26.562))
    assert floor is not None and floor.bound == BOUND_NVLINK
    assert floor.gbytes == pytest.approx(0.6 * 18 * 26.562)
    assert op_floor("all_reduce", layout, EIGHT_400G, None) is None


def test_across_domains_the_lower_of_the_two_floors_bounds_the_job() -> None:
    layout = rank_layout(two_hgx(), lambda host: host)
    slow_nvlink = NvlinkLimit(40.0, 1.0, 2, 20.0)  # 40 GB/s of NVLink under a 400 GB/s ring
    floor = op_floor("all_reduce", layout, EIGHT_400G, slow_nvlink)
    assert floor is not None and floor.bound == BOUND_NVLINK and floor.gbytes == 40.0


def test_fewer_ranks_than_nics_count_one_nic_per_rank() -> None:
    layout = rank_layout(["a", "b"], lambda host: host)  # one GPU a host cannot drive 8 NICs
    floor = op_floor("all_reduce", layout, EIGHT_400G, None)
    assert floor is not None and floor.gbytes == 50.0 and "1 ranks on a host of 8 NICs" in floor.basis


def test_an_op_without_a_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="no busbw floor for op 'gather'"):
        op_floor("gather", rank_layout(two_hgx(), lambda host: host), EIGHT_400G, None)


def test_the_bottleneck_is_the_lower_bound_not_the_lower_fraction_of_it() -> None:
    # HGX H100: NVLink 18 x 26.562 = 478 GB/s a GPU at 60% is 287 GB/s, but the ring's bound over two
    # hosts is their NICs, 400 GB/s: the floor stays 85% of 400, not the lenient NVLink fraction.
    hgx = NvlinkLimit(18 * 26.562, 0.6, 18, 26.562)
    network = NetworkLimit(400.0, 0.85, 8, 400.0)
    floor = op_floor("all_reduce", rank_layout(two_hgx(), lambda host: host), network, hgx)
    assert floor is not None and floor.bound == BOUND_NETWORK and floor.gbytes == pytest.approx(340.0)
