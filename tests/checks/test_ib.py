"""ib checks as tables: (what the reader's infiniband-diags showed, the planned fabric) -> findings.

The fabric (tests/checks/ibfabric.py): gpu01..04 on leaf01/leaf02 ports 1-2, each leaf's ports 3 and 4
up to spine01 and spine02. Each case changes one thing and must fail exactly its check on exactly the
cable or node it concerns, named by both ends; the rest keeps passing.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from fabcheck.checks.host import Unreadable
from fabcheck.checks.ib import ERRORS, IB_CHECKS, LINK, TOPOLOGY, check_ib_fabric
from fabcheck.checks.ib_nodes import FIRMWARE, GUIDS
from fabcheck.checks.model import Finding, Status, Where
from fabcheck.parsers.ib_records import IbPortEnd, IbPortSeen, IbSwitchFirmware, IbTopology
from tests.checks.ibfabric import HOST_CABLES, SWITCHES, UPLINKS, Shown, desired, end, guid, lid, record

UP = UPLINKS[0]  # leaf01/3 <-> spine01/1


def run(shown: Shown, **changes: object) -> dict[str, list[Finding]]:
    return check_ib_fabric(shown.evidence(), desired(**changes))


def flat(results: dict[str, list[Finding]]) -> list[tuple[str, Finding]]:
    return [(node, finding) for node, findings in results.items() for finding in findings]


def bad(results: dict[str, list[Finding]]) -> list[tuple[str, Finding]]:
    return [(node, f) for node, f in flat(results) if f.status is not Status.PASS]


def test_healthy_fabric_passes_every_cable_and_node_with_what_was_judged() -> None:
    results = run(Shown())
    assert bad(results) == []
    cables = len(HOST_CABLES) + len(UPLINKS)
    for check in (TOPOLOGY, LINK, ERRORS):
        assert sum(f.check == check for _, f in flat(results)) == cables
    assert sum(f.check == GUIDS for _, f in flat(results)) == len(SWITCHES) + 4
    assert sum(f.check == FIRMWARE for _, f in flat(results)) == len(SWITCHES)
    assert all(f.expected and f.actual for _, f in flat(results))
    link = next(f for f in results["leaf01"] if f.check == LINK and f.subject == "leaf01/3 ↔ spine01/1")
    assert link.actual == "runs 4x NDR" and link.where == Where("leaf01", "3", "spine01/1")
    assert link.measure is not None and link.measure.value == link.measure.expected == 400.0
    host = next(f for f in results["leaf01"] if f.check == TOPOLOGY and f.subject.startswith("gpu01"))
    assert host.subject == "gpu01/mlx5_0 ↔ leaf01/1" and host.where == Where("leaf01", "1", "gpu01/mlx5_0")
    assert set(results) == {*SWITCHES, "gpu01", "gpu02", "gpu03", "gpu04"}
    assert IB_CHECKS == (TOPOLOGY, LINK, ERRORS, GUIDS, FIRMWARE)


def test_link_trained_at_1x_fails_ib_link_on_that_cable_only() -> None:
    shown = Shown()
    shown.cables[UP] = (("1x", "NDR"), ("1x", "NDR"))
    (node, finding), *rest = bad(run(shown))
    assert rest == [] and node == "leaf01"
    assert (finding.check, finding.status, finding.actual) == (LINK, Status.FAIL, "runs 1x NDR")
    assert finding.where == Where("leaf01", "3", "spine01/1")
    assert "should be 4x NDR" in finding.hint and "port 3 of" in finding.hint
    assert "reseat or replace the cable or optic" in finding.hint
    assert finding.measure is not None and finding.measure.value == 100.0


def test_link_at_hdr_on_one_end_names_each_end() -> None:
    shown = Shown()
    shown.cables[UP] = (("4x", "HDR"), ("4x", "NDR"))
    [(_, finding)] = bad(run(shown))
    assert finding.check == LINK
    assert finding.actual == "leaf01/3 runs 4x HDR; spine01/1 runs 4x NDR"


def test_unknown_speed_at_both_ends_is_an_error_never_a_pass() -> None:
    shown = Shown()
    shown.cables[UP] = (("4x", None), (None, None))
    [(_, finding)] = bad(run(shown))
    assert (finding.check, finding.status) == (LINK, Status.ERROR)


def test_two_uplinks_swapped_at_a_spine_name_both_cables_and_the_swap() -> None:
    shown = Shown()
    first, second = UPLINKS[0], UPLINKS[2]  # leaf01/3 -> spine01/1, leaf02/3 -> spine01/2
    shown.swap_at_upper(first, second)
    results = run(shown)
    found = bad(results)
    topology = [(n, f) for n, f in found if f.check == TOPOLOGY]
    assert [n for n, _ in topology] == ["leaf01", "leaf02"]
    one, two = (f for _, f in topology)
    assert one.actual == (
        "swapped with leaf02/3 ↔ spine01/2: leaf01/3 reaches spine01/2, leaf02/3 reaches spine01/1"
    )
    assert two.actual == (
        "swapped with leaf01/3 ↔ spine01/1: leaf02/3 reaches spine01/1, leaf01/3 reaches spine01/2"
    )
    assert one.hint.startswith("swap the cables at spine01/2 and spine01/1")
    assert all(f.status is Status.FAIL for f in (one, two))
    # ib.link does not judge a cable that is not the planned one; nothing is reported as extra
    skips = [f for _, f in found if f.check == LINK]
    assert [f.status for f in skips] == [Status.SKIP, Status.SKIP]
    assert len(found) == 4


def test_miswired_cable_to_a_free_port_names_where_it_lands() -> None:
    shown = Shown()
    runs = shown.cables.pop(UP)
    shown.cables[(UP[0], ("spine01", 9))] = runs
    topology = [f for _, f in bad(run(shown)) if f.check == TOPOLOGY]
    assert [f.actual for f in topology] == ["miswired: leaf01/3 reaches spine01/9"]
    assert "leaf01/3 reaches spine01/1" in topology[0].hint


def test_missing_uplink_names_both_ends() -> None:
    shown = Shown()
    del shown.cables[UPLINKS[3]]
    shown.down += list(UPLINKS[3])  # both ports printed, down, no peer
    shown.deltas[UPLINKS[3][0]] = {"LinkDownedCounter": 1}  # went down inside the window: not judged
    found = bad(run(shown))
    assert [(n, f.check, f.status) for n, f in found] == [
        ("leaf02", TOPOLOGY, Status.FAIL),
        ("leaf02", LINK, Status.SKIP),
        ("leaf02", ERRORS, Status.SKIP),
    ]
    assert found[0][1].actual == "no link: leaf02/4 shows no link; spine02/2 shows no link"
    assert found[0][1].where == Where("leaf02", "4", "spine02/2")
    assert "reseat or replace the cable or optic" in found[0][1].hint


def test_extra_link_between_planned_switches_fails_on_the_lower_tier() -> None:
    shown = Shown()
    shown.cables[(("leaf02", 20), ("spine02", 20))] = (("4x", "NDR"), ("4x", "NDR"))
    [(node, finding)] = bad(run(shown))
    assert (node, finding.check, finding.status) == ("leaf02", TOPOLOGY, Status.FAIL)
    assert finding.actual == "an up link leaf02/20 ↔ spine02/20"
    assert finding.where == Where("leaf02", "20", "spine02/20")


def test_symbol_errors_in_the_window_fail_that_cable_and_waits_are_congestion() -> None:
    shown = Shown()
    shown.deltas[("leaf01", 1)] = {"SymbolErrorCounter": 5, "PortXmitWait": 900}
    shown.deltas[("leaf02", 3)] = {"PortXmitWait": 4000}
    results = run(shown)
    [(node, finding)] = bad(results)
    assert (node, finding.check, finding.subject) == ("leaf01", ERRORS, "gpu01/mlx5_0 ↔ leaf01/1")
    assert finding.actual == (
        "leaf01/1 SymbolErrorCounter +5; congestion (not an error): leaf01/1 PortXmitWait +900"
    )
    assert "reseat or replace the cable or optic" in finding.hint
    waited = next(f for f in results["leaf02"] if f.check == ERRORS and f.subject == "leaf02/3 ↔ spine01/2")
    assert waited.status is Status.PASS and "PortXmitWait +4000" in waited.actual
    # raised limit: 5 symbol errors per window allowed
    assert bad(run(shown, max_errors=MappingProxyType({"SymbolErrorCounter": 5}))) == []


def test_errors_at_a_port_no_cable_plans_fail_on_its_switch() -> None:
    shown = Shown()
    shown.deltas[("spine02", 30)] = {"LinkDownedCounter": 2}
    [(node, finding)] = bad(run(shown))
    assert (node, finding.check, finding.where) == ("spine02", ERRORS, Where("spine02", "30"))


def test_errors_not_judgeable_are_named_skips_or_errors() -> None:
    window_zero = Shown(window_s=0)
    found = bad(run(window_zero))
    assert {(f.check, f.status) for _, f in found} == {(ERRORS, Status.SKIP)}
    assert "counter window 0" in found[0][1].actual and len(found) == len(HOST_CABLES) + len(UPLINKS)

    incomplete = Shown(complete=False)
    incomplete.deltas[("leaf01", 1)] = {"SymbolErrorCounter": 5}
    found = bad(run(incomplete))
    statuses = {f.subject: f.status for _, f in found}
    assert statuses.pop("gpu01/mlx5_0 ↔ leaf01/1") is Status.FAIL  # a definite count still fails
    assert set(statuses.values()) == {Status.ERROR}
    assert "PMA query failures" in found[-1][1].actual

    unread = Shown()
    evidence = replace(unread.evidence(), after=Unreadable("ibqueryerrors", "exit 255"))
    results = check_ib_fabric(evidence, desired())
    assert {(f.check, f.status) for _, f in bad(results)} == {(ERRORS, Status.ERROR)}

    cleared = Shown()
    cleared.deltas[("spine01", 1)] = {"SymbolErrorCounter": 0}
    cleared.reset[("spine01", 1)] = ("SymbolErrorCounter",)
    [(node, finding)] = bad(run(cleared))
    assert (node, finding.status) == (
        "leaf01",
        Status.ERROR,
    ) and "cleared inside the window" in finding.actual


def test_a_counter_stuck_at_all_ones_is_an_error_never_a_pass() -> None:
    # A narrow SymbolErrorCounter at 65535 in both sweeps counts +0 however many errors the link makes
    # (the real SX6036 sweep in tests/data/real/ib holds one): "+0" proves nothing.
    stuck = Shown()
    stuck.deltas[("leaf01", 1)] = {"SymbolErrorCounter": 0}
    stuck.saturated[("leaf01", 1)] = ("SymbolErrorCounter",)
    [(node, finding)] = bad(run(stuck))
    assert (node, finding.check, finding.status) == ("leaf01", ERRORS, Status.ERROR)
    assert "at its maximum" in finding.actual and "perfquery -R" in finding.hint
    counting = Shown()  # saturated AND over the limit: a definite failure ("at least")
    counting.deltas[("leaf01", 1)] = {"SymbolErrorCounter": 3}
    counting.saturated[("leaf01", 1)] = ("SymbolErrorCounter",)
    [(node, finding)] = bad(run(counting))
    assert finding.status is Status.FAIL and "+at least 3" in finding.actual


def test_unreadable_discovery_errors_every_cable_check() -> None:
    evidence = replace(Shown().evidence(), topology=Unreadable("ibnetdiscover -p", "exit 1: umad"))
    found = bad(check_ib_fabric(evidence, desired()))
    cables = len(HOST_CABLES) + len(UPLINKS)
    assert len(found) == 3 * cables and {f.status for _, f in found} == {Status.ERROR}


def test_unreachable_reader_errors_every_check_on_every_switch() -> None:
    evidence = replace(Shown().evidence(), unreachable="ssh: connect to host gpu01: refused")
    results = check_ib_fabric(evidence, desired())
    assert set(results) == set(SWITCHES)
    assert all(
        len(fs) == len(IB_CHECKS) and all(f.status is Status.ERROR for f in fs) for fs in results.values()
    )
    assert "gpu01" in results["leaf01"][0].expected


def test_duplicate_port_guid_fails_the_host_whose_record_disagrees_with_the_discovery() -> None:
    shown = Shown()
    shown.records[5] = record("gpu02", port_guid=guid("gpu01"))  # gpu02's HCA shows gpu01's port GUID
    [(node, finding)] = bad(run(shown))
    assert (node, finding.check, finding.where) == ("gpu02", GUIDS, Where("gpu02", "mlx5_0"))
    assert f"port GUID {guid('gpu01')} also under LID {lid('gpu01')} ('gpu01 mlx5_0')" in finding.actual


def test_lid_held_twice_lid_zero_and_missing_description() -> None:
    shown = Shown()
    shown.records[6] = record("gpu03", lid=lid("gpu04"))
    shown.records[4] = record("gpu01", lid=0)
    shown.records[1] = record("leaf02", description="switch-2c9")
    found = {(n, f.subject): f for n, f in bad(run(shown))}
    # the record under an unplanned description has unique ids: not a finding of its own
    assert set(found) == {
        ("gpu03", "gpu03/mlx5_0"),
        ("gpu04", "gpu04/mlx5_0"),
        ("gpu01", "gpu01/mlx5_0"),
        ("leaf02", "leaf02"),
    }
    assert "LID 0" in found[("gpu01", "gpu01/mlx5_0")].actual
    assert found[("leaf02", "leaf02")].actual == "no node shows the description 'leaf02'"
    assert all(f.check == GUIDS and f.hint for f in found.values())


def test_unplanned_node_with_a_bad_id_fails_on_the_reader() -> None:
    shown = Shown()
    shown.records.append(record("gpu04", description="localhost mlx5_0", port_guid=guid("spine01"), lid=40))
    found = {(n, f.subject): f for n, f in bad(run(shown))}
    assert set(found) == {("gpu01", "'localhost mlx5_0' (LID 40)")}  # gpu01: the reader


def test_description_shown_by_two_nodes_names_both() -> None:
    shown = Shown()
    shown.records[7] = record("gpu04", description="gpu03 mlx5_0")
    found = {(n, f.subject): f for n, f in bad(run(shown))}
    assert "'gpu03 mlx5_0' shown by 2 nodes" in found[("gpu03", "gpu03/mlx5_0")].actual
    assert found[("gpu04", "gpu04/mlx5_0")].actual == "no node shows the description 'gpu04 mlx5_0'"
    assert "rdma-ndd" in found[("gpu04", "gpu04/mlx5_0")].hint


def test_firmware_odd_switch_is_named_and_pins_win() -> None:
    shown = Shown()
    shown.firmware[lid("spine02")] = IbSwitchFirmware(
        lid("spine02"), "31.2010.4100", 0xD2F2, 0, "MT_0000000681"
    )
    [(node, finding)] = bad(run(shown))
    assert (node, finding.check) == ("spine02", FIRMWARE)
    assert (
        finding.actual.startswith("31.2010.4100 (device id 0xd2f2")
        and "most run 31.2012.1024" in finding.actual
    )
    assert f"flint -d lid-{lid('spine02')}" in finding.hint

    pinned = bad(run(shown, firmware=MappingProxyType({0xD2F2: "31.2010.4100"})))
    assert sorted(n for n, _ in pinned) == ["leaf01", "leaf02", "spine01"]


def test_firmware_split_evenly_fails_every_switch_and_unreadable_errors() -> None:
    shown = Shown()
    for name in ("spine01", "spine02"):
        shown.firmware[lid(name)] = IbSwitchFirmware(lid(name), "31.2010.4100", 0xD2F2)
    found = bad(run(shown))
    assert len(found) == 4 and all("no version shared by most" in f.actual for _, f in found)

    shown = Shown()
    evidence = replace(shown.evidence(), firmware={lid("leaf01"): Unreadable("vendstat -N 1", "exit 1")})
    found = bad(check_ib_fabric(evidence, desired()))
    assert {(n, f.status) for n, f in found} == {
        ("leaf01", Status.ERROR),
        ("leaf02", Status.ERROR),
        ("spine01", Status.ERROR),
        ("spine02", Status.ERROR),
    }


def test_two_nodes_showing_one_description_leave_their_cables_unjudged_not_passed() -> None:
    shown = Shown()
    impostor = IbPortEnd("SW", 99, 2, "0x00000000000000ee", "spine02")  # a second "spine02", its port 2
    evidence = shown.evidence()
    assert not isinstance(evidence.topology, Unreadable)
    lines = (
        *evidence.topology.ports,
        IbPortSeen(end(("leaf02", 20)), "4x", "NDR", impostor),
        IbPortSeen(impostor, "4x", "NDR", end(("leaf02", 20))),
    )
    results = check_ib_fabric(replace(evidence, topology=IbTopology(lines)), desired())
    found = {(f.check, f.subject): f for _, f in bad(results)}
    unjudged = found[(TOPOLOGY, "leaf02/4 ↔ spine02/2")]
    assert unjudged.status is Status.ERROR and "more than one node shows the description" in unjudged.actual
