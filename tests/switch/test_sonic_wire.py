"""The SONiC mock's wire views (fabcheck_lab.mockswitch.sonic_wire), in process, read by the gate's own
parsers: a clean port counts nothing over a window, switch-link-errors makes FEC_UNCORR rise on the
faulted port only, switch-optic-hot puts that port's module over its own high temperature warning, and
the mock refuses what the release refuses."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fabcheck.collect.switch_probes import PROBES
from fabcheck.parsers import switch_sonic_wire as wire
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta, ModuleOptics
from fabcheck_lab.mockswitch.sonic import SonicDevice
from fabcheck_lab.mockswitch.spec import SwitchSpec
from tests.switch.wiregate import wire_gate

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "sonic"
PORTS = ("Ethernet0", "Ethernet4", "Ethernet8")
CABLED = (("Ethernet0", "gpu01", "ens1np0"), ("Ethernet4", "gpu02", "ens1np0"))
WINDOW_S = 0.3
COUNTER_COMMANDS = (wire.ERRORS_COMMAND, wire.FEC_COMMAND, wire.FLAP_COMMAND)


def switch(release: str = "") -> SonicDevice:
    return SonicDevice(
        SwitchSpec("leaf02", "sonic", "127.0.3.1", 2201, "admin", "pw", PORTS, CABLED, release)
    )


def reading(device: SonicDevice) -> dict[str, LinkCounters]:
    """Every port's counters from the three counter views, merged per port (as collect does)."""
    session = device.new_session("admin")
    merged: dict[str, LinkCounters] = {}
    for probe in (p for p in PROBES["sonic"] if p.command in COUNTER_COMMANDS):
        for port, record in probe.parse(session.handle(probe.command), None, f"mock: {probe.command}"):
            assert port is not None and isinstance(record, LinkCounters)
            merged[port] = merged[port].merged(record) if port in merged else record
    return merged


def window(device: SonicDevice) -> dict[str, LinkDelta]:
    first = reading(device)
    time.sleep(WINDOW_S)
    return {port: later.since(first[port], WINDOW_S) for port, later in reading(device).items()}


def dom(device: SonicDevice) -> dict[str, ModuleOptics]:
    text = device.new_session("admin").handle(wire.DOM_COMMAND)
    out = {}
    for port, record in wire.parse_transceiver_dom(text, None, "mock"):
        assert port is not None and isinstance(record, ModuleOptics)
        out[port] = record
    return out


def test_the_counter_probes_are_counters_providing_link_deltas_and_dom_optics() -> None:
    probes = {p.command: p for p in PROBES["sonic"]}
    assert all(probes[c].counter and probes[c].provides == (LinkDelta,) for c in COUNTER_COMMANDS)
    assert probes[wire.DOM_COMMAND].provides == (ModuleOptics,) and not probes[wire.DOM_COMMAND].counter


def test_a_clean_switch_counts_nothing_over_the_window_on_any_port() -> None:
    deltas = window(switch())
    assert set(deltas) == set(PORTS)
    for delta in deltas.values():
        assert set(delta.grown) >= {
            "rx_errors",
            "tx_errors",
            "rx_discards",
            "fec_uncorrectable",
            "link_changes",
        }
        assert not any(delta.grown.values()) and delta.went_back == ()
        assert delta.reading.pre_fec_ber == 0.0  # 202411: FEC_PRE_BER shown


def test_switch_link_errors_raise_fec_uncorrectable_on_the_first_cabled_port_only() -> None:
    device = switch()
    device.inject("switch-link-errors")
    deltas = window(device)
    assert deltas["Ethernet0"].grown["fec_uncorrectable"] > 0
    assert deltas["Ethernet0"].reading.native["fec_uncorrectable"] == "FEC_UNCORR"
    assert {p for p, d in deltas.items() if any(d.grown.values())} == {"Ethernet0"}
    device.heal("switch-link-errors")  # the counted blocks stay counted; nothing more is counted
    healed = window(device)
    assert healed["Ethernet0"].reading.values["fec_uncorrectable"] > 0
    assert not any(healed["Ethernet0"].grown.values())


def test_every_port_holds_the_cited_module_with_its_thresholds() -> None:
    modules = dom(switch())
    assert set(modules) == set(PORTS)
    module = modules["Ethernet4"]
    assert module.present and module.diagnostics and "MFA1A00-C003" in module.media
    (temperature,) = module.of("temperature")
    assert temperature.thresholds is not None and temperature.value == 30.9258
    assert (
        temperature.thresholds.high_warning is not None
        and temperature.value < temperature.thresholds.high_warning
    )


def test_switch_optic_hot_puts_the_faulted_ports_module_over_its_high_warning() -> None:
    device = switch()
    device.inject("switch-optic-hot")
    modules = dom(device)
    hot = {
        port
        for port, module in modules.items()
        for r in module.of("temperature")
        if r.value is not None and r.thresholds and r.thresholds.high_warning is not None
        if r.value > r.thresholds.high_warning
    }
    assert hot == {"Ethernet0"}
    device.heal()
    assert dom(device)["Ethernet0"].of("temperature")[0].value == 30.9258


def test_the_mock_module_matches_the_cited_samples_block() -> None:
    """A mock port's block is the real sample's Ethernet0 block (sonic-utilities tests/sfp_test.py)."""
    sample = (REAL / "show-interfaces-transceiver-eeprom-dom-all.txt").read_text().split("\n\n")[0].strip()
    mock = switch().new_session("admin").handle(wire.DOM_COMMAND + " Ethernet0").strip()
    assert mock == sample


def test_a_config_updater_admin_down_counts_a_down_and_an_up() -> None:
    device = switch()
    before = reading(device)["Ethernet4"].values["link_changes"]
    device.port_flaps["Ethernet4"] = 1
    assert reading(device)["Ethernet4"].values["link_changes"] == before + 2


@pytest.mark.parametrize(
    ("release", "command", "refusal"),
    [
        ("202405.0-mock", "show interfaces flap", 'Error: No such command "flap".'),
        ("202411.0-mock", "show interfaces counters errors --json", "Error: no such option: --json"),
        ("", "show interfaces counters bogus", 'Error: No such command "bogus".'),
        ("", "show interfaces transceiver bogus", 'Error: No such command "bogus".'),
        ("", "show interfaces transceiver eeprom --bogus", "Error: no such option: --bogus"),
    ],
)
def test_the_mock_refuses_what_the_release_refuses(release: str, command: str, refusal: str) -> None:
    out = switch(release).new_session("admin").handle(command)
    assert out.startswith("Usage: ") and out.rstrip().endswith(refusal)


def test_a_release_before_the_flap_view_leaves_flaps_unjudged_not_zero() -> None:
    device = switch("202405.0-mock")
    counters = reading(device)["Ethernet0"]
    assert "link_changes" not in counters.values and counters.pre_fec_ber is None  # no BER column either
    assert counters.values["fec_uncorrectable"] == 0


def test_json_from_202505_has_portstats_keys() -> None:
    out = switch("202505.0-mock").new_session("admin").handle("show interfaces counters fec-stats -j")
    table = json.loads(out)
    assert set(table["Ethernet0"]) == {
        "STATE",
        "FEC_CORR",
        "FEC_UNCORR",
        "FEC_SYMBOL_ERR",
        "FEC_PRE_BER",
        "FEC_POST_BER",
        "FEC_PRE_BER_MAX",
        "FLR(O)",
        "FLR(P) (Accuracy)",
    }


def gate_findings(device: SonicDevice) -> set[tuple[str, str, str]]:
    """What the gate's own SONiC probes and every switch check say about the mock: what does not pass."""
    return wire_gate("sonic", device.new_session("admin").handle, "leaf02:Ethernet0", WINDOW_S)[0]


@pytest.mark.parametrize(
    ("fault", "failing"),
    [
        (None, set()),
        ("switch-link-errors", {("switch.link_errors", "leaf02:Ethernet0", "fail")}),
        ("switch-optic-hot", {("switch.optics", "leaf02:Ethernet0", "fail")}),
    ],
)
def test_each_wire_fault_fails_exactly_its_check_on_the_cabled_port(fault: str | None, failing: set) -> None:
    from tests.invariant.harness import PORTS as FABRIC_PORTS
    from tests.invariant.harness import repush

    spec = SwitchSpec(
        "leaf02", "sonic", "127.0.3.1", 2201, "admin", "pw", FABRIC_PORTS["sonic"], (CABLED[0],)
    )
    device = SonicDevice(spec)
    repush("sonic", device)
    if fault is not None:
        device.inject(fault)
    assert gate_findings(device) == failing
    if fault is not None:
        device.heal(fault)
        assert gate_findings(device) == set()
