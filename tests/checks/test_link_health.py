"""link.health (fabcheck.checks.link_health): both ends of each cable judged together. It fails exactly when
either end's wire checks fail, names the direction (which end receives errors, which transmitter or
fibre to blame) and what to clean, reseat or replace; an unread end is an error, a cable with no wire
data at either end a named skip."""

from __future__ import annotations

from types import SimpleNamespace

import hostgate

from fabcheck.checks.link_health import HEALTH, WireEnd, check_link_health, judge_cable
from fabcheck.checks.model import Status, Where
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.collect.host import HostCollection, Unreadable
from fabcheck.collect.script import Section
from fabcheck.gate.link_stage import host_wire_ends, switch_wire_ends
from fabcheck.intent.fabric import Fabric, Link
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.wire_records import (
    CounterName,
    DomReading,
    LinkCounters,
    LinkDelta,
    ModuleOptics,
)
from tests.checks.host.hostdata import INTENT, healthy_sections
from tests.checks.wiredata import LIMITS, RX, TEMP, TX

LINK = Link("gpu01", "mlx5_0", "leaf01", "swp1")
FABRIC = Fabric((), (LINK,))
HOST, PORT = "gpu01:mlx5_0", "leaf01:swp1"


def grew(**grown: int) -> LinkDelta:
    names: tuple[CounterName, ...] = ("fcs_errors", "symbol_errors", "fec_uncorrectable", "link_down")
    before = dict.fromkeys(names, 0)
    after = {name: before[name] + grown.get(name, 0) for name in names}
    return LinkCounters(after).since(LinkCounters(before), 5)


def optic(rx: float = -1.0, tx: float = -0.5, temperature: float = 40.0) -> ModuleOptics:
    return ModuleOptics(
        True,
        True,
        "QSFP28 100GBASE-SR4",
        (
            DomReading("temperature", None, temperature, TEMP),
            DomReading("tx_power", 1, tx, TX),
            DomReading("rx_power", 1, rx, RX),
        ),
    )


def end(
    name: str,
    counters: LinkDelta | Unreadable | None = None,
    optics: ModuleOptics | Unreadable | None = None,
) -> WireEnd:
    return WireEnd(
        name, grew() if counters is None else counters, optic() if optics is None else optics, LIMITS
    )


def test_both_ends_clean_pass_and_name_what_was_judged() -> None:
    found = judge_cable(LINK, end(HOST), end(PORT))
    assert found.status is Status.PASS and found.check == HEALTH
    assert found.subject == "gpu01:mlx5_0 <-> leaf01:swp1"
    assert "gpu01:mlx5_0 errors" in found.actual and "leaf01:swp1 optics" in found.actual


def test_receive_errors_at_the_switch_with_a_clean_host_blame_the_cable_or_the_hosts_optic() -> None:
    found = judge_cable(LINK, end(HOST), end(PORT, grew(fcs_errors=8123)))
    assert found.status is Status.FAIL
    assert "leaf01:swp1: fcs_errors +8123 in 5 s" in found.actual
    assert "receive errors at leaf01:swp1 with a clean gpu01:mlx5_0" in found.hint
    assert "the TX side of gpu01:mlx5_0" in found.hint and "replace gpu01:mlx5_0's optic" in found.hint


def test_receive_errors_at_the_host_with_a_clean_switch_blame_the_cable_or_the_switch_ports_optic() -> None:
    found = judge_cable(LINK, end(HOST, grew(fec_uncorrectable=3)), end(PORT))
    assert found.status is Status.FAIL
    assert "receive errors at gpu01:mlx5_0 with a clean leaf01:swp1" in found.hint
    assert "replace leaf01:swp1's optic" in found.hint


def test_receive_errors_at_both_ends_blame_the_cable() -> None:
    found = judge_cable(LINK, end(HOST, grew(symbol_errors=5)), end(PORT, grew(fcs_errors=5)))
    assert found.status is Status.FAIL and "receive errors at both ends: the cable" in found.hint


def test_low_rx_power_with_normal_tx_at_the_other_end_blames_the_fibre() -> None:
    found = judge_cable(LINK, end(HOST, optics=optic(rx=-12.5)), end(PORT))
    assert found.status is Status.FAIL
    assert "low RX power at gpu01:mlx5_0 with normal TX power at leaf01:swp1: the fibre" in found.hint
    weak_tx = judge_cable(LINK, end(HOST, optics=optic(rx=-12.5)), end(PORT, optics=optic(tx=-11.0)))
    assert "replace leaf01:swp1's optic" in weak_tx.hint
    dac_far = judge_cable(
        LINK, end(HOST, optics=optic(rx=-12.5)), end(PORT, optics=ModuleOptics(True, False))
    )
    assert "TX power is not shown" in dac_far.hint


def test_a_hot_module_blames_that_ends_module() -> None:
    found = judge_cable(LINK, end(HOST), end(PORT, optics=optic(temperature=72.0)))
    assert found.status is Status.FAIL
    assert found.hint == "the module at leaf01:swp1 runs hot: check its airflow, reseat it, then replace it"


def test_flaps_blame_the_cable_and_both_ends() -> None:
    found = judge_cable(LINK, end(HOST, grew(link_down=2)), end(PORT))
    assert found.status is Status.FAIL
    assert "reseat the cable at both ends (gpu01:mlx5_0, leaf01:swp1)" in found.hint


def test_one_end_unreadable_is_an_error_unless_the_other_end_fails() -> None:
    missing = Unreadable("ethtool -S ens1np0", "exit 1")
    found = judge_cable(LINK, end(HOST, missing), end(PORT))
    assert found.status is Status.ERROR and "`ethtool -S ens1np0`" in found.actual
    assert judge_cable(LINK, end(HOST, missing), end(PORT, grew(fcs_errors=1))).status is Status.FAIL


def test_no_wire_data_at_either_end_is_a_named_skip_and_one_end_enough_to_judge() -> None:
    dark = WireEnd(PORT, None, None, LIMITS)
    dac = WireEnd(HOST, None, ModuleOptics(True, False, "DAC"), LIMITS)
    found = judge_cable(LINK, dac, dark)
    assert found.status is Status.SKIP and "neither end shows any wire data" in found.actual
    assert "leaf01:swp1 shows no wire counters" in found.actual
    assert judge_cable(LINK, end(HOST), dark).status is Status.PASS


def test_every_cable_gets_one_finding_with_its_ends_and_an_unread_end_says_why() -> None:
    other = Link("gpu02", "mlx5_0", "leaf01", "swp2")
    fabric = Fabric((), (LINK, other))
    findings = check_link_health(
        fabric, {("gpu01", "mlx5_0"): end(HOST)}, {("leaf01", "swp1"): end(PORT)}, {"gpu02": "ssh refused"}
    )
    assert [(f.subject, f.status) for f in findings] == [
        ("gpu01:mlx5_0 <-> leaf01:swp1", Status.PASS),
        ("gpu02:mlx5_0 <-> leaf01:swp2", Status.ERROR),
    ]
    assert findings[0].where == Where("gpu01", "mlx5_0", "leaf01:swp1")
    assert findings[1].hint == "host gpu02 did not report mlx5_0 (ssh refused)"


def test_the_link_stage_reads_a_switch_ports_wire_as_shown_absent_or_unread() -> None:
    """fabcheck.gate.link_stage: a platform without the views gives no data (a skip at that end), a port
    whose view is missing is Unreadable naming the view, a switch that was not read has no end at all."""
    port = Link("gpu01", "mlx5_0", "leaf01", "swp1")
    plan = SimpleNamespace(
        fabric=Fabric((), (port,)),
        desired=SimpleNamespace(switches={"leaf01": SimpleNamespace(link_health=LIMITS)}),
    )
    both = frozenset({LinkDelta, ModuleOptics})
    shown = SwitchEvidence(
        "leaf01", "eos", {(LinkDelta, "swp1"): grew(), (ModuleOptics, "swp1"): optic()}, both
    )  # type: ignore[dict-item]
    ends = switch_wire_ends([shown], plan)  # type: ignore[arg-type]
    assert ends[("leaf01", "swp1")].counters == grew() and ends[("leaf01", "swp1")].optics == optic()
    blind = switch_wire_ends([SwitchEvidence("leaf01", "nvue", {}, frozenset())], plan)  # type: ignore[arg-type]
    assert blind[("leaf01", "swp1")].counters is None and blind[("leaf01", "swp1")].optics is None
    lost = switch_wire_ends([SwitchEvidence("leaf01", "sonic", {}, both)], plan)[("leaf01", "swp1")]  # type: ignore[arg-type]
    assert isinstance(lost.counters, Unreadable) and "the LinkDelta view of swp1" in lost.counters.command
    assert judge_cable(port, end(HOST), lost).status is Status.ERROR
    gone = SwitchEvidence("leaf01", "eos", {}, both, unreachable="connection refused")
    assert switch_wire_ends([gone], plan) == {}  # type: ignore[arg-type]


def test_the_link_stage_reads_each_host_nics_wire_through_its_evidence() -> None:
    """fabcheck.gate.link_stage: the host end of each cable is its RoCE netdev's HostEvidence.wire, with
    the desired host's limits; a port without a module EEPROM has no optics at that end (a skip there)."""
    sections = healthy_sections()
    sections["module:ens2np0"] = Section(1, "", "Cannot get module EEPROM information: No such device\n")
    result = hostgate.judge(HostCollection("gpu01", sections, complete=True, priority=3), INTENT)
    tight = FabricIntent(rails=INTENT.rails, link_health=LIMITS.model_copy(update={"flaps_allowed": 0}))
    plan = SimpleNamespace(desired=SimpleNamespace(hosts={"gpu01": hostgate.desired_host(tight, "gpu01")}))
    ends = host_wire_ends([result], plan)  # type: ignore[arg-type]
    assert set(ends) == {("gpu01", "mlx5_0"), ("gpu01", "mlx5_1")}
    first, second = ends[("gpu01", "mlx5_0")], ends[("gpu01", "mlx5_1")]
    assert first.name == "gpu01:mlx5_0" and first.limits.flaps_allowed == 0
    assert isinstance(first.counters, LinkDelta) and first.counters.window_s == 5
    assert isinstance(first.optics, ModuleOptics) and second.optics is None
    found = judge_cable(Link("gpu01", "mlx5_1", "leaf01", "swp2"), second, end(PORT))
    # the real mlx5 sample counted one link-down since its clear: over an allowance of 0
    assert (
        found.status is Status.FAIL
        and "link_down_events_phy 1 since the last clear (allowed 0)" in found.actual
    )
