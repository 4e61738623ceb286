"""fabcheck.checks.host.gpu: nvidia_peermem loaded where the intent needs GPUDirect RDMA, and each GPU
within the intended PCIe distance of its rail NIC."""

from __future__ import annotations

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import (
    RAILS,
    TOPO,
    Fault,
    ok,
    one_wrong_setting_test,
    only,
    run_checks,
)

FAULTS: list[Fault] = [
    (
        "peermem",
        {"lsmod": ok("Module                  Size  Used by\nmlx5_ib               483328  0\n")},
        checks.PEERMEM,
        "host",
        "not loaded (lsmod)",
        "modprobe nvidia_peermem",
    ),
    (
        "affinity",
        {
            "topo": ok(
                TOPO.replace("GPU0\t X \tNV18\tPIX", "GPU0\t X \tNV18\tSYS").replace("NIC0\tPIX", "NIC0\tSYS")
            )
        },
        checks.AFFINITY,
        "GPU0",
        "GPU0 -> mlx5_0 SYS",
        "",
    ),
]


test_one_wrong_setting_fails_exactly_its_check = one_wrong_setting_test(FAULTS)


def test_peermem_not_judged_when_gdr_is_not_required() -> None:
    no_gdr = FabricIntent(rails=RAILS, nccl={"gdr_required": False})
    findings = run_checks({"lsmod": ok("Module   Size  Used by\n")}, intent=no_gdr)
    assert only(findings, checks.PEERMEM, "host").status is Status.SKIP
