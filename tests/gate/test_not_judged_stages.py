# ruff: noqa: E501
"""The rule on the gate's traffic stages: a stage passes only when every applicable check judged
evidence. nccl: one GPU host, an intra-node table or no table is never a pass, and a job's busbw floor
follows its slowest node (heterogeneous fleets). perftest: a host left out or a NIC without a peer is an
error on that host, never a pass."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabcheck.checks.model import Status, verdict
from fabcheck.checks.nccl_ranks import BUSBW
from fabcheck.desired.nccl import desired_nccl_job, job_busbw_floor, node_nics
from fabcheck.desired.perftest import DesiredPerftest
from fabcheck.gate.nccl_stage import fabric_busbw
from fabcheck.gate.perftest_stage import STAGE_CHECK, judge_hosts
from fabcheck.intent.model import FabricIntent
from fabcheck.pairs.commands import HostSetup
from fabcheck.pairs.localise import localise
from fabcheck.pairs.rounds import FAST, plan_rounds
from fabcheck.pairs.session import Session
from fabcheck.pairs.simulate import SimulatedRunner, fleet_of
from fabcheck.parsers.nccl_tests import parse_nccl_tests

RAIL8 = FabricIntent(rails={g: f"mlx5_{g}" for g in range(8)})
# A PCIe server: 8 GPUs share 2 NICs (fabric_rails maps GPU -> NIC, so 8 entries, 2 NICs).
PCIE2 = FabricIntent(rails={g: f"mlx5_{g // 4}" for g in range(8)})


def test_per_node_nics_count_distinct_rail_nics_not_gpus() -> None:
    assert (node_nics(RAIL8), node_nics(PCIE2), node_nics(FabricIntent())) == (8, 2, 8)


def test_job_floor_is_the_slowest_nodes_and_names_it() -> None:
    floor, basis, host = job_busbw_floor([("gpu01", RAIL8), ("gpu04", PCIE2), ("gpu02", RAIL8)])
    assert floor == 0.85 * 2 * 400 / 8 and host == "gpu04"
    assert basis == "85% of 2 NICs x 400 Gb/s on gpu04, the job's slowest node"
    job = desired_nccl_job([("gpu01", RAIL8), ("gpu04", PCIE2)])  # no 'disagree' error any more
    assert (job.busbw_floor_gbytes, job.bounding_host) == (85.0, "gpu04")
    same, basis, _ = job_busbw_floor([("a", RAIL8), ("b", RAIL8)])
    assert same == 340.0 and "slowest" not in basis


TABLE = """#  Rank  0 Group  0 Pid  1 on gpu01 device  0 [0x01] NVIDIA H100
#  Rank  1 Group  0 Pid  2 on gpu01 device  1 [0x02] NVIDIA H100
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  8589934592    2147483648     float     sum      -1    20000  429.50  429.50      0    20000  429.50  429.50      0
"""


def test_an_intra_node_table_fails_the_fabric_floor_however_fast() -> None:
    job = desired_nccl_job([("gpu01", RAIL8), ("gpu02", RAIL8)])
    table = parse_nccl_tests(TABLE.replace("8589934592 ", f"{job.min_bytes} ", 1))
    finding = fabric_busbw(table, job, "job")
    assert finding.check == BUSBW and finding.status is Status.FAIL and "no fabric proof" in finding.actual
    assert fabric_busbw(None, job, "job").status is Status.ERROR


@dataclass
class _Runner(SimulatedRunner):
    setup: dict[str, HostSetup] = field(default_factory=dict)


def test_perftest_host_left_out_is_an_error_never_a_pass() -> None:
    rails = ("mlx5_0", "mlx5_1")
    fleet = fleet_of(4, rails=2)
    hosts = list(fleet.hosts)
    desired = {
        h: DesiredPerftest(
            host=h,
            nics=rails,
            line_rate_gbps=400.0,
            min_fraction=0.9,
            cuda_pairs=(("mlx5_0", 0), ("mlx5_1", 4)),
            gid_index=3,
        )
        for h in hosts
    }
    runner = _Runner(fleet, setup={h: HostSetup(True, {"mlx5_0": 0, "mlx5_1": 1}) for h in hosts[:-1]})
    session = Session(
        desired=desired,
        runner=runner,  # type: ignore[arg-type]
        rounds=plan_rounds({h: list(rails) for h in hosts[:-1]}, FAST),
        left_out={hosts[-1]: "could not reach it to prepare perftest"},
    )
    diagnosis = localise(session.rounds, session.measure, session.judge_of, session.endpoints)
    findings = judge_hosts(hosts, session, diagnosis, None, "baseline.json")
    assert verdict(findings[hosts[-1]]) is Status.ERROR
    assert any(f.check == STAGE_CHECK for f in findings[hosts[-1]])
    assert all(verdict(findings[h]) is Status.PASS for h in hosts[:-1])


def test_a_host_allowed_a_far_gpu_nic_class_gets_the_gdr_level_that_covers_it() -> None:
    pcie = PCIE2.model_copy(update={"max_gpu_nic_link": "NODE"})
    assert desired_nccl_job([("gpu01", RAIL8), ("gpu04", pcie)]).env["NCCL_NET_GDR_LEVEL"] == "PHB"
    assert "NCCL_NET_GDR_LEVEL" not in desired_nccl_job([("gpu01", RAIL8), ("gpu02", RAIL8)]).env


def test_incast_capture_adds_the_rdma_hw_counters_of_each_netdev() -> None:
    from types import SimpleNamespace

    from fabcheck.incast.capture import capture_host, snapshot_command

    stdout = (
        "$ ethtool -S ens1np0\nNIC statistics:\n     rx_prio3_packets: 10\n     np_cnp_sent: 5\n\n"
        "# rdma ens1np0 mlx5_0\n"
        "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:3\n"
        "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent:99\n"
        "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/local_ack_timeout_err:1\n"
    )
    runner = SimpleNamespace(run_on=lambda host, argv: SimpleNamespace(returncode=0, stdout=stdout))
    captured = capture_host(runner, "gpu01", ["ens1np0"])  # type: ignore[arg-type]
    # hw_counters fill in what ethtool lacks; ethtool's own count of a name wins.
    assert captured == {
        "ens1np0": {
            "rx_prio3_packets": 10,
            "np_cnp_sent": 5,
            "out_of_sequence": 3,
            "local_ack_timeout_err": 1,
        }
    }
    assert "hw_counters" in snapshot_command(["ens1np0"])[2]
