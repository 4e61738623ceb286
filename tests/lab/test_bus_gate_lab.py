"""The bus (issue 36) on 4 lab hosts that site.yml converged (three 8-GPU rail servers with each GPU and
its rail NIC behind one PCIe switch, and one PCIe server with every device on its own root port):
validate judges every new check on every host and passes; each bus fault fails exactly its check on
exactly that device of that host (the perftest stage agrees where the fault slows the NIC); a host that
does GPUDirect by dma-buf, with no nvidia_peermem, passes; `site.yml --check --diff` shows a firmware
parameter drift as a pending change, a push sets it and reports the firmware reset it needs, and the
drift is gone from the gate only once the host rebooted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labsupport import converged_lab, injected, requires_lab, run_playbook, validate_json

from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")
BUS_CHECKS = (
    "host.pcie_link",
    "host.pcie_errors",
    "host.pcie_acs",
    "host.iommu",
    "host.gpudirect",
    "host.nic_firmware",
    "host.nic_fw_config",
    "host.gpu_health",
)


def validate(paths: LabPaths, *options: str) -> tuple[int, dict[str, list[dict]]]:
    """`fabcheck validate --json` with these options: exit code, host -> its findings."""
    rc, subjects = validate_json(paths, *options)
    return rc, {s["host"]: s["findings"] for s in subjects if "host" in s}


def not_passing(found: dict[str, list[dict]]) -> set[tuple[str, str, str]]:
    return {
        (host, f["check"], f["subject"])
        for host, findings in found.items()
        for f in findings
        if f["status"] in ("fail", "error")
    }


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with converged_lab("--limit", "gpu_hosts", profile="roce", hosts=len(HOSTS), switches=0) as paths:
        yield paths


def test_every_bus_check_is_judged_on_every_host_and_passes(lab: LabPaths) -> None:
    rc, found = validate(lab, "--stages", "host")
    assert rc == 0, not_passing(found)
    assert set(found) == set(HOSTS)
    for host, findings in found.items():
        judged = {f["check"] for f in findings if f["status"] == "pass"}
        assert set(BUS_CHECKS) <= judged, (host, sorted(set(BUS_CHECKS) - judged))
        # The HGX boards (NVSwitch, fabric manager) pass their NVLink checks; the PCIe server has no NVLink.
        nvlink = {"host.nvlink", "host.nvlink_fabric", "host.fabric_manager"}
        if host != "gpu04":
            assert nvlink <= judged, (host, sorted(nvlink - judged))


@pytest.mark.parametrize(
    ("fault", "host", "check", "device"),
    [
        ("pcie-degraded", "gpu02", "host.pcie_link", "mlx5_0"),
        ("acs-on", "gpu01", "host.pcie_acs", "GPU0"),
        ("fw-mismatch", "gpu03", "host.nic_firmware", "mlx5_0"),
        ("fw-config-drift", "gpu02", "host.nic_fw_config", "mlx5_0"),
        ("gpu-ecc", "gpu01", "host.gpu_health", "GPU0"),
        ("xid", "gpu03", "host.gpu_health", "GPU"),
        ("fabric-manager-down", "gpu01", "host.fabric_manager", "nvidia-fabricmanager"),
    ],
)
def test_a_bus_fault_fails_exactly_its_check_on_exactly_that_device(
    lab: LabPaths, fault: str, host: str, check: str, device: str
) -> None:
    with injected(lab, fault, host):
        rc, found = validate(lab, "--stages", "host")
    assert rc == 1
    bad = not_passing(found)
    assert {(h, c) for h, c, _s in bad} == {(host, check)}, bad
    [subject] = {s for _h, _c, s in bad}
    assert device in subject, subject


def test_iommu_translated_fails_only_the_iommu_check_of_that_host(lab: LabPaths) -> None:
    with injected(lab, "iommu-translated", "gpu04"):
        rc, found = validate(lab, "--stages", "host")
    assert rc == 1
    bad = not_passing(found)
    assert {(h, c) for h, c, _s in bad} == {("gpu04", "host.iommu")}, bad


@pytest.mark.parametrize(
    ("fault", "check"), [("pcie-degraded", "host.pcie_link"), ("acs-on", "host.pcie_acs")]
)
def test_a_bus_fault_that_slows_the_nic_fails_it_in_the_perftest_stage_too(
    lab: LabPaths, fault: str, check: str
) -> None:
    """perftest runs GPU memory to GPU memory (GPUDirect): a NIC trained at x8 Gen3, or peer-to-peer
    redirected up to the root complex by ACS, caps that NIC's bandwidth under the floor."""
    with injected(lab, fault, "gpu02"):
        rc, found = validate(lab, "--stages", "host,perftest")
    assert rc == 1
    bad = not_passing(found)
    assert ("gpu02", check) in {(h, c) for h, c, _s in bad}
    traffic = {(h, c, s) for h, c, s in bad if c.startswith("perftest.")}
    assert traffic and all(h == "gpu02" and "mlx5_0" in s for h, c, s in traffic), bad


def test_a_dma_buf_host_without_nvidia_peermem_passes_and_site_yml_leaves_peermem_out(lab: LabPaths) -> None:
    with injected(lab, "dmabuf-host", "gpu02"):
        converged = run_playbook(lab, "--limit", "gpu02")
        assert converged.rc == 0, converged.output[-3000:]
        rc, found = validate(lab, "--stages", "host")
        assert rc == 0, not_passing(found)
        [gdr] = [f for f in found["gpu02"] if f["check"] == "host.gpudirect"]
        assert gdr["status"] == "pass" and "dma-buf" in gdr["actual"], gdr
        modules = lab_node_modules(lab, "gpu02")
    assert not modules.get("nvidia_peermem"), modules


def lab_node_modules(lab: LabPaths, host: str) -> dict[str, bool]:
    """The node's kernel modules as its mock lsmod reads them (module -> loaded)."""
    from fabcheck_lab import power

    _record, node = power._host(lab, host)
    modules: dict[str, bool] = node.load("modules.json", {})
    return modules


def test_a_firmware_parameter_drift_is_pending_after_a_push_and_gone_after_a_reboot(lab: LabPaths) -> None:
    from fabcheck_lab import power

    with injected(lab, "fw-config-drift", "gpu03"):
        checked = run_playbook(lab, "--limit", "gpu03", "--tags", "firmware", "--check", "--diff")
        assert checked.rc == 0, checked.output[-3000:]
        assert "ATS_ENABLED" in checked.output and checked.changed.get("gpu03", 0) >= 1, checked.output[
            -3000:
        ]
        _rc, found = validate(lab, "--stages", "host")
        assert {c for h, c, _s in not_passing(found)} == {"host.nic_fw_config"}  # check mode set nothing
        pushed = run_playbook(lab, "--limit", "gpu03", "--tags", "firmware", "-v")
        assert pushed.rc == 0, pushed.output[-3000:]
        assert "takes effect after a firmware reset" in pushed.output, pushed.output[-3000:]
        rc, found = validate(lab, "--stages", "host")
        assert rc == 1 and {c for h, c, _s in not_passing(found)} == {"host.nic_fw_config"}
        [drift] = [f for f in found["gpu03"] if f["check"] == "host.nic_fw_config" and f["status"] == "fail"]
        assert "reset" in drift["hint"] or "reboot" in drift["hint"], drift
        assert power.reboot(lab, "gpu03").ok
        rc, found = validate(lab, "--stages", "host")
        assert rc == 0, not_passing(found)


def test_healed_lab_passes_again(lab: LabPaths) -> None:
    rc, found = validate(lab, "--stages", "host")
    assert rc == 0, not_passing(found)
