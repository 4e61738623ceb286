"""fabcheck.checks.host.gpu: GPUDirect RDMA by dma-buf or nvidia_peermem as `nccl.gdr_mechanism` allows
(host.gpudirect, replaying real `modinfo -F license nvidia` and `uname -r` outputs), and each GPU within
the intended PCIe distance of its rail NIC."""

from __future__ import annotations

import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.collect.script import Section
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import (
    KERNEL_RELEASE,
    KERNEL_RELEASE_OLD,
    NVIDIA_LICENSE_OPEN,
    RAILS,
    REAL_HOST,
    TOPO,
    Fault,
    failing,
    ok,
    one_wrong_setting_test,
    only,
    run_checks,
)

NO_PEERMEM = ok("Module                  Size  Used by\nmlx5_ib               483328  0\n")
NOT_FOUND = Section(1, "", (REAL_HOST / "modinfo-F-license-nvidia-not-found.stderr.txt").read_text())
OPEN_MODULE = ok(NVIDIA_LICENSE_OPEN)

FAULTS: list[Fault] = [
    (
        "gpudirect",
        {"lsmod": NO_PEERMEM},
        checks.GPUDIRECT,
        "host",
        "nvidia_peermem not loaded (lsmod) and no dma-buf: proprietary GPU kernel module (license NVIDIA)",
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


def gpudirect(mechanism: str, **sections: Section) -> tuple[Status, str, str]:
    intent = FabricIntent(rails=RAILS, nccl={"gdr_mechanism": mechanism})
    finding = only(run_checks(dict(sections), intent=intent), checks.GPUDIRECT, "host")
    return finding.status, finding.actual, finding.hint


def test_a_dmabuf_host_without_peermem_passes() -> None:
    """The open module on a 5.15 kernel and no nvidia_peermem: the issue's false failure is gone."""
    for mechanism in ("any", "dmabuf"):
        status, actual, _ = gpudirect(mechanism, lsmod=NO_PEERMEM, nvidia_license=OPEN_MODULE)
        assert status is Status.PASS, actual
        assert actual == "dma-buf: kernel 5.15.0-102-generic, open GPU kernel module (license Dual MIT/GPL)"


def test_peermem_loaded_passes_any_and_peermem_but_not_dmabuf() -> None:
    assert gpudirect("any")[:2] == (Status.PASS, "nvidia_peermem loaded")
    assert gpudirect("peermem")[:2] == (Status.PASS, "nvidia_peermem loaded")
    status, actual, hint = gpudirect("dmabuf")  # proprietary module: peermem does not count
    assert status is Status.FAIL
    assert actual == "no dma-buf: proprietary GPU kernel module (license NVIDIA)"
    assert "open GPU kernel module" in hint and "role gpu_rdma" in hint


def test_peermem_intent_fails_a_dmabuf_host_without_the_module() -> None:
    status, actual, hint = gpudirect("peermem", lsmod=NO_PEERMEM, nvidia_license=OPEN_MODULE)
    assert (status, actual) == (Status.FAIL, "nvidia_peermem not loaded (lsmod)")
    assert "modprobe nvidia_peermem" in hint


def test_an_old_kernel_and_a_missing_module_are_named() -> None:
    status, actual, _ = gpudirect("dmabuf", nvidia_license=OPEN_MODULE, kernel_release=ok(KERNEL_RELEASE_OLD))
    assert (status, actual) == (Status.FAIL, "no dma-buf: kernel 3.10.0-1062.12.1.el7.x86_64 (< 5.12)")
    status, actual, _ = gpudirect("any", lsmod=NO_PEERMEM, nvidia_license=NOT_FOUND)
    assert status is Status.FAIL
    assert actual.endswith("no dma-buf: no nvidia kernel module installed")


@pytest.mark.parametrize(
    ("mechanism", "sections", "command"),
    [
        ("dmabuf", {"nvidia_license": Section(1, "", "modinfo: ERROR: could not get modinfo\n")}, "modinfo"),
        ("dmabuf", {"kernel_release": ok("linux\n")}, "uname -r"),
        ("any", {"lsmod": NO_PEERMEM, "kernel_release": ok("")}, "uname -r"),
        ("peermem", {"lsmod": ok("garbage\n")}, "lsmod"),
        # dma-buf is out (proprietary module) and whether peermem is loaded cannot be read: unknown.
        ("any", {"lsmod": ok("garbage\n")}, "lsmod"),
    ],
)
def test_what_cannot_be_read_is_an_error(mechanism: str, sections: dict[str, Section], command: str) -> None:
    status, actual, _ = gpudirect(mechanism, **sections)
    assert status is Status.ERROR and f"`{command}" in actual, actual


def test_unreadable_records_the_verdict_does_not_need_do_not_matter() -> None:
    """peermem loaded passes `any` whatever modinfo says; a dma-buf host passes without lsmod."""
    assert gpudirect("any", nvidia_license=Section(1, "", "boom\n"))[0] is Status.PASS
    status, _, _ = gpudirect("any", lsmod=ok("garbage\n"), nvidia_license=OPEN_MODULE)
    assert status is Status.PASS


def test_gpudirect_not_judged_when_gdr_is_not_required() -> None:
    no_gdr = FabricIntent(rails=RAILS, nccl={"gdr_required": False})
    findings = run_checks({"lsmod": ok("Module   Size  Used by\n")}, intent=no_gdr)
    assert only(findings, checks.GPUDIRECT, "host").status is Status.SKIP
    assert (checks.GPUDIRECT, "host") not in failing(findings)


def test_the_healthy_host_reads_real_outputs() -> None:
    assert KERNEL_RELEASE.strip() == "5.15.0-102-generic"
    assert gpudirect("any")[0] is Status.PASS
