# ruff: noqa: E501
"""The nccl stage's busbw per NVLink-domain layout (issue 38): a job across domains is judged against
the slowest domain's NIC sum (ring all_reduce: each domain sends one rank's busbw-counted bytes through
all its NICs), a job inside one domain against the NVLink floor, as an NVLink proof only."""

from __future__ import annotations

import pytest

from fabcheck.checks.model import Status
from fabcheck.checks.nccl_ranks import check_busbw
from fabcheck.desired.nccl import PROOF_FABRIC, PROOF_NVLINK, desired_nccl_job
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.intent.model import FabricIntent, Performance
from fabcheck.parsers.nccl_tests import parse_nccl_tests

FOUR_NICS = FabricIntent(performance=Performance(nics_per_node=4))  # 4 x 400 Gb/s = 200 GB/s a tray


def tray(host: str, domain: str, members: tuple[str, ...], link_gbytes: float | None) -> DesiredNvlinkHost:
    return DesiredNvlinkHost(host, domain, members, members, 4, 18, link_gbytes, True, False, 0.6)


def plan(
    domains: dict[str, tuple[str, ...]], link_gbytes: float | None = 53.125
) -> dict[str, DesiredNvlinkHost]:
    return {h: tray(h, name, hosts, link_gbytes) for name, hosts in domains.items() for h in hosts}


def table(busbw: float, size: int = 1 << 30) -> str:
    return (
        "#  Rank  0 Group  0 Pid  1 on t1 device  0 [0x01] NVIDIA GB200\n"
        "#  Rank  1 Group  0 Pid  2 on t3 device  0 [0x01] NVIDIA GB200\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
        "busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
        "(GB/s)\n"
        f"  {size}    {size // 4}     float     sum      -1    20000  {busbw:.2f}  {busbw:.2f}      0    20000  "
        f"{busbw:.2f}  {busbw:.2f}      0\n"
    )


HOSTS = [(h, FOUR_NICS) for h in ("t1", "t2", "t3", "t4")]


def test_across_domains_the_floor_is_the_slowest_domains_nic_sum() -> None:
    job = desired_nccl_job(HOSTS, plan({"rack1": ("t1", "t2"), "rack2": ("t3", "t4")}))
    assert job.proof == PROOF_FABRIC and job.busbw_floor_gbytes == pytest.approx(0.85 * 2 * 200)
    assert "NVLink domain rack1's NIC sum (2 hosts: t1 4 NICs x 400 Gb/s, t2 4 NICs" in job.floor_basis
    slow = check_busbw(parse_nccl_tests(table(300.0)), job, "job")
    assert slow.status is Status.FAIL and "a fabric proof" not in slow.expected
    assert check_busbw(parse_nccl_tests(table(350.0)), job, "job").status is Status.PASS


def test_without_domains_each_host_is_its_own_as_before() -> None:
    job = desired_nccl_job(HOSTS)
    assert job.proof == PROOF_FABRIC and job.busbw_floor_gbytes == pytest.approx(0.85 * 200)
    assert job.floor_basis == "85% of 4 NICs x 400 Gb/s"


def test_inside_one_domain_the_floor_is_nvlinks_and_an_nvlink_proof() -> None:
    job = desired_nccl_job(HOSTS, plan({"rack1": ("t1", "t2", "t3", "t4")}))
    assert job.proof == PROOF_NVLINK and job.busbw_floor_gbytes == pytest.approx(0.6 * 18 * 53.125)
    fast = check_busbw(parse_nccl_tests(table(700.0)), job, "job")
    assert fast.status is Status.PASS and "an NVLink proof, not a fabric proof" in fast.expected
    slow = check_busbw(parse_nccl_tests(table(300.0)), job, "job")
    assert slow.status is Status.FAIL and "host.nvlink" in slow.hint


def test_inside_one_domain_without_a_link_rate_it_is_not_judged() -> None:
    job = desired_nccl_job(HOSTS, plan({"rack1": ("t1", "t2", "t3", "t4")}, link_gbytes=None))
    finding = check_busbw(parse_nccl_tests(table(700.0)), job, "job")
    assert finding.status is Status.ERROR and "no floor to judge" in finding.actual


def test_a_slow_nvlink_bounds_a_job_across_domains() -> None:
    slow = {h: tray(h, d, m, 5.0) for h, d, m in [("t1", "r1", ("t1",)), ("t2", "r2", ("t2",))]}
    job = desired_nccl_job([("t1", FOUR_NICS), ("t2", FOUR_NICS)], slow)
    assert job.proof == PROOF_FABRIC and job.busbw_floor_gbytes == pytest.approx(0.6 * 18 * 5.0)


def test_two_hgx_hosts_keep_the_network_floor_under_a_faster_nvlink() -> None:
    # 18 x 26.562 GB/s NVLink (478 GB/s, 60% = 287) is faster than 8 x 400 Gb/s NICs (400 GB/s, 85% = 340).
    hgx = {h: DesiredNvlinkHost(h, h, (h,), (h,), 8, 18, 26.562, False, True, 0.6) for h in ("a", "b")}
    job = desired_nccl_job([("a", FabricIntent()), ("b", FabricIntent())], hgx)
    assert job.proof == PROOF_FABRIC and job.busbw_floor_gbytes == pytest.approx(340.0)
    assert job.floor_basis == "85% of 8 NICs x 400 Gb/s"
