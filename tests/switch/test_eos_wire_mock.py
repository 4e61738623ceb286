"""The EOS mock's wire views, read by the gate's own EOS wire parsers (in process, no lab): a clean port
counts nothing over a window, switch-link-errors makes the first cabled port's uncorrectable FEC
codewords rise, switch-optic-hot puts its module's temperature over the module's own high warning,
heal stops the rise and keeps what was counted, and EOS's refusals stay refusals; through the gate's
own probes, counter window and switch checks each wire fault fails exactly its check on that port."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fabcheck.checks.model import Status
from fabcheck.checks.switch import check_switch
from fabcheck.collect.probes import collect
from fabcheck.collect.switch_probes import PROBES
from fabcheck.gate.switch_stage import evidence_of
from fabcheck.parsers.switch_eos_wire import (
    parse_error_counters,
    parse_interfaces_and_counters,
    parse_phy_detail,
    parse_transceiver_dom,
)
from fabcheck.parsers.switch_records import Mtu, PortSpeed
from fabcheck.parsers.wire_records import LinkCounters, ModuleOptics
from fabcheck_lab.mockswitch.device import CliSession
from fabcheck_lab.mockswitch.eos import EosDevice
from fabcheck_lab.mockswitch.spec import SwitchSpec
from tests.invariant.harness import converged, desired_of

PORTS = ("Ethernet1", "Ethernet2")
CABLED = "Ethernet1"  # LLDP hears gpu01 there: the port a wire fault hits
WINDOW_S = 5.0
WIRE_CHECKS = ("switch.link_errors", "switch.link_flaps", "switch.optics")
COUNTER_VIEWS = {
    "show interfaces | json": parse_interfaces_and_counters,
    "show interfaces counters errors | json": parse_error_counters,
    "show interfaces phy detail | json": parse_phy_detail,
}


def device() -> EosDevice:
    spec = SwitchSpec(
        "leaf03", "eos", "127.0.3.1", 2201, "admin", "pw", PORTS, ((CABLED, "gpu01", "ens1np0"),)
    )
    return EosDevice(spec)


def session(switch: EosDevice) -> CliSession:
    cli = switch.new_session("admin")
    cli.handle("enable")
    return cli


def counters(cli: CliSession) -> dict[str, LinkCounters]:
    """Each port's counters from the three counter views, merged as the gate merges them."""
    merged: dict[str, LinkCounters] = {}
    for command, parse in COUNTER_VIEWS.items():
        for port, record in parse(cli.handle(command), None, command):
            if isinstance(record, LinkCounters) and port is not None:
                merged[port] = merged[port].merged(record) if port in merged else record
    return merged


def optics(cli: CliSession) -> dict[str | None, Any]:
    command = "show interfaces transceiver dom thresholds | json"
    return dict(parse_transceiver_dom(cli.handle(command), None, command))


def let_time_pass(switch: EosDevice, seconds: float) -> None:
    """The wire model counts from wall-clock starts: moving them back is that much time passing."""
    for state in switch.wire.values():
        state["since"] = state["since"] - seconds
        for entry in state.get("rates", {}).values():
            entry["since"] -= seconds


def window(switch: EosDevice) -> dict[str, Any]:
    cli = session(switch)
    before = counters(cli)
    let_time_pass(switch, WINDOW_S)
    after = counters(cli)
    return {port: after[port].since(before[port], WINDOW_S) for port in after}


def test_a_clean_port_counts_nothing_and_every_vocabulary_counter_is_shown() -> None:
    deltas = window(device())
    for port in PORTS:
        delta = deltas[port]
        assert set(delta.grown) == {
            "fcs_errors",
            "symbol_errors",
            "alignment_errors",
            "rx_errors",
            "tx_errors",
            "rx_discards",
            "tx_discards",
            "link_changes",
            "fec_corrected",
            "fec_uncorrectable",
        }
        assert [name for name, grown in delta.grown.items() if grown] == []
        assert delta.pre_fec_ber == 0.0 and delta.went_back == ()


def test_switch_link_errors_raises_uncorrectable_fec_on_the_cabled_port_only() -> None:
    switch = device()
    switch.inject("switch-link-errors")
    deltas = window(switch)
    assert deltas[CABLED].grown["fec_uncorrectable"] >= 500 * WINDOW_S - 1
    assert deltas[CABLED].native_name("fec_uncorrectable") == "fec.uncorrectedCodewords"
    assert [name for name, grown in deltas[CABLED].grown.items() if grown] == ["fec_uncorrectable"]
    assert not any(deltas["Ethernet2"].grown.values())
    switch.heal("switch-link-errors")
    healed = window(switch)
    assert healed[CABLED].grown["fec_uncorrectable"] == 0
    assert counters(session(switch))[CABLED].values["fec_uncorrectable"] > 0  # what was counted stays


def test_switch_optic_hot_puts_the_module_over_its_own_high_warning() -> None:
    switch = device()
    cli = session(switch)
    clean = optics(cli)[CABLED]
    assert isinstance(clean, ModuleOptics) and clean.diagnostics and clean.media == "100GBASE-SR4"
    (cool,) = clean.of("temperature")
    assert cool.thresholds is not None and cool.thresholds.high_warning == 70.0
    assert cool.value is not None and cool.value < cool.thresholds.high_warning
    rx = clean.of("rx_power")
    assert len(rx) == 4 and all(
        r.value is not None
        and r.thresholds
        and r.thresholds.low_alarm
        and r.value > r.thresholds.low_alarm + 2
        for r in rx
    )
    switch.inject("switch-optic-hot")
    hot = optics(cli)
    (temperature,) = hot[CABLED].of("temperature")
    assert temperature.thresholds is not None and temperature.thresholds.high_warning is not None
    assert temperature.thresholds.high_alarm is not None
    assert temperature.thresholds.high_warning < temperature.value < temperature.thresholds.high_alarm
    assert hot["Ethernet2"].of("temperature")[0].value == cool.value
    switch.heal("switch-optic-hot")
    assert optics(cli)[CABLED].of("temperature")[0].value == cool.value


def test_show_interfaces_keeps_its_mtu_beside_the_counters() -> None:
    placed = parse_interfaces_and_counters(session(device()).handle("show interfaces | json"))
    kinds = {(port, type(record)) for port, record in placed}
    assert kinds == {(port, kind) for port in PORTS for kind in (Mtu, PortSpeed, LinkCounters)}


@pytest.mark.parametrize(
    "command",
    [
        "show interfaces counters errorz | json",
        "show interfaces phy detailed | json",
        "show interfaces transceiver dom threshold extra | json",
        "show interfaces Ethernet99 phy detail | json",
    ],
)
def test_what_eos_refuses_the_mock_refuses(command: str) -> None:
    assert session(device()).handle(command).lstrip().startswith("% ")


def test_one_port_asked_by_name_answers_for_that_port() -> None:
    cli = session(device())
    assert set(dict(parse_phy_detail(cli.handle("show interfaces Ethernet2 phy detail | json")))) == {
        "Ethernet2"
    }
    text = cli.handle("show interfaces transceiver dom thresholds")
    assert text.splitlines()[0].split()[:2] == ["Port", "Temperature"]


def gate_findings(switch: EosDevice, window_s: float = WINDOW_S) -> set[tuple[str, str, str]]:
    """The gate's own EOS probes and switch checks over the converged mock, with a counter window whose
    wait is time passing on the mock: the wire findings that do not pass."""
    wanted = desired_of("eos")
    ports = [port.port for port in wanted.ports]
    collected = collect(
        session(switch).handle,
        PROBES["eos"],
        ports,
        "mock leaf03",
        window_s=window_s,
        wait=lambda seconds: let_time_pass(switch, seconds),
    )
    findings = check_switch(evidence_of("leaf03", "eos", collected), wanted)
    return {
        (f.check, f.subject, f.status.value)
        for f in findings
        if f.check.startswith(("switch.link_", "switch.optics"))
        and f.status not in (Status.PASS, Status.SKIP)
    }


def cabled_converged() -> EosDevice:
    switch = converged("eos")
    assert isinstance(switch, EosDevice)
    first = switch.ports[0]
    switch.spec = dataclasses.replace(switch.spec, neighbors=((first, "gpu01", "ens1np0"),))
    return switch


def test_the_gate_reads_a_clean_converged_eos_switch_as_passing_on_the_wire() -> None:
    assert gate_findings(cabled_converged()) == set()


@pytest.mark.parametrize(
    ("fault", "check"), [("switch-link-errors", "switch.link_errors"), ("switch-optic-hot", "switch.optics")]
)
def test_each_wire_fault_fails_exactly_its_check_on_the_cabled_port(fault: str, check: str) -> None:
    switch = cabled_converged()
    switch.inject(fault)
    assert gate_findings(switch) == {(check, f"leaf03:{switch.ports[0]}", "fail")}
    switch.heal(fault)
    assert gate_findings(switch) == set()
