"""`fabcheck validate` over the whole fabric of a lab that site.yml converged: 2 GPU hosts and 3 switches
(NVUE, SONiC, EOS), cabled by the lab. A healthy fabric passes with exit 0, every skip says why; a switch
fault fails exactly its switch check on exactly that port and the link check of the cables on that port;
a host fault fails exactly its host check on that NIC and the link check of that NIC's cable; healing
gives exit 0 again."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from labsupport import REPO, converged_lab, injected, requires_lab

from fabcheck.checks import host as host_checks
from fabcheck.checks import link as link_checks
from fabcheck.intent.fabric import Fabric, fabric_of
from fabcheck.intent.loader import load_inventory
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

SWITCHES = ("leaf01", "leaf02", "leaf03")
GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded


@dataclass(frozen=True)
class Gate:
    paths: LabPaths
    fabric: Fabric

    def validate(self) -> tuple[int, list[dict]]:
        argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(self.paths.inventory.parent)]
        done = subprocess.run(
            [*argv, "--json", *GENEROUS], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode in (0, 1, 3), done.stderr
        return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


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
    assert failing(subjects) == {
        (link_checks.LLDP, link_subject(ln.host, ln.nic, ln.switch_end)) for ln in (first, other)
    }
    lldp = {f["subject"]: f for s in subjects for f in s["findings"] if f["check"] == link_checks.LLDP}
    assert lldp[link_subject(first.host, first.nic, first.switch_end)]["actual"].startswith(
        f"{first.switch_end} hears {other.host} "
    )


def test_healed_fabric_passes_again(gate: Gate) -> None:
    rc, subjects = gate.validate()
    assert rc == 0, failing(subjects)
