"""SONiC's wire views read from the real samples tests/data/real/INDEX.tsv cites (sonic-utilities' tests and
Command Reference): counters per port in the wire vocabulary, N/A absent, grouped digits, the flap count
as every status change, and the transceiver DOM with the module's own thresholds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_sonic_wire import (
    parse_errors,
    parse_fec_stats,
    parse_flaps,
    parse_transceiver_dom,
)
from fabcheck.parsers.wire_records import LinkCounters, ModuleOptics, Thresholds

SONIC = Path(__file__).resolve().parents[1] / "data" / "real" / "sonic"


def sample(name: str) -> str:
    return (SONIC / name).read_text()


def counters(placed: list) -> dict[str, LinkCounters]:
    out = {}
    for port, record in placed:
        assert isinstance(record, LinkCounters)
        out[port] = record
    return out


def optics(placed: list) -> dict[str, ModuleOptics]:
    out = {}
    for port, record in placed:
        assert isinstance(record, ModuleOptics)
        out[port] = record
    return out


def test_errors_read_receive_and_transmit_errors_and_discards_per_port() -> None:
    read = counters(parse_errors(sample("show-interfaces-counters-errors-cmdref.txt")))
    assert list(read) == ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]
    assert read["Ethernet0"].values == {"rx_errors": 0, "tx_errors": 0, "rx_discards": 4, "tx_discards": 0}
    assert read["Ethernet0"].native["rx_discards"] == "RX_DRP"


def test_grouped_digits_are_counts_and_n_a_is_absent_never_zero() -> None:
    text = (
        "    IFACE    STATE    RX_ERR    RX_DRP    RX_OVR    TX_ERR    TX_DRP    TX_OVR\n"
        "---------  -------  --------  --------  --------  --------  --------  --------\n"
        "Ethernet4      N/A         0     1,000       N/A       N/A       N/A       N/A\n"
    )
    read = counters(parse_errors(text))["Ethernet4"]
    assert read.values == {"rx_errors": 0, "rx_discards": 1000}


def test_fec_stats_of_every_release_layout_read_the_same_counts() -> None:
    old = counters(parse_fec_stats(sample("show-interfaces-counters-fec-stats-202205.txt")))
    new = counters(parse_fec_stats(sample("show-interfaces-counters-fec-stats-master.txt")))
    assert (
        old["Ethernet0"].values
        == new["Ethernet0"].values
        == {"fec_corrected": 130402, "fec_uncorrectable": 3}
    )
    assert new["Ethernet9"].pre_fec_ber is None  # N/A: not shown, never 0
    assert "symbol_errors" not in new["Ethernet0"].values  # FEC_SYMBOL_ERR counts corrected symbols


def test_fec_stats_keep_the_switchs_own_pre_fec_ber() -> None:
    read = counters(parse_fec_stats(sample("show-interfaces-counters-fec-stats-cmdref.txt")))
    assert {port: c.pre_fec_ber for port, c in read.items()} == {
        "Ethernet0": 1.48e-20,
        "Ethernet8": 1.98e-19,
        "Ethernet16": 1.77e-20,
    }


def test_the_cached_time_line_above_a_cleared_table_is_not_a_row() -> None:
    text = "Last cached time was 2022-07-29 19:34:08.919717\n" + sample(
        "show-interfaces-counters-fec-stats-202205.txt"
    )
    assert len(parse_fec_stats(text)) == 3


def test_flap_count_is_every_status_change_and_never_is_none() -> None:
    read = counters(parse_flaps(sample("show-interfaces-flap-never.txt")))
    assert read["Ethernet0"].values == {"link_changes": 5}
    assert read["Ethernet4"].values == {"link_changes": 0}
    assert counters(parse_flaps(sample("show-interfaces-flap-cmdref.txt")))["Ethernet0"].values == {
        "link_changes": 4097
    }


def test_a_release_without_show_interfaces_flap_yields_no_flap_counter() -> None:
    refusal = 'Usage: show interfaces [OPTIONS] COMMAND [ARGS]...\nTry "show interfaces -h" for help.\n\n'
    assert parse_flaps(refusal + 'Error: No such command "flap".\n') == []
    assert parse_flaps(refusal + "Error: No such command 'flap'.\n") == []  # click 8's quotes


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_errors, "% Invalid input\n", "expected the IFACE header"),
        (parse_errors, "    IFACE    STATE    RX_ERR\nEthernet0  U  0\n", "dashed rule"),
        (
            parse_fec_stats,
            "IFACE  STATE  FEC_CORR  FEC_UNCORR\n-----  -----\nEthernet0  U  1.5  0\n",
            "not a count",
        ),
        (
            parse_flaps,
            'Usage: show [OPTIONS]\n\nError: No such command "interfaces".\n',
            "expected the Interface",
        ),
        (parse_errors, "", "no IFACE table"),
    ],
)
def test_a_foreign_output_is_refused_naming_the_source(
    parse: Callable[..., list], text: str, message: str
) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse(text, None, "leaf02: view")
    assert str(raised.value).startswith("leaf02: view")


def test_dom_reads_each_module_with_its_own_thresholds() -> None:
    read = optics(parse_transceiver_dom(sample("show-interfaces-transceiver-eeprom-dom-all.txt")))
    assert read["Ethernet4"] == ModuleOptics(present=False, diagnostics=False)
    module = read["Ethernet0"]
    assert module.present and module.diagnostics and "MFA1A00-C003" in module.media
    assert [(r.lane, r.value) for r in module.of("rx_power")] == [
        (1, 0.3802),
        (2, -0.4871),
        (3, -0.086),
        (4, 0.383),
    ]
    assert module.of("rx_power")[0].thresholds == Thresholds(3.4001, 2.4, -9.5001, -13.5067)
    (temperature,) = module.of("temperature")
    assert temperature.value == 30.9258 and temperature.thresholds == Thresholds(75.0, 70.0, 0.0, -5.0)
    assert module.of("voltage")[0].thresholds == Thresholds(3.63, 3.465, 3.1349, 2.97)
    assert module.of("tx_power") == ()  # the QSFP28 AOC stores N/A: sfpshow prints no line


def test_a_cmis_module_has_tx_power_thresholds_and_ignores_frequency_lines() -> None:
    ((port, module),) = parse_transceiver_dom(sample("show-interfaces-transceiver-eeprom-dom-qsfp-dd.txt"))
    assert port == "Ethernet8" and isinstance(module, ModuleOptics)
    assert len(module.of("tx_power")) == 8
    assert module.of("tx_power")[0].thresholds == Thresholds(6.9999, 4.9999, -7.5007, -10.5012)
    assert module.of("rx_power")[2].value == -22.9243  # under its low alarm: the check judges it


def test_a_module_with_empty_threshold_sections_has_readings_without_thresholds() -> None:
    ((_, module),) = parse_transceiver_dom(sample("show-interfaces-transceiver-eeprom-dom-osfp-copper.txt"))
    assert isinstance(module, ModuleOptics) and module.diagnostics
    assert {r.thresholds for r in module.readings} == {None}


def test_a_module_without_dom_values_has_no_diagnostics() -> None:
    text = (
        "Ethernet0: SFP EEPROM detected\n        Identifier: QSFP28 or later\n        ChannelMonitorValues:\n"
    )
    text += "        ChannelThresholdValues:\n        ModuleMonitorValues:\n        ModuleThresholdValues:\n"
    ((_, module),) = parse_transceiver_dom(text)
    assert module == ModuleOptics(present=True, diagnostics=False, media="QSFP28 or later")


def test_no_light_is_minus_infinity_dbm() -> None:
    text = (
        "Ethernet0: SFP EEPROM detected\n        ChannelMonitorValues:\n                RX1Power: -infdBm\n"
    )
    ((_, module),) = parse_transceiver_dom(text)
    assert isinstance(module, ModuleOptics) and module.of("rx_power")[0].value == float("-inf")


def test_a_dom_value_in_the_wrong_unit_is_refused() -> None:
    text = (
        "Ethernet0: SFP EEPROM detected\n        ModuleMonitorValues:\n                Temperature: 30.1dBm\n"
    )
    with pytest.raises(ParseError, match=r"not a value in C"):
        parse_transceiver_dom(text, None, "leaf02: dom")


# Found by test_mutated_samples_parse_or_refuse: each damaged reply must be a ParseError naming the
# source, never KeyError / ValueError from the parser itself.
@pytest.mark.parametrize(
    ("parse", "name", "old", "new", "message"),
    [
        (parse_flaps, "show-interfaces-flap-cmdref.txt", "Flap Count", "Flap Cnt", "no Flap Count column"),
        (parse_flaps, "show-interfaces-flap-cmdref.txt", "Interface   ", "InterfaceX  ", "Interface header"),
        (parse_flaps, "show-interfaces-flap-cmdref.txt", "4097", "9" * 5000, "is not a count"),
        (parse_errors, "show-interfaces-counters-errors-cmdref.txt", "IFACE ", "IFACEX", "IFACE header"),
        (
            parse_fec_stats,
            "show-interfaces-counters-fec-stats-master.txt",
            "4            N/A",
            "4          1e999",
            "is not a bit error rate",
        ),
    ],
)
def test_a_damaged_table_is_a_parse_error_naming_the_source(
    parse: Callable[..., object], name: str, old: str, new: str, message: str
) -> None:
    text = sample(name)
    assert old in text
    with pytest.raises(ParseError, match=message) as err:
        parse(text.replace(old, new, 1), None, "leaf02: damaged")
    assert err.value.source == "leaf02: damaged"


def test_plus_infinity_dbm_is_refused_only_minus_infinity_is_no_light() -> None:
    text = "Ethernet0: SFP EEPROM detected\n        ChannelMonitorValues:\n                RX1Power: infdBm\n"
    with pytest.raises(ParseError, match=r"not a value in dBm"):
        parse_transceiver_dom(text, None, "leaf02: dom")
