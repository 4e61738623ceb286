"""switch.link_errors, switch.link_flaps and switch.optics (fabcheck.checks.switch.wire): each cabled port's
counters over the window (LinkDelta) and its module's diagnostics (ModuleOptics), judged with the host's
judges against the desired switch's link_health. A fault fails exactly its check on exactly that port with
a hint naming what to clean, reseat or replace; a platform that shows no such view is a named skip; a port
whose view is missing is an error."""

from __future__ import annotations

from switchjudged import SWITCHES, desired

from fabcheck.checks.model import Finding, Status
from fabcheck.checks.switch import SwitchEvidence, check_switch
from fabcheck.checks.switch.wire import CHECKS, LINK_ERRORS, LINK_FLAPS, OPTICS
from fabcheck.parsers.wire_records import (
    CounterName,
    DomReading,
    LinkCounters,
    LinkDelta,
    ModuleOptics,
)
from tests.checks.wiredata import RX, TEMP

WIRE = tuple(check.id for check in CHECKS)
# EOS's own names (aristanetworks/anta tests/units/anta_tests/test_interfaces.py: fcsErrors,
# alignmentErrors, symbolErrors, linkStatusChanges; FEC uncorrectedCodewords).
EOS: dict[CounterName, str] = {
    "fcs_errors": "fcsErrors",
    "alignment_errors": "alignmentErrors",
    "symbol_errors": "symbolErrors",
    "fec_uncorrectable": "uncorrectedCodewords",
    "link_changes": "linkStatusChanges",
}


def delta(**grown: int) -> LinkDelta:
    before: dict[CounterName, int] = dict.fromkeys(EOS, 0) | {"link_changes": 2}
    after = {name: value + grown.get(name, 0) for name, value in before.items()}
    return LinkCounters(after, EOS, "RS", 1e-9).since(LinkCounters(before, EOS, "RS", 1e-9), 5)


def module(temperature: float = 45.0, rx: float = -2.0) -> ModuleOptics:
    readings = (DomReading("temperature", None, temperature, TEMP), DomReading("rx_power", 1, rx, RX))
    return ModuleOptics(True, True, "100GBASE-SR4", readings)


def evidence(
    name: str = "leaf03",
    counters: LinkDelta | None = None,
    optics: ModuleOptics | None = None,
    provided: frozenset[type] = frozenset({LinkDelta, ModuleOptics}),
) -> SwitchEvidence:
    """The switch's one cabled port (the map cables gpu01 to each switch's first port) with its wire."""
    [port] = [p.port for p in desired(name).ports if p.peer]
    records: dict[tuple[type, str | None], object] = {
        (LinkDelta, port): counters or delta(),
        (ModuleOptics, port): optics or module(),
    }
    shown = {key: record for key, record in records.items() if key[0] in provided}
    return SwitchEvidence(name, SWITCHES[name], shown, provided)  # type: ignore[arg-type]


def judged(shown: SwitchEvidence) -> list[Finding]:
    return [f for f in check_switch(shown, desired(shown.switch)) if f.check in WIRE]


def statuses(findings: list[Finding]) -> dict[tuple[str, str], Status]:
    return {(f.check, f.subject): f.status for f in findings}


def test_a_clean_cabled_port_passes_and_only_cabled_ports_are_judged() -> None:
    findings = judged(evidence())
    assert statuses(findings) == {(check, "leaf03:Ethernet1"): Status.PASS for check in WIRE}
    assert findings[0].where is not None and findings[0].where.peer == "gpu01:mlx5_2"


def test_uncorrectable_fec_blocks_fail_switch_link_errors_with_the_native_name() -> None:
    findings = judged(evidence(counters=delta(fec_uncorrectable=40)))
    assert {k: s for k, s in statuses(findings).items() if s is not Status.PASS} == {
        (LINK_ERRORS, "leaf03:Ethernet1"): Status.FAIL
    }
    [failure] = [f for f in findings if f.status is Status.FAIL]
    assert failure.actual.startswith("uncorrectedCodewords +40 in 5 s (limit 0)")
    assert "leaf03:Ethernet1 receives a corrupted signal" in failure.hint
    assert "switch_qos" not in failure.hint  # no role sets a counter


def test_fcs_and_alignment_errors_fail_and_name_both_counters() -> None:
    [failure] = [
        f
        for f in judged(evidence(counters=delta(fcs_errors=5, alignment_errors=2)))
        if f.status is Status.FAIL
    ]
    assert failure.check == LINK_ERRORS and "fcsErrors +5, alignmentErrors +2 in 5 s" in failure.actual


def test_link_status_changes_in_the_window_fail_switch_link_flaps() -> None:
    findings = judged(evidence(counters=delta(link_changes=2)))
    assert [f.check for f in findings if f.status is Status.FAIL] == [LINK_FLAPS]
    [failure] = [f for f in findings if f.status is Status.FAIL]
    assert "linkStatusChanges +2 in 5 s" in failure.actual and "reseat the cable" in failure.hint


def test_a_hot_module_fails_switch_optics_naming_the_modules_own_warning() -> None:
    findings = judged(evidence(optics=module(temperature=72.5)))
    [failure] = [f for f in findings if f.status is Status.FAIL]
    assert failure.check == OPTICS
    assert "temperature 72.50 °C > 70 °C (high warning 70 - margin)" in failure.actual
    assert "runs hot" in failure.hint


def test_a_platform_without_the_views_is_a_named_skip_per_check() -> None:
    findings = judged(evidence(provided=frozenset()))
    assert {f.status for f in findings} == {Status.SKIP} and len(findings) == 3
    by_check = {f.check: f.actual for f in findings}
    assert by_check[LINK_ERRORS] == "eos: the platform shows no error counters in the views the gate reads"
    assert "transceiver diagnostics" in by_check[OPTICS]


def test_a_dac_port_is_a_named_skip_and_a_missing_port_view_an_error() -> None:
    dac = judged(evidence(optics=ModuleOptics(True, False, "100GBASE-CR4")))
    assert [(f.check, f.status) for f in dac if f.status is not Status.PASS] == [(OPTICS, Status.SKIP)]
    missing = SwitchEvidence("leaf03", "eos", {}, frozenset({LinkDelta, ModuleOptics}))
    assert {f.status for f in judged(missing)} == {Status.ERROR}


def test_a_view_the_switchs_release_lacks_is_a_skip_naming_the_release() -> None:
    """NVUE before CL 5.11 has no `nv show platform transceiver <id>` (collect does not send it there):
    switch.optics is a skip that names the release and the view, never "not read"."""
    why = "release 5.8 has no `nv show platform transceiver <port>` (releases >= 5.11)"
    older = SwitchEvidence("leaf03", "eos", {}, frozenset({LinkDelta}), not_in_release={ModuleOptics: why})
    [optics] = [f for f in judged(older) if f.check == OPTICS]
    assert optics.status is Status.SKIP and optics.actual == f"eos: {why}"
