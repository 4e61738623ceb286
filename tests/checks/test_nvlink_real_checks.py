"""The NVLink checks replaying the real outputs of tests/data/real/nvlink/INDEX.tsv through the parsers:
what a real HGX, GB200 tray and IMEX domain print is judged as docs/checks/nvlink.md says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fabcheck.checks.host import nvlink as nv
from fabcheck.checks.model import Status
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.parsers.imex import parse_imex_nodes_config, parse_imex_status
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.nvlink import parse_nvlink_status
from fabcheck.parsers.nvlink_records import ImexStatus, NvlinkStatus

NVLINK = Path(__file__).resolve().parents[1] / "data" / "real" / "nvlink"
HEADER = "GPU 00000009:01:00.0\n"  # the GitHub excerpts show the Fabric block alone


def host(name: str, members: tuple[str, ...], **changes: object) -> DesiredNvlinkHost:
    wanted = DesiredNvlinkHost(
        host=name,
        domain="nvl_rack1" if len(members) > 1 else name,
        members=members,
        addresses=tuple(f"172.31.0.{i + 1}" for i in range(len(members))),
        gpus=8,
        links_per_gpu=18,
        link_gbytes=26.562,
        imex=False,
        fabric_manager=len(members) == 1,
        busbw_min_fraction=0.6,
    )
    return dataclasses.replace(wanted, **changes)  # type: ignore[arg-type]


def test_a_real_hgx_h100_completed_with_a_zero_uuid_passes_as_a_lone_server() -> None:
    # thamada/nvidia-smi H100SXMx8 (driver 565): State Completed, Status Success, ClusterUUID zero, CliqueId 0
    query = parse_nvidia_smi_q((NVLINK / "nvidia-smi-q-h100-sxm-8gpu-565-zero-uuid.txt").read_text(), "hgx")
    result = nv.check_nvlink_fabric({"hgx01": query}, {"hgx01": host("hgx01", ("hgx01",))})
    assert len(result["hgx01"]) == 8
    assert {f.status for f in result["hgx01"]} == {Status.PASS}


def test_the_same_zero_uuid_in_a_multi_node_domain_fails_the_uuid_and_clique_rule() -> None:
    query = parse_nvidia_smi_q((NVLINK / "nvidia-smi-q-h100-sxm-8gpu-565-zero-uuid.txt").read_text(), "hgx")
    trays = ("gpu01", "gpu02")
    result = nv.check_nvlink_fabric({"gpu01": query}, {"gpu01": host("gpu01", trays, imex=True)})
    assert result["gpu01"][0].status is Status.FAIL
    assert result["gpu01"][0].actual == "ClusterUUID 00000000-0000-0000-0000-000000000000; CliqueId 0"


def test_the_real_unhealthy_gb200_gpu_fails_on_its_health_summary() -> None:
    # https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/626
    text = HEADER + (NVLINK / "nvidia-smi-q-fabric-gb200-unhealthy-excerpt.txt").read_text()
    query = parse_nvidia_smi_q(text, "626")
    result = nv.check_nvlink_fabric({"gpu01": query}, {"gpu01": host("gpu01", ("gpu01", "gpu02"), gpus=1)})
    assert result["gpu01"][0].status is Status.FAIL
    assert result["gpu01"][0].actual == "Health Summary Unhealthy"


def test_the_real_insufficient_resources_gb200_gpu_fails_status_uuid_and_clique() -> None:
    # https://github.com/Azure/azhpc-images/pull/506
    excerpt = (NVLINK / "nvidia-smi-q-fabric-insufficient-resources-excerpt.txt").open()
    query = parse_nvidia_smi_q(HEADER + "".join("    " + line for line in excerpt), "506")
    result = nv.check_nvlink_fabric({"gpu01": query}, {"gpu01": host("gpu01", ("gpu01", "gpu02"), gpus=1)})
    assert result["gpu01"][0].actual == (
        "Status Insufficient Resources; ClusterUUID 00000000-0000-0000-0000-000000000000; CliqueId 0"
    )


def status_of(name: str) -> NvlinkStatus:
    return parse_nvlink_status((NVLINK / name).read_text(), name)


def test_the_real_h100_links_pass_at_their_rate() -> None:
    # https://github.com/bottlerocket-os/bottlerocket/pull/4418: 2 GPUs, 18 x 26.562 GB/s
    findings = nv.check_nvlink(
        status_of("nvidia-smi-nvlink-s-h100-2gpu-excerpt.txt"), host("hgx01", ("hgx01",), gpus=2)
    )
    assert [(f.subject, f.status, f.actual) for f in findings] == [
        ("GPU0", Status.PASS, "18 NVLinks active at 26.562 GB/s"),
        ("GPU1", Status.PASS, "18 NVLinks active at 26.562 GB/s"),
    ]


def test_the_real_gb200_gpu_passes_at_53_125() -> None:
    # https://github.com/NVIDIA/k8s-test-infra/issues/371
    wanted = host("gpu01", ("gpu01", "gpu02"), gpus=1, link_gbytes=53.125)
    (finding,) = nv.check_nvlink(status_of("nvidia-smi-nvlink-s-gb200-gpu0-excerpt.txt"), wanted)
    assert finding.status is Status.PASS and finding.measure is not None
    assert finding.measure.value == 956.25 and finding.measure.expected == 956.25


def test_the_real_v100_inactive_links_fail_named() -> None:
    # https://github.com/Azure/azhpc-diagnostics/issues/73: GPU 3, Links 3 and 5 <inactive>
    wanted = host("v100", ("v100",), gpus=1, links_per_gpu=6, link_gbytes=None)
    (finding,) = nv.check_nvlink(status_of("nvidia-smi-nvlink-s-v100-inactive-excerpt.txt"), wanted)
    assert finding.subject == "GPU3" and finding.status is Status.FAIL
    assert finding.actual == "4 of 6 NVLinks active (inactive: Link 3, Link 5)"


def imex_of(name: str) -> ImexStatus:
    return parse_imex_status((NVLINK / name).read_text(), name)


def test_the_real_18_tray_gb200_domain_passes_with_its_18_members() -> None:
    # AWS ParallelCluster's p6e-gb200 UltraServer: 18 nodes READY, all C, Domain State UP
    shown = imex_of("nvidia-imex-ctl-N-18-nodes-gb200-570.txt")
    addresses = tuple(node.address for node in shown.nodes)
    trays = tuple(f"tray{i:02d}" for i in range(18))
    wanted = host("tray00", trays, imex=True, addresses=addresses)
    findings = nv.check_imex("active", tuple(reversed(addresses)), shown, wanted)
    assert len(findings) == 3 + 18 and {f.status for f in findings} == {Status.PASS}


def test_the_real_one_node_view_of_a_two_tray_domain_names_the_missing_peer() -> None:
    # jgehrcke/jpsnips-nv: one GH200's daemon sees only itself (10.136.206.48)
    shown = imex_of("nvidia-imex-ctl-N-1-node-gh200-570.txt")
    both = ("10.136.206.47", "10.136.206.48")
    wanted = host("gh02", ("gh01", "gh02"), imex=True, addresses=both)
    found = {f.subject: f for f in nv.check_imex("active", both, shown, wanted)}
    assert found["IMEX domain"].actual == "1 node(s), not 2"
    assert found["IMEX node gh01"].status is Status.FAIL
    assert (
        found["IMEX node gh01"].actual == "10.136.206.47 is not in this tray's `nvidia-imex-ctl -N` node list"
    )
    assert found["IMEX node gh02"].status is Status.PASS


def test_the_real_crusoe_node_list_is_judged_against_the_domain() -> None:
    # https://docs.crusoecloud.com/networking/nv-link/imex-setup/index.html: four trays, one address a line
    listed = parse_imex_nodes_config((NVLINK / "imex-nodes-config-4-trays.cfg").read_text(), "crusoe")
    trays = ("t1", "t2", "t3", "t4")
    wanted = host(
        "t1", trays, imex=True, addresses=("172.27.58.70", "172.27.58.71", "172.27.58.72", "172.27.58.99")
    )
    found = {f.subject: f for f in nv.check_imex("active", listed, None, wanted)}
    assert found["nodes_config.cfg"].actual == "missing 172.27.58.99 (t4); extra 172.27.58.73"
