"""The perftest stage's judging, without hosts: a diagnosis of a simulated fleet becomes findings per
host (NIC, host, link, drift, left-out hosts); commands carry port, GID, GPU and NUMA pinning; the
client output becomes a measurement; the heatmap marks the slow host pair."""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from fabcheck.desired.perftest import DesiredPerftest, pair_floor_gbps
from fabcheck.errors import UsageError
from fabcheck.gate.perftest_stage import DRIFT, HOST, LINK, NIC, STAGE_CHECK, judge_hosts, mode_of
from fabcheck.pairs import baseline as stored
from fabcheck.pairs.commands import (
    BASE_PORT,
    PORT_RETRY_STRIDE,
    HostSetup,
    pair_command,
    parse_setup,
    ports_of,
)
from fabcheck.pairs.heatmap import heatmap, share_matrix
from fabcheck.pairs.localise import localise
from fabcheck.pairs.rounds import FAST, Endpoint, Pair, plan_rounds
from fabcheck.pairs.runner import measurement_of
from fabcheck.pairs.session import Session
from fabcheck.pairs.simulate import SimulatedRunner, fleet_of

RAILS = ("mlx5_0", "mlx5_1")


def _desired(host: str, **changes: object) -> DesiredPerftest:
    base = dict(
        host=host,
        nics=RAILS,
        line_rate_gbps=400.0,
        min_fraction=0.9,
        cuda_pairs=(("mlx5_0", 0), ("mlx5_1", 4)),
        gid_index=3,
    )
    return DesiredPerftest(**(base | changes))  # type: ignore[arg-type]


@dataclass
class FleetRunner(SimulatedRunner):
    setup: dict[str, HostSetup] = field(default_factory=dict)


def _session(**fleet_faults: object) -> tuple[Session, list[str]]:
    fleet = fleet_of(6, rails=2, **fleet_faults)  # type: ignore[arg-type]
    hosts = list(fleet.hosts)
    runner = FleetRunner(fleet, setup={h: HostSetup(True, {"mlx5_0": 0, "mlx5_1": 1}) for h in hosts[:-1]})
    tested = {h: list(RAILS) for h in hosts[:-1]}
    session = Session(
        desired={h: _desired(h) for h in hosts},
        runner=runner,  # type: ignore[arg-type]
        rounds=plan_rounds(tested, FAST),
        left_out={hosts[-1]: "could not reach it to prepare perftest: Connection refused"},
    )
    return session, hosts


def _judged(session: Session, hosts: list[str], recorded: stored.Baseline | None = None) -> dict:
    diagnosis = localise(session.rounds, session.measure, session.judge_of, session.endpoints)
    return judge_hosts(hosts, session, diagnosis, recorded, "inv/perftest-baseline.json"), diagnosis


def _failing(findings: dict) -> set[tuple[str, str, str]]:
    return {
        (h, f.check, f.subject)
        for h, fs in findings.items()
        for f in fs
        if f.status.value in ("fail", "error")
    }


def test_a_slow_host_fails_on_that_host_only_and_a_left_out_host_is_an_error() -> None:
    session, hosts = _session(bad_hosts=["gpu0002"], factor=0.2)
    findings, _ = _judged(session, hosts)
    assert _failing(findings) == {("gpu0002", HOST, "gpu0002"), ("gpu0005", STAGE_CHECK, "gpu0005")}
    (host,) = [f for f in findings["gpu0002"] if f.check == HOST]
    assert "every NIC slow with known-good peers" in host.actual and "Gb/sec with gpu" in host.actual
    nics = [f for f in findings["gpu0000"] if f.check == NIC]
    assert [f.subject for f in nics] == list(RAILS)
    assert all(f.expected == ">= 360.00 Gb/sec (90% of 400 Gb/s) and within peers" for f in nics)
    drift = [f for f in findings["gpu0001"] if f.check == DRIFT]
    assert [f.status.value for f in drift] == ["skip"] and "inv/perftest-baseline.json" in drift[0].actual


def test_a_bad_nic_and_a_bad_link_are_named_as_such() -> None:
    plain, _ = _session()
    link = plain.rounds[0][1].key
    session, hosts = _session(bad_nics=[Endpoint("gpu0000", "mlx5_1")], bad_links=[link], factor=0.5)
    findings, _ = _judged(session, hosts)
    failing = _failing(findings) - {("gpu0005", STAGE_CHECK, "gpu0005")}
    name = stored.link_name(link)
    assert failing == {("gpu0000", NIC, "mlx5_1"), (link[0].host, LINK, name), (link[1].host, LINK, name)}


def test_drift_against_the_baseline_fails_on_both_ends_of_the_link() -> None:
    session, hosts = _session()
    _, diagnosis = _judged(session, hosts)
    slowed = diagnosis.measurements[0]
    faster = Pair(slowed.pair.server, slowed.pair.client)
    history = stored.recorded(None, [type(slowed)(faster, slowed.gbps / 0.8, 1)], "t0")  # type: ignore[operator]
    session, hosts = _session()
    findings, _ = _judged(session, hosts, history)
    drifted = {
        (h, f.subject)
        for h, fs in findings.items()
        for f in fs
        if f.check == DRIFT and f.status.value == "fail"
    }
    ends = {end.host for end in slowed.pair.ends}
    assert drifted == {(h, stored.link_name(slowed.pair.key)) for h in ends}


def test_commands_carry_port_gid_gpu_numa_and_time_limits() -> None:
    a, b = Endpoint("gpu01", "mlx5_1"), Endpoint("gpu02", "mlx5_1")
    setup = {"gpu01": HostSetup(True, {"mlx5_1": 1}), "gpu02": HostSetup(False, {"mlx5_1": 1})}
    desired = {"gpu01": _desired("gpu01"), "gpu02": _desired("gpu02", gid_index=None, cuda_pairs=())}
    command = pair_command(Pair(a, b), 18516, "127.0.1.1", desired, setup, timeout_s=20)
    assert command.server[:5] == ("timeout", "25", "numactl", "--cpunodebind=1", "--membind=1")
    assert command.server[5:] == (
        "ib_write_bw", "-d", "mlx5_1", "-p", "18516", "-s", "1048576", "-n", "5000", "-F", "--report_gbits",
        "-x", "3", "--use_cuda=4",
    )  # fmt: skip
    assert command.client[:3] == ("timeout", "20", "ib_write_bw")  # no numactl there: unpinned
    assert (
        command.client[-1] == "127.0.1.1"
        and "-x" not in command.client
        and "--use_cuda" not in " ".join(command.client)
    )


def test_ports_are_distinct_per_server_host_and_move_on_retry() -> None:
    ends = [Endpoint("gpu01", f"mlx5_{r}") for r in range(3)]
    other = Pair(Endpoint("gpu03", "mlx5_0"), Endpoint("gpu04", "mlx5_0"))
    round_ = (*(Pair(e, Endpoint("gpu02", e.nic)) for e in ends), other)
    first = ports_of(round_)
    assert [first[p] for p in round_] == [BASE_PORT, BASE_PORT + 1, BASE_PORT + 2, BASE_PORT]
    assert ports_of(round_, 1)[round_[0]] == BASE_PORT + PORT_RETRY_STRIDE


def test_setup_answer_and_unknown_numa_node() -> None:
    setup = parse_setup("numactl no\nnic mlx5_0 1\nnic mlx5_1 -1\nnic mlx5_2 x\nnoise\n")
    assert not setup.numactl and setup.numa_nodes == {"mlx5_0": 1, "mlx5_1": -1, "mlx5_2": -1}
    assert HostSetup(True, setup.numa_nodes).pinning("mlx5_1") == ()
    assert HostSetup(True, setup.numa_nodes).pinning("mlx5_0") == (
        "numactl",
        "--cpunodebind=1",
        "--membind=1",
    )


CLIENT_OUTPUT = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : mlx5_0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 1048576    5000             383.10            382.64		   0.045613
---------------------------------------------------------------------------------------
"""


def test_client_output_becomes_a_measurement_or_the_reason_there_is_none() -> None:
    pair = Pair(Endpoint("gpu01", "mlx5_0"), Endpoint("gpu02", "mlx5_0"))
    good = measurement_of(pair, 1, subprocess.CompletedProcess([], 0, CLIENT_OUTPUT))
    assert good.gbps == pytest.approx(382.64) and "1048576 B" in good.evidence
    refused = "Couldn't connect to 127.0.1.1:18515\nUnable to init the socket connection\n"
    bad = measurement_of(pair, 1, subprocess.CompletedProcess([], 1, refused))
    assert bad.gbps is None and "Couldn't connect" in (bad.error or "")
    timed_out = measurement_of(pair, 2, subprocess.CompletedProcess([], 124, "timed out after 30 s\n"))
    assert timed_out.gbps is None and "timed out after 30 s" in (timed_out.error or "")


def test_heatmap_marks_the_slowest_pair_per_host_pair() -> None:
    session, hosts = _session(bad_hosts=["gpu0002"], factor=0.2)
    _, diagnosis = _judged(session, hosts)
    cells = share_matrix(hosts, diagnosis.measurements, session.floor_of)
    row = hosts.index("gpu0002")
    measured = [v for v in cells[row] if not math.isnan(v)]
    assert measured and max(measured) < 0.5
    assert cells[row] == [cells[i][row] for i in range(len(hosts))]
    svg = heatmap(hosts, diagnosis.measurements, session.floor_of).svg()
    assert svg.startswith("<svg") and "<script" not in svg and "gpu0002" in svg


def test_pair_floor_takes_the_slower_line_rate_and_the_stricter_fraction() -> None:
    fast, strict = _desired("a", line_rate_gbps=800.0), _desired("b", min_fraction=0.95)
    assert pair_floor_gbps(fast, strict) == (pytest.approx(380.0), "95% of 400 Gb/s")


def test_perftest_mode_comes_from_the_inventory_and_a_bad_one_names_the_variable() -> None:
    assert mode_of([SimpleNamespace(variables={})]) == FAST  # type: ignore[list-item]
    assert mode_of([SimpleNamespace(variables={"perftest_mode": "all"})]) == "all"  # type: ignore[list-item]
    with pytest.raises(UsageError, match="perftest_mode='ring': expected one of fast, all"):
        mode_of([SimpleNamespace(variables={"perftest_mode": "ring"})])  # type: ignore[list-item]


def test_nic_and_link_findings_carry_where_and_the_measured_bandwidth_in_json() -> None:
    plain, _ = _session()
    link = plain.rounds[0][1].key
    session, hosts = _session(bad_nics=[Endpoint("gpu0000", "mlx5_1")], bad_links=[link], factor=0.5)
    findings, diagnosis = _judged(session, hosts)
    slow = next(f for f in findings["gpu0000"] if f.check == NIC and f.subject == "mlx5_1")
    measured = [m.gbps for m in diagnosis.measurements if Endpoint("gpu0000", "mlx5_1") in m.pair.ends]
    assert slow.where is not None and (slow.where.node, slow.where.part) == ("gpu0000", "mlx5_1")
    assert slow.measure is not None and slow.measure.unit == "Gb/s" and slow.measure.expected == 360.0
    assert slow.measure.value == round(min(g for g in measured if g is not None), 2) < 360.0
    assert slow.to_json()["measure"] == {"value": slow.measure.value, "unit": "Gb/s", "expected": 360.0}
    bad_link = next(f for f in findings[link[0].host] if f.check == LINK)
    assert bad_link.where is not None
    ends = {f"{end.host}:{end.nic}" for end in link}
    assert {f"{bad_link.where.node}:{bad_link.where.part}", bad_link.where.peer} == ends
