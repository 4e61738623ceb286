"""The wire judges (fabcheck.checks.wire): each rule fails and passes on its own, the skips are named and
the findings quote the device's own counter names and the window. Limits are the intent's defaults
(FabricIntent().link_health: ANTA's any error / any discard / 1e-7 BER / 100 changes, RX low alarm + 2 dB),
cited in docs/checks/wire.md."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fabcheck.checks.model import Status
from fabcheck.checks.wire import judge_errors, judge_flaps, judge_optics, lifetime_downs
from fabcheck.collect.host import Unreadable
from fabcheck.intent.model import LinkHealth
from fabcheck.parsers.ethtool_module import parse_module
from fabcheck.parsers.wire_records import (
    NO_LIGHT_DBM,
    CounterName,
    DomReading,
    LinkCounters,
    LinkDelta,
    ModuleOptics,
)
from tests.checks.wiredata import BIAS, LIMITS, RX, TEMP, TX, VOLT

END = "gpu01:mlx5_0 (ens1np0)"
# mlx5's own names (torvalds/linux Documentation/.../mlx5/counters.rst, link-pcie-firmware.md §1).
MLX5: dict[CounterName, str] = {
    "fcs_errors": "rx_crc_errors_phy",
    "symbol_errors": "rx_symbol_err_phy",
    "rx_discards": "rx_discards_phy",
    "rx_out_of_buffer": "rx_out_of_buffer",
    "uncorrected_symbols": "rx_pcs_symbol_err_phy",
    "corrected_bits": "rx_corrected_bits_phy",
    "received_bits": "rx_bits_phy",
    "link_down": "link_down_events_phy",
}
CLEAN: dict[CounterName, int] = {
    "fcs_errors": 3,
    "symbol_errors": 0,
    "rx_discards": 0,
    "rx_out_of_buffer": 0,
    "uncorrected_symbols": 0,
    "corrected_bits": 10,
    "received_bits": 10**12,
    "link_down": 1,
}


def counters(values: dict[CounterName, int], **more: object) -> LinkCounters:
    native = {name: MLX5[name] for name in values if name in MLX5}
    return LinkCounters(values, native, **more)  # type: ignore[arg-type]


def delta(
    grown: dict[CounterName, int], window_s: float = 5.0, start: dict[CounterName, int] | None = None
) -> LinkDelta:
    """Counters that grew by `grown` over the window from `start` (default the clean reading)."""
    before = dict(CLEAN if start is None else start)
    after = {name: before.get(name, 0) + grown.get(name, 0) for name in {*before, *grown}}
    return counters(after).since(counters(before), window_s)


# ---- errors -----------------------------------------------------------------------------------------


def test_clean_counters_over_the_window_pass_naming_what_was_read() -> None:
    judged = judge_errors(delta({}), LIMITS, END)
    assert judged.status is Status.PASS
    assert "no error counter grew in 5 s" in judged.actual and "rx_crc_errors_phy" in judged.actual


def test_crc_errors_in_the_window_fail_with_the_native_name_the_window_and_the_hint() -> None:
    judged = judge_errors(delta({"fcs_errors": 8123}), LIMITS, END)
    assert judged.status is Status.FAIL
    assert "rx_crc_errors_phy +8123 in 5 s (limit 0)" in judged.actual
    assert judged.problems == {"rx_errors"}
    assert "clean both connectors" in judged.hint and "far end" in judged.hint


@pytest.mark.parametrize(
    ("name", "limit_field", "problem"),
    [
        ("fcs_errors", "max_crc_errors", "rx_errors"),
        ("symbol_errors", "max_symbol_errors", "rx_errors"),
        ("rx_discards", "max_discards", "discards"),
        ("rx_out_of_buffer", "max_discards", "host_drops"),
    ],
)
def test_each_error_limit_fails_above_and_passes_at_its_limit(
    name: CounterName, limit_field: str, problem: str
) -> None:
    limits = LinkHealth(**{limit_field: 10})
    assert judge_errors(delta({name: 10}), limits, END).status is Status.PASS
    over = judge_errors(delta({name: 11}), limits, END)
    assert over.status is Status.FAIL and problem in over.problems
    assert f"{MLX5[name]} +11 in 5 s (limit 10)" in over.actual


def test_alignment_errors_count_with_crc_errors_and_a_receive_total_against_both_limits() -> None:
    start: dict[CounterName, int] = {"fcs_errors": 0, "alignment_errors": 0}
    limits = LinkHealth(max_crc_errors=5)
    assert (
        judge_errors(delta({"fcs_errors": 3, "alignment_errors": 2}, start=start), limits, END).status
        is Status.PASS
    )
    failed = judge_errors(delta({"fcs_errors": 3, "alignment_errors": 3}, start=start), limits, END)
    assert failed.status is Status.FAIL and "alignment_errors +3" in failed.actual
    total = {"rx_errors": 0}  # type: dict[CounterName, int]
    limits = LinkHealth(max_crc_errors=2, max_symbol_errors=3)
    assert judge_errors(delta({"rx_errors": 5}, start=total), limits, END).status is Status.PASS
    assert judge_errors(delta({"rx_errors": 6}, start=total), limits, END).status is Status.FAIL


def test_any_uncorrectable_fec_growth_fails_whatever_the_limits() -> None:
    generous = LinkHealth(max_crc_errors=10**6, max_symbol_errors=10**6, max_discards=10**6)
    judged = judge_errors(delta({"uncorrected_symbols": 1}), generous, END)
    assert judged.status is Status.FAIL and judged.problems == {"uncorrectable"}
    assert "rx_pcs_symbol_err_phy +1 in 5 s (limit 0)" in judged.actual
    start: dict[CounterName, int] = {"fec_uncorrectable": 7}
    assert judge_errors(delta({"fec_uncorrectable": 1}, start=start), generous, END).status is Status.FAIL
    assert judge_errors(delta({}, start=start), generous, END).status is Status.PASS


def test_pre_fec_ber_over_the_limit_fails_from_bits_or_from_the_device_figure() -> None:
    # 1e-6 corrected bits per received bit over the window: over ANTA's 1e-7.
    judged = judge_errors(delta({"corrected_bits": 10**6, "received_bits": 10**12}), LIMITS, END)
    assert judged.status is Status.FAIL and judged.problems == {"ber"}
    assert "pre-FEC BER 1e-06 (limit 1e-07)" in judged.actual
    fine = judge_errors(delta({"corrected_bits": 10, "received_bits": 10**12}), LIMITS, END)
    assert fine.status is Status.PASS and "pre-FEC BER 1e-11" in fine.actual
    # A switch that shows only its own BER figure (EOS preFecBer) and no counter is judged on it alone.
    shown = LinkCounters({}, pre_fec_ber=3e-5, fec_mode="RS")
    assert judge_errors(shown.since(LinkCounters({}), 5), LIMITS, END).status is Status.FAIL
    shown = LinkCounters({}, pre_fec_ber=2e-9, fec_mode="RS")
    passing = judge_errors(shown.since(LinkCounters({}), 5), LIMITS, END)
    assert passing.status is Status.PASS and "FEC RS" in passing.actual


def test_cleared_counters_are_not_judged_and_say_so() -> None:
    before: dict[CounterName, int] = {"fcs_errors": 900, "symbol_errors": 0}
    after: dict[CounterName, int] = {"fcs_errors": 2, "symbol_errors": 0}
    judged = judge_errors(counters(after).since(counters(before), 5), LIMITS, END)
    assert judged.status is Status.PASS
    assert "cleared inside the window, not judged: rx_crc_errors_phy" in judged.actual
    only_cleared = counters({"fcs_errors": 2}).since(counters({"fcs_errors": 900}), 5)
    skipped = judge_errors(only_cleared, LIMITS, END)
    assert skipped.status is Status.SKIP and "cleared inside the window" in skipped.actual


def test_a_window_of_zero_is_a_named_skip_quoting_the_lifetime_values() -> None:
    lifetime = counters({**CLEAN, "fcs_errors": 123456}).since(None, 0)
    judged = judge_errors(lifetime, LIMITS, END)
    assert judged.status is Status.SKIP
    assert "counter window 0" in judged.actual and "rx_crc_errors_phy 123456" in judged.actual


def test_a_device_exposing_no_error_counter_is_a_named_skip_never_a_pass() -> None:
    bare = counters({"link_down": 2}).since(counters({"link_down": 2}), 5)
    judged = judge_errors(bare, LIMITS, END)
    assert judged.status is Status.SKIP and "exposes none of the error counters" in judged.actual


def test_unreadable_counters_are_an_error_naming_the_command() -> None:
    judged = judge_errors(Unreadable("ethtool -S ens1np0", "exit 1"), LIMITS, END)
    assert judged.status is Status.ERROR and "`ethtool -S ens1np0`" in judged.actual
    assert judge_flaps(Unreadable("ethtool -S ens1np0", "exit 1"), LIMITS, END).status is Status.ERROR
    assert judge_optics(Unreadable("ethtool -m ens1np0", "exit 1"), LIMITS, END).status is Status.ERROR


# ---- flaps ------------------------------------------------------------------------------------------


def test_a_link_down_inside_the_window_fails() -> None:
    judged = judge_flaps(delta({"link_down": 1}), LIMITS, END)
    assert judged.status is Status.FAIL and judged.problems == {"flap"}
    assert "link_down_events_phy +1 in 5 s" in judged.actual and "reseat" in judged.hint
    passing = judge_flaps(delta({}), LIMITS, END)
    assert passing.status is Status.PASS
    assert passing.actual == "no down transition in 5 s; link_down_events_phy 1 since the last clear"


def test_a_state_change_inside_the_window_fails() -> None:
    eos = LinkCounters({"link_changes": 5}, {"link_changes": "linkStatusChanges"})
    later = LinkCounters({"link_changes": 6}, {"link_changes": "linkStatusChanges"})
    assert judge_flaps(later.since(eos, 5), LIMITS, END).status is Status.FAIL
    assert judge_flaps(eos.since(eos, 5), LIMITS, END).status is Status.PASS


def test_lifetime_down_transitions_over_the_allowance_fail_even_with_a_window_of_zero() -> None:
    over = counters({"link_down": 51}).since(None, 0)
    judged = judge_flaps(over, LIMITS, END)
    assert judged.status is Status.FAIL and judged.problems == {"flaps_lifetime"}
    assert "link_down_events_phy 51 since the last clear (allowed 50)" in judged.actual
    assert "clear the counters" in judged.hint
    assert judge_flaps(counters({"link_down": 50}).since(None, 0), LIMITS, END).status is Status.PASS


def test_link_changes_count_as_half_as_many_downs_as_anta_allows_100_changes() -> None:
    def changes(count: int) -> LinkDelta:
        return LinkCounters({"link_changes": count}).since(None, 0)

    assert lifetime_downs(changes(100)) is not None and lifetime_downs(changes(100))[0] == 50  # type: ignore[index]
    assert judge_flaps(changes(100), LIMITS, END).status is Status.PASS
    assert judge_flaps(changes(101), LIMITS, END).status is Status.FAIL


def test_no_flap_counter_is_a_named_skip() -> None:
    bare = LinkCounters({"fcs_errors": 0}).since(LinkCounters({"fcs_errors": 0}), 5)
    judged = judge_flaps(bare, LIMITS, END)
    assert judged.status is Status.SKIP and "no link-down or link-change counter" in judged.actual


# ---- optics -----------------------------------------------------------------------------------------


def module(temperature: float = 40.0, rx: float = -1.0, tx: float = -0.5, lanes: int = 4) -> ModuleOptics:
    readings = [DomReading("temperature", None, temperature, TEMP), DomReading("voltage", None, 3.3, VOLT)]
    for lane in range(1, lanes + 1):
        readings += [
            DomReading("tx_bias", lane, 7.5, BIAS),
            DomReading("tx_power", lane, tx, TX),
            DomReading("rx_power", lane, rx if lane == 2 else -1.0, RX),
        ]
    return ModuleOptics(True, True, "QSFP28 100GBASE-SR4", tuple(readings))


def test_a_module_within_its_thresholds_passes() -> None:
    judged = judge_optics(module(), LIMITS, END)
    assert judged.status is Status.PASS
    assert "14 readings within thresholds" in judged.actual and "temperature 40.0 °C" in judged.actual


def test_rx_power_under_low_alarm_plus_margin_fails_on_its_lane() -> None:
    judged = judge_optics(module(rx=-11.5), LIMITS, END)  # above the alarm, inside the 2 dB margin
    assert judged.status is Status.FAIL and judged.problems == {"rx_power"}
    assert "rx power lane 2 -11.50 dBm < -11.3 dBm (low alarm -13.3 + margin)" in judged.actual
    assert "clean both connectors" in judged.hint
    assert judge_optics(module(rx=-11.2), LIMITS, END).status is Status.PASS
    assert judge_optics(module(rx=-11.5), LinkHealth(optics_rx_margin_db=1.0), END).status is Status.PASS


def test_no_light_is_its_own_finding() -> None:
    for dark in (NO_LIGHT_DBM, -40.0, -math.inf):
        judged = judge_optics(module(rx=dark), LIMITS, END)
        assert judged.status is Status.FAIL and judged.problems == {"no_light"}, dark
    assert "no light (0 mW)" in judge_optics(module(rx=-math.inf), LIMITS, END).actual


def test_temperature_over_high_warning_minus_margin_fails() -> None:
    judged = judge_optics(module(temperature=71.0), LIMITS, END)
    assert judged.status is Status.FAIL and judged.problems == {"hot"}
    assert "temperature 71.00 °C > 70 °C (high warning 70 - margin)" in judged.actual
    assert "runs hot" in judged.hint
    assert judge_optics(module(temperature=70.0), LIMITS, END).status is Status.PASS
    margin = LinkHealth(optics_temperature_margin_c=5.0)
    assert judge_optics(module(temperature=66.0), margin, END).status is Status.FAIL


def test_other_readings_fail_outside_the_modules_own_alarm_and_warning_thresholds() -> None:
    judged = judge_optics(module(tx=-8.0), LIMITS, END)
    assert judged.status is Status.FAIL and judged.problems == {"tx_power"}
    assert "< low warning -7.3 dBm" in judged.actual
    assert judge_optics(module(tx=-11.0), LIMITS, END).actual.count("low alarm -10.3") == 4


def test_a_module_without_diagnostics_is_a_named_skip_and_an_empty_cage_fails() -> None:
    dac = judge_optics(ModuleOptics(True, False, "QSFP28 passive copper (DAC)"), LIMITS, END)
    assert dac.status is Status.SKIP and "no digital diagnostics" in dac.actual and "DAC" in dac.actual
    bare = ModuleOptics(True, True, "SFP", (DomReading("temperature", None, 30.0, None),))
    assert judge_optics(bare, LIMITS, END).status is Status.SKIP
    empty = judge_optics(ModuleOptics(False, False), LIMITS, END)
    assert empty.status is Status.FAIL and "no module" in empty.actual


REAL_HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"


def test_real_modules_lanes_dark_both_ways_are_not_in_use_and_a_lane_dark_one_way_fails() -> None:
    """A real 40G-SR4 module lighting lane 1 only (tests/data/real/host INDEX: the netdev mail's `ethtool
    -m eth2`): lanes 2-4 have neither TX nor RX light, so they are not in use; the module passes."""
    real = parse_module(
        (REAL_HOST / "ethtool-m-qsfp-plus-40g-sr4-avago-thresholds.txt").read_text(), "ethtool -m"
    )
    judged = judge_optics(real, LIMITS, END)
    assert judged.status is Status.PASS
    assert "lanes 2,3,4 dark both ways: not in use, not judged" in judged.actual
    lit_tx = tuple(
        DomReading(r.quantity, r.lane, -1.0, r.thresholds) if r.quantity == "tx_power" and r.lane == 2 else r
        for r in real.readings
    )
    failed = judge_optics(ModuleOptics(real.present, real.diagnostics, real.media, lit_tx), LIMITS, END)
    assert failed.status is Status.FAIL and "rx power lane 2 no light" in failed.actual
    cmis = parse_module((REAL_HOST / "ethtool-m-cmis-qsfp-dd-rendered.txt").read_text(), "ethtool -m")
    assert judge_optics(cmis, LIMITS, END).status is Status.PASS
