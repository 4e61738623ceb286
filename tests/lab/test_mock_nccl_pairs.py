"""nccl.pair_transport on the lab's NVLink-domain mocks (no lab start): 4 nvl trays in 2 domains, ranks
started by fabcheck-mpirun over a fake ssh. A working domain passes (P2P/MNNVL between its trays, NET
across); IMEX down on one tray sends its domain's pair over the NICs and fails naming both ranks and trays,
in `analyze nccl-log` (the hosts' domains) and in the stage's judge (GateDesired.nvlink's classes)."""

from __future__ import annotations

from pathlib import Path

from test_mock_nvlink import wait_ready
from test_mock_nvlink_nccl import bin_dir, racks  # noqa: F401 (the fixtures)
from test_mockhost_support import MockNode
from test_mockhost_traffic import run_mpi

from fabcheck.checks.model import Finding, Status
from fabcheck.checks.nccl_log import check_nccl_log
from fabcheck.checks.nccl_ranks import check_pair_transport
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.gate.nccl_stage import pair_class_of
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nccl_log import parse_nccl_log
from fabcheck.parsers.nccl_ranks import parse_nccl_ranks

PAIR = "nccl.pair_transport"


def domain_of(trays: list[MockNode]) -> dict[str, str]:
    names = [t.name for t in trays]
    return {name: "rack1" if index < 2 else "rack2" for index, name in enumerate(names)}


def analyzed(out: str, domains: dict[str, str]) -> Finding:
    log = parse_nccl_log(out)
    return next(
        f for f in check_nccl_log(log, FabricIntent(), lambda h: domains.get(h, h)) if f.check == PAIR
    )


def staged(out: str, trays: list[MockNode], domains: dict[str, str]) -> dict[str, Finding]:
    ranks = parse_nccl_ranks(out)
    hosts = {r.rank: r.host for r in ranks if r.rank is not None}
    members = {d: tuple(h for h in domains if domains[h] == d) for d in set(domains.values())}
    nvlink = {
        h: DesiredNvlinkHost(h, domains[h], members[domains[h]], (), 4, 18, 53.125, True, False, 0.6)
        for h in domains
    }
    return {
        t.name: check_pair_transport(
            t.name, [r for r in ranks if r.host == t.name], hosts.get, pair_class_of(nvlink)
        )
        for t in trays
    }


def test_two_working_domains_pass_and_undeclared_trays_fail(racks: list[MockNode], tmp_path: Path) -> None:  # noqa: F811
    out = run_mpi(tmp_path, racks, "all_reduce_perf", "-b", "64M", "-e", "64M", "-g", "4")
    domains = domain_of(racks)
    assert analyzed(out, domains).status is Status.PASS
    assert all(f.status is Status.PASS for f in staged(out, racks, domains).values())
    # Each tray its own domain: the MNNVL pairs are no network path.
    alone = analyzed(out, {})
    assert alone.status is Status.FAIL and ": P2P across NVLink domains" in alone.actual


def test_imex_down_sends_the_domain_over_the_nics(racks: list[MockNode], tmp_path: Path) -> None:  # noqa: F811
    tray1, tray2 = racks[:2]
    tray2.run("systemctl", "stop", "nvidia-imex")
    try:
        out = run_mpi(tmp_path, [tray1, tray2], "all_gather_perf", "-b", "256M", "-e", "256M", "-g", "4")
    finally:
        tray2.run("systemctl", "start", "nvidia-imex")
        wait_ready(tray2)
    domains = {tray1.name: "rack1", tray2.name: "rack1"}
    found = analyzed(out, domains)
    assert found.status is Status.FAIL
    assert f"({tray1.name}) <-> rank 4 ({tray2.name}): NET inside one NVLink domain" in found.actual
    stage = staged(out, [tray1, tray2], domains)
    for tray in (tray1, tray2):
        assert stage[tray.name].status is Status.FAIL, tray.name
        assert "NET inside one NVLink domain" in stage[tray.name].actual
        assert "NCCL did not enable MNNVL" in stage[tray.name].actual
