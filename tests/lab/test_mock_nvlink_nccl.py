"""The mock NCCL and nccl-tests on NVLink domains: P2P inside a tray, P2P/MNNVL between the trays of a
working domain (IMEX up, one clique), NET/IB/<n>/GDRDMA across domains and whenever the domain is broken;
every nccl-tests op with its real table shape and its busbw from the op's factor and the rank layout.
Mock nodes on tmp dirs, ranks started by fabcheck-mpirun over a fake ssh (no lab)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mock_nvlink import in_lab_bin, wait_ready, write_nodes_config
from test_mockhost_support import MockNode, configure_lossless, installed_bin, make_nodes
from test_mockhost_traffic import run_mpi

from fabcheck.checks.model import Status
from fabcheck.checks.nccl_log import check_nccl_log
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_log import parse_nccl_log
from fabcheck.parsers.nccl_tests import parse_nccl_tests
from fabcheck_lab.mockhost import faults as host_faults
from fabcheck_lab.mockhost.tools import nccl_tests

NVLINK_GPU_GBYTES = 18 * 53.125
PROGS = [
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "sendrecv_perf",
    "broadcast_perf",
    "reduce_perf",
    "hypercube_perf",
]
CHANNEL = re.compile(r"Channel \d+/\d : (\d+)\[\d+\] -> (\d+)\[\d+\] (?:\[(?:send|receive)\] )?via (\S+)")


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture(scope="module")
def racks(tmp_path_factory: pytest.TempPathFactory, bin_dir: Path) -> Iterator[list[MockNode]]:
    """4 nvl trays, 2 NVLink domains (tray1+tray2, tray3+tray4), IMEX running on every tray."""
    tmp = tmp_path_factory.mktemp("racks")
    trays = make_nodes(tmp, bin_dir, [(f"tray{i}", "nvl") for i in range(1, 5)])
    for tray in trays:
        in_lab_bin(tray)
        configure_lossless(tray, [f"ens{i}np0" for i in range(1, 5)])
    for domain in (trays[:2], trays[2:]):
        for tray in domain:
            write_nodes_config(tray, [t.address for t in domain])
            tray.run("systemctl", "start", "nvidia-imex")
    for tray in trays:
        wait_ready(tray)
    yield trays
    for tray in trays:
        tray.run("systemctl", "stop", "nvidia-imex", rc=None)


def pair_transport(out: str, racks: list[MockNode]):  # type: ignore[no-untyped-def]
    """analyze nccl-log's nccl.pair_transport finding with the racks' domains (as --nvlink-domain gives)."""
    domains = {t.name: "nvl_rack1" if t in racks[:2] else "nvl_rack2" for t in racks}
    trays = FabricIntent.model_validate({"nvlink": {"gpus": 4, "link_gbytes": 53.125, "imex": True}})
    findings = check_nccl_log(parse_nccl_log(out), trays, lambda host: domains.get(host, host))
    return next(f for f in findings if f.check == "nccl.pair_transport")


def transports(out: str) -> dict[tuple[int, int], set[str]]:
    """(from rank, to rank) -> the transports its channel lines name."""
    found: dict[tuple[int, int], set[str]] = {}
    for a, b, via in CHANNEL.findall(out):
        found.setdefault((int(a), int(b)), set()).add(via)
    return found


def test_inside_a_tray_p2p_between_trays_mnnvl_across_domains_net(
    racks: list[MockNode], tmp_path: Path
) -> None:
    out = run_mpi(tmp_path, racks, "all_reduce_perf", "-b", "64M", "-e", "64M", "-g", "4")
    seen = transports(out)
    assert seen[(0, 1)] == {"P2P/CUMEM"}  # tray1's GPU0 -> GPU1
    assert seen[(3, 4)] == {"P2P/MNNVL"}  # tray1 -> tray2, one domain
    assert seen[(11, 12)] == {"P2P/MNNVL"}  # tray3 -> tray4
    # tray2 -> tray3 and tray4 -> tray1: the domains meet over the network, each side on its GPU's NIC
    assert seen[(7, 8)] == seen[(15, 0)] == {"NET/IB/3/GDRDMA", "NET/IB/0/GDRDMA"}
    assert len(re.findall(r"nNodes 4 localRanks 4 localRank \d MNNVL 1$", out, re.M)) == 16
    assert "NVLS multicast support is available on dev 0" in out
    run = parse_nccl_tests(out)
    assert run.nranks == 16 and run.hosts == tuple(t.name for t in racks)
    pairs = pair_transport(out, racks)
    assert pairs.status == Status.PASS, pairs.actual
    assert pairs.actual.startswith(
        "14 pair(s) inside NVLink domains on P2P/SHM, 2 across domains on RDMA NET"
    )
    # a ring leaves each domain through its 2 trays x 4 NICs x 400 Gb/s = 400 GB/s
    assert 150 < run.rows[-1].oop_busbw < 400


def test_one_working_domain_runs_at_nvlink_speed(racks: list[MockNode], tmp_path: Path) -> None:
    out = run_mpi(tmp_path, racks[:2], "all_gather_perf", "-b", "256M", "-e", "256M", "-g", "4")
    assert "NET/IB" not in "".join(v for vias in transports(out).values() for v in vias)
    assert transports(out)[(3, 4)] == {"P2P/MNNVL"}
    busbw = parse_nccl_tests(out).rows[-1].oop_busbw
    assert 0.5 * NVLINK_GPU_GBYTES < busbw < NVLINK_GPU_GBYTES  # far above the domain's 400 GB/s of NICs


@pytest.mark.parametrize("broken", ["imex-down", "clique-mismatch"])
def test_a_broken_domain_falls_back_to_the_network(
    racks: list[MockNode], tmp_path: Path, broken: str
) -> None:
    tray2 = racks[1]
    if broken == "imex-down":
        tray2.run("systemctl", "stop", "nvidia-imex")
    else:
        host_faults.inject(tray2.paths, "clique-mismatch")
    try:
        out = run_mpi(tmp_path, racks[:2], "all_gather_perf", "-b", "256M", "-e", "256M", "-g", "4")
    finally:
        if broken == "imex-down":
            tray2.run("systemctl", "start", "nvidia-imex")
            wait_ready(tray2)
        else:
            host_faults.heal(tray2.paths, "clique-mismatch")
    seen = transports(out)
    assert seen[(3, 4)] == {"NET/IB/3/GDRDMA", "NET/IB/0/GDRDMA"} and "P2P/MNNVL" not in str(seen)
    assert len(re.findall(r"MNNVL 0$", out, re.M)) == 8
    pairs = pair_transport(out, racks)  # analyze nccl-log: a pair inside the domain on NET fails, named
    assert pairs.status == Status.FAIL and pairs.subject == "2 rank pairs"  # the ring crosses twice
    assert "rank 3 (tray1) <-> rank 4 (tray2)" in pairs.actual and "NET" in pairs.actual
    assert parse_nccl_tests(out).rows[-1].oop_busbw < 400  # the 2 trays' NICs, no longer NVLink


def test_nvlink_down_slows_the_tray_alone(tmp_path: Path, bin_dir: Path) -> None:
    (tray,) = make_nodes(tmp_path, bin_dir, [("tray", "nvl")])
    full = parse_nccl_tests(tray.run("all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "4").stdout)
    host_faults.inject(tray.paths, "nvlink-down")
    slower = parse_nccl_tests(tray.run("all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "4").stdout)
    ratio = slower.rows[0].oop_busbw / full.rows[0].oop_busbw
    assert ratio == pytest.approx(17 / 18, rel=0.03)


@pytest.mark.parametrize("prog", PROGS)
def test_every_op_prints_its_real_table_shape(tmp_path: Path, bin_dir: Path, prog: str) -> None:
    """One tray, 4 ranks: the op's redop and root columns, size = max(send, receive) bytes per rank, count
    the per-rank parameter, algbw = the op's bytes / time and busbw = algbw x the op's factor."""
    (tray,) = make_nodes(tmp_path, bin_dir, [("tray", "nvl")])
    out = tray.run(prog, "-b", "1M", "-e", "64M", "-f", "8", "-g", "4").stdout
    run = parse_nccl_tests(out)
    assert run.op == prog.removesuffix("_perf") and run.nranks == 4
    redop, root, split = nccl_tests.OPS[prog]
    factor = nccl_tests.bus_factor(prog, 4)
    for row in run.rows:
        assert (row.redop or "", row.root) == (redop, root)
        per_rank = (1024 * 1024 if row.bytes <= 1024 * 1024 else row.bytes) // 4 if split else row.bytes // 4
        assert row.count == (per_rank // 4 if split else per_rank)
        moved = row.count * 4 * 3 if prog == "hypercube_perf" else row.bytes
        assert row.oop_algbw == pytest.approx(moved / row.oop_time_us / 1e3, rel=0.02, abs=0.01)
        assert row.oop_busbw == pytest.approx(row.oop_algbw * factor, rel=0.02, abs=0.01)
    assert run.rows[-1].oop_busbw > 0.5 * NVLINK_GPU_GBYTES  # one tray: NVLink-bound


def test_hypercube_needs_a_power_of_two_rank_count(tmp_path: Path, bin_dir: Path) -> None:
    (tray,) = make_nodes(tmp_path, bin_dir, [("tray", "nvl")])
    out = tray.run("hypercube_perf", "-b", "1M", "-e", "1M", "-g", "3").stdout
    assert "nRanks 3 is not a power of 2, skipping\n" in out and "Avg bus bandwidth" not in out


def test_op_ceilings_follow_the_layout() -> None:
    """The network bound per op on 2 domains x 2 trays x 4 ranks, 4 NICs of 400 Gb/s a tray (before
    efficiency): ring = a domain's NIC sum, alltoall = a rank's share x (n-1)/(n-M), sendrecv = a GPU's."""
    nic = {"name": "mlx5_0", "rate_gbps": 400}
    ranks = []
    for t in range(4):
        domain = [f"10.0.0.{d}" for d in ((1, 2) if t < 2 else (3, 4))]
        for g in range(4):
            nic_g = dict(nic, name=f"mlx5_{g}")
            ranks.append(
                {"host": f"tray{t}", "address": domain[t % 2], "mnnvl": domain, "net": {"nic": nic_g}}
            )
    assert nccl_tests.network_ceiling("all_reduce_perf", ranks) == pytest.approx(400)
    assert nccl_tests.network_ceiling("alltoall_perf", ranks) == pytest.approx(50 * 15 / 8)
    assert nccl_tests.network_ceiling("hypercube_perf", ranks) == pytest.approx(50 * 15 / 8)
    for prog in ("sendrecv_perf", "broadcast_perf", "reduce_perf"):
        assert nccl_tests.network_ceiling(prog, ranks) == pytest.approx(50)
