"""The mock GPU health (issue 36), in process (no lab, no subprocess): `nvidia-smi -q` in the layout of
the cited real output (tests/data/real/host/nvidia-smi-q-a10g-535.txt), consistent with the node's
`topo -m`, `-L` and `--query-gpu`; a mock `dmesg`; the host faults gpu-ecc and xid on GPU0 only, judged
by host.gpu_health and healed byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from mocknode import node_files, prepared

from fabcheck.checks.host.gpu_health import check_gpu_health
from fabcheck.checks.model import Status
from fabcheck.errors import UsageError
from fabcheck.intent.model import GpuHealth
from fabcheck.parsers.kernel_log import parse_xid_events
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.topo import parse_topo
from fabcheck_lab.mockhost import HOST_FAULTS, heal, inject, layout
from fabcheck_lab.mockhost.faults import active_faults
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.tools import SERVED_TOOLS, TOOL_NAMES, kernel_log
from fabcheck_lab.mockhost.tools.common import Node, ToolError
from fabcheck_lab.mockhost.tools.dispatch import state_tools

REAL = Path(__file__).resolve().parents[1] / "data/real/host"
GPU0 = "GPU0 0000:18:00.0"


@pytest.fixture
def paths(tmp_path: Path) -> MockNodePaths:
    return prepared(tmp_path)


def run(paths: MockNodePaths, capsys: pytest.CaptureFixture[str], tool: str, *args: str) -> str:
    capsys.readouterr()
    assert state_tools()[tool](Node(paths.state, paths.sys_class, paths.etc), list(args)) == 0
    return capsys.readouterr().out


def judged(paths: MockNodePaths, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[Status, str]]:
    query = parse_nvidia_smi_q(run(paths, capsys, "nvidia-smi", "-q"), "nvidia-smi -q")
    events = parse_xid_events(run(paths, capsys, "dmesg"), "dmesg")
    return {f.subject: (f.status, f.actual) for f in check_gpu_health(query, events, GpuHealth())}


def test_dmesg_and_nvidia_smi_are_served_node_tools() -> None:
    assert {"dmesg", "nvidia-smi"} <= set(TOOL_NAMES) & set(SERVED_TOOLS) & set(state_tools())


def test_query_lists_the_nodes_gpus_as_topo_list_and_query_gpu_do(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    query = parse_nvidia_smi_q(run(paths, capsys, "nvidia-smi", "-q"), "nvidia-smi -q")
    topo = parse_topo(run(paths, capsys, "nvidia-smi", "topo", "-m"))
    csv = run(paths, capsys, "nvidia-smi", "--query-gpu=index,pci.bus_id,name", "--format=csv,noheader")
    rows = [line.split(", ") for line in csv.splitlines()]
    assert len(query.gpus) == len(topo.gpus) == len(rows) == 8
    for gpu, (index, bus, name) in zip(query.gpus, rows, strict=True):
        assert (str(gpu.index), gpu.bus_id, gpu.name) == (index, bus.lower()[4:], name)
    assert query.driver_version == "550.90.07"
    assert all(gpu.persistence_mode and gpu.ecc_enabled for gpu in query.gpus)


def test_query_keeps_the_real_layout(paths: MockNodePaths, capsys: pytest.CaptureFixture[str]) -> None:
    """Every line the mock prints for a GPU is a line of the real 535 output but for its values: same
    names, same indentation, ' : ' at the same column (the real A10G block, NVIDIA/DCGM issue 232); the
    Fabric section's lines as the real 565 HGX H100 and GB200 outputs print them (tests/data/real/nvlink)."""
    real = (REAL / "nvidia-smi-q-a10g-535.txt").read_text().splitlines()
    for fabric in (
        "nvidia-smi-q-h100-sxm-8gpu-565-zero-uuid.txt",
        "nvidia-smi-q-fabric-gb200-unhealthy-excerpt.txt",
    ):
        real += (REAL.parent / "nvlink" / fabric).read_text().splitlines()
    real_labels = {line.split(" : ")[0].rstrip() if " : " in line else line for line in real}
    mock = run(paths, capsys, "nvidia-smi", "-q").splitlines()
    for line in mock:
        if line.startswith("GPU ") or not line.strip():
            continue
        label = line.split(" : ")[0].rstrip() if " : " in line else line
        assert label in real_labels, line
        if " : " in line:
            assert line.index(" : ") == next(r.index(" : ") for r in real if " : " in r)


def test_a_healthy_node_passes_every_gpu(paths: MockNodePaths, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = judged(paths, capsys)
    assert len(verdicts) == 8 and {status for status, _ in verdicts.values()} == {Status.PASS}
    log = run(paths, capsys, "dmesg")
    assert "iommu: Default domain type: Passthrough (set via kernel command line)" in log
    assert parse_xid_events(log, "dmesg") == ()


@pytest.mark.parametrize(
    ("fault", "actual"),
    [
        ("gpu-ecc", "volatile uncorrectable ECC: DRAM Uncorrectable 1; row remap pending"),
        ("xid", "Xid 79 (GPU has fallen off the bus) since boot"),
    ],
)
def test_each_gpu_fault_fails_exactly_gpu0_and_heals_byte_for_byte(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str], fault: str, actual: str
) -> None:
    assert fault in HOST_FAULTS
    before = node_files(paths)
    inject(paths, fault)
    assert active_faults(paths) == [fault]
    verdicts = judged(paths, capsys)
    assert {subject: v for subject, v in verdicts.items() if v[0] is not Status.PASS} == {
        GPU0: (Status.FAIL, actual)
    }
    heal(paths, fault)
    assert node_files(paths) == before
    assert {status for status, _ in judged(paths, capsys).values()} == {Status.PASS}


def test_the_two_gpu_faults_compose_and_heal_in_any_order(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    before = node_files(paths)
    inject(paths, "xid")
    inject(paths, "gpu-ecc")
    status, actual = judged(paths, capsys)[GPU0]
    assert status is Status.FAIL and actual.endswith(
        "row remap pending; Xid 79 (GPU has fallen off the bus) since boot"
    )
    heal(paths, "xid")
    assert (
        judged(paths, capsys)[GPU0][1]
        == "volatile uncorrectable ECC: DRAM Uncorrectable 1; row remap pending"
    )
    heal(paths, "gpu-ecc")
    assert node_files(paths) == before


def test_a_node_without_gpus_refuses_the_gpu_faults_and_the_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = prepared(tmp_path, "sm")
    for fault in ("gpu-ecc", "xid"):
        with pytest.raises(UsageError, match="needs a GPU"):
            inject(paths, fault)
    with pytest.raises(ToolError) as caught:
        state_tools()["nvidia-smi"](Node(paths.state, paths.sys_class, paths.etc), ["-q"])
    assert caught.value.code == 9 and "couldn't communicate with the NVIDIA driver" in caught.value.message
    assert "NVRM" not in run(paths, capsys, "dmesg")


def test_the_boot_log_follows_the_kernel_command_line(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """iommu-translated takes iommu=pt off the node's command line: the boot log says Translated."""
    assert kernel_log.CMDLINE_FILE == layout.CMDLINE_FILE
    inject(paths, "iommu-translated")
    assert "iommu: Default domain type: Translated\n" in run(paths, capsys, "dmesg")
    heal(paths, "iommu-translated")
    assert "Passthrough (set via kernel command line)" in run(paths, capsys, "dmesg")


def test_dmesg_refuses_options_it_does_not_know(paths: MockNodePaths) -> None:
    node = Node(paths.state, paths.sys_class, paths.etc)
    with pytest.raises(ToolError) as caught:
        state_tools()["dmesg"](node, ["--bogus"])
    assert caught.value.code == 1
    assert caught.value.message.startswith("dmesg: unrecognized option '--bogus'")
