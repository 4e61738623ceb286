"""`ethtool -S IF` of an mlx5 NIC -> LinkCounters: the *_phy counters under the wire vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.ethtool_phy import MLX5_PHY_COUNTERS, parse_link_counters

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"


def test_the_mlx5_block_gives_every_phy_counter_it_prints_under_its_wire_name() -> None:
    reading = parse_link_counters((HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text(), "ethtool -S")
    assert dict(reading.values) == {
        "fcs_errors": 12,
        "symbol_errors": 3,
        "uncorrected_symbols": 0,
        "corrected_bits": 17750739,
        "link_down": 1,
        "rx_discards": 0,
        "tx_discards": 0,
        "rx_out_of_buffer": 0,
    }
    assert reading.native["fcs_errors"] == "rx_crc_errors_phy"
    assert reading.native["uncorrected_symbols"] == "rx_pcs_symbol_err_phy"
    assert "received_bits" not in reading.values  # rx_bits_phy not printed: absent, never 0
    assert reading.fec_mode is None and reading.pre_fec_ber is None


def test_two_readings_make_the_delta_the_checks_judge() -> None:
    text = (HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text()
    later = text.replace("rx_crc_errors_phy: 12", "rx_crc_errors_phy: 4012")
    delta = parse_link_counters(later, "b").since(parse_link_counters(text, "a"), 2.0)
    assert delta.grown["fcs_errors"] == 4000 and delta.grown["symbol_errors"] == 0
    assert delta.native_name("fcs_errors") == "rx_crc_errors_phy"


def test_a_filtered_capture_and_a_nic_without_phy_counters() -> None:
    filtered = "$ ethtool -S ens1f0 | grep phy\n     link_down_events_phy: 4\n     rx_bits_phy: 1000\n"
    assert dict(parse_link_counters(filtered, "x").values) == {"link_down": 4, "received_bits": 1000}
    vf = "NIC statistics:\n     rx_packets: 10\n     rx_out_of_buffer: 2\n"  # a VF: no *_phy counter
    assert dict(parse_link_counters(vf, "x").values) == {"rx_out_of_buffer": 2}


def test_the_mapping_covers_the_counters_the_issue_names() -> None:
    assert set(MLX5_PHY_COUNTERS) == {
        "rx_crc_errors_phy",
        "rx_symbol_err_phy",
        "rx_pcs_symbol_err_phy",
        "rx_corrected_bits_phy",
        "rx_bits_phy",
        "link_down_events_phy",
        "rx_discards_phy",
        "tx_discards_phy",
        "rx_out_of_buffer",
    }


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "no `NIC statistics:` block"),
        ("netlink error: no device matches name (ens9)\n", "no `NIC statistics:` block"),
        ("NIC statistics:\n     rx_crc_errors_phy: many\n", "counter rx_crc_errors_phy"),
        ("NIC statistics:\n     rx_crc_errors_phy: 1\n     rx_crc_errors_phy: 2\n", "appears twice"),
        (
            "$ ethtool -S a\nNIC statistics:\n     rx_crc_errors_phy: 1\n"
            "$ ethtool -S b\nNIC statistics:\n     rx_crc_errors_phy: 2\n",
            "statistics of 2 NICs",
        ),
    ],
)
def test_bad_input_is_a_parse_error_naming_the_source(text: str, named: str) -> None:
    with pytest.raises(ParseError, match=named) as raised:
        parse_link_counters(text, "ethtool -S ens1np0")
    assert str(raised.value).startswith("ethtool -S ens1np0")


SAMPLES = [path.read_text() for path in sorted(HOST.glob("ethtool-S-mlx5-phy-rendered.txt*"))]


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_link_counters, SAMPLES)
)


def test_the_pause_counters_per_priority_ride_along_judged_by_no_wire_check() -> None:
    """mlx5 counters.rst: rx/tx_prio[p]_pause per priority, rx/tx_pause_ctrl_phy link-level: kept for the
    metrics (fabcheck.report.metrics), cumulative; the since() delta keeps the later reading's."""
    reading = parse_link_counters((HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text(), "ethtool -S")
    assert dict(reading.pause) == {("rx", 3): 14523, ("tx", 3): 28471}
    assert reading.since(reading, 5.0).reading.pause == reading.pause
    duration = "NIC statistics:\n     rx_prio3_pause_duration: 464736\n     tx_pause_ctrl_phy: 4\n"
    assert dict(parse_link_counters(duration, "x").pause) == {("tx", None): 4}
