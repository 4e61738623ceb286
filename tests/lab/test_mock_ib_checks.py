"""The lab's InfiniBand fabric through the real parsers into the ib checks, in process (no lab start):
what the mock tools print (fabcheck_lab.ib_fabric renderers) -> parsers -> check_ib_fabric. The healthy
fabric passes every cable and node; each lab fault fails exactly its check on exactly its cable or node,
and everything else keeps passing (what the lab test asserts end to end, here without ssh)."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

import pytest
from ibmock import T0, WINDOW, evidence

from fabcheck.checks.ib import ERRORS, LINK, TOPOLOGY, check_ib_fabric
from fabcheck.checks.ib_nodes import GUIDS
from fabcheck.checks.model import Finding, Status
from fabcheck.desired.ib import DesiredIbEnd, DesiredIbFabric, DesiredIbLink, DesiredIbSwitch
from fabcheck_lab import ib_fabric as model


def lab_fabric() -> model.Fabric:
    return model.two_tier(model.modelled_hcas(4, per_host=1), leaves=2, spines=2)


def planned(fabric: model.Fabric) -> DesiredIbFabric:
    """The plan the inventory of this lab fabric gives (each switch named by its description)."""
    switches = {s.name: s for s in fabric.switches}
    hcas = {h.key: h for h in fabric.hcas}

    def end(e: model.End) -> DesiredIbEnd:
        if e.node in switches:
            return DesiredIbEnd(e.node, switches[e.node].description, e.port, "SW")
        hca = hcas[e.node]
        return DesiredIbEnd(hca.host, hca.description, e.port, "CA", hca.nic)

    return DesiredIbFabric(
        reader="gpu01",
        read_port=("mlx5_0", 1),
        width="4x",
        speed="NDR",
        switches=tuple(DesiredIbSwitch(s.name, s.tier, s.description, s.port_count) for s in fabric.switches),
        links=tuple(DesiredIbLink(end(c.a), end(c.b), "4x", "NDR") for c in fabric.cables),
        host_descriptions=MappingProxyType({h.description: (h.host, h.nic) for h in fabric.hcas}),
        counter_window_s=WINDOW,
    )


def judged(fabric: model.Fabric) -> list[tuple[str, Finding]]:
    results = check_ib_fabric(evidence(fabric), planned(lab_fabric()))
    return [(node, finding) for node, findings in results.items() for finding in findings]


def test_the_healthy_lab_fabric_passes_every_cable_and_node() -> None:
    fabric = lab_fabric()
    found = judged(fabric)
    assert [(n, f.check, f.actual) for n, f in found if f.status is not Status.PASS] == []
    assert sum(f.check == TOPOLOGY for _, f in found) == len(fabric.cables) == 8
    assert sum(f.check == GUIDS for _, f in found) == 4 + 4


def _uplinks(fabric: model.Fabric, fault: str) -> list[str]:
    cables = [fabric.cables[i] for i in model.fault_cables(fabric, fault, "leaf01")]
    return [f"{c.a.node}/{c.a.port} ↔ {c.b.node}/{c.b.port}" for c in cables]


def _uplink(fabric: model.Fabric, fault: str) -> str:
    return _uplinks(fabric, fault)[0]


FailsOn = Callable[[model.Fabric], set[tuple[str, str, str]]]
EXPECTED: dict[str, FailsOn] = {
    "ib-link-width": lambda f: {("leaf01", LINK, _uplink(f, "ib-link-width"))},
    "ib-link-speed": lambda f: {("leaf01", LINK, _uplink(f, "ib-link-speed"))},
    "ib-link-missing": lambda f: {("leaf01", TOPOLOGY, _uplink(f, "ib-link-missing"))},
    "ib-symbol-errors": lambda f: {("leaf01", ERRORS, _uplink(f, "ib-symbol-errors"))},
    "ib-miswire": lambda f: {(label.split("/")[0], TOPOLOGY, label) for label in _uplinks(f, "ib-miswire")},
    "ib-dup-guid": lambda f: {("gpu01", GUIDS, "gpu01/mlx5_0")},
}


@pytest.mark.parametrize("fault", sorted(model.FAULTS))
def test_each_lab_fault_fails_exactly_its_check_on_exactly_its_cable(fault: str) -> None:
    healthy = lab_fabric()
    found = judged(model.with_fault(healthy, fault, "leaf01", since=T0 - 5))
    failing = {(n, f.check, f.subject) for n, f in found if f.status is Status.FAIL}
    assert failing == EXPECTED[fault](healthy)
    # nothing could-not-run; a cable that is not the planned one is not judged by ib.link / ib.errors
    others = {(f.check, f.status) for _, f in found if f.status not in (Status.PASS, Status.FAIL)}
    assert others <= {(LINK, Status.SKIP), (ERRORS, Status.SKIP)}
    assert all(f.hint for _, f in found if f.status is Status.FAIL)


def test_the_lab_miswire_names_both_cables_and_the_swap_at_the_spine() -> None:
    healthy = lab_fabric()
    first, second = _uplinks(healthy, "ib-miswire")
    found = judged(model.with_fault(healthy, "ib-miswire", "leaf01", since=T0))
    swapped = {f.subject: f for _, f in found if f.check == TOPOLOGY and f.status is Status.FAIL}
    assert swapped[first].actual.startswith(f"swapped with {second}: ")
    assert swapped[first].hint.startswith("swap the cables at spine01/")
