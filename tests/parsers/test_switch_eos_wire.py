"""EOS wire parsers (fabcheck.parsers.switch_eos_wire) over the real eAPI replies in ANTA's unit tests
(tests/data/real/eos/, cited in tests/data/real/INDEX.tsv): error counters, discards and link status
changes, FEC codewords and pre-FEC BER over every PHY stage, and the module's DOM with its own
thresholds; damaged replies are ParseErrors naming the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_eos_wire import (
    interface_counters,
    parse_error_counters,
    parse_phy_detail,
    parse_transceiver_dom,
)
from fabcheck.parsers.switch_records import Placed
from fabcheck.parsers.wire_records import LinkCounters, ModuleOptics, Thresholds

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "eos"


def real(name: str) -> str:
    return (REAL / name).read_text()


def by_port(placed: list[Placed]) -> dict[str | None, Any]:
    return dict(placed)


def test_error_counters_map_eos_names_onto_the_wire_vocabulary() -> None:
    read = by_port(parse_error_counters(real("show-interfaces-counters-errors-json-anta.json")))
    first, sixth = read["Ethernet1"], read["Ethernet6"]
    assert isinstance(first, LinkCounters) and isinstance(sixth, LinkCounters)
    assert first.values == {
        "fcs_errors": 0,
        "symbol_errors": 0,
        "alignment_errors": 0,
        "rx_errors": 42,
        "tx_errors": 10,
    }
    assert (sixth.values["alignment_errors"], sixth.values["symbol_errors"]) == (6, 10)
    assert first.native["rx_errors"] == "inErrors"  # a finding quotes what the operator sees


def test_show_interfaces_gives_discards_and_link_changes_of_ethernet_ports_only() -> None:
    read = by_port(interface_counters(real("show-interfaces-json-anta-counter-details.json")))
    assert set(read) == {"Ethernet2", "Ethernet10"}  # Management0 carries no fabric link
    assert read["Ethernet2"].values == {"rx_discards": 10, "tx_discards": 0, "link_changes": 12}
    assert read["Ethernet10"].values["tx_discards"] == 10
    assert read["Ethernet10"].native["link_changes"] == "linkStatusChanges"


def test_fec_codewords_are_summed_over_the_stages_and_the_worst_stage_gives_the_ber() -> None:
    clean = by_port(parse_phy_detail(real("show-interfaces-phy-detail-json-anta.json")))
    # Ethernet1/1: ASIC line 3 + gearbox system 2 + gearbox line 0; BERs 1.5e-13, 1.3e-12, 1.3e-22
    assert clean["Ethernet1/1"].values == {"fec_corrected": 5, "fec_uncorrectable": 0}
    assert clean["Ethernet1/1"].pre_fec_ber == pytest.approx(1.3005834847433436e-12)
    assert "Ethernet1/2" not in clean  # no stage shows FEC or BER: not judged, never zero
    lossy = by_port(parse_phy_detail(real("show-interfaces-phy-detail-json-anta-uncorrected.json")))
    assert lossy["Ethernet1/1"].values == {"fec_corrected": 35, "fec_uncorrectable": 20}
    assert lossy["Ethernet1/2"] == LinkCounters(
        {"fec_corrected": 0, "fec_uncorrectable": 0},
        {"fec_corrected": "fec.correctedCodewords", "fec_uncorrectable": "fec.uncorrectedCodewords"},
    )


def test_dom_reads_lanes_thresholds_and_modules_without_diagnostics() -> None:
    read = by_port(
        parse_transceiver_dom(real("show-interfaces-transceiver-dom-thresholds-json-anta-rx.json"))
    )
    assert read["Ethernet1/1"] == ModuleOptics(present=True, diagnostics=False)  # only displayName
    sr4 = read["Ethernet2/1"]
    assert (sr4.present, sr4.diagnostics, sr4.media) == (True, True, "100GBASE-SR4")
    rx = sr4.of("rx_power")
    assert [reading.lane for reading in rx] == [1, 2, 3, 4]
    assert rx[2].value == pytest.approx(-40.31236951802751634)  # a dark lane, read as it is
    assert rx[0].thresholds == Thresholds(None, None, -10.301183562535002, -13.29754146925876)


def test_dom_module_wide_temperature_an_empty_entry_and_a_value_without_thresholds() -> None:
    read = by_port(
        parse_transceiver_dom(real("show-interfaces-transceiver-dom-thresholds-json-anta-temperature.json"))
    )
    assert read["Ethernet25/8"] == ModuleOptics(present=False, diagnostics=False)
    (temperature,) = read["Ethernet1/1"].of("temperature")
    assert (temperature.lane, temperature.value, temperature.thresholds) == (None, 73.7575, None)
    bare = by_port(
        parse_transceiver_dom(real("show-interfaces-transceiver-dom-thresholds-json-anta-no-threshold.json"))
    )
    assert bare["Ethernet1/1"].of("rx_power")[0].thresholds is None


def test_power_in_milliwatts_is_read_in_dbm() -> None:
    text = json.dumps(
        {
            "interfaces": {
                "Ethernet1": {
                    "displayName": "Ethernet1",
                    "parameters": {
                        "rxPower": {"unit": "mW", "channels": {"1": 1.0}, "threshold": {"lowAlarm": 0.1}}
                    },
                }
            }
        }
    )
    (reading,) = by_port(parse_transceiver_dom(text))["Ethernet1"].readings
    assert reading.value == pytest.approx(0.0) and reading.thresholds.low_alarm == pytest.approx(-10.0)


def dom(parameter: dict[str, Any]) -> str:
    return json.dumps(
        {"interfaces": {"Ethernet1": {"displayName": "Ethernet1", "parameters": {"rxPower": parameter}}}}
    )


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_error_counters, "{}", "no 'interfaceErrorCounters' key"),
        (parse_error_counters, '{"interfaceErrorCounters": {"Ethernet1": {"fcsErrors": -1}}}', "outside"),
        (parse_error_counters, '{"interfaceErrorCounters": {"Ethernet1": {"fcsErrors": 1.5}}}', "integer"),
        (parse_phy_detail, '{"interfacePhyStatuses": {"Ethernet1": {"phyStatuses": {}}}}', "not a list"),
        (
            parse_phy_detail,
            json.dumps(
                {
                    "interfacePhyStatuses": {
                        "Ethernet1": {"phyStatuses": [{"fec": {"correctedCodewords": {"value": 1}}}]}
                    }
                }
            ),
            "no 'uncorrectedCodewords' key",
        ),
        (
            parse_phy_detail,
            '{"interfacePhyStatuses": {"Ethernet1": {"phyStatuses": [{"preFecBer": {"value": 2.0}}]}}}',
            "not a bit error rate",
        ),
        (parse_transceiver_dom, dom({"unit": "W", "channels": {"1": 1.0}}), "unit 'W'"),
        (parse_transceiver_dom, dom({"unit": "dBm", "channels": {"9x": 1.0}}), "channel '9x'"),
        (parse_transceiver_dom, dom({"unit": "dBm", "channels": {"1": "low"}}), "expected a number"),
        (parse_transceiver_dom, dom({"unit": "dBm", "channels": {"1": 1e6}}), "out of any module's range"),
        (parse_transceiver_dom, "% Invalid input", "not JSON"),
    ],
)
def test_damaged_replies_are_parse_errors_naming_the_source(parse: Any, text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        parse(text, None, "leaf03: the command")
    assert caught.value.source == "leaf03: the command"


# Found by test_mutated_samples_parse_or_refuse: a value past the float range was OverflowError (JSON
# integers are not floats), a lane of thousands of digits ValueError; each must be a ParseError.
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"1": -30.08242460465652', '"1": 1' + "0" * 400, "integer is not a reading"),
        ('"lowWarn": -10.301183562535002', '"lowWarn": -1' + "0" * 400, "integer is not a reading"),
        ('"1": -30.08242460465652', '"1": 1e999', "inf is not a finite number"),
        ('"1": -30.08242460465652', '"' + "1" * 5000 + '": -30.0', "is not '-' or a lane"),
    ],
)
def test_an_out_of_range_dom_value_is_a_parse_error_naming_the_source(
    old: str, new: str, message: str
) -> None:
    text = real("show-interfaces-transceiver-dom-thresholds-json-anta-rx.json")
    assert old in text
    with pytest.raises(ParseError, match=message) as err:
        parse_transceiver_dom(text.replace(old, new, 1), None, "leaf03: dom")
    assert err.value.source == "leaf03: dom"
