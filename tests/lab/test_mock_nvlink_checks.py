"""The NVLink host checks on the lab's mock GB200-like trays (profile nvl; no lab started): two trays of
one NVLink domain read as the host stage reads them (the probes' commands on mock nodes, the parsers,
HostEvidence), judged against their planned domain. A healthy domain passes every NVLink check (the
fabric manager a named skip: the nvl intent does not ask for it); each lab fault fails its check there."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.desired.nic import DesiredHost, desired_host
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.gate import host_stage
from fabcheck.intent.model import FabricIntent
from fabcheck_lab.mockhost import faults as host_faults

NVLINK_CHECKS = (checks.NVLINK, checks.NVLINK_FABRIC, checks.IMEX, checks.FABRIC_MANAGER)
IMEX_NODES = Path("nvidia-imex") / "nodes_config.cfg"
UNIT_DIR = Path("usr/lib/systemd/system")
INTENT = FabricIntent()


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def trays(tmp_path: Path, bin_dir: Path) -> Iterator[list[MockNode]]:
    """tray1 and tray2: one NVLink domain of the nvl profile, IMEX started on the domain's list."""
    nodes = make_nodes(tmp_path, bin_dir, [("tray1", "nvl"), ("tray2", "nvl")])
    for node in nodes:
        for unit in (node.paths.upper / UNIT_DIR).glob("*.service"):  # the lab's /usr/local/bin is bin_dir
            unit.write_text(unit.read_text().replace("/usr/local/bin/", f"{node.bin_dir}/"))
        path = node.paths.etc / IMEX_NODES
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{n.address}\n" for n in nodes))
    try:
        for node in nodes:
            node.run("systemctl", "start", "nvidia-imex")
        for node in nodes:
            ready(node)
        yield nodes
    finally:
        for node in nodes:
            node.run("systemctl", "stop", "nvidia-imex", rc=None)


def ready(node: MockNode, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while node.run("nvidia-imex-ctl", "-q", rc=None).returncode != 0:
        assert time.monotonic() < deadline, "nvidia-imex never answered"
        time.sleep(0.05)


def section(node: MockNode, *argv: str) -> Section:
    done = node.run(*argv, rc=None)
    return Section(done.returncode, done.stdout, done.stderr)


def collected(node: MockNode) -> HostCollection:
    """The NVLink probes' sections as the collection script brings them back from this tray."""
    sections = {
        "nvidia_smi_q": section(node, "nvidia-smi", "-q"),
        "nvlink_status": section(node, "nvidia-smi", "nvlink", "-s"),
        "imex_active": section(node, "systemctl", "is-active", "nvidia-imex"),
        "imex_nodes": Section(0, (node.paths.etc / IMEX_NODES).read_text()),
        "imex_status": section(node, "nvidia-imex-ctl", "-N"),
        "fabric_manager_active": section(node, "systemctl", "is-active", "nvidia-fabricmanager"),
    }
    return HostCollection(node.name, sections, True, priority=3)


def planned(node: MockNode, trays: list[MockNode]) -> DesiredHost:
    """The tray's desired state as the gate plans the lab's nvl intent (gpus 4, 18 x 53.125, imex)."""
    nvlink = DesiredNvlinkHost(
        host=node.name,
        domain="nvl_rack1",
        members=tuple(t.name for t in trays),
        addresses=tuple(t.address for t in trays),
        gpus=4,
        links_per_gpu=18,
        link_gbytes=53.125,
        imex=True,
        fabric_manager=False,
        busbw_min_fraction=0.6,
    )
    return dataclasses.replace(desired_host(INTENT, node.name), nvlink=nvlink)


def judged(trays: list[MockNode]) -> dict[str, list[Finding]]:
    """Every NVLink finding per tray: the host checks, then host.nvlink_fabric across the trays."""
    evidence = {t.name: host_stage.evidence(collected(t)) for t in trays}
    desired = {t.name: planned(t, trays) for t in trays}
    result = {name: checks.check_host(shown, desired[name], INTENT) for name, shown in evidence.items()}
    fleet = checks.check_fleet(evidence, desired, dict.fromkeys(evidence, INTENT))
    return {name: [f for f in result[name] + fleet[name] if f.check in NVLINK_CHECKS] for name in result}


def not_passing(found: dict[str, list[Finding]]) -> dict[tuple[str, str, str], Status]:
    return {
        (host, f.check, f.subject): f.status
        for host, findings in found.items()
        for f in findings
        if f.status is not Status.PASS
    }


SKIPPED_FM = {
    ("tray1", checks.FABRIC_MANAGER, "host"): Status.SKIP,
    ("tray2", checks.FABRIC_MANAGER, "host"): Status.SKIP,
}


def test_a_healthy_domain_passes_every_nvlink_check(trays: list[MockNode]) -> None:
    found = judged(trays)
    assert not_passing(found) == SKIPPED_FM
    assert {f.check for f in found["tray1"]} == set(NVLINK_CHECKS)
    assert [f.subject for f in found["tray1"] if f.check == checks.NVLINK_FABRIC] == [
        f"GPU{i}" for i in range(4)
    ]


def test_nvlink_down_fails_host_nvlink_on_that_gpu_alone(trays: list[MockNode]) -> None:
    host_faults.inject(trays[1].paths, "nvlink-down")
    found = judged(trays)
    assert not_passing(found) == SKIPPED_FM | {("tray2", checks.NVLINK, "GPU0"): Status.FAIL}
    (down,) = [f for f in found["tray2"] if f.status is Status.FAIL]
    assert down.actual == "17 of 18 NVLinks active (inactive: Link 3)"


def test_a_stopped_imex_daemon_is_named_on_its_tray_and_on_its_peer(trays: list[MockNode]) -> None:
    trays[1].run("systemctl", "stop", "nvidia-imex")
    found = judged(trays)
    assert not_passing(found) == SKIPPED_FM | {
        ("tray2", checks.IMEX, "nvidia-imex"): Status.FAIL,
        ("tray2", checks.IMEX, "IMEX domain"): Status.SKIP,  # its ctl has no daemon to ask
        ("tray1", checks.IMEX, "IMEX domain"): Status.FAIL,
        ("tray1", checks.IMEX, "IMEX node tray2"): Status.FAIL,
    }
    peer = next(f for f in found["tray1"] if f.subject == "IMEX node tray2")
    assert peer.actual.startswith("state UNAVAILABLE")


def test_a_tray_in_another_clique_fails_the_fabric_check_of_both_trays_of_a_two_tray_domain(
    trays: list[MockNode],
) -> None:
    # Two trays, two keys: no key is ahead, so each tray names the other's (docs/checks/nvlink.md).
    host_faults.inject(trays[1].paths, "clique-mismatch")
    found = judged(trays)
    fabric = {k: s for k, s in not_passing(found).items() if k[1] == checks.NVLINK_FABRIC}
    assert fabric == {
        (t, checks.NVLINK_FABRIC, f"GPU{i}"): Status.FAIL for t in ("tray1", "tray2") for i in range(4)
    }
    assert not_passing(found).keys() - fabric.keys() == SKIPPED_FM.keys()
    odd = next(f for f in found["tray2"] if f.check == checks.NVLINK_FABRIC)
    assert f".{host_faults.OTHER_CLIQUE}" in odd.actual and "on tray1" in odd.actual
