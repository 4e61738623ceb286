"""`ethtool [-I] --show-fec IF` -> LinkCounters: the active FEC mode and the FEC statistics' port totals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.ethtool_fec import parse_fec

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"


def test_the_kernel_example_with_the_old_label_gives_port_totals_not_lanes() -> None:
    reading = parse_fec((HOST / "ethtool-I-show-fec-netdevsim-lanes.txt").read_text(), "fec")
    assert reading.fec_mode == "None"
    assert dict(reading.values) == {"fec_corrected": 256, "fec_uncorrectable": 145}
    assert reading.native == {
        "fec_corrected": "corrected_blocks",
        "fec_uncorrectable": "uncorrectable_blocks",
    }


def test_the_new_label_and_rs_totals_without_lanes() -> None:
    reading = parse_fec((HOST / "ethtool-I-show-fec-rs-totals-rendered.txt").read_text(), "fec")
    assert reading.fec_mode == "RS"
    assert dict(reading.values) == {"fec_corrected": 1208, "fec_uncorrectable": 0}


def test_no_statistics_block_gives_only_the_mode() -> None:
    reading = parse_fec((HOST / "ethtool-show-fec-off-no-statistics-rendered.txt").read_text(), "fec")
    assert reading.fec_mode == "Off" and dict(reading.values) == {}


def test_corrected_bits_and_an_unknown_statistic_of_a_newer_ethtool() -> None:
    text = (
        "FEC parameters for eth0:\nSupported/Configured FEC encodings: RS\nActive FEC encoding: RS\n"
        "Statistics:\n  corrected_bits: 77\n  hist_bins: 3\n    bin [0-0]: 5\n  uncorrectable_blocks: 1\n"
    )
    assert dict(parse_fec(text, "fec").values) == {"corrected_bits": 77, "fec_uncorrectable": 1}


def test_merged_with_ethtool_s_the_fec_view_fills_in() -> None:
    from fabcheck.parsers.ethtool_phy import parse_link_counters

    phy = parse_link_counters((HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text(), "s")
    both = phy.merged(parse_fec((HOST / "ethtool-I-show-fec-rs-totals-rendered.txt").read_text(), "f"))
    assert both.fec_mode == "RS" and both.values["fec_corrected"] == 1208 and both.values["fcs_errors"] == 12


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "empty output"),
        ("netlink error: Operation not supported\n", "expected 'FEC parameters for IF:'"),
        ("FEC parameters for eth0:\nConfigured FEC encodings: RS\n", "no 'Active FEC encoding:' line"),
        ("FEC parameters for eth0:\nActive FEC encoding: RS BaseR\n", "one active FEC encoding"),
        (
            "FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: x\n",
            "corrected_blocks",
        ),
        (
            "FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 1\n"
            "  corrected_blocks: 2\n",
            "appears twice",
        ),
        (
            "FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 1\n"
            "    Lane zero: 1\n",
            "Lane N",
        ),
        ("FEC parameters for eth0:\nActive FEC encoding: RS\n  corrected_blocks: 1\n", "unexpected line"),
    ],
)
def test_bad_input_is_a_parse_error_naming_the_source(text: str, named: str) -> None:
    with pytest.raises(ParseError, match=named) as raised:
        parse_fec(text, "ethtool -I --show-fec ens1np0")
    assert str(raised.value).startswith("ethtool -I --show-fec ens1np0")


SAMPLES = [path.read_text() for path in sorted(HOST.glob("ethtool-I-show-fec*"))]


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_fec, SAMPLES)
)
