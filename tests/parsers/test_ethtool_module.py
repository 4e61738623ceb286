"""`ethtool -m IF` -> ModuleOptics: live DOM values with the module's own thresholds (SFF-8472,
SFF-8636, CMIS); a module without diagnostics reads diagnostics=False."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.ethtool_module import parse_module
from fabcheck.parsers.wire_records import Thresholds

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"


def read(name: str) -> str:
    return (HOST / name).read_text()


def test_the_real_qsfp_plus_gives_per_lane_values_and_its_own_thresholds() -> None:
    optics = parse_module(read("ethtool-m-qsfp-plus-40g-sr4-avago-thresholds.txt"), "m")
    assert optics.present and optics.diagnostics
    assert optics.media == "QSFP+ 40G Ethernet: 40G Base-SR4"
    rx = optics.of("rx_power")
    assert [r.lane for r in rx] == [1, 2, 3, 4]  # the label without a space before (Channel N)
    assert rx[0].value == -1.15 and rx[1].value == -math.inf  # a dark lane reads -inf dBm
    assert rx[0].thresholds == Thresholds(
        high_alarm=3.40, high_warning=2.40, low_warning=-9.50, low_alarm=-13.51
    )
    (temperature,) = optics.of("temperature")
    assert temperature.lane is None and temperature.value == 42.17
    assert temperature.thresholds == Thresholds(75.0, 70.0, 0.0, -5.0)
    assert optics.of("voltage")[0].thresholds == Thresholds(3.63, 3.465, 3.1349, 2.97)
    assert [r.value for r in optics.of("tx_bias")] == [6.662, 0.0, 0.0, 0.0]
    assert optics.of("tx_bias")[0].thresholds == Thresholds(10.0, 9.5, 1.0, 0.5)
    # TX power thresholds all 0 mW (-inf dBm): the module advertises none
    assert [r.thresholds for r in optics.of("tx_power")] == [None] * 4
    assert optics.of("tx_power")[0].value == -1.48


def test_a_qsfp_without_alarm_flags_has_values_and_no_thresholds() -> None:
    optics = parse_module(read("ethtool-m-qsfp-plus-no-alarm-flags.txt"), "m")
    assert optics.diagnostics and optics.media == "QSFP+ SAS 6.0G"
    assert optics.of("rx_power")[0].value == -2.43
    assert all(reading.thresholds is None for reading in optics.readings)


def test_the_real_sfp_is_one_lane_with_thresholds() -> None:
    optics = parse_module(read("ethtool-m-sfp-ge-bx-fs-thresholds.txt"), "m")
    assert optics.diagnostics and optics.media == "SFP Ethernet: BASE-BX10"
    (rx,) = optics.of("rx_power")
    assert (rx.lane, rx.value) == (1, -5.62)
    assert rx.thresholds == Thresholds(-1.5, -2.0, -24.95, -25.53)
    assert [(r.quantity, r.value) for r in optics.readings] == [
        ("tx_bias", 17.65),
        ("tx_power", -6.71),
        ("rx_power", -5.62),
        ("temperature", 47.3),
        ("voltage", 3.2576),
    ]


def test_cmis_labels_have_a_space_before_the_channel() -> None:
    optics = parse_module(read("ethtool-m-cmis-qsfp-dd-rendered.txt"), "m")
    assert optics.media.startswith("QSFP-DD Double Density")
    assert [(r.lane, r.value) for r in optics.of("rx_power")] == [(n, -0.6) for n in range(1, 5)]
    assert optics.of("rx_power")[0].thresholds == Thresholds(5.0, 4.0, -10.3, -11.3)


@pytest.mark.parametrize(
    ("name", "media"),
    [
        (
            "ethtool-m-qsfp28-dac-no-dom-rendered.txt",
            "QSFP28 100G Ethernet: 100G Base-CR4 or 25G Base-CR CA-L",
        ),
        ("ethtool-m-sfp-dac-no-dom-rendered.txt", "SFP Active Cable"),
    ],
)
def test_a_module_without_diagnostics(name: str, media: str) -> None:
    optics = parse_module(read(name), "m")
    assert (optics.present, optics.diagnostics, optics.media, optics.readings) == (True, False, media, ())


def test_thresholds_a_module_fills_with_one_value_are_none() -> None:
    text = read("ethtool-m-sfp-ge-bx-fs-thresholds.txt")
    for word in ("high alarm", "low alarm", "high warning", "low warning"):
        old = next(line for line in text.splitlines() if f"Module voltage {word} threshold" in line)
        text = text.replace(old, old.split(":")[0] + ": 0.0000 V")
    assert parse_module(text, "m").of("voltage")[0].thresholds is None


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "no 'Identifier' line"),
        ("Offset\t\tValues\n------\t\t------\n0x0000:\t\t19 52 04 07\n", "expected 'label : value'"),
        ("\tVendor name : X\n", "no 'Identifier' line"),
        ("\tIdentifier : SFP\n", "is not 0xNN"),
        ("\tIdentifier : 0x03 (SFP)\n\tModule temperature : hot\n", "temperature 'hot' is not in degrees C"),
        (
            "\tIdentifier : 0x03 (SFP)\n\tLaser output power : 0.2 mW\n",
            "tx_power '0.2 mW' is not in mW / dBm",
        ),
        ("\tIdentifier : 0x03 (SFP)\n\tLaser bias current : 17 A\n", "is not in mA"),
        ("\tIdentifier : 0x03 (SFP)\n\tModule voltage high alarm threshold : 3 mV\n", "is not in V"),
        ("\tIdentifier : 0x03 (SFP)\n\tModule voltage : 3.3..3 V\n", "is not a number"),
        # float() of hundreds of digits is inf: refused, as is a literal +inf dBm (only -inf is 0 mW)
        ("\tIdentifier : 0x03 (SFP)\n\tModule voltage : " + "9" * 400 + " V\n", "not a finite number"),
        (
            "\tIdentifier : 0x03 (SFP)\n\tModule temperature : -" + "9" * 400 + " degrees C / 0 degrees F\n",
            "not a finite",
        ),
        (
            "\tIdentifier : 0x03 (SFP)\n\tReceiver signal average optical power : 0.0000 mW / inf dBm\n",
            "not a finite",
        ),
    ],
)
def test_bad_input_is_a_parse_error_naming_the_source(text: str, named: str) -> None:
    with pytest.raises(ParseError, match=named) as raised:
        parse_module(text, "ethtool -m ens1np0")
    assert str(raised.value).startswith("ethtool -m ens1np0")


SAMPLES = [path.read_text() for path in sorted(HOST.glob("ethtool-m*"))]


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_module, SAMPLES)
)
