"""Built vs planned (issue 39) end to end in process, no lab started: a fabric plan -> the lab's mock
switches (what `fabcheck lab up --plan` serves) -> each switch's LLDP command through the mock CLI,
parsed as the switch stage parses it -> the inventory the lab writes, read by the real loader ->
link.switch_lldp, link.lldp and the link.as_planned summary. The built fabric passes every planned cable;
the lab's `uplink-swap` fault fails exactly the two swapped uplinks, named as a pair with where each
belongs; `switch-miswired` swaps two host cables, named the same way."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from test_mock_fromplan import _devices, _heard, _plan, _state

from fabcheck.checks import as_planned
from fabcheck.checks.as_planned import Tally, host_tally, link_summary, switch_tally, top_switch
from fabcheck.checks.link import LLDP, NicEnd, check_links, host_hearing
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.switch import SwitchEvidence
from fabcheck.checks.uplinks import State, check_switch_links, extra_switch_cables
from fabcheck.desired.nic import desired_nic
from fabcheck.desired.switch import desired_switch
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.fabric import Fabric, fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.switch_records import LldpNeighbor
from fabcheck_lab import inventory
from fabcheck_lab.mockswitch.device import SwitchDevice
from fabcheck_lab.state import LabPaths


def built(
    tmp_path: Path, spine_platform: str, rail_optimised: bool = False
) -> tuple[Fabric, dict[str, SwitchDevice]]:
    """The planned fabric as the lab's inventory gives it, and the lab's switches."""
    state = _state(tmp_path, _plan(spine_platform=spine_platform, rail_optimised=rail_optimised))
    paths = LabPaths(tmp_path / "project", tmp_path / "run")
    shutil.copytree(Path(__file__).parents[2] / "inventory" / "lab", paths.inventory.parent)
    paths.run_dir.mkdir()
    paths.switch_password.write_text("lab-password\n")
    inventory.write_inventory(paths, state)
    return fabric_of(load_inventory(paths.inventory.parent)), _devices(tmp_path, state)


def evidence(devices: dict[str, SwitchDevice]) -> dict[str, SwitchEvidence]:
    shown = {}
    for name, device in devices.items():
        records = {(LldpNeighbor, port): LldpNeighbor(*end) for port, end in _heard(device).items()}
        shown[name] = SwitchEvidence(name, device.platform, records, frozenset({LldpNeighbor}))  # type: ignore[arg-type]
    return shown


def judge(
    fabric: Fabric, devices: dict[str, SwitchDevice], shown: dict[str, SwitchEvidence] | None = None
) -> tuple[list[Finding], list[Finding], Finding]:
    """(link.lldp findings, link.switch_lldp findings, the summary) over every planned cable (what the
    devices show, or `shown`)."""
    shown = evidence(devices) if shown is None else shown
    intent = FabricIntent.model_validate({})
    nics = {
        (link.host, link.nic): NicEnd.of(
            link.host, link.nic, None, None, f"ens{int(link.nic.removeprefix('mlx5_')) + 1}np0"
        )
        for link in fabric.links
    }
    host_findings = check_links(
        fabric,
        nics,
        {key: desired_nic(intent, *key) for key in nics},
        shown,
        {s.name: desired_switch(intent, fabric, s.name) for s in fabric.switches},
    )
    judged = check_switch_links(fabric, shown)
    extras = extra_switch_cables(fabric, shown, judged)
    hosts = host_tally(fabric, host_findings, host_hearing(fabric, nics, shown))
    summary = link_summary(hosts, switch_tally(judged, extras))
    lldp = [f for f in host_findings if f.check == LLDP]
    return lldp, [j.finding for j in judged] + extras, summary


@pytest.mark.parametrize("spine_platform", ["nvue", "sonic", "eos"])
def test_the_fabric_built_from_a_plan_is_as_planned(tmp_path: Path, spine_platform: str) -> None:
    fabric, devices = built(tmp_path, spine_platform)
    assert len(fabric.links) == 16 and len(fabric.switch_links) == 16
    lldp, switch_cables, summary = judge(fabric, devices)
    assert {f.status for f in lldp} == {f.status for f in switch_cables} == {Status.PASS}
    assert len(switch_cables) == 16
    assert summary.status is Status.PASS, summary
    assert summary.actual == (
        "32 of 32 planned cables as planned: 0 missing, 0 miswired, 0 extra "
        "(host cables 16 of 16, switch cables 16 of 16)"
    )
    assert top_switch(fabric) == "spine-01"


@pytest.mark.parametrize("spine_platform", ["nvue", "sonic", "eos"])
def test_uplink_swap_fails_both_uplinks_named_as_a_pair_and_the_summary(
    tmp_path: Path, spine_platform: str
) -> None:
    fabric, devices = built(tmp_path, spine_platform)
    devices["leaf-01"].inject("uplink-swap")  # leaf-01's swp5 and swp6: to spine-01 and spine-02
    lldp, switch_cables, summary = judge(fabric, devices)
    assert {f.status for f in lldp} == {Status.PASS}
    bad = {f.subject: f for f in switch_cables if f.status is not Status.PASS}
    cables = {c.a_port: c for c in fabric.switch_links if c.a_switch == "leaf-01"}
    assert set(bad) == {cables["swp5"].label, cables["swp6"].label}
    first = bad[cables["swp5"].label]
    assert first.actual.startswith(f"swapped with {cables['swp6'].label}: ")
    # Judged from the leaf's end, or from the spines' where the leaf hears aliases (SONiC): one swap
    # at the leaf either way.
    assert first.hint.split(": ", 1)[0] in {
        "swap the cables at leaf-01:swp5 and leaf-01:swp6",
        "swap the cables at leaf-01:swp6 and leaf-01:swp5",
    }, first.hint
    assert summary.status is Status.FAIL and summary.check == as_planned.LINK_AS_PLANNED
    assert summary.actual.startswith(
        "30 of 32 planned cables as planned: 0 missing, 2 miswired (1 swapped pairs)"
    )


def test_a_silent_uplink_end_or_mac_port_ids_never_leave_the_summary_passing(tmp_path: Path) -> None:
    """The lab's built fabric with one end of a leaf's uplink hearing nothing: link.switch_lldp fails
    that cable, so the summary fails with it missing. With every host sending a MAC port id instead of
    its interface name (lldpd's default), the host cables prove the hosts only: a named skip."""
    fabric, devices = built(tmp_path, "nvue")
    shown = evidence(devices)
    cable = fabric.switch_links[0]
    spine = shown[cable.b_switch]
    deaf = {key: r for key, r in spine.records.items() if key != (LldpNeighbor, cable.b_port)}
    shown[cable.b_switch] = replace(spine, records=deaf)
    judged = check_switch_links(fabric, shown)
    [bad] = [j for j in judged if j.finding.status is Status.FAIL]
    assert bad.cable == cable and bad.state is State.MISSING
    summary = link_summary(Tally(), switch_tally(judged, extra_switch_cables(fabric, shown, judged)))
    assert summary.status is Status.FAIL
    assert summary.actual.startswith("15 of 16 planned cables as planned: 1 missing, 0 miswired, 0 extra")
    shown = evidence(devices)
    for link_ in fabric.links:
        leaf = shown[link_.switch]
        mac = f"0800.27ca.{fabric.links.index(link_):04x}"  # the form of napalm's real EOS port ids
        heard = {**leaf.records, (LldpNeighbor, link_.port): LldpNeighbor(link_.host, mac)}
        shown[link_.switch] = replace(leaf, records=heard)
    _lldp, _switch_cables, summary = judge(fabric, devices, shown)
    assert summary.status is Status.SKIP
    assert summary.actual.startswith(
        "16 of 32 planned cables as planned: 0 missing, 0 miswired, 0 extra, 16 not proved"
    )


def test_switch_miswired_names_the_swapped_host_cables(tmp_path: Path) -> None:
    """A rail-optimised plan: each leaf carries one rail of both nodes, so the fault swaps two hosts'."""
    fabric, devices = built(tmp_path, "nvue", rail_optimised=True)
    leaf = fabric.links[0].switch
    devices[leaf].inject("switch-miswired")
    lldp, switch_cables, summary = judge(fabric, devices)
    assert {f.status for f in switch_cables} == {Status.PASS}
    bad = [f for f in lldp if f.status is not Status.PASS]
    assert len(bad) == 2 and all("swapped with" in f.actual for f in bad), bad
    assert all(f.hint.startswith(f"swap the cables at {leaf}:") for f in bad)
    planned = len(fabric.links) + len(fabric.switch_links)
    assert summary.actual.startswith(
        f"{planned - 2} of {planned} planned cables as planned: 0 missing, 2 miswired (1 swapped pairs)"
    )
    assert {j.state for j in check_switch_links(fabric, evidence(devices))} == {State.AS_PLANNED}


def test_the_gate_plan_keeps_the_switch_cables_whose_both_ends_it_reads(tmp_path: Path) -> None:
    """fabcheck.gate.plan: the link stage judges every planned switch cable of a whole run, and under
    --limit only those with both switches in the run (as it does host cables)."""
    fabric, _devices = built(tmp_path, "nvue")
    loaded = load_inventory(LabPaths(tmp_path / "project", tmp_path / "run").inventory.parent)
    whole = plan_gate(loaded, None, ("host", "switch", "link"))
    assert whole.fabric.switch_links == fabric.switch_links and len(whole.fabric.switch_links) == 16
    limited = plan_gate(loaded, "leaf-01,spine-01", ("host", "switch", "link"))
    assert {(c.a_switch, c.b_switch) for c in limited.fabric.switch_links} == {("leaf-01", "spine-01")}
    assert plan_gate(loaded, "gpu01", ("host", "switch", "link")).fabric.switch_links == ()
