"""Prometheus exposition of a run (fabcheck.report.metrics): check statuses, the run's time, the counters
read; label values escaped as the format says (https://prometheus.io/docs/instrumenting/exposition_formats/),
every family once, and the output accepted by promtool's own parser where promtool is installed."""

from __future__ import annotations

import re
from pathlib import Path

from promtool import promtool_check_metrics

from fabcheck.checks.model import Finding, Status, Where, errored, failed, passed, skipped
from fabcheck.checks.switch.evidence import SwitchEvidence
from fabcheck.parsers.ethtool_phy import parse_link_counters
from fabcheck.parsers.hw_counters import parse_hw_counters
from fabcheck.parsers.switch_nvue import parse_roce_counters
from fabcheck.parsers.switch_nvue_wire import parse_counters
from fabcheck.parsers.switch_records import QueueDrops
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta
from fabcheck.report.metrics import (
    LINK_METRICS,
    STATUS_VALUE,
    PortCounters,
    QueueDropCount,
    RdmaCounters,
    Readings,
    escape_label,
    render,
    switch_readings,
)
from fabcheck.report.model import NodeKind, Run, Subject

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
SAMPLE = re.compile(r"^(?P<name>[a-z_]+)(\{(?P<labels>.*)\})? (?P<value>\S+)$")


def samples(text: str) -> dict[str, list[tuple[str, str]]]:
    """family -> [(labels as written, value)], refusing any line that is neither a sample nor HELP/TYPE."""
    found: dict[str, list[tuple[str, str]]] = {}
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            continue
        match = SAMPLE.match(line)
        assert match, line
        found.setdefault(match["name"], []).append((match["labels"] or "", match["value"]))
    return found


def a_run(*findings: Finding, node: str = "gpu01") -> Run:
    return Run("validate", (Subject(node, NodeKind.HOST, findings),), elapsed_s=2.5)


def test_each_status_is_its_documented_number_and_a_part_is_one_sample_the_worst() -> None:
    at = Where("gpu01", "mlx5_0")
    run = a_run(
        Finding("host.pfc", Status.PASS, "mlx5_0", "3", "3", where=at),
        Finding("host.pfc", Status.FAIL, "mlx5_0", "3", "off", where=at),
        passed("host.trust", "mlx5_0", "dscp", "dscp"),
        errored("host.optics", "mlx5_1", "readable", "no", "hint"),
        skipped("host.imex", "host", "no NVLink domain"),
    )
    got = samples(render(run, started_s=1_765_000_000.25))
    assert sorted(got["fabcheck_check_status"]) == sorted(
        [
            ('node="gpu01",check="host.pfc",part="mlx5_0"', "0"),
            ('node="gpu01",check="host.trust",part="mlx5_0"', "1"),
            ('node="gpu01",check="host.optics",part="mlx5_1"', "-1"),
            ('node="gpu01",check="host.imex",part="host"', "-2"),
        ]
    )
    assert got["fabcheck_run_status"] == [("", "0")]
    assert got["fabcheck_run_timestamp_seconds"] == [("", "1765000000.25")]
    assert got["fabcheck_run_duration_seconds"] == [("", "2.5")]
    assert STATUS_VALUE == {Status.PASS: 1, Status.FAIL: 0, Status.ERROR: -1, Status.SKIP: -2}


def test_a_run_that_judged_nothing_is_an_error_never_a_pass() -> None:
    got = samples(render(Run("validate", ())))
    assert got["fabcheck_run_status"] == [("", "-1")]
    assert "fabcheck_run_timestamp_seconds" not in got  # no start given: no sample, never 0


def test_label_values_are_escaped_as_the_format_says() -> None:
    assert escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    hostile = 'sw"1\\\n} 9'
    text = render(a_run(failed("switch.pfc", hostile, "3", "off", "hint"), node="leaf01"))
    line = next(line for line in text.splitlines() if line.startswith("fabcheck_check_status"))
    assert line == 'fabcheck_check_status{node="leaf01",check="switch.pfc",part="sw\\"1\\\\\\n} 9"} 0'
    promtool_check_metrics(text)


def test_every_family_has_help_and_type_once_before_its_samples() -> None:
    reading = LinkCounters({"fcs_errors": 5}, {"fcs_errors": "rx_crc_errors_phy"}, pause={("rx", 3): 7})
    ports = tuple(
        PortCounters(node, "host", nic, reading.since(None, 0), 3)
        for node in ("gpu01", "gpu02")
        for nic in ("mlx5_0", "mlx5_1")
    )
    text = render(
        Run(
            "validate",
            tuple(
                Subject(n, NodeKind.HOST, (passed("host.pfc", "mlx5_0", "", ""),)) for n in ("gpu01", "gpu02")
            ),
        ),
        Readings(ports, (), {"gpu01": 5.0, "gpu02": 5.0}),
    )
    lines = text.splitlines()
    families = [line.split()[2] for line in lines if line.startswith("# TYPE ")]
    assert len(families) == len(set(families))
    for family in families:
        first = next(i for i, line in enumerate(lines) if line.split("{")[0].split(" ")[0] == family)
        assert lines[first - 2 : first] == [
            next(line for line in lines if line.startswith(f"# HELP {family} ")),
            f"# TYPE {family} gauge",
        ]
    promtool_check_metrics(text)


def test_the_real_mlx5_block_gives_its_wire_and_pause_counters_with_units() -> None:
    """tests/data/real/host/ethtool-S-mlx5-phy-rendered.txt (INDEX: rendered from mlx5 counters.rst):
    rx_crc_errors_phy 12, rx_symbol_err_phy 3, link_down_events_phy 1, rx/tx_prio3_pause 14523/28471."""
    reading = parse_link_counters((HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text(), "ethtool -S")
    later = LinkCounters(
        {**reading.values, "fcs_errors": 40}, reading.native, pause={**reading.pause, ("rx", 3): 20000}
    )
    port = PortCounters("gpu01", "host", "mlx5_0", later.since(reading, 5.0), lossless_priority=3)
    got = samples(render(a_run(), Readings((port,), (), {"gpu01": 5.0})))
    where = 'node="gpu01",kind="host",port="mlx5_0"'
    # the cumulative value the device showed at the end of the window, with the device's own name
    assert got["fabcheck_link_fcs_errors_frames"] == [(f'{where},native="rx_crc_errors_phy"', "40")]
    assert got["fabcheck_link_symbol_errors_frames"] == [(f'{where},native="rx_symbol_err_phy"', "3")]
    assert got["fabcheck_link_down_events"] == [(f'{where},native="link_down_events_phy"', "1")]
    assert "fabcheck_link_received_bits" not in got  # rx_bits_phy not printed: absent, never 0
    assert got["fabcheck_link_pause_frames"] == [
        (f'{where},direction="rx",priority="3",lossless="true"', "20000"),
        (f'{where},direction="tx",priority="3",lossless="true"', "28471"),
    ]
    assert got["fabcheck_read_window_seconds"] == [('node="gpu01"', "5.0")]
    assert all(
        name.endswith(("_frames", "_packets", "_blocks", "_symbols", "_bits", "_events"))
        for name in LINK_METRICS.values()
    )


def test_link_level_pause_and_another_priority_are_not_lossless() -> None:
    """The corpus capture ethtool-S-grep-pause-discard-no-header-ens1f0.txt: rx_prio3_pause 14523; the
    link-level rx_pause_ctrl_phy/tx_pause_ctrl_phy counters land under priority "link"."""
    text = "NIC statistics:\n     rx_pause_ctrl_phy: 2\n     tx_prio0_pause: 9\n     rx_prio3_pause: 14523\n"
    reading = parse_link_counters(text, "ethtool -S")
    assert dict(reading.pause) == {("rx", None): 2, ("tx", 0): 9, ("rx", 3): 14523}
    port = PortCounters("gpu01", "host", "mlx5_0", reading.since(None, 0), lossless_priority=3)
    got = samples(render(a_run(), Readings((port,))))
    assert [labels.split("direction=")[1] for labels, _ in got["fabcheck_link_pause_frames"]] == [
        '"rx",priority="link",lossless="false"',
        '"rx",priority="3",lossless="true"',
        '"tx",priority="0",lossless="false"',
    ]


def test_switch_queue_drops_are_the_window_delta_per_queue() -> None:
    drops = (QueueDropCount("leaf01", "swp1", "3", 12), QueueDropCount("leaf01", "swp2", "roce", 0))
    got = samples(render(a_run(node="leaf01"), Readings((), drops, {"leaf01": 5.0})))
    assert got["fabcheck_switch_queue_drops_window_packets"] == [
        ('node="leaf01",port="swp1",traffic_class="3"', "12"),
        ('node="leaf01",port="swp2",traffic_class="roce"', "0"),
    ]


def test_corrected_and_received_bits_are_the_pre_fec_ber_the_wire_checks_judge() -> None:
    before = LinkCounters({"corrected_bits": 100, "received_bits": 10**12})
    after = LinkCounters({"corrected_bits": 600, "received_bits": 2 * 10**12})
    port = PortCounters("gpu01", "host", "mlx5_0", after.since(before, 5.0))
    got = samples(render(a_run(), Readings((port,))))
    assert got["fabcheck_link_pre_fec_bit_error_ratio"] == [
        ('node="gpu01",kind="host",port="mlx5_0"', "5e-10")
    ]
    assert not any(name.endswith("_bits") for name in got)  # Prometheus's base unit is bytes: a ratio
    real = parse_link_counters((HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text(), "ethtool -S")
    alone = PortCounters("gpu01", "host", "mlx5_0", real.since(real, 5.0))
    assert "fabcheck_link_pre_fec_bit_error_ratio" not in samples(render(a_run(), Readings((alone,))))


def test_the_rdma_hw_counters_are_ecn_cnp_and_sequence_gauges() -> None:
    """tests/data/corpus/counters/show-counters-mlx5-bond-0-port1-hw.txt (corpus INDEX: MLNX_OFED
    show_counters): np_cnp_sent 1052612505, np_ecn_marked_roce_packets 21278189006, out_of_sequence
    1811101, rp_cnp_handled 0; its other counters (lifespan, resp_cqe_error ...) are not reported."""
    text = (HOST.parents[1] / "corpus" / "counters" / "show-counters-mlx5-bond-0-port1-hw.txt").read_text()
    (counters,) = parse_hw_counters(text, "show_counters").values()
    got = samples(render(a_run(), Readings(rdma=(RdmaCounters("gpu01", "mlx5_bond_0", counters),))))
    where = 'node="gpu01",port="mlx5_bond_0"'
    assert got["fabcheck_rdma_cnp_sent_packets"] == [(f'{where},native="np_cnp_sent"', "1052612505")]
    assert got["fabcheck_rdma_ecn_marked_packets"] == [
        (f'{where},native="np_ecn_marked_roce_packets"', "21278189006")
    ]
    assert got["fabcheck_rdma_out_of_sequence_packets"] == [(f'{where},native="out_of_sequence"', "1811101")]
    assert got["fabcheck_rdma_cnp_handled_packets"] == [(f'{where},native="rp_cnp_handled"', "0")]
    assert not [name for name in got if "lifespan" in name or "cqe" in name]
    promtool_check_metrics(render(a_run(), Readings(rdma=(RdmaCounters("gpu01", "mlx5_0", counters),))))


def test_a_switch_sessions_records_are_its_port_counters_and_queue_drops() -> None:
    """NVUE samples of tests/data/real/nvue/INDEX.tsv: `nv show interface swp1 counters` (CL 5.14:
    carrier-transitions 4, FCS 0) read at both ends of a window, and `nv show interface swp16 qos roce
    counters` (CL 5.16: RoCE tx unicast-no-buffer-discard 663060754115) as the stage's window delta."""
    nvue = HOST.parent / "nvue"
    (placed,) = parse_counters((nvue / "nv-show-interface-swp1-counters.txt").read_text(), "swp1", "counters")
    reading = placed[1]
    assert isinstance(reading, LinkCounters)
    ((_, drops),) = parse_roce_counters(
        (nvue / "nv-show-interface-swp16-qos-roce-counters.txt").read_text(), "swp16", "roce counters"
    )
    assert isinstance(drops, QueueDrops)
    evidence = SwitchEvidence(
        "leaf01",
        "nvue",
        {(LinkDelta, "swp1"): reading.since(reading, 5.0), (QueueDrops, "swp16"): drops},
        frozenset({LinkDelta, QueueDrops}),
    )
    readings = switch_readings("leaf01", evidence)
    got = samples(render(a_run(node="leaf01"), readings))
    where = 'node="leaf01",kind="switch",port="swp1"'
    assert got["fabcheck_link_state_changes_events"] == [(f'{where},native="carrier-transitions"', "4")]
    assert got["fabcheck_link_fcs_errors_frames"] == [(f'{where},native="FCS Errors (Receive)"', "0")]
    assert got["fabcheck_switch_queue_drops_window_packets"] == [
        ('node="leaf01",port="swp16",traffic_class="roce"', "663060754115")
    ]
    assert got["fabcheck_read_window_seconds"] == [('node="leaf01"', "5.0")]
    assert "fabcheck_link_pause_frames" not in got  # no switch view gives pause to the gate's records
