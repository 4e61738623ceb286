"""`fabcheck validate` over the whole fabric of a lab that site.yml converged: 2 GPU hosts and 3 switches
(NVUE, SONiC, EOS), cabled by the lab. A healthy fabric passes with exit 0, every skip says why; a switch
fault fails exactly its switch check on exactly that port and the link check of the cables on that port;
a host fault fails exactly its host check on that NIC and the link check of that NIC's cable; healing
gives exit 0 again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from labsupport import converged_lab, injected, requires_lab, validate_json

from fabcheck.checks import as_planned
from fabcheck.checks import host as host_checks
from fabcheck.checks import link as link_checks
from fabcheck.intent.fabric import Fabric, fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

SWITCHES = ("leaf01", "leaf02", "leaf03")


@dataclass(frozen=True)
class Gate:
    paths: LabPaths
    fabric: Fabric

    def validate(self, *options: str) -> tuple[int, list[dict]]:
        return validate_json(self.paths, *options)


def failing(subjects: list[dict]) -> set[tuple[str, str]]:
    """(check, subject) of every finding that is not a pass or a skip."""
    findings = [f for s in subjects for f in s["findings"]]
    return {(f["check"], f["subject"]) for f in findings if f["status"] in ("fail", "error")}


def link_subject(host: str, nic: str, switch_end: str) -> str:
    return f"{host}:{nic} <-> {switch_end}"


@pytest.fixture(scope="module")
def gate() -> Iterator[Gate]:
    with converged_lab(profile="roce", hosts=2, switches=len(SWITCHES)) as paths:
        yield Gate(paths, fabric_of(load_inventory(str(paths.inventory.parent))))


def test_a_converged_fabric_passes_and_every_skip_says_why(gate: Gate) -> None:
    rc, subjects = gate.validate()
    assert rc == 0, failing(subjects)
    assert {s.get("switch") for s in subjects if "switch" in s} == set(SWITCHES)
    assert {s.get("host") for s in subjects if "host" in s} == {"gpu01", "gpu02"}
    findings = [f for s in subjects for f in s["findings"]]
    assert all(f["actual"].strip() for f in findings if f["status"] == "skip")
    # Every cable of the map is judged at both ends, on each of the four settings, and proven by LLDP.
    cables = {link_subject(link.host, link.nic, link.switch_end) for link in gate.fabric.links}
    for check in (link_checks.PFC, link_checks.LLDP):
        assert {f["subject"] for f in findings if f["check"] == check and f["status"] == "pass"} == cables
    assert len(gate.fabric.links) == 16  # 8 rails on each of 2 hosts


@pytest.mark.parametrize("switch", ["leaf01", "leaf02", "leaf03"])
def test_a_switch_pfc_fault_fails_that_port_and_its_cables_only(gate: Gate, switch: str) -> None:
    with injected(gate.paths, "switch-pfc-prio", switch):
        rc, subjects = gate.validate()
    bad = failing(subjects)
    assert rc == 1
    ports = {subject for check, subject in bad if check == "switch.pfc"}
    assert len(ports) == 1 and next(iter(ports)).startswith(f"{switch}:"), bad
    [port] = ports
    on_port = [link for link in gate.fabric.links if link.switch_end == port]
    cables = {link_subject(link.host, link.nic, link.switch_end) for link in on_port}
    assert cables, f"no cable on {port}"
    assert {subject for check, subject in bad if check == link_checks.PFC} == cables
    # The mock really drops RoCE on that port, so the drop counter may fail there too; nothing else may.
    switch_side = {("switch.pfc", port), ("switch.lossless_drops", port)}
    assert bad - switch_side == {(link_checks.PFC, cable) for cable in cables}


def test_a_host_pfc_fault_fails_that_nic_and_its_cable_only(gate: Gate) -> None:
    with injected(gate.paths, "pfc-off", "gpu01"):
        rc, subjects = gate.validate()
    [link] = [link for link in gate.fabric.links if (link.host, link.nic) == ("gpu01", "mlx5_0")]
    assert rc == 1
    assert failing(subjects) == {
        (host_checks.PFC, "mlx5_0"),
        (link_checks.PFC, link_subject("gpu01", "mlx5_0", link.switch_end)),
    }


def test_a_miswired_pair_of_ports_fails_lldp_on_exactly_those_two_cables(gate: Gate) -> None:
    with injected(gate.paths, "switch-miswired", "leaf02"):
        rc, subjects = gate.validate()
    ports = gate.fabric.switch("leaf02").host_ports
    on_switch = sorted(
        (ln for ln in gate.fabric.links if ln.switch == "leaf02"), key=lambda ln: ports.index(ln.port)
    )
    first = on_switch[0]
    other = next(ln for ln in on_switch if ln.host != first.host)  # the fault swaps two hosts' cables
    assert rc == 1
    # The two cables, and the run's built-vs-planned summary (issue 39).
    assert failing(subjects) == {
        (link_checks.LLDP, link_subject(ln.host, ln.nic, ln.switch_end)) for ln in (first, other)
    } | {(as_planned.LINK_AS_PLANNED, as_planned.LINK_SUBJECT)}
    lldp = {f["subject"]: f for s in subjects for f in s["findings"] if f["check"] == link_checks.LLDP}
    swapped = lldp[link_subject(first.host, first.nic, first.switch_end)]
    assert swapped["actual"].startswith(f"{first.switch_end} hears {other.host} ")
    # Each cable of the swapped pair is named with where it belongs.
    assert f"swapped with {other.host}:{other.nic} <-> {other.switch_end}" in swapped["actual"]
    assert swapped["hint"].startswith(f"swap the cables at {first.switch_end} and {other.switch_end}")
    [summary] = [f for s in subjects for f in s["findings"] if f["check"] == as_planned.LINK_AS_PLANNED]
    assert "2 miswired (1 swapped pairs)" in summary["actual"]


# The wire (issue 35): every rail NIC and every cabled switch port is judged on errors, flaps and optics
# over the counter window, and every cable by link.health; each wire fault fails exactly its own check on
# exactly one NIC or port, and link.health on exactly that cable.
HOST_WIRE = ("host.link_errors", "host.link_flaps", "host.optics")
SWITCH_WIRE = ("switch.link_errors", "switch.link_flaps", "switch.optics")
LINK_HEALTH = "link.health"
WINDOW = ("--counter-window", "2")  # long enough for every lab fault's rate to show


def test_every_nic_port_and_cable_is_judged_on_the_wire(gate: Gate) -> None:
    rc, subjects = gate.validate(*WINDOW)
    assert rc == 0, failing(subjects)
    passed: dict[str, set[str]] = {}
    for subject in subjects:
        node = subject.get("host") or subject.get("switch")
        for f in subject["findings"]:
            if f["status"] == "pass":
                passed.setdefault(f["check"], set()).add(f"{node}/{f['subject']}")
    nics = {f"{link.host}/{link.nic}" for link in gate.fabric.links}
    for check in HOST_WIRE:
        assert passed.get(check, set()) >= nics, (check, nics - passed.get(check, set()))
    ports = {f"{link.switch}/{link.switch_end}" for link in gate.fabric.links}
    for check in SWITCH_WIRE:
        assert passed.get(check, set()) >= ports, (check, ports - passed.get(check, set()))
    cables = {link_subject(link.host, link.nic, link.switch_end) for link in gate.fabric.links}
    assert {s.split("/", 1)[1] for s in passed.get(LINK_HEALTH, set())} == cables


def wire_failures(bad: set[tuple[str, str]], check: str) -> tuple[str, set[tuple[str, str]]]:
    """The one subject `check` fails on, and every other failure."""
    subjects = {subject for name, subject in bad if name == check}
    assert len(subjects) == 1, (check, bad)
    [subject] = subjects
    return subject, {(name, s) for name, s in bad if name != check}


@pytest.mark.parametrize(
    ("fault", "host", "check"),
    [
        ("link-errors", "gpu01", "host.link_errors"),
        ("link-flap", "gpu02", "host.link_flaps"),
        ("optic-rx-low", "gpu01", "host.optics"),
    ],
)
def test_a_host_wire_fault_fails_that_nic_and_its_cable_only(
    gate: Gate, fault: str, host: str, check: str
) -> None:
    with injected(gate.paths, fault, host):
        rc, subjects = gate.validate(*WINDOW)
    assert rc == 1
    nic, others = wire_failures(failing(subjects), check)
    [link] = [link for link in gate.fabric.links if (link.host, link.nic) == (host, nic)]
    assert others == {(LINK_HEALTH, link_subject(host, nic, link.switch_end))}


@pytest.mark.parametrize("switch", SWITCHES)
@pytest.mark.parametrize(
    ("fault", "check"), [("switch-link-errors", "switch.link_errors"), ("switch-optic-hot", "switch.optics")]
)
def test_a_switch_wire_fault_fails_that_port_and_its_cable_only(
    gate: Gate, switch: str, fault: str, check: str
) -> None:
    with injected(gate.paths, fault, switch):
        rc, subjects = gate.validate(*WINDOW)
    assert rc == 1
    port, others = wire_failures(failing(subjects), check)
    assert port.startswith(f"{switch}:"), port
    cables = {
        link_subject(ln.host, ln.nic, ln.switch_end) for ln in gate.fabric.links if ln.switch_end == port
    }
    assert len(cables) == 1, cables
    assert others == {(LINK_HEALTH, cable) for cable in cables}


def test_healed_fabric_passes_again(gate: Gate) -> None:
    rc, subjects = gate.validate()
    assert rc == 0, failing(subjects)
