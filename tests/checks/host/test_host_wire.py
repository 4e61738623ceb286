"""host.link_errors, host.link_flaps and host.optics (fabcheck.checks.host.wire): the wire of every rail
NIC's netdev, read through HostEvidence.wire (both `ethtool -S` / `--show-fec` readings of the counter
window, `ethtool -m`), judged against the desired host's link_health. One fault fails exactly its check
on exactly that NIC; the skips are named; an unread view is an error naming the command."""

from __future__ import annotations

from fabcheck.checks.host import HostEvidence
from fabcheck.checks.host.wire import CHECKS, LINK_ERRORS, LINK_FLAPS, OPTICS
from fabcheck.checks.model import Finding, Status, skipped
from fabcheck.collect import host as probes
from fabcheck.collect.host import NO_MODULE_EEPROM, Unreadable
from fabcheck.collect.script import earlier
from fabcheck.desired.nic import desired_host
from fabcheck.intent.model import FabricIntent, LinkHealth
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.wire_records import CounterName, DomReading, LinkCounters, ModuleOptics, Thresholds
from tests.checks.host.hostdata import INTENT, NETDEVS, device

WIRE = (LINK_ERRORS, LINK_FLAPS, OPTICS)
# mlx5's `ethtool -S` names (torvalds/linux Documentation/.../mlx5/counters.rst; link-pcie-firmware.md §1).
NATIVE: dict[CounterName, str] = {
    "fcs_errors": "rx_crc_errors_phy",
    "symbol_errors": "rx_symbol_err_phy",
    "rx_discards": "rx_discards_phy",
    "uncorrected_symbols": "rx_pcs_symbol_err_phy",
    "link_down": "link_down_events_phy",
}
CLEAN: dict[CounterName, int] = dict.fromkeys(NATIVE, 0) | {"link_down": 1}
RX = Thresholds(high_alarm=5.4, high_warning=2.4, low_warning=-10.3, low_alarm=-13.3)
TEMP = Thresholds(high_alarm=75.0, high_warning=70.0, low_warning=0.0, low_alarm=-5.0)


def optics(rx: float = -1.0, temperature: float = 40.0) -> ModuleOptics:
    readings = (DomReading("temperature", None, temperature, TEMP), DomReading("rx_power", 1, rx, RX))
    return ModuleOptics(True, True, "QSFP112 400GBASE-SR4", readings)


def evidence(
    grown: dict[str, dict[CounterName, int]] | None = None,
    modules: dict[str, ModuleOptics | Unreadable] | None = None,
    window: int | Unreadable = 5,
    changes: dict[tuple[str, str], object] | None = None,
) -> HostEvidence:
    """Both rail NICs with a clean wire, but the counters `grown` per netdev and the `modules` given."""
    records: dict[tuple[str, str], object] = {
        (probes.RDMA_LINK, ""): tuple(
            RdmaLink(dev, 1, "ACTIVE", "LINK_UP", nd) for dev, nd in NETDEVS.items()
        ),
        (probes.IBV_DEVINFO, ""): tuple(device(dev, index) for index, dev in enumerate(NETDEVS)),
        (probes.COUNTER_WINDOW, ""): window,
    }
    for netdev in NETDEVS.values():
        after = {n: v + (grown or {}).get(netdev, {}).get(n, 0) for n, v in CLEAN.items()}
        records[(earlier(probes.LINK_STATS), netdev)] = LinkCounters(CLEAN, NATIVE)
        records[(probes.LINK_STATS, netdev)] = LinkCounters(after, NATIVE)
        for name in (earlier(probes.FEC), probes.FEC):
            records[(name, netdev)] = LinkCounters({}, fec_mode="RS")
        records[(probes.MODULE, netdev)] = (modules or {}).get(netdev, optics())
    records.update(changes or {})
    return HostEvidence(records)


def judged(shown: HostEvidence, intent: FabricIntent = INTENT) -> list[Finding]:
    """The wire checks as check_host runs them: a check that does not apply is a skip naming why."""
    desired, findings = desired_host(intent, "gpu01"), []
    for check in CHECKS:
        reason = check.not_applicable(intent, desired)
        assert check.judge is not None
        findings += (
            [skipped(check.id, "host", reason)]
            if reason
            else check.judge(shown, desired, intent, check.inputs)
        )
    return findings


def not_passing(findings: list[Finding]) -> dict[tuple[str, str], Status]:
    return {(f.check, f.subject): f.status for f in findings if f.status is not Status.PASS}


def the(findings: list[Finding], check: str, subject: str) -> Finding:
    [found] = [f for f in findings if f.check == check and f.subject == subject]
    return found


def test_a_clean_wire_passes_every_wire_check_on_every_rail_nic() -> None:
    findings = judged(evidence())
    assert not_passing(findings) == {}
    assert sorted((f.check, f.subject) for f in findings) == sorted(
        (check, nic) for check in WIRE for nic in NETDEVS
    )


def test_crc_errors_fail_host_link_errors_on_that_nic_only_naming_the_counter_and_window() -> None:
    findings = judged(evidence({"ens1np0": {"fcs_errors": 8123}}))
    assert not_passing(findings) == {(LINK_ERRORS, "mlx5_0"): Status.FAIL}
    failure = the(findings, LINK_ERRORS, "mlx5_0")
    assert failure.actual.startswith("rx_crc_errors_phy +8123 in 5 s (limit 0)")
    assert "gpu01:mlx5_0 (ens1np0) receives a corrupted signal" in failure.hint


def test_uncorrectable_fec_fails_whatever_the_intents_limits() -> None:
    generous = FabricIntent(
        rails=INTENT.rails, link_health=LinkHealth(max_crc_errors=1000, max_symbol_errors=1000)
    )
    findings = judged(evidence({"ens2np0": {"uncorrected_symbols": 2, "fcs_errors": 10}}), generous)
    assert not_passing(findings) == {(LINK_ERRORS, "mlx5_1"): Status.FAIL}
    assert "rx_pcs_symbol_err_phy +2 in 5 s (limit 0)" in the(findings, LINK_ERRORS, "mlx5_1").actual


def test_a_link_down_in_the_window_fails_host_link_flaps() -> None:
    findings = judged(evidence({"ens1np0": {"link_down": 3}}))
    assert not_passing(findings) == {(LINK_FLAPS, "mlx5_0"): Status.FAIL}
    assert "link_down_events_phy +3 in 5 s" in the(findings, LINK_FLAPS, "mlx5_0").actual


def test_low_rx_power_fails_host_optics_with_the_fibre_hint() -> None:
    findings = judged(evidence(modules={"ens2np0": optics(rx=-12.0)}))
    assert not_passing(findings) == {(OPTICS, "mlx5_1"): Status.FAIL}
    failure = the(findings, OPTICS, "mlx5_1")
    assert (
        "rx power lane 1 -12.00 dBm < -11.3 dBm" in failure.actual and "clean both connectors" in failure.hint
    )


def test_a_window_of_zero_skips_the_error_check_by_name_and_still_judges_flaps_and_optics() -> None:
    shown = evidence(window=0, modules={"ens1np0": optics(temperature=71.0)})
    findings = judged(shown)
    errors = the(findings, LINK_ERRORS, "mlx5_0")
    assert errors.status is Status.SKIP and "counter window 0" in errors.actual
    assert "rx_crc_errors_phy 0" in errors.actual
    assert the(findings, LINK_FLAPS, "mlx5_0").status is Status.PASS
    assert the(findings, OPTICS, "mlx5_0").status is Status.FAIL


def test_no_dom_and_no_module_eeprom_are_named_skips_never_passes() -> None:
    dac = ModuleOptics(True, False, "QSFP112 passive copper")
    no_eeprom = Unreadable("ethtool -m ens2np0", f"{NO_MODULE_EEPROM} (exit 1: ...)")
    findings = judged(evidence(modules={"ens1np0": dac, "ens2np0": no_eeprom}))
    assert not_passing(findings) == {(OPTICS, "mlx5_0"): Status.SKIP, (OPTICS, "mlx5_1"): Status.SKIP}
    assert "no digital diagnostics" in the(findings, OPTICS, "mlx5_0").actual
    assert "no module EEPROM to read" in the(findings, OPTICS, "mlx5_1").actual


def test_unreadable_views_are_errors_naming_the_command() -> None:
    broken = Unreadable("ethtool -S ens1np0", "exit 94: Operation not supported")
    module = Unreadable("ethtool -m ens2np0", "exit 1: timed out")
    findings = judged(evidence(modules={"ens2np0": module}, changes={(probes.LINK_STATS, "ens1np0"): broken}))
    assert not_passing(findings) == {
        (LINK_ERRORS, "mlx5_0"): Status.ERROR,
        (LINK_FLAPS, "mlx5_0"): Status.ERROR,
        (OPTICS, "mlx5_1"): Status.ERROR,
    }
    assert "`ethtool -S ens1np0`" in the(findings, LINK_ERRORS, "mlx5_0").actual
    assert "`ethtool -m ens2np0`" in the(findings, OPTICS, "mlx5_1").actual


def test_an_infiniband_intent_skips_the_wire_checks_with_the_reason() -> None:
    ib = FabricIntent(kind="ib", rails=INTENT.rails)
    findings = judged(evidence(), ib)
    assert {f.status for f in findings} == {Status.SKIP}
    assert all("RoCE-only" in f.actual for f in findings)
