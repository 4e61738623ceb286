"""Declared host probes and checks: the collection script is generated from the probe table, each check
reads only declared probes, and the checks of what roles/roce_host writes beyond QoS (CNP pacing, DCQCN
reaction-point parameters, the RDMA-CM ToS and mode) and the fleet checks (the GID NCCL uses, driver and
firmware versions) pass on a host set to the intent, fail on exactly the value set wrong, and are an
ERROR when their record is missing."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_host_checks import (
    ETHTOOL_I,
    INTENT,
    NETDEVS,
    TOKEN,
    gids,
    healthy_sections,
    not_passing,
    ok,
    only,
    rp_listing,
    run_checks,
)

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect import host as collect
from fabcheck.collect.host import HostCollection, collection_script
from fabcheck.collect.script import HostProbe, Section, split_sections
from fabcheck.desired.nic import desired_host
from fabcheck.gate import host_stage as validate
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent
from tests.parsers.renderers import render_show_gids

# ---- the probe table and the script generated from it -------------------------------------------


def test_every_probe_a_check_needs_is_declared_and_every_probe_is_needed() -> None:
    needed = {name for check in (*checks.HOST_CHECK_DECLS, *checks.FLEET_CHECK_DECLS) for name in check.reads}
    declared = {probe.name for probe in collect.HOST_PROBES}
    assert needed - declared == set()
    # rdma_link is also what the script loops over; time_limit is judged as the collection's own bound.
    assert declared - needed == {collect.TIME_LIMIT}
    assert len(declared) == len(collect.HOST_PROBES)  # one declaration per probe name


def test_the_script_is_fixed_text_of_the_probe_table() -> None:
    assert collection_script() == collection_script() == collect.COLLECT_SCRIPT
    for probe in collect.HOST_PROBES:
        if not probe.builtin:
            assert f'section "{probe.section("")}' in collect.COLLECT_SCRIPT, probe.name
    sections = [
        line.strip() for line in collect.COLLECT_SCRIPT.splitlines() if line.strip().startswith("section ")
    ]
    assert len(sections) == len([p for p in collect.HOST_PROBES if not p.builtin])
    assert not [line for line in sections if "{" in line]  # every placeholder became a script variable


@pytest.mark.parametrize(
    "argv",
    [("cat", "/sys/$(reboot)"), ("cat", "/sys/`id`"), ("cat", 'a"b'), ("cat", "a b"), ("cat", "{secret}")],
)
def test_a_probe_word_a_shell_would_read_is_refused(argv: tuple[str, ...]) -> None:
    probe = HostProbe("bad", "host", argv, str)
    with pytest.raises(ValueError):
        collection_script((*collect.HOST_PROBES, probe))


def _fake_tools(bin_dir: Path) -> None:
    """A host with one RoCE port: `rdma link` lists it, the other tools are the system's or absent."""
    bin_dir.mkdir()
    (bin_dir / "rdma").write_text(
        "#!/bin/sh\necho 'link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0'\n"
    )
    (bin_dir / "rdma").chmod(0o755)
    for tool in ("timeout", "mktemp", "cat", "rm", "grep", "ls"):
        found = shutil.which(tool)
        assert found, tool
        os.symlink(found, bin_dir / tool)


def test_the_generated_script_prints_every_declared_section_for_each_port_and_netdev(tmp_path: Path) -> None:
    _fake_tools(tmp_path / "bin")
    done = subprocess.run(
        ["/bin/sh", "-c", collect.COLLECT_SCRIPT, "fabcheck-collect", TOKEN, "3", "10"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(tmp_path / "bin")},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete
    subject = {"host": "", "port": "mlx5_0/1", "netdev": "ens1np0"}
    wanted = {probe.section(subject[probe.scope]) for probe in collect.HOST_PROBES}
    assert set(parsed.sections) == wanted
    assert parsed.sections["rdma_link"].rc == 0
    assert parsed.sections["cma_roce_tos:mlx5_0/1"].rc == 127  # not installed here: a failed section


def test_records_are_keyed_by_probe_and_subject_and_unreadable_names_the_command() -> None:
    records = collect.read_records(healthy_sections(), 3)
    assert records[("cma_roce_tos", "mlx5_0/1")] == 106
    assert records[("cma_roce_mode", "mlx5_1/1")] == "RoCE v2"
    assert records[("min_time_between_cnps", "ens1np0")] == 4
    assert records[("roce_rp", "ens2np0")]["rpg_gd"] == 11
    sections = healthy_sections() | {"cma_roce_mode:mlx5_0/1": Section(1, "", "Device mlx5_0 not found\n")}
    unread = collect.read_records(sections, 3)[("cma_roce_mode", "mlx5_0/1")]
    assert unread == collect.Unreadable("cma_roce_mode -d mlx5_0 -p 1", "exit 1: Device mlx5_0 not found")


# ---- the new per-host checks ---------------------------------------------------------------------

WRONG = {
    "min_time_between_cnps:ens2np0": (ok("8\n"), checks.MIN_TIME_BETWEEN_CNPS, "mlx5_1"),
    "roce_rp:ens1np0": (ok(rp_listing("ens1np0", rpg_gd=7)), checks.RP_PARAMS, "mlx5_0"),
    "cma_roce_tos:mlx5_1/1": (ok("0\n"), checks.CMA_ROCE_TOS, "mlx5_1/1"),
    "cma_roce_mode:mlx5_0/1": (ok("IB/RoCE v1\n"), checks.CMA_ROCE_MODE, "mlx5_0/1"),
}
FIXES = {
    checks.MIN_TIME_BETWEEN_CNPS: "`echo 4 > /sys/class/net/ens2np0/ecn/roce_np/min_time_between_cnps`",
    checks.RP_PARAMS: "`echo 11 > /sys/class/net/ens1np0/ecn/roce_rp/rpg_gd`",
    checks.CMA_ROCE_TOS: "`cma_roce_tos -d mlx5_1 -p 1 -t 106`",
    checks.CMA_ROCE_MODE: "`cma_roce_mode -d mlx5_0 -p 1 -m 2`",
}


def test_the_new_checks_pass_on_a_host_set_to_the_intent() -> None:
    findings = run_checks()
    for check in (checks.MIN_TIME_BETWEEN_CNPS, checks.RP_PARAMS, checks.CMA_ROCE_TOS, checks.CMA_ROCE_MODE):
        judged = [f for f in findings if f.check == check]
        assert len(judged) == 2 and {f.status for f in judged} == {Status.PASS}, judged
    assert only(findings, checks.RP_PARAMS, "mlx5_0").actual == "rpg_gd=11 rpg_min_rate=10"


@pytest.mark.parametrize("section", sorted(WRONG))
def test_one_wrong_value_fails_exactly_its_check_on_exactly_that_device(section: str) -> None:
    shown, check, subject = WRONG[section]
    findings = run_checks({section: shown})
    assert not_passing(findings) == {(check, subject): Status.FAIL}
    failure = only(findings, check, subject)
    assert FIXES[check] in failure.hint
    if check == checks.CMA_ROCE_MODE:
        assert failure.hint.startswith("no fabcheck role sets it")  # roce_host does not write the mode
    else:
        tag = "ecn" if check in (checks.MIN_TIME_BETWEEN_CNPS, checks.RP_PARAMS) else "dscp"
        assert failure.hint.startswith(f"role roce_host (tag {tag}) sets it fleet-wide")


@pytest.mark.parametrize("section", sorted(WRONG))
def test_a_missing_record_is_an_error_never_a_pass(section: str) -> None:
    _shown, check, subject = WRONG[section]
    findings = run_checks({section: Section(2, "", "cat: permission denied\n")})
    assert not_passing(findings) == {(check, subject): Status.ERROR}
    assert "permission denied" in only(findings, check, subject).actual


def test_an_rp_param_the_nic_does_not_show_is_an_error() -> None:
    listing = "".join(line for line in rp_listing("ens1np0").splitlines(True) if "rpg_min_rate" not in line)
    findings = run_checks({"roce_rp:ens1np0": ok(listing)})
    error = only(findings, checks.RP_PARAMS, "mlx5_0")
    assert error.status is Status.ERROR and "roce_rp/rpg_min_rate" in error.actual


def test_pfc_only_and_an_intent_without_rp_params_skip_with_the_reason() -> None:
    pfc_only = INTENT.model_copy(update={"congestion_control": "pfc_only"})
    findings = run_checks(intent=pfc_only)
    for check in (checks.MIN_TIME_BETWEEN_CNPS, checks.RP_PARAMS):
        skip = only(findings, check, "host")
        assert skip.status is Status.SKIP and "pfc_only" in skip.actual
    bare = FabricIntent(rails=INTENT.rails)
    skips = [f for f in run_checks(intent=bare) if f.check == checks.RP_PARAMS]
    assert {f.status for f in skips} == {Status.SKIP} and "rp_params is empty" in skips[0].actual


def test_an_infiniband_intent_skips_the_rdma_cm_checks() -> None:
    ib = FabricIntent(kind="ib", rails=INTENT.rails)
    findings = run_checks(intent=ib)
    for check in (checks.CMA_ROCE_TOS, checks.CMA_ROCE_MODE, checks.MIN_TIME_BETWEEN_CNPS):
        assert only(findings, check, "host").status is Status.SKIP


# ---- the fleet checks -----------------------------------------------------------------------------


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
        evidence, {host: desired_host(intent, host) for host in hosts}, dict.fromkeys(hosts, intent)
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


def test_the_host_on_other_firmware_is_named_and_the_others_pass() -> None:
    devinfo = healthy_sections()["ibv_devinfo"].stdout.replace("28.39.1002", "28.40.1000")
    results = fleet({"gpu02": {"ibv_devinfo": ok(devinfo)}})
    bad = {k: s for k, s in statuses(results, checks.VERSIONS).items() if s is not Status.PASS}
    assert bad == {("gpu02", "firmware of NIC part 4129"): Status.FAIL}
    failure = next(f for f in results["gpu02"] if f.check == checks.VERSIONS and f.status is Status.FAIL)
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
    devinfo = healthy_sections()["ibv_devinfo"].stdout.replace("28.39.1002", "28.40.1000")

    def collector(target: object, priority: int, _limits: object) -> HostCollection:
        name = target.name
        odd = {"ibv_devinfo": ok(devinfo)} if name == "gpu03" else {}
        return HostCollection(name, healthy_sections() | odd, True, priority=priority)

    hosts = [
        HostEntry(name, ("gpu_hosts",), INTENT, {"ansible_host": name})
        for name in ("gpu01", "gpu02", "gpu03")
    ]
    results = {r.host: r for r in validate.validate(hosts, collector=collector)}
    assert results["gpu01"].verdict is Status.PASS and results["gpu02"].verdict is Status.PASS
    assert results["gpu03"].verdict is Status.FAIL
    assert not_passing(list(results["gpu03"].findings)) == {
        (checks.VERSIONS, "firmware of NIC part 4129"): Status.FAIL
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
