"""`mlxlink -d DEV -c` -> LinkCounters: effective errors, link-down counter, raw BER (E-255: no value)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.mlxlink import parse_mlxlink

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"


def test_the_counters_section_gives_errors_flaps_fec_and_raw_ber() -> None:
    reading = parse_mlxlink((HOST / "mlxlink-c-rendered.txt").read_text(), "mlxlink")
    assert dict(reading.values) == {"uncorrected_symbols": 0, "link_down": 1}
    assert reading.native["link_down"] == "Link Down Counter"
    assert reading.fec_mode == "Standard_RS-FEC - (544,514)"
    assert reading.pre_fec_ber == pytest.approx(1e-8)


def test_an_infiniband_grep_without_link_down_and_colours() -> None:
    text = (
        "FEC                             : RS-FEC - (544,514) + PLR\n"
        "Physical Counters and BER Info\n"
        "Symbol Errors                   : 0\n"
        "Symbol BER                      : 15E-255\n"
        "Effective Physical Errors       : \x1b[32m7\x1b[0m\n"
        "Effective Physical BER          : 15E-255\n"
        "Raw Physical BER                : 15E-255\n"
        "Link Down Counter               : N/A\n"
    )
    reading = parse_mlxlink(text, "mlxlink")
    assert dict(reading.values) == {"symbol_errors": 0, "uncorrected_symbols": 7}
    assert reading.pre_fec_ber is None  # E-255 is mlxlink's "no value", not a perfect link


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "no 'Physical Counters and BER Info' section"),
        ("-E- Failed to open device: mlx5_9\n", "no 'Physical Counters and BER Info' section"),
        ("Physical Counters and BER Info\nRaw Physical BER : 1.5e-8\n", "is not <coef>E-<magnitude>"),
        ("Physical Counters and BER Info\nLink Down Counter : many\n", "Link Down Counter"),
        ("Physical Counters and BER Info\nLink Down Counter : 1\nLink Down Counter : 1\n", "appears twice"),
        ("Physical Counters and BER Info\nRaw Physical BER : 15E-0\n", "not a bit error rate"),
    ],
)
def test_bad_input_is_a_parse_error_naming_the_source(text: str, named: str) -> None:
    with pytest.raises(ParseError, match=named) as raised:
        parse_mlxlink(text, "mlxlink -d mlx5_0 -c")
    assert str(raised.value).startswith("mlxlink -d mlx5_0 -c")


SAMPLES = [path.read_text() for path in sorted(HOST.glob("mlxlink*"))]


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_mlxlink, SAMPLES)
)
