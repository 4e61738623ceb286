"""link.switch_lldp (issue 39): each planned switch-to-switch cable judged from both switches' LLDP
records. A two-leaf, two-spine fabric built in process (Fabric.switch_links given directly), each
port's LLDP neighbour set per test; one test replays the real `nv show interface lldp` sample
(tests/data/real/nvue/nv-show-interface-lldp.txt, INDEX row: switches hearing a switch `cumulus`)."""

from __future__ import annotations

from pathlib import Path

from fabcheck.checks.as_planned import Tally, link_summary, switch_tally
from fabcheck.checks.model import Status
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.checks.uplinks import SWITCH_LLDP, Judged, State, check_switch_links, extra_switch_cables
from fabcheck.intent.fabric import Fabric, Switch, SwitchLink
from fabcheck.parsers.switch_lldp import parse_nvue_lldp
from fabcheck.parsers.switch_records import LldpNeighbor, Mtu

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "nvue" / "nv-show-interface-lldp.txt"

UPLINKS = {"leaf-01": ("swp33", "swp34", "swp35"), "leaf-02": ("swp33", "swp34", "swp35")}
DOWNLINKS = {"spine-01": ("swp1", "swp2", "swp3"), "spine-02": ("swp1", "swp2", "swp3")}
CABLES = (
    SwitchLink("leaf-01", "swp33", "spine-01", "swp1"),
    SwitchLink("leaf-01", "swp34", "spine-02", "swp1"),
    SwitchLink("leaf-02", "swp33", "spine-01", "swp2"),
    SwitchLink("leaf-02", "swp34", "spine-02", "swp2"),
)


def switch(name: str, uplinks: tuple[str, ...], tier: str = "leaf") -> Switch:
    return Switch(name, "nvue", "cumulus_nvue", "192.0.2.1", 22, "admin", (), uplinks, (), tier)


def fabric(cables: tuple[SwitchLink, ...] = CABLES) -> Fabric:
    switches = [switch(n, p) for n, p in UPLINKS.items()] + [
        switch(n, p, "spine") for n, p in DOWNLINKS.items()
    ]
    return Fabric(tuple(switches), (), switch_links=cables)


Heard = dict[tuple[str, str], tuple[str, str] | None]


def as_cabled(cables: tuple[SwitchLink, ...] = CABLES) -> Heard:
    """What each port hears when the cables run as given: both ends name each other."""
    heard: Heard = {}
    for cable in cables:
        heard[(cable.a_switch, cable.a_port)] = (cable.b_switch, cable.b_port)
        heard[(cable.b_switch, cable.b_port)] = (cable.a_switch, cable.a_port)
    return heard


def evidence(
    heard: Heard, provided: frozenset[type] = frozenset({LldpNeighbor, Mtu})
) -> dict[str, SwitchEvidence]:
    records: dict[str, dict[tuple[type, str | None], object]] = {n: {} for n in [*UPLINKS, *DOWNLINKS]}
    for (name, port), neighbour in heard.items():
        if neighbour is not None:
            records[name][(LldpNeighbor, port)] = LldpNeighbor(*neighbour)
    return {name: SwitchEvidence(name, "nvue", found, provided) for name, found in records.items()}  # type: ignore[arg-type]


def judged(heard: Heard, **switches: SwitchEvidence) -> dict[str, Judged]:
    shown = evidence(heard) | switches
    return {j.cable.label: j for j in check_switch_links(fabric(), shown)}


def test_every_cable_heard_at_both_ends_passes_and_the_tally_is_complete() -> None:
    results = check_switch_links(fabric(), evidence(as_cabled()))
    assert [j.finding.status for j in results] == [Status.PASS] * 4
    first = results[0].finding
    assert first.check == SWITCH_LLDP and first.subject == "leaf-01:swp33 -- spine-01:swp1"
    assert first.actual == "leaf-01:swp33 hears spine-01 swp1; spine-01:swp1 hears leaf-01 swp33"
    assert first.where is not None and (first.where.node, first.where.part) == ("leaf-01", "swp33")
    assert (
        switch_tally(results, []).line == "4 of 4 planned cables as planned: 0 missing, 0 miswired, 0 extra"
    )


def test_two_uplinks_swapped_on_a_leaf_are_named_with_where_each_belongs() -> None:
    """leaf-01's swp33 and swp34 cables swapped: swp33 reaches spine-02, swp34 reaches spine-01."""
    crossed = (
        SwitchLink("leaf-01", "swp33", "spine-02", "swp1"),
        SwitchLink("leaf-01", "swp34", "spine-01", "swp1"),
        *CABLES[2:],
    )
    results = check_switch_links(fabric(), evidence(as_cabled(crossed)))
    bad = {j.cable.label: j for j in results if j.finding.status is not Status.PASS}
    assert set(bad) == {CABLES[0].label, CABLES[1].label}
    first = bad[CABLES[0].label]
    assert first.state is State.MISWIRED and first.swapped_with == CABLES[1]
    assert first.finding.actual == (
        "swapped with leaf-01:swp34 -- spine-02:swp1: leaf-01:swp33 reaches spine-02:swp1, "
        "leaf-01:swp34 reaches spine-01:swp1"
    )
    assert first.finding.hint.startswith(
        "swap the cables at leaf-01:swp33 and leaf-01:swp34: leaf-01:swp33 belongs to spine-01:swp1 "
        "and leaf-01:swp34 to spine-02:swp1"
    )
    assert switch_tally(results, []).line == (
        "2 of 4 planned cables as planned: 0 missing, 2 miswired (1 swapped pairs), 0 extra"
    )


def test_a_cable_neither_end_hears_is_missing() -> None:
    heard = as_cabled() | {("leaf-02", "swp34"): None, ("spine-02", "swp2"): None}
    result = judged(heard)[CABLES[3].label]
    assert result.state is State.MISSING and result.finding.status is Status.FAIL
    assert result.finding.actual.startswith("no link: leaf-02:swp34 hears no LLDP neighbour")
    assert "plug (or reseat) the cable between leaf-02:swp34 and spine-02:swp2" in result.finding.hint


def test_a_cable_to_the_wrong_port_is_miswired_naming_what_each_end_hears() -> None:
    # leaf-02:swp33 lands on spine-01:swp3 (no cable planned there) instead of spine-01:swp2.
    heard = as_cabled() | {
        ("leaf-02", "swp33"): ("spine-01", "swp3"),
        ("spine-01", "swp3"): ("leaf-02", "swp33"),
        ("spine-01", "swp2"): None,
    }
    shown = evidence(heard)
    results = {j.cable.label: j for j in check_switch_links(fabric(), shown)}
    wrong = results[CABLES[2].label]
    assert wrong.state is State.MISWIRED and wrong.swapped_with is None
    assert wrong.finding.actual == "miswired: leaf-02:swp33 hears spine-01 swp3"
    assert wrong.finding.hint.startswith("move the cable so that leaf-02:swp33 reaches spine-01:swp2")
    # spine-01:swp3 is that same cable: not counted again as an extra one.
    assert extra_switch_cables(fabric(), shown, list(results.values())) == []


def test_a_cable_the_plan_does_not_have_is_extra_once() -> None:
    heard = as_cabled() | {
        ("leaf-01", "swp35"): ("spine-02", "swp3"),
        ("spine-02", "swp3"): ("leaf-01", "swp35"),
    }
    shown = evidence(heard)
    results = check_switch_links(fabric(), shown)
    extras = extra_switch_cables(fabric(), shown, results)
    assert [(f.subject, f.status, f.actual) for f in extras] == [
        ("leaf-01:swp35", Status.FAIL, "leaf-01:swp35 hears spine-02 swp3")
    ]
    assert "fabric_links" in extras[0].hint
    assert (
        switch_tally(results, extras).line
        == "4 of 4 planned cables as planned: 0 missing, 0 miswired, 1 extra"
    )


def test_an_unread_switch_is_an_error_and_a_platform_without_lldp_a_named_skip() -> None:
    unread = SwitchEvidence("spine-01", "nvue", {}, frozenset({LldpNeighbor}), unreachable="timed out")
    results = judged(as_cabled(), **{"spine-01": unread})
    first = results[CABLES[0].label]
    assert (
        first.finding.status is Status.ERROR and "spine-01 was not read (timed out)" in first.finding.actual
    )
    assert first.state is State.NOT_PROVED
    blind = {name: SwitchEvidence(name, "nvue", {}, frozenset({Mtu})) for name in [*UPLINKS, *DOWNLINKS]}
    skipped = check_switch_links(fabric(), blind)
    assert {j.finding.status for j in skipped} == {Status.SKIP}
    assert "shows no LLDP" in skipped[0].finding.actual
    assert switch_tally(skipped, []).line.endswith("4 not proved")


def test_one_silent_end_fails_the_cable_and_the_summary_counts_it_missing() -> None:
    heard = as_cabled() | {("spine-02", "swp1"): None}
    result = judged(heard)[CABLES[1].label]
    assert result.finding.status is Status.FAIL and result.state is State.MISSING
    assert "enable LLDP" in result.finding.hint and "spine-02:swp1" in result.finding.hint
    summary = link_summary(Tally(), switch_tally(list(judged(heard).values()), []))
    assert summary.status is Status.FAIL
    assert summary.actual.startswith("3 of 4 planned cables as planned: 1 missing, 0 miswired, 0 extra")


def test_the_summary_fails_whenever_a_cable_check_fails() -> None:
    """Each way one cable's ends can be heard (silent, the planned end, a wrong end, unread, several
    neighbours): wherever link.switch_lldp fails a cable, the summary fails too, and a cable whose
    check fails is counted missing or miswired, never unproved."""
    unread = SwitchEvidence("spine-02", "nvue", {}, frozenset({LldpNeighbor}), unreachable="timed out")
    several = SwitchEvidence(
        "spine-02",
        "nvue",
        {(LldpNeighbor, "swp1"): LldpNeighbor("leaf-01", "swp34", (("leaf-02", "swp35"),))},
        frozenset({LldpNeighbor}),
    )
    ways: list[tuple[Heard, dict[str, SwitchEvidence]]] = [
        (as_cabled() | {end: None}, {}) for end in [("leaf-01", "swp34"), ("spine-02", "swp1")]
    ]
    ways += [(as_cabled() | {("leaf-01", "swp34"): ("spine-01", "swp3")}, {})]
    ways += [(as_cabled() | {("leaf-01", "swp34"): None}, {"spine-02": unread})]
    ways += [(as_cabled() | {("leaf-01", "swp34"): None}, {"spine-02": several})]
    ways += [({("leaf-01", "swp34"): None, ("spine-02", "swp1"): None}, {})]
    for heard, shown in ways:
        results = list(judged(heard, **shown).values())
        for result in results:
            if result.finding.status is Status.FAIL:
                assert result.state in (State.MISSING, State.MISWIRED), result
        summary = link_summary(Tally(), switch_tally(results, []))
        if any(r.finding.status is Status.FAIL for r in results):
            assert summary.status is Status.FAIL, (heard, summary)
        else:
            assert summary.status is not Status.PASS, (heard, summary)


def test_the_real_nvue_table_proves_a_cable_and_names_a_second_port_hearing_the_same_switch() -> None:
    """The real `nv show interface lldp` (Cumulus Linux 5.16): swp1 and swp2 both hear host `cumulus`
    port swp1. Planned: this switch's swp1 to cumulus:swp1. swp1 proves it (with cumulus hearing swp1
    back); swp2 hearing the same name and port is a second cable the plan does not have."""
    records = {
        (LldpNeighbor, port): record for port, record in parse_nvue_lldp(REAL.read_text(), source=str(REAL))
    }
    assert records[(LldpNeighbor, "swp2")] == LldpNeighbor("cumulus", "swp1")
    planned = (SwitchLink("leaf-01", "swp1", "cumulus", "swp1"),)
    built = Fabric(
        (switch("leaf-01", ("swp1", "swp2", "swp65")), switch("cumulus", ("swp1",))), (), switch_links=planned
    )
    shown = {
        "leaf-01": SwitchEvidence("leaf-01", "nvue", records, frozenset({LldpNeighbor})),  # type: ignore[arg-type]
        "cumulus": SwitchEvidence(
            "cumulus",
            "nvue",
            {(LldpNeighbor, "swp1"): LldpNeighbor("leaf-01", "swp1")},
            frozenset({LldpNeighbor}),
        ),
    }
    results = check_switch_links(built, shown)
    assert [j.finding.status for j in results] == [Status.PASS]
    extras = extra_switch_cables(built, shown, results)
    assert [(f.subject, f.actual) for f in extras] == [
        (
            "leaf-01:swp2",
            "leaf-01:swp2 hears cumulus swp1, which already answers on its planned cable "
            "leaf-01:swp1 -- cumulus:swp1",
        )
    ]
    assert "host name" in extras[0].hint
    # swp65 hears a host (`ubuntu`, a MAC port id): no switch of the plan, not a switch cable.


def test_a_sonic_neighbour_sends_its_alias_and_proves_the_switch_only() -> None:
    """SONiC's lldpmgrd sends the port's CONFIG_DB alias as the LLDP port id (`lldpcli configure ports
    <name> lldp portidsubtype local <alias>`, sonic-net/sonic-buildimage:dockers/docker-lldp/lldpmgrd@
    086b03bd70f9e211aaaf5f6aefe0790b508d2a94): a leaf hearing `spine-01 etp1` for spine-01:Ethernet0
    proves the cable by the switch name; hearing the other spine is still a miswire."""
    planned = (SwitchLink("leaf-01", "swp33", "spine-01", "Ethernet0"),)
    spine = Switch("spine-01", "sonic", "sonic", "192.0.2.2", 22, "admin", (), ("Ethernet0",), (), "spine")
    other = Switch("spine-02", "sonic", "sonic", "192.0.2.3", 22, "admin", (), ("Ethernet0",), (), "spine")
    built = Fabric((switch("leaf-01", ("swp33",)), spine, other), (), switch_links=planned)

    def shown(at_leaf: tuple[str, str]) -> dict[str, SwitchEvidence]:
        return {
            "leaf-01": SwitchEvidence(
                "leaf-01",
                "nvue",
                {(LldpNeighbor, "swp33"): LldpNeighbor(*at_leaf)},
                frozenset({LldpNeighbor}),
            ),
            "spine-01": SwitchEvidence(
                "spine-01",
                "sonic",
                {(LldpNeighbor, "Ethernet0"): LldpNeighbor("leaf-01", "swp33")},
                frozenset({LldpNeighbor}),
            ),
        }

    [proved] = check_switch_links(built, shown(("spine-01", "etp1")))
    assert proved.finding.status is Status.PASS
    [wrong] = check_switch_links(built, shown(("spine-02", "etp1")))
    assert (
        wrong.state is State.MISWIRED
        and wrong.finding.actual == "miswired: leaf-01:swp33 hears spine-02 etp1"
    )
