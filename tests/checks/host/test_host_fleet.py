"""fabcheck.checks.host.fleet: the GID NCCL uses and the driver versions, compared across the hosts of
a run; the NIC firmware's fleet comparison (host.nic_firmware, unpinned)."""

from __future__ import annotations

import dataclasses

import hostgate

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.host import (
    HostCollection,
)
from fabcheck.collect.script import Section
from fabcheck.desired.nic import desired_host
from fabcheck.gate import host_stage as validate
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import (
    ETHTOOL_I,
    INTENT,
    NETDEVS,
    flint_q,
    gids,
    healthy_sections,
    not_passing,
    ok,
    planned,
)
from tests.parsers.renderers import render_show_gids


def fleet(changes: dict[str, dict[str, Section]], intent: FabricIntent = INTENT) -> dict[str, list[Finding]]:
    """The fleet checks over hosts gpu01..gpu03 set to the intent, with each host's changed sections."""
    hosts = ("gpu01", "gpu02", "gpu03")
    evidence = {
        host: validate.evidence(
            HostCollection(host, healthy_sections() | changes.get(host, {}), True, priority=3)
        )
        for host in hosts
    }
    return checks.check_fleet(
        evidence, {host: planned(intent, host) for host in hosts}, dict.fromkeys(hosts, intent)
    )


def statuses(results: dict[str, list[Finding]], check: str) -> dict[tuple[str, str], Status]:
    return {(host, f.subject): f.status for host, found in results.items() for f in found if f.check == check}


def test_a_fleet_set_alike_passes_both_fleet_checks() -> None:
    results = fleet({})
    assert {f.status for found in results.values() for f in found} == {Status.PASS}
    assert set(statuses(results, checks.GID_INDEX)) == {
        (h, p) for h in results for p in ("mlx5_0/1", "mlx5_1/1")
    }


def test_a_port_without_a_v2_gid_at_the_intended_index_fails_there() -> None:
    table = render_show_gids(
        [g for g in gids() if not (g.dev == "mlx5_1" and g.index == 3)]
        + [dataclasses.replace(g, version="v1") for g in gids() if g.dev == "mlx5_1" and g.index == 3]
    )
    results = fleet({"gpu02": {"show_gids": ok(table)}})
    assert {k: s for k, s in statuses(results, checks.GID_INDEX).items() if s is not Status.PASS} == {
        ("gpu02", "mlx5_1/1"): Status.FAIL
    }
    failure = next(f for f in results["gpu02"] if f.check == checks.GID_INDEX and f.status is Status.FAIL)
    assert "v1" in failure.actual and "`show_gids mlx5_1`" in failure.hint


def test_with_gid_index_null_the_odd_index_is_named() -> None:
    auto = INTENT.model_copy(update={"nccl": INTENT.nccl.model_copy(update={"gid_index": None})})
    shifted = [dataclasses.replace(g, index=g.index + 2) for g in gids()]  # an extra address came first
    results = fleet({"gpu03": {"show_gids": ok(render_show_gids(shifted))}}, auto)
    bad = {k: s for k, s in statuses(results, checks.GID_INDEX).items() if s is not Status.PASS}
    assert bad == {("gpu03", "mlx5_0/1"): Status.FAIL, ("gpu03", "mlx5_1/1"): Status.FAIL}
    failure = next(f for f in results["gpu03"] if f.check == checks.GID_INDEX)
    assert failure.actual == "5 (3 on 2 host(s); 5 on gpu03)"


def test_the_host_on_other_firmware_is_named_by_nic_firmware_and_versions_judges_drivers_only() -> None:
    """host.versions no longer judges firmware (issue 36): host.nic_firmware compares it per PSID."""
    odd = {f"flint:{dev}/1": ok(flint_q("28.40.1000")) for dev in NETDEVS}
    results = fleet({"gpu02": odd}, INTENT.model_copy(update={"nic_firmware": []}))  # nothing pinned
    assert {s for (_h, subject), s in statuses(results, checks.VERSIONS).items()} == {Status.PASS}
    assert {subject for (_h, subject) in statuses(results, checks.VERSIONS)} == {"driver mlx5_core"}
    bad = {k: s for k, s in statuses(results, checks.NIC_FIRMWARE).items() if s is not Status.PASS}
    assert bad == {("gpu02", "firmware of PSID MT_0000000838"): Status.FAIL}
    failure = next(f for f in results["gpu02"] if f.check == checks.NIC_FIRMWARE and f.status is Status.FAIL)
    assert failure.actual == "28.40.1000 (28.39.1002 on 2 host(s); 28.40.1000 on gpu02)"
    assert "bring gpu02 to the fleet's 28.39.1002" in failure.hint


def test_a_driver_version_tie_fails_every_host_and_a_mixed_host_is_odd() -> None:
    newer = ETHTOOL_I.replace("24.04-0.6.6", "24.10-1.1.4")
    tie = {h: {f"driver:{n}": ok(newer) for n in NETDEVS.values()} for h in ("gpu02",)}
    results = fleet(tie | {"gpu03": {"driver:ens1np0": ok(newer)}})
    driver = {k: s for k, s in statuses(results, checks.VERSIONS).items() if k[1] == "driver mlx5_core"}
    assert driver == dict.fromkeys(
        [(h, "driver mlx5_core") for h in ("gpu01", "gpu02", "gpu03")], Status.FAIL
    )
    mixed = next(f for f in results["gpu03"] if f.subject == "driver mlx5_core")
    assert mixed.actual.startswith("24.04-0.6.6/24.10-1.1.4 (")


def test_one_host_has_nothing_to_compare_and_unread_versions_are_errors() -> None:
    evidence = {"gpu01": validate.evidence(HostCollection("gpu01", healthy_sections(), True))}
    alone = checks.check_fleet(evidence, {"gpu01": desired_host(INTENT, "gpu01")}, {"gpu01": INTENT})
    assert {f.status for f in alone["gpu01"] if f.check == checks.VERSIONS} == {Status.SKIP}
    results = fleet({"gpu02": {"driver:ens1np0": Section(71, "", "Cannot get driver information\n")}})
    errors = [f for f in results["gpu02"] if f.status is Status.ERROR]
    assert [(f.check, f.subject) for f in errors] == [(checks.VERSIONS, "driver")]


def test_validate_appends_the_fleet_findings_to_each_host() -> None:
    def collector(target: object, priority: int, _limits: object) -> HostCollection:
        name = target.name
        odd = {f"flint:{dev}/1": ok(flint_q("28.40.1000")) for dev in NETDEVS} if name == "gpu03" else {}
        return HostCollection(name, healthy_sections() | odd, True, priority=priority)

    hosts = [
        HostEntry(name, ("gpu_hosts",), INTENT, {"ansible_host": name})
        for name in ("gpu01", "gpu02", "gpu03")
    ]
    desired = {entry.name: planned(INTENT, entry.name) for entry in hosts}
    results = {r.host: r for r in hostgate.validate(hosts, collector=collector, desired=desired)}
    assert results["gpu01"].verdict is Status.PASS and results["gpu02"].verdict is Status.PASS
    assert results["gpu03"].verdict is Status.FAIL
    assert not_passing(list(results["gpu03"].findings)) == {  # against the pin: each NIC
        (checks.NIC_FIRMWARE, "mlx5_0"): Status.FAIL,
        (checks.NIC_FIRMWARE, "mlx5_1"): Status.FAIL,
    }


def test_an_infiniband_fleet_skips_the_gid_check_and_still_compares_versions() -> None:
    ib = FabricIntent(kind="ib", rails=INTENT.rails)
    results = fleet({}, ib)
    gid = [f for found in results.values() for f in found if f.check == checks.GID_INDEX]
    assert len(gid) == 3 and {f.status for f in gid} == {Status.SKIP}
    assert gid[0].actual == "RoCE-only check; fabric_intent.kind is ib"
    assert {f.status for found in results.values() for f in found if f.check == checks.VERSIONS} == {
        Status.PASS
    }
