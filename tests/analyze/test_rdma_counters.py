"""`fabcheck analyze counters` on RDMA hw_counters captures and on `ethtool -S | grep` captures."""

from __future__ import annotations

from pathlib import Path

from fabcheck.analyze import analyze_counters
from fabcheck.intent.model import default_intent
from fabcheck.parsers.hw_counters import parse_hw_counters, parse_port_hw_counters

COUNTERS = Path(__file__).resolve().parents[1] / "data/corpus/counters"


def _capture(name: str) -> tuple[str, str]:
    return name, (COUNTERS / name).read_text()


def _statuses(result) -> dict[tuple[str, str], str]:
    return {(f.check, f.subject): f.status.value for f in result.findings}


def test_three_hw_counter_formats_are_read() -> None:
    stat = parse_hw_counters(_capture("rdma-statistic-show-4x-mlx5-cx4lx.txt")[1])
    assert sorted(stat) == ["mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "mlx5_3/1"]
    assert stat["mlx5_0/1"]["out_of_buffer"] == 135 and stat["mlx5_0/1"]["np_cnp_sent"] == 0
    shown = parse_hw_counters(_capture("show-counters-mlx5-bond-0-port1-hw.txt")[1])
    assert shown["mlx5_bond_0/1"]["np_ecn_marked_roce_packets"] == 21278189006
    # The host probe's form: grep -r -H '' /sys/class/infiniband/DEV/ports/N/hw_counters
    probe = "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:7\n"
    probe += "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent:0\n"
    assert parse_port_hw_counters(probe) == {"out_of_sequence": 7, "np_cnp_sent": 0}


def test_unchanged_hw_counters_pass_and_lost_packets_fail() -> None:
    before = _capture("show-counters-mlx5-bond-0-port1-hw.txt")
    same = analyze_counters(before, before, default_intent())
    assert same.verdict == "pass" and same.facts["format"] == "hw_counters"
    lost = analyze_counters(
        before, _capture("show-counters-mlx5-bond-0-SYNTHESISED-after-loss.txt"), default_intent()
    )
    assert _statuses(lost)[("counters.rdma_retransmit", "mlx5_bond_0/1")] == "fail"
    assert lost.facts["ports"]["mlx5_bond_0/1"]["out_of_sequence"] == 40
    assert _statuses(lost)[("counters.rdma_congestion", "mlx5_bond_0/1")] == "pass"  # CNPs answered marks


def test_grep_filtered_ethtool_capture_is_read_and_what_it_lacks_is_not_judged() -> None:
    capture = _capture("ethtool-S-grep-pause-discard-no-header-ens1f0.txt")
    result = analyze_counters(capture, capture, default_intent())
    assert list(result.facts["interfaces"]) == ["ens1f0"]
    # The filter dropped rx_prio3_packets: no evidence of lossless traffic, so error, never a pass.
    assert result.verdict == "error" and _statuses(result)[("counters.lossless_traffic", "ens1f0")] == "error"
