"""NVUE wire views (fabcheck.parsers.switch_nvue_wire) replayed from NVIDIA's own samples
(tests/data/real/nvue/INDEX.tsv): counters, link phy-detail (CL 5.14) and its CL 5.15 name link phy
health, platform transceiver, and the release `nv show system` names."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_nvue_wire import (
    ber,
    colon_tree,
    parse_counters,
    parse_phy_detail,
    parse_phy_health,
    parse_release,
    parse_transceiver,
)
from fabcheck.parsers.wire_records import LinkCounters, ModuleOptics

REAL = Path(__file__).parent.parent / "data" / "real" / "nvue"


def real(name: str) -> str:
    return (REAL / name).read_text()


def counters(text: str, port: str = "swp1") -> LinkCounters:
    [(at, record)] = parse_counters(text, port, "test")
    assert at == port and isinstance(record, LinkCounters)
    return record


def phy(text: str) -> LinkCounters:
    [(_, record)] = parse_phy_detail(text, "swp1", "test")
    assert isinstance(record, LinkCounters)
    return record


def optics(text: str) -> ModuleOptics:
    [(_, record)] = parse_transceiver(text, "swp2", "test")
    assert isinstance(record, ModuleOptics)
    return record


def test_counters_read_the_real_error_and_drop_tables() -> None:
    record = counters(real("nv-show-interface-swp1-counters.txt"))
    assert dict(record.values) == {
        "link_changes": 4,
        "fcs_errors": 0,
        "symbol_errors": 0,
        "alignment_errors": 0,
        "tx_errors": 0,
        "rx_discards": 0,
        "tx_discards": 0,
    }
    assert record.native["fcs_errors"] == "FCS Errors (Receive)"
    assert record.native["link_changes"] == "carrier-transitions"


def test_a_counter_cell_moves_only_its_own_counter() -> None:
    text = real("nv-show-interface-swp1-counters.txt").replace(
        "    FCS Errors        0        n/a", "    FCS Errors        1234     n/a"
    )
    assert counters(text).values["fcs_errors"] == 1234
    assert counters(text).values["symbol_errors"] == 0


def test_an_n_a_cell_is_an_absent_counter_never_zero() -> None:
    text = real("nv-show-interface-swp1-counters.txt").replace(
        "    Symbol Errors     0        n/a", "    Symbol Errors     n/a      n/a"
    )
    assert "symbol_errors" not in counters(text).values


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("carrier-transitions  4", "carrier-transitions  x", "carrier-transitions"),
        ("Error Counters\n", "Fault Counters\n", "no 'Error Counters' section"),
        ("    FCS Errors        0        n/a\n", "", "no 'FCS Errors' row"),
    ],
)
def test_counters_refuse_a_damaged_view(old: str, new: str, message: str) -> None:
    text = real("nv-show-interface-swp1-counters.txt")
    assert old in text
    with pytest.raises(ParseError, match=message) as raised:
        parse_counters(text.replace(old, new), "swp1", "leaf01: nv show interface swp1 counters")
    assert raised.value.source == "leaf01: nv show interface swp1 counters"


def test_phy_detail_reads_post_fec_errors_and_bits() -> None:
    record = phy(real("nv-show-interface-swp1-link-phy-detail.txt"))
    assert dict(record.values) == {
        "received_bits": 6214400000000,
        "uncorrected_symbols": 0,
        "fec_uncorrectable": 0,
    }
    assert record.native["fec_uncorrectable"] == "effective-errors"
    assert record.pre_fec_ber is None  # the sample's raw-ber is 15E-255: no rate yet


def test_phy_health_reads_cl515s_sample_onto_the_same_vocabulary() -> None:
    """CL 5.15 renamed the view; NVIDIA's 5.15 sample has the 5.14 rows, read the same way."""
    [(at, record)] = parse_phy_health(real("nv-show-interface-swp1-link-phy-health.txt"), "swp1", "test")
    assert at == "swp1" and isinstance(record, LinkCounters)
    assert dict(record.values) == {
        "received_bits": 6214400000000,
        "uncorrected_symbols": 0,
        "fec_uncorrectable": 0,
    }
    assert dict(record.native) == {
        "received_bits": "phy-received-bits",
        "uncorrected_symbols": "symbol-errors",
        "fec_uncorrectable": "effective-errors",
    }
    assert record.pre_fec_ber is None  # raw-ber 15E-255 in the sample too


def test_phy_health_names_its_own_command_when_refused() -> None:
    with pytest.raises(ParseError, match="nv show interface swp1 link phy health: no `operational`"):
        parse_phy_health("Error: Invalid Command: nv show interface swp1 link phy health\n", "swp1", "t")


def test_show_system_names_the_release() -> None:
    assert parse_release(real("nv-show-system.txt"), "test") == (5, 5)


@pytest.mark.parametrize(
    "build",
    ["Cumulus Linux", "SONiC 202411", "Cumulus Linux five"],
)
def test_show_system_without_a_release_is_refused(build: str) -> None:
    text = real("nv-show-system.txt").replace("Cumulus Linux 5.5.0", build)
    with pytest.raises(ParseError, match="names no Cumulus Linux release"):
        parse_release(text, "test")


def test_phy_detail_raw_ber_is_the_pre_fec_rate() -> None:
    text = real("nv-show-interface-swp1-link-phy-detail.txt").replace(
        "raw-ber                    15E-255", "raw-ber                    3E-6"
    )
    assert phy(text).pre_fec_ber == pytest.approx(3e-6)


@pytest.mark.parametrize(("shown", "rate"), [("3E-6", 3e-6), ("15E-255", None), ("1E-7", 1e-7)])
def test_ber_spelling(shown: str, rate: float | None) -> None:
    assert ber(shown, "test", "raw-ber") == (pytest.approx(rate) if rate is not None else None)


@pytest.mark.parametrize("shown", ["3e-6", "0.000003", "E-6", "3E6", "n/a"])
def test_ber_refuses_what_nvue_does_not_print(shown: str) -> None:
    with pytest.raises(ParseError, match="not a rate"):
        ber(shown, "test", "raw-ber")


def test_phy_detail_without_effective_errors_is_refused() -> None:
    text = real("nv-show-interface-swp1-link-phy-detail.txt").replace(
        "effective-errors ", "other-errors     "
    )
    with pytest.raises(ParseError, match="no effective-errors row"):
        parse_phy_detail(text, "swp1", "test")


def test_transceiver_reads_the_real_module_with_its_thresholds() -> None:
    module = optics(real("nv-show-platform-transceiver-swp2.txt"))
    assert module.present and module.diagnostics
    assert module.media == "QSFP28 Active cable MFA1A00-C003"
    [temperature] = module.of("temperature")
    assert temperature.lane is None and temperature.value == 42.56
    assert temperature.thresholds is not None
    assert (temperature.thresholds.high_alarm, temperature.thresholds.high_warning) == (80.0, 70.0)
    assert (temperature.thresholds.low_warning, temperature.thresholds.low_alarm) == (0.0, -10.0)
    [voltage] = module.of("voltage")
    assert voltage.value == 3.2862
    [rx] = module.of("rx_power")
    assert (rx.lane, rx.value) == (1, -0.64)  # dBm, from '0.8625 mW / -0.64 dBm'
    assert rx.thresholds is not None and rx.thresholds.low_alarm == -13.31
    [tx] = module.of("tx_power")
    assert tx.value == -0.46 and tx.thresholds is not None and tx.thresholds.low_warning == -8.4
    [bias] = module.of("tx_bias")
    assert bias.value == 6.75 and bias.thresholds is not None and bias.thresholds.high_alarm == 8.5


def test_channel_groups_read_per_lane() -> None:
    tree = colon_tree(real("nv-show-platform-transceiver-swp25-channel.txt"), "test", "channel")
    assert tree["channel"]["channel-2"]["rx-power"]["power"] == "0.8385 mW / -0.76 dBm"
    with pytest.raises(ParseError, match="no status line"):
        parse_transceiver(real("nv-show-platform-transceiver-swp25-channel.txt"), "swp25", "test")


def test_a_module_without_warning_thresholds_keeps_its_alarms() -> None:
    text = "\n".join(
        line
        for line in real("nv-show-platform-transceiver-swp2.txt").splitlines()
        if "warning-threshold" not in line
    )
    [temperature] = optics(text).of("temperature")
    assert temperature.thresholds is not None
    assert (temperature.thresholds.high_alarm, temperature.thresholds.high_warning) == (80.0, None)


def test_a_module_without_diagnostics_has_no_readings() -> None:
    text = real("nv-show-platform-transceiver-swp2.txt").replace(
        "Diagnostic Data Available", "Diagnostic Data Unavailable"
    )
    module = optics(text)
    assert module.present and not module.diagnostics and module.readings == ()


def test_an_unplugged_cage_is_no_module() -> None:
    module = optics("status                 : unplugged\n")
    assert not module.present and not module.diagnostics


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("42.56 C", "42.56 F", "not in C"),
        ("0.8625 mW / -0.64 dBm", "lots", "not in dBm"),
        ("status                 : plugged_enabled", "status                 : weird", "neither plugged"),
        ("  channel-1:", "  lane-1:", "not channel-N"),
    ],
)
def test_transceiver_refuses_a_damaged_view(old: str, new: str, message: str) -> None:
    text = real("nv-show-platform-transceiver-swp2.txt")
    assert old in text
    with pytest.raises(ParseError, match=message):
        parse_transceiver(text.replace(old, new), "swp2", "test")


def test_an_na_value_is_no_value() -> None:
    text = real("nv-show-platform-transceiver-swp2.txt").replace("3.2862 V", "N/A")
    [voltage] = optics(text).of("voltage")
    assert voltage.value is None


@pytest.mark.parametrize("shown", ["5E-0", "999999E-3"])
def test_ber_over_one_is_refused(shown: str) -> None:
    with pytest.raises(ParseError, match="not a bit error rate") as err:
        ber(shown, "leaf01: phy", "raw-ber")
    assert err.value.source == "leaf01: phy"


def test_a_negative_power_in_mw_is_refused_not_read_as_no_light() -> None:
    text = real("nv-show-platform-transceiver-swp2.txt")
    old = "0.8625 mW / -0.64 dBm"
    assert old in text
    with pytest.raises(ParseError, match="negative power") as err:
        parse_transceiver(text.replace(old, "-0.8625 mW"), "swp2", "leaf01: xcvr")
    assert err.value.source == "leaf01: xcvr"
