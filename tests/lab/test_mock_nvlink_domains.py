"""The lab's two-domain shape and its HGX boards judged by fabcheck's host checks (fabcheck/checks/host/
nvlink.py) without a lab: `--profile nvl --hosts 4` (2 domains x 2 trays, IMEX running) passes every
check with each domain's own key, a domain's fault stays in that domain, and the roce profile's HGX board
passes with its zero ClusterUUID while fabric-manager-down fails host.fabric_manager. One domain's faults
in detail: test_mock_nvlink_checks.py. Mock nodes on tmp dirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mock_nvlink import in_lab_bin, wait_ready, write_nodes_config
from test_mockhost_support import MockNode, installed_bin, make_nodes

from fabcheck.checks.host.nvlink import check_fabric_manager, check_imex, check_nvlink, check_nvlink_fabric
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nvlink import DesiredNvlinkHost, desired_nvlink_host
from fabcheck.intent.model import NvlinkIntent
from fabcheck.intent.nvlink import NvlinkDomain, NvlinkPlan
from fabcheck.parsers.imex import parse_imex_nodes_config, parse_imex_status
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.nvlink import parse_nvlink_status
from fabcheck_lab.mockhost import faults as host_faults

NVL = NvlinkIntent(gpus=4, links_per_gpu=18, link_gbytes=53.125, imex=True)
HGX = NvlinkIntent(gpus=8, links_per_gpu=18, link_gbytes=26.562, fabric_manager=True)


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture(scope="module")
def racks(tmp_path_factory: pytest.TempPathFactory, bin_dir: Path) -> Iterator[list[MockNode]]:
    """gpu01..gpu04, nvl_rack1 = gpu01+gpu02, nvl_rack2 = gpu03+gpu04, converged as the role leaves them."""
    trays = make_nodes(tmp_path_factory.mktemp("racks"), bin_dir, [(f"gpu0{i}", "nvl") for i in range(1, 5)])
    for domain in (trays[:2], trays[2:]):
        for tray in domain:
            in_lab_bin(tray)
            write_nodes_config(tray, [t.address for t in domain])
            tray.run("systemctl", "enable", "nvidia-imex")
            tray.run("systemctl", "start", "nvidia-imex")
    for tray in trays:
        wait_ready(tray)
    yield trays
    for tray in trays:
        tray.run("systemctl", "stop", "nvidia-imex", rc=None)


def desired(trays: list[MockNode]) -> dict[str, DesiredNvlinkHost]:
    plan = NvlinkPlan(
        tuple(
            NvlinkDomain(name, tuple(t.name for t in members), tuple(t.address for t in members))
            for name, members in (("nvl_rack1", trays[:2]), ("nvl_rack2", trays[2:]))
        )
    )
    return {t.name: desired_nvlink_host(NVL, plan, t.name) for t in trays}


def judge(trays: list[MockNode]) -> dict[str, list[Finding]]:
    """host.nvlink, host.nvlink_fabric and host.imex of every tray, from the probes' commands."""
    wanted = desired(trays)
    queries = {t.name: parse_nvidia_smi_q(t.run("nvidia-smi", "-q").stdout) for t in trays}
    findings = check_nvlink_fabric(queries, wanted)
    for tray in trays:
        findings[tray.name] += check_nvlink(
            parse_nvlink_status(tray.run("nvidia-smi", "nvlink", "-s").stdout), wanted[tray.name]
        )
        active = tray.run("systemctl", "is-active", "nvidia-imex", rc=None).stdout.strip()
        nodes = parse_imex_nodes_config((tray.paths.etc / "nvidia-imex/nodes_config.cfg").read_text())
        ctl = tray.run("nvidia-imex-ctl", "-N", rc=None)
        # a failed command is the probe's Unreadable: no daemon to ask
        status = (
            parse_imex_status(ctl.stdout)
            if ctl.returncode == 0
            else Unreadable("nvidia-imex-ctl -N", ctl.stderr)
        )
        findings[tray.name] += check_imex(active, nodes, status, wanted[tray.name])
    return findings


def not_passing(findings: dict[str, list[Finding]]) -> set[tuple[str, str, str]]:
    return {
        (host, f.check, f.subject)
        for host, found in findings.items()
        for f in found
        if f.status in (Status.FAIL, Status.ERROR)
    }


def test_the_converged_racks_pass_every_nvlink_check(racks: list[MockNode]) -> None:
    findings = judge(racks)
    assert not_passing(findings) == set()
    checks = {f.check for found in findings.values() for f in found if f.status == Status.PASS}
    assert checks == {"host.nvlink", "host.nvlink_fabric", "host.imex"}
    assert sum(1 for f in findings["gpu01"] if f.check == "host.nvlink") == 4  # one per GPU


def test_a_fault_in_one_domain_fails_there_alone(racks: list[MockNode]) -> None:
    host_faults.inject(racks[2].paths, "nvlink-down")
    try:
        failing = not_passing(judge(racks))
    finally:
        host_faults.heal(racks[2].paths, "nvlink-down")
    assert failing == {("gpu03", "host.nvlink", "GPU0")}


def test_fabric_manager_down_fails_host_fabric_manager(tmp_path: Path, bin_dir: Path) -> None:
    (board,) = make_nodes(tmp_path, bin_dir, [("hgx", "rail8")])
    in_lab_bin(board)
    board.run("systemctl", "enable", "nvidia-fabricmanager")
    board.run("systemctl", "start", "nvidia-fabricmanager")
    try:
        up = check_fabric_manager(board.run("systemctl", "is-active", "nvidia-fabricmanager").stdout.strip())
        board.run("systemctl", "stop", "nvidia-fabricmanager")
        down = check_fabric_manager(
            board.run("systemctl", "is-active", "nvidia-fabricmanager", rc=3).stdout.strip()
        )
    finally:
        board.run("systemctl", "stop", "nvidia-fabricmanager")
    assert [f.status for f in up] == [Status.PASS] and [(f.status, f.actual) for f in down] == [
        (Status.FAIL, "inactive")
    ]
    plan = NvlinkPlan()
    wanted = desired_nvlink_host(HGX, plan, "hgx")
    nvlink = check_nvlink(parse_nvlink_status(board.run("nvidia-smi", "nvlink", "-s").stdout), wanted)
    fabric = check_nvlink_fabric(
        {"hgx": parse_nvidia_smi_q(board.run("nvidia-smi", "-q").stdout)}, {"hgx": wanted}
    )
    assert {f.status for f in nvlink + fabric["hgx"]} == {Status.PASS}  # a lone HGX board: zero UUID passes
