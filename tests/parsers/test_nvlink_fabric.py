"""`nvidia-smi -q`'s "Fabric" section -> GpuQuery.fabric, replaying the real outputs of
tests/data/real/nvlink/INDEX.tsv: a GB200-class GPU registered but Unhealthy (dra-driver issue 626), a
GB200 with Insufficient Resources and a zero clique (azhpc-images PR 506), an HGX H100 (8 GPUs, driver 565)
Completed with a zero ClusterUUID, and an H100 NVL (PCIe, driver 550) whose Fabric values are all N/A."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.nvlink_records import ZERO_UUID, GpuFabric

NVLINK = Path(__file__).resolve().parents[1] / "data" / "real" / "nvlink"
HOST = NVLINK.parent / "host"
HGX_H100 = (NVLINK / "nvidia-smi-q-h100-sxm-8gpu-565-zero-uuid.txt").read_text()
H100_NVL = (NVLINK / "nvidia-smi-q-h100-nvl-2gpu-550-fabric-na.txt").read_text()
# The two GitHub excerpts show the Fabric block alone; a GPU header puts it where nvidia-smi prints it.
HEADER = "GPU 00000009:01:00.0\n"
UNHEALTHY = HEADER + (NVLINK / "nvidia-smi-q-fabric-gb200-unhealthy-excerpt.txt").read_text()
INSUFFICIENT = HEADER + "".join(
    "    " + line for line in (NVLINK / "nvidia-smi-q-fabric-insufficient-resources-excerpt.txt").open()
)


def test_a_registered_but_unhealthy_gb200_gpu() -> None:
    (gpu,) = parse_nvidia_smi_q(UNHEALTHY, "626").gpus
    assert gpu.fabric == GpuFabric(
        state="Completed",
        status="Success",
        clique_id=2,
        cluster_uuid="dc6e40c4-d722-4357-9ba6-5291dd461278",
        health_summary="Unhealthy",
        bandwidth="Full",
    )
    assert gpu.fabric.domain_key == "dc6e40c4-d722-4357-9ba6-5291dd461278.2"


def test_insufficient_resources_with_a_zero_clique_and_uuid() -> None:
    (gpu,) = parse_nvidia_smi_q(INSUFFICIENT, "506").gpus
    assert gpu.fabric is not None
    assert (gpu.fabric.state, gpu.fabric.status) == ("Completed", "Insufficient Resources")
    assert (gpu.fabric.clique_id, gpu.fabric.cluster_uuid) == (0, ZERO_UUID)
    assert gpu.fabric.health_summary is None  # this excerpt shows no Health lines
    assert gpu.fabric.domain_key is None


def test_hgx_h100_completed_with_a_zero_uuid_on_every_gpu() -> None:
    query = parse_nvidia_smi_q(HGX_H100, "hgx")
    assert query.driver_version == "565.57.01"
    assert len(query.gpus) == 8
    first = query.gpus[0]
    # the health values host.gpu_health reads, from a real H100 (driver 565 prints the 535 layout)
    assert (first.bus_id, first.name) == ("0000:18:00.0", "NVIDIA H100 80GB HBM3")
    assert (first.persistence_mode, first.ecc_enabled, first.remap_pending) == (True, True, False)
    assert first.uncorrectable_total == 0 and "SRAM Uncorrectable Parity" in first.volatile_uncorrectable
    for gpu in query.gpus:
        assert gpu.fabric == GpuFabric("Completed", "Success", 0, ZERO_UUID, None, None)
        assert gpu.fabric.domain_key is None  # single-node HGX: no multi-node domain to key


def test_h100_nvl_shows_a_fabric_section_of_na() -> None:
    query = parse_nvidia_smi_q(H100_NVL, "nvl")
    assert [gpu.fabric for gpu in query.gpus] == [GpuFabric(), GpuFabric()]


def test_an_output_without_the_fabric_section_has_no_fabric() -> None:
    # driver 510 (A100): no Fabric section at all; driver 535 (A10G): Fabric with State and Status N/A
    (old,) = parse_nvidia_smi_q(
        (HOST / "nvidia-smi-q-a100-row-remap-pending-excerpt.txt").read_text(), "a"
    ).gpus
    assert old.fabric is None
    (a10g,) = parse_nvidia_smi_q((HOST / "nvidia-smi-q-a10g-535.txt").read_text(), "a10g").gpus
    assert a10g.fabric == GpuFabric()


def test_an_upper_case_uuid_is_read_lower_case() -> None:
    text = UNHEALTHY.replace("dc6e40c4-d722", "DC6E40C4-D722")
    (gpu,) = parse_nvidia_smi_q(text, "upper").gpus
    assert gpu.fabric is not None and gpu.fabric.cluster_uuid == "dc6e40c4-d722-4357-9ba6-5291dd461278"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (": 2\n", ": two\n", "not a clique number"),
        (": 2\n", ": 99999999999\n", "not a clique number"),
        ("dc6e40c4-d722-4357-9ba6-5291dd461278", "dc6e40c4", "not a UUID"),
    ],
)
def test_a_damaged_clique_or_uuid_is_refused(old: str, new: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_nvidia_smi_q(UNHEALTHY.replace(old, new, 1), "bad")


test_mutations_parse_or_refuse, test_hostile_text_parses_or_refuses = parse_or_refuse_tests(
    parse_nvidia_smi_q, [UNHEALTHY, INSUFFICIENT, H100_NVL]
)
