"""host.nvlink_fabric: each GPU's Fabric section (`nvidia-smi -q`) and one ClusterUUID.CliqueId across
the trays of a multi-node NVLink domain, judged on records built as the parser returns them."""

from __future__ import annotations

import dataclasses

from fabcheck.checks.host import nvlink as nv
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.parsers.nvidia_smi_q import GpuQuery, SmiQuery
from fabcheck.parsers.nvlink_records import ZERO_UUID, GpuFabric

RACK1 = "dc6e40c4-d722-4357-9ba6-5291dd461278"  # the ClusterUUID of dra-driver-nvidia-gpu issue 626
RACK2 = "1b7c1e7a-0000-4000-8000-00000000beef"
TRAYS = ("gpu01", "gpu02", "gpu03")


def tray(host: str, members: tuple[str, ...] = TRAYS, **changes: object) -> DesiredNvlinkHost:
    wanted = DesiredNvlinkHost(
        host=host,
        domain="nvl_rack1" if len(members) > 1 else host,
        members=members,
        addresses=tuple(f"10.0.0.{i + 1}" for i in range(len(members))),
        gpus=4,
        links_per_gpu=18,
        link_gbytes=53.125,
        imex=len(members) > 1,
        fabric_manager=len(members) == 1,
        busbw_min_fraction=0.6,
    )
    return dataclasses.replace(wanted, **changes)  # type: ignore[arg-type]


def fabric(uuid: str = RACK1, clique: int | None = 2, **changes: object) -> GpuFabric:
    shown = GpuFabric("Completed", "Success", clique, uuid, "Healthy", "Full")
    return dataclasses.replace(shown, **changes)  # type: ignore[arg-type]


def query(*fabrics: GpuFabric | None) -> SmiQuery:
    shown = fabrics or (fabric(),) * 4
    return SmiQuery(
        "570.124.06", tuple(GpuQuery(i, f"0000:{i + 1:02x}:00.0", fabric=f) for i, f in enumerate(shown))
    )


def judged(
    queries: dict[str, SmiQuery | Unreadable], members: tuple[str, ...] = TRAYS
) -> dict[str, list[Finding]]:
    return nv.check_nvlink_fabric(queries, {host: tray(host, members) for host in queries})


def statuses(findings: list[Finding]) -> set[Status]:
    return {f.status for f in findings}


def test_a_domain_whose_trays_share_one_key_passes_every_gpu() -> None:
    result = judged({host: query() for host in TRAYS})
    for findings in result.values():
        assert [f.subject for f in findings] == ["GPU0", "GPU1", "GPU2", "GPU3"]
        assert statuses(findings) == {Status.PASS}
    assert result["gpu01"][0].actual.endswith(f"ClusterUUID.CliqueId {RACK1}.2")


def test_the_tray_in_another_clique_is_named_with_the_key_the_rest_share() -> None:
    result = judged({"gpu01": query(), "gpu02": query(*(fabric(clique=3),) * 4), "gpu03": query()})
    assert statuses(result["gpu01"]) == statuses(result["gpu03"]) == {Status.PASS}
    assert statuses(result["gpu02"]) == {Status.FAIL}
    assert result["gpu02"][0].actual == (
        f"this tray's ClusterUUID.CliqueId {RACK1}.3, not {RACK1}.2 of gpu01, gpu03"
    )


def test_a_tie_fails_every_disagreeing_tray_naming_the_others() -> None:
    members = ("gpu01", "gpu02")
    result = judged({"gpu01": query(), "gpu02": query(*(fabric(RACK2),) * 4)}, members)
    assert statuses(result["gpu01"]) == statuses(result["gpu02"]) == {Status.FAIL}
    assert f"{RACK2}.2 on gpu02" in result["gpu01"][0].actual
    assert f"{RACK1}.2 on gpu01" in result["gpu02"][0].actual


def test_gpus_of_one_tray_in_two_cliques_fail_on_that_tray() -> None:
    result = judged({"gpu01": query(fabric(), fabric(), fabric(clique=5), fabric()), "gpu02": query()})
    assert statuses(result["gpu01"]) == {Status.FAIL}
    assert "the host's GPUs are in 2 cliques" in result["gpu01"][2].actual
    assert statuses(result["gpu02"]) == {Status.PASS}  # gpu01 shows no one key to compare against


def test_the_broken_gb200_of_azhpc_images_506_fails_status_uuid_and_clique() -> None:
    # https://github.com/Azure/azhpc-images/pull/506: Status Insufficient Resources, CliqueId 0, zero UUID
    broken = fabric(ZERO_UUID, 0, status="Insufficient Resources")
    result = judged({"gpu01": query(broken, fabric(), fabric(), fabric()), "gpu02": query()})
    assert result["gpu01"][0].status is Status.FAIL
    assert result["gpu01"][0].actual.startswith(
        f"Status Insufficient Resources; ClusterUUID {ZERO_UUID}; CliqueId 0"
    )


def test_unhealthy_or_degraded_bandwidth_fails_even_when_completed() -> None:
    # dra-driver-nvidia-gpu issue 626: Completed/Success with Summary Unhealthy
    result = judged(
        {
            "gpu01": query(
                fabric(health_summary="Unhealthy"), fabric(bandwidth="Degraded"), fabric(), fabric()
            )
        },
        ("gpu01", "gpu02"),
    )
    assert result["gpu01"][0].actual == "Health Summary Unhealthy"
    assert result["gpu01"][1].actual == "Health Bandwidth Degraded"


def test_still_registering_fails_naming_the_state() -> None:
    result = judged({"gpu01": query(fabric(state="In Progress", status=None), fabric(), fabric(), fabric())})
    assert result["gpu01"][0].actual.startswith("State In Progress")
    assert "fabric manager" in result["gpu01"][0].hint


def test_a_lone_hgx_with_a_zero_uuid_passes() -> None:
    # a single HGX server shows ClusterUUID zero (nccl src/mnnvl.cc: no MNNVL information): no UUID rule
    lone = query(*(fabric(ZERO_UUID, 0),) * 8)
    result = nv.check_nvlink_fabric({"hgx01": lone}, {"hgx01": tray("hgx01", ("hgx01",))})
    assert len(result["hgx01"]) == 8
    assert statuses(result["hgx01"]) == {Status.PASS}


def test_a_lone_hgx_not_completed_still_fails() -> None:
    lone = query(*(fabric(ZERO_UUID, 0, state="Not Started", status=None),) * 8)
    result = nv.check_nvlink_fabric({"hgx01": lone}, {"hgx01": tray("hgx01", ("hgx01",))})
    assert statuses(result["hgx01"]) == {Status.FAIL}


def test_a_tray_read_alone_is_judged_and_its_domain_comparison_a_named_skip() -> None:
    result = judged({"gpu01": query()})
    assert [f.status for f in result["gpu01"]] == [Status.PASS] * 4 + [Status.SKIP]
    assert result["gpu01"][-1].subject == "domain nvl_rack1"
    assert "only gpu01 of NVLink domain nvl_rack1" in result["gpu01"][-1].actual


def test_no_fabric_section_is_an_error_and_an_unreadable_query_too() -> None:
    result = judged(
        {"gpu01": query(None, fabric(), fabric(), fabric()), "gpu02": Unreadable("nvidia-smi -q", "exit 9")}
    )
    assert result["gpu01"][0].status is Status.ERROR
    assert result["gpu02"][0].status is Status.ERROR and "nvidia-smi -q" in result["gpu02"][0].actual
    assert statuses(result["gpu01"][1:4]) == {Status.PASS}
