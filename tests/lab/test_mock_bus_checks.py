"""The bus checks on the lab's mock GPU host, in process (no lab started): the converged rail8 host
passes host.pcie_link, host.pcie_errors, host.pcie_acs and host.iommu, and each PCIe fault of the lab
fails exactly its check on exactly that device, then heals to the same verdicts (docs/checks/bus.md).
The collection is tests/invariant/test_host_fields.py's: every probe's section as the node prints it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.checks import host as checks
from fabcheck.desired.nic import desired_host
from fabcheck_lab.mockhost import heal, inject
from tests.invariant.test_host_fields import HOST, INTENT, MockHost, converge, not_passing
from tests.roles.roce_host_code import apply_code

BUS_CHECKS = (checks.PCIE_LINK, checks.PCIE_ERRORS, checks.PCIE_ACS, checks.IOMMU)


def _bus(verdicts: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    return {verdict for verdict in verdicts if verdict[0] in BUS_CHECKS}


@pytest.mark.parametrize(
    ("fault", "failing"),
    [
        ("pcie-degraded", {(checks.PCIE_LINK, "mlx5_0 (0000:1a:00.0)", "fail")}),
        ("acs-on", {(checks.PCIE_ACS, "GPU0 -> mlx5_0", "fail")}),
        # the kernel command line is the host's: every rail NIC's group turns translated
        ("iommu-translated", {(checks.IOMMU, "mlx5_0", "fail"), (checks.IOMMU, "mlx5_1", "fail")}),
    ],
)
def test_each_pcie_fault_fails_exactly_its_bus_check_and_heals(
    tmp_path: Path, fault: str, failing: set[tuple[str, str, str]]
) -> None:
    mock = MockHost(tmp_path / HOST)
    desired = desired_host(INTENT, HOST)
    converge(apply_code(), mock, desired, check_mode=False)
    assert mock.run(["modprobe", "nvidia_peermem"])[0] == 0
    before = not_passing(mock, desired)
    assert _bus(before) == set()
    inject(mock.paths, fault)
    shown = not_passing(mock, desired)
    heal(mock.paths)
    assert shown - before == failing and before - shown == set()
    assert not_passing(mock, desired) == before
