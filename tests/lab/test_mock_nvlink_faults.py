"""The NVLink faults: nvlink-down and clique-mismatch change one node's mock state and heal byte for byte;
imex-down and fabric-manager-down stop a unit on the nodes that run it, and are refused elsewhere. Mock nodes
on tmp dirs and lab plans (no lab is started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mocknode import node_files, prepared

from fabcheck.errors import UsageError
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.nvlink import parse_nvlink_status
from fabcheck_lab import faults, nodes
from fabcheck_lab.mockhost import faults as host_faults
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.tools import nvidia_smi
from fabcheck_lab.mockhost.tools.common import Node
from fabcheck_lab.state import LabError, LabState


def render(paths: MockNodePaths, *args: str) -> str:
    node = Node(paths.state, paths.sys_class, paths.etc)
    if args == ("nvlink", "-s"):
        return nvidia_smi.nvlink_command(node, ["-s"])
    return nvidia_smi.render_query(node)


@pytest.mark.parametrize("profile", ["nvl", "rail8"])
def test_nvlink_down_takes_one_link_of_gpu0_down_and_heals_exactly(tmp_path: Path, profile: str) -> None:
    paths = prepared(tmp_path, profile)
    before = node_files(paths)
    host_faults.inject(paths, "nvlink-down")
    status = parse_nvlink_status(render(paths, "nvlink", "-s"))
    inactive = [(g.index, link.link) for g in status.gpus for link in g.links if not link.active]
    assert inactive == [(0, host_faults.DOWN_LINK)]
    assert "\t Link 3: <inactive>\n" in render(paths, "nvlink", "-s")
    fabrics = {gpu.fabric for gpu in parse_nvidia_smi_q(render(paths, "-q")).gpus}
    assert len(fabrics) == 1  # the fabric registration is untouched
    host_faults.heal(paths, "nvlink-down")
    assert node_files(paths) == before


def test_nvlink_down_is_refused_on_gpus_without_nvlink(tmp_path: Path) -> None:
    paths = prepared(tmp_path, "pcie")
    before = node_files(paths)
    with pytest.raises(UsageError, match="'nvlink-down' needs NVLinks"):
        host_faults.inject(paths, "nvlink-down")
    assert node_files(paths) == before and host_faults.active_faults(paths) == []


def test_clique_mismatch_moves_every_gpu_of_the_tray_to_another_clique(tmp_path: Path) -> None:
    paths = prepared(tmp_path, "nvl")
    before = node_files(paths)
    key = {gpu.fabric.domain_key for gpu in parse_nvidia_smi_q(render(paths, "-q")).gpus if gpu.fabric}
    host_faults.inject(paths, "clique-mismatch")
    fabrics = [gpu.fabric for gpu in parse_nvidia_smi_q(render(paths, "-q")).gpus]
    assert {f.clique_id for f in fabrics if f} == {host_faults.OTHER_CLIQUE}
    assert {f.domain_key for f in fabrics if f}.isdisjoint(key) and len(
        {f.cluster_uuid for f in fabrics if f}
    ) == 1
    assert {(f.state, f.status) for f in fabrics if f} == {("Completed", "Success")}
    host_faults.heal(paths)
    assert node_files(paths) == before


def test_clique_mismatch_needs_a_multi_node_tray(tmp_path: Path) -> None:
    paths = prepared(tmp_path, "rail8")
    with pytest.raises(UsageError, match="needs a multi-node NVLink tray"):
        host_faults.inject(paths, "clique-mismatch")


def lab_state(profile: str, hosts: int) -> LabState:
    return LabState("/repo", "/dev/shm/x", profile, hosts, 2, "lo", nodes.plan_nodes(profile, hosts, 2))


def test_service_faults_apply_to_the_hosts_that_run_the_service() -> None:
    catalog = faults.catalog()
    assert catalog["imex-down"][0] == catalog["fabric-manager-down"][0] == "host"
    assert catalog["nvlink-down"][0] == catalog["clique-mismatch"][0] == "host"
    nvl, roce = lab_state("nvl", 4), lab_state("roce", 3)
    faults._check_target("imex-down", nvl.node("gpu03"), nvl)
    faults._check_target("fabric-manager-down", roce.node("gpu01"), roce)
    with pytest.raises(LabError, match=r"applies to nvidia-imex hosts \(none in this lab\), not to gpu01"):
        faults._check_target("imex-down", roce.node("gpu01"), roce)
    with pytest.raises(LabError, match=r"nvidia-fabricmanager hosts \(gpu01, gpu02\), not to gpu03"):
        faults._check_target("fabric-manager-down", roce.node("gpu03"), roce)  # the PCIe server
    with pytest.raises(LabError, match=r"nvidia-fabricmanager hosts \(none in this lab\)"):
        faults._check_target("fabric-manager-down", nvl.node("gpu01"), nvl)
    with pytest.raises(LabError, match=r"applies to SM nodes \(none in this lab\), not to gpu01"):
        faults._check_target("sm-stopped", nvl.node("gpu01"), nvl)
