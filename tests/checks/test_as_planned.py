"""Built vs planned (issue 39): link.lldp names a swapped pair of host cables with where each belongs,
and the run's summaries link.as_planned (host cables as link.lldp judged them + switch cables as
link.switch_lldp judged them) and ib.as_planned (every cable as ib.topology judges it) count the
cables as planned, missing, miswired (swapped pairs) and extra. The host fabric is the switch gate's
(tests/checks/switchfabric.py: gpu01's three NICs on one switch per platform, LLDP replayed from the
captured outputs); the IB fabric is tests/checks/ibfabric.py's; the Ethernet switch fabric is
tests/checks/test_uplink_lldp.py's, run through the link stage itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from switchfabric import SWITCHES, desired, fabric, intent, replayed

from fabcheck.checks import as_planned, link
from fabcheck.checks.as_planned import host_tally, ib_summary, link_summary, switch_tally
from fabcheck.checks.host import Unreadable
from fabcheck.checks.link import NicEnd, check_links, host_hearing
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.checks.uplinks import State, check_switch_links
from fabcheck.desired.nic import desired_nic
from fabcheck.gate.link_stage import STAGE as LINK_STAGE
from fabcheck.intent.fabric import SwitchLink
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.switch_eos import parse_interfaces
from fabcheck.parsers.switch_lldp import parse_eos_lldp
from fabcheck.parsers.switch_records import LldpNeighbor, PortSpeed
from tests.checks import test_uplink_lldp as uplinks
from tests.checks.ibfabric import UPLINKS, Shown
from tests.checks.ibfabric import desired as ib_desired
from tests.checks.test_link_checks import MLNX_QOS

NICS = {link_.nic: link_ for link_ in fabric().links}


def nic_end(nic: str) -> NicEnd:
    netdev = f"ens{int(nic.removeprefix('mlx5_')) + 1}np0"  # what the captured LLDP neighbours send
    return NicEnd.of("gpu01", nic, parse_mlnx_qos(MLNX_QOS), 9000, netdev)


def heard(
    changes: dict[tuple[str, str], LldpNeighbor | None],
    speeds: dict[tuple[str, str], PortSpeed] | None = None,
) -> dict[str, SwitchEvidence]:
    """The converged switches with some ports' LLDP neighbours replaced (None: the port hears nobody),
    and some ports' trained rate (`speeds`)."""
    switches = {name: replayed("converged", name) for name in SWITCHES}
    for (name, port), record in changes.items():
        records = dict(switches[name].records)
        records.pop((LldpNeighbor, port), None)
        if record is not None:
            records[(LldpNeighbor, port)] = record
        switches[name] = replace(switches[name], records=records)
    for (name, port), speed in (speeds or {}).items():
        switches[name] = replace(switches[name], records={**switches[name].records, (PortSpeed, port): speed})
    return switches


def host_run(
    changes: dict[tuple[str, str], LldpNeighbor | None],
    speeds: dict[tuple[str, str], PortSpeed] | None = None,
) -> tuple[list[Finding], Finding]:
    """link.lldp over gpu01's cables, and the summary over them (no switch cables planned)."""
    switches = heard(changes, speeds)
    nics = {("gpu01", nic): nic_end(nic) for nic in NICS}
    findings = check_links(
        fabric(),
        nics,
        {("gpu01", nic): desired_nic(intent(), "gpu01", nic) for nic in NICS},
        switches,
        {name: desired(name) for name in SWITCHES},
    )
    tally = host_tally(fabric(), findings, host_hearing(fabric(), nics, switches))
    return [f for f in findings if f.check == link.LLDP], link_summary(tally, switch_tally([], []))


def test_every_host_cable_heard_as_planned_passes_the_summary() -> None:
    lldp, summary = host_run({})
    assert {f.status for f in lldp} == {Status.PASS}
    assert summary.check == as_planned.LINK_AS_PLANNED and summary.status is Status.PASS
    assert summary.actual == (
        "3 of 3 planned cables as planned: 0 missing, 0 miswired, 0 extra (host cables 3 of 3)"
    )


def test_two_swapped_host_cables_are_named_with_where_each_belongs() -> None:
    """gpu01's mlx5_0 and mlx5_1 cables swapped: leaf01:swp1 hears mlx5_1's ens2np0, leaf02:Ethernet0
    hears mlx5_0's ens1np0."""
    lldp, summary = host_run(
        {
            ("leaf01", "swp1"): LldpNeighbor("gpu01", "ens2np0"),
            ("leaf02", "Ethernet0"): LldpNeighbor("gpu01", "ens1np0"),
        }
    )
    bad = {f.subject: f for f in lldp if f.status is Status.FAIL}
    assert set(bad) == {"gpu01:mlx5_0 <-> leaf01:swp1", "gpu01:mlx5_1 <-> leaf02:Ethernet0"}
    first = bad["gpu01:mlx5_0 <-> leaf01:swp1"]
    assert first.actual == (
        "leaf01:swp1 hears gpu01 ens2np0: swapped with gpu01:mlx5_1 <-> leaf02:Ethernet0, "
        "where leaf02:Ethernet0 hears gpu01"
    )
    assert first.hint == (
        "swap the cables at leaf01:swp1 and leaf02:Ethernet0: gpu01:mlx5_0 belongs on leaf01:swp1 and "
        "gpu01:mlx5_1 on leaf02:Ethernet0, as fabric_links plans"
    )
    assert summary.status is Status.FAIL
    assert summary.actual.startswith(
        "1 of 3 planned cables as planned: 0 missing, 2 miswired (1 swapped pairs), 0 extra"
    )


def test_a_miswire_that_is_no_swap_keeps_its_own_words() -> None:
    lldp, summary = host_run({("leaf01", "swp1"): LldpNeighbor("gpu07", "ens5np0")})
    [bad] = [f for f in lldp if f.status is Status.FAIL]
    assert bad.actual == "leaf01:swp1 hears gpu07 ens5np0" and "swapped" not in bad.hint
    assert summary.actual.startswith("2 of 3 planned cables as planned: 0 missing, 1 miswired, 0 extra")


def test_a_silent_host_port_is_a_named_skip_of_the_summary_and_a_stray_one_extra() -> None:
    _lldp, silent = host_run({("leaf01", "swp1"): None})
    assert silent.status is Status.SKIP
    assert silent.actual.startswith(
        "2 of 3 planned cables as planned: 0 missing, 0 miswired, 0 extra, 1 not proved"
    )
    assert "lldpd" in silent.actual
    _lldp, stray = host_run({("leaf02", "Ethernet8"): LldpNeighbor("gpu01", "ens8np0")})
    assert stray.status is Status.FAIL
    assert stray.actual.startswith("3 of 3 planned cables as planned: 0 missing, 0 miswired, 1 extra")


REAL_EOS = Path(__file__).resolve().parents[1] / "data" / "real" / "eos"


def real_mac_port_ids() -> list[str]:
    """napalm's real EOS `show lldp neighbors | json` (tests/data/real/eos/INDEX.tsv): Ethernet1 and
    Ethernet2 hear one host, precise64, whose lldpd sends each NIC's MAC as its port id."""
    text = (REAL_EOS / "show-lldp-neighbors-json-napalm.json").read_text()
    shown = {port: record for port, record in parse_eos_lldp(text) if isinstance(record, LldpNeighbor)}
    assert {(p, r.system) for p, r in shown.items()} == {
        ("Ethernet1", "precise64"),
        ("Ethernet2", "precise64"),
    }
    assert all(link.MAC.fullmatch(r.port) for r in shown.values())
    return [shown["Ethernet1"].port, shown["Ethernet2"].port]


def test_host_cables_heard_by_mac_port_ids_pass_link_lldp_but_the_summary_does_not_count_them() -> None:
    """A MAC port id proves the host, not which NIC: gpu01's mlx5_0 and mlx5_1 cables swapped between
    leaf01 and leaf02 read exactly as the cables as planned, so neither is counted as planned."""
    first, second = real_mac_port_ids()
    planned = {
        ("leaf01", "swp1"): LldpNeighbor("gpu01", first),
        ("leaf02", "Ethernet0"): LldpNeighbor("gpu01", second),
    }
    swapped = {
        ("leaf01", "swp1"): LldpNeighbor("gpu01", second),
        ("leaf02", "Ethernet0"): LldpNeighbor("gpu01", first),
    }
    for changes in (planned, swapped):
        lldp, summary = host_run(changes)
        assert {f.status for f in lldp} == {Status.PASS}  # link.lldp's verdict stays: the host is right
        assert summary.status is Status.SKIP
        assert summary.actual.startswith(
            "1 of 3 planned cables as planned: 0 missing, 0 miswired, 0 extra, 2 not proved"
        )
        assert "portidsubtype ifname" in summary.actual


def test_a_pulled_host_cable_on_a_port_the_switch_shows_down_is_missing() -> None:
    """leaf03 (EOS) shows Ethernet1 as napalm's real `show interfaces | json` shows a pulled cable
    (notconnect, line protocol down: trained at no rate) and hears nobody there: gpu01:mlx5_2's cable is
    missing, link.lldp and the summary fail. Up and silent, it stays a named skip (no lldpd on the host)."""
    text = (REAL_EOS / "show-interfaces-json-napalm-notconnect.json").read_text()
    [down] = [r for port, r in parse_interfaces(text) if port == "Ethernet1" and isinstance(r, PortSpeed)]
    assert down == PortSpeed(0)
    lldp, summary = host_run({("leaf03", "Ethernet1"): None}, {("leaf03", "Ethernet1"): down})
    [bad] = [f for f in lldp if f.status is not Status.PASS]
    assert bad.status is Status.FAIL and bad.subject == "gpu01:mlx5_2 <-> leaf03:Ethernet1"
    assert bad.actual == "leaf03:Ethernet1 is down and hears no LLDP neighbour"
    assert summary.status is Status.FAIL
    assert summary.actual.startswith("2 of 3 planned cables as planned: 1 missing, 0 miswired, 0 extra")
    _lldp, up = host_run({("leaf03", "Ethernet1"): None})  # the converged port: up at 400G
    assert up.status is Status.SKIP and up.actual.startswith(
        "2 of 3 planned cables as planned: 0 missing, 0 miswired, 0 extra, 1 not proved"
    )


def stage_run(heard_at: uplinks.Heard) -> dict[str, tuple[Finding, ...]]:
    """The link stage itself over the two-leaf, two-spine Ethernet fabric (switch cables only)."""
    built = uplinks.fabric()
    shown = uplinks.evidence(heard_at)
    plan = SimpleNamespace(fabric=built, hosts=(), switches=tuple(shown), cabled=frozenset())
    context: Any = SimpleNamespace(
        plan=plan, hosts=(), switches=[SimpleNamespace(switch=n, evidence=e) for n, e in shown.items()]
    )
    outcome = LINK_STAGE.run(context)
    return {node.node: node.findings for node in outcome.nodes}


def test_the_link_stage_judges_switch_cables_and_files_the_summary_at_the_top_tier() -> None:
    nodes = stage_run(uplinks.as_cabled())
    assert {n: [f.check for f in fs] for n, fs in nodes.items()} == {
        "leaf-01": ["link.switch_lldp", "link.switch_lldp"],
        "leaf-02": ["link.switch_lldp", "link.switch_lldp"],
        "spine-01": ["link.as_planned"],
    }
    [summary] = nodes["spine-01"]
    assert summary.status is Status.PASS
    assert summary.actual == (
        "4 of 4 planned cables as planned: 0 missing, 0 miswired, 0 extra (switch cables 4 of 4)"
    )


def test_the_link_stage_fails_a_swapped_uplink_pair_and_its_summary() -> None:
    cables = uplinks.CABLES
    crossed = (
        uplinks.SwitchLink("leaf-01", "swp33", "spine-02", "swp1"),
        uplinks.SwitchLink("leaf-01", "swp34", "spine-01", "swp1"),
        *cables[2:],
    )
    nodes = stage_run(uplinks.as_cabled(crossed))
    failing = {(n, f.check, f.subject) for n, fs in nodes.items() for f in fs if f.status is Status.FAIL}
    assert failing == {
        ("leaf-01", "link.switch_lldp", cables[0].label),
        ("leaf-01", "link.switch_lldp", cables[1].label),
        ("spine-01", "link.as_planned", "the cabling map (fabric_links)"),
    }
    [summary] = nodes["spine-01"]
    assert summary.actual.startswith(
        "2 of 4 planned cables as planned: 0 missing, 2 miswired (1 swapped pairs)"
    )


# ---- ib.as_planned --------------------------------------------------------------------------------


def test_ib_summary_counts_each_cable_as_ib_topology_judges_it() -> None:
    healthy = ib_summary(Shown().evidence(), ib_desired())
    assert healthy.check == as_planned.IB_AS_PLANNED and healthy.status is Status.PASS
    assert healthy.actual == "8 of 8 planned cables as planned: 0 missing, 0 miswired, 0 extra"
    swapped = Shown()
    swapped.swap_at_upper(UPLINKS[0], UPLINKS[2])
    found = ib_summary(swapped.evidence(), ib_desired())
    assert found.status is Status.FAIL
    assert (
        found.actual == "6 of 8 planned cables as planned: 0 missing, 2 miswired (1 swapped pairs), 0 extra"
    )
    missing = Shown()
    del missing.cables[UPLINKS[3]]
    missing.down += list(UPLINKS[3])
    assert ib_summary(missing.evidence(), ib_desired()).actual == (
        "7 of 8 planned cables as planned: 1 missing, 0 miswired, 0 extra"
    )
    extra = Shown()
    extra.cables[(("leaf02", 20), ("spine02", 20))] = (("4x", "NDR"), ("4x", "NDR"))
    judged = ib_summary(extra.evidence(), ib_desired())
    assert judged.status is Status.FAIL
    assert judged.actual == "8 of 8 planned cables as planned: 0 missing, 0 miswired, 1 extra"


def test_ib_summary_of_an_unread_fabric_is_an_error_never_a_pass() -> None:
    evidence = replace(Shown().evidence(), topology=Unreadable("ibnetdiscover -p", "exit 1: umad"))
    found = ib_summary(evidence, ib_desired())
    assert found.status is Status.ERROR
    assert found.actual == (
        "0 of 8 planned cables as planned: 0 missing, 0 miswired, 0 extra, 8 not read: "
        "`ibnetdiscover -p`: exit 1: umad"
    )


def test_an_uplink_hearing_a_host_is_one_miswired_switch_cable_not_also_an_extra_host_cable() -> None:
    """leaf01:swp4 (switchfabric's uplink) planned to a spine hears gpu01: link.switch_lldp fails that
    cable; link.lldp does not report the port again as a host cable the map lacks."""
    planned = replace(fabric(), switch_links=(SwitchLink("leaf01", "swp4", "leaf02", "Ethernet12"),))
    switches = heard({("leaf01", "swp4"): LldpNeighbor("gpu01", "ens9np0")})
    nics = {("gpu01", nic): nic_end(nic) for nic in NICS}
    findings = check_links(
        planned,
        nics,
        {("gpu01", nic): desired_nic(intent(), "gpu01", nic) for nic in NICS},
        switches,
        {name: desired(name) for name in SWITCHES},
    )
    assert not [f for f in findings if f.check == link.LLDP and f.subject == "leaf01:swp4"]
    [judged] = check_switch_links(planned, switches)
    assert judged.state is State.MISWIRED and "leaf01:swp4 hears gpu01 ens9np0" in judged.finding.actual
