"""host.gpu_health: each GPU by index and bus id - persistence mode, volatile uncorrectable ECC, row remap
pending/failed, page retirement pending, Xid events since boot - over the real `nvidia-smi -q` and kernel
log samples of tests/data/real/host (the healthy host's GPU blocks are the real A10G block, hostdata)."""

from __future__ import annotations

from pathlib import Path

from fabcheck.checks import host as checks
from fabcheck.checks.host.gpu_health import check_gpu_health
from fabcheck.checks.model import Status
from fabcheck.collect.script import Section
from fabcheck.intent.model import GpuHealth
from fabcheck.parsers.kernel_log import parse_xid_events
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from tests.checks.host.hostdata import BOOT_LOG, failing, ok, only, run_checks, smi_q

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "host"
GPU0, GPU1 = "GPU0 0000:18:00.0", "GPU1 0000:2a:00.0"
# the layout of leptonai/gpud:components/accelerator/nvidia/xid/kmsg.go (commit in test_kernel_log.py)
XID79 = (
    "[ 1843.308145] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n"
)
UNCORRECTABLE = {
    "            DRAM Uncorrectable            : 0": "            DRAM Uncorrectable            : 1"
}
PENDING = {
    "        Pending                           : No": "        Pending                           : Yes"
}


def test_a_healthy_host_passes_each_gpu_by_index_and_bus_id() -> None:
    findings = run_checks()
    assert failing(findings) == {}
    gpu0 = only(findings, checks.GPU_HEALTH, GPU0)
    assert gpu0.status is Status.PASS
    assert gpu0.actual == (
        "persistence mode Enabled; volatile uncorrectable ECC 0; no row remap pending; no Xid since boot"
    )
    assert "[13, 31, 43, 45, 63, 94]" in gpu0.expected


def test_persistence_off_fails_every_gpu_with_the_command() -> None:
    findings = run_checks({"nvidia_smi_q": ok(smi_q(persistence="Disabled"))})
    assert failing(findings) == {
        (checks.GPU_HEALTH, GPU0): Status.FAIL,
        (checks.GPU_HEALTH, GPU1): Status.FAIL,
    }
    gpu1 = only(findings, checks.GPU_HEALTH, GPU1)
    assert gpu1.actual == "persistence mode Disabled"
    assert "`nvidia-smi -i 1 -pm 1`" in gpu1.hint


def test_persistence_not_required_by_the_intent_passes() -> None:
    query = parse_nvidia_smi_q((REAL / "nvidia-smi-q-a10g-535.txt").read_text(), "a10g")  # real: Disabled
    (finding,) = check_gpu_health(query, (), GpuHealth(persistence_mode=False))
    assert finding.status is Status.PASS
    assert finding.subject == "GPU0 0000:00:1e.0"


def test_gpu_ecc_fault_fails_exactly_that_gpu() -> None:
    """The lab's gpu-ecc fault: one GPU with a volatile uncorrectable DRAM error and a pending row remap."""
    text = smi_q(changes={1: UNCORRECTABLE | PENDING})
    findings = run_checks({"nvidia_smi_q": ok(text)})
    assert failing(findings) == {(checks.GPU_HEALTH, GPU1): Status.FAIL}
    gpu1 = only(findings, checks.GPU_HEALTH, GPU1)
    assert gpu1.actual == "volatile uncorrectable ECC: DRAM Uncorrectable 1; row remap pending"
    assert "`nvidia-smi -r -i 1`" in gpu1.hint
    assert "RMA" in gpu1.hint


def test_the_real_a100_with_a_pending_remap_fails() -> None:
    query = parse_nvidia_smi_q((REAL / "nvidia-smi-q-a100-row-remap-pending-excerpt.txt").read_text(), "a100")
    (finding,) = check_gpu_health(query, (), GpuHealth(persistence_mode=False))
    assert (finding.status, finding.subject, finding.actual) == (
        Status.FAIL,
        "GPU0 0000:10:1c.0",
        "row remap pending",
    )


def test_the_real_pending_page_retirements_fail_those_gpus_only() -> None:
    text = (REAL / "nvidia-smi-q-d-page-retirement-8gpu-pending.txt").read_text()
    findings = check_gpu_health(parse_nvidia_smi_q(text, "aznhc"), (), GpuHealth(persistence_mode=False))
    assert [f.subject.split()[0] for f in findings if f.status is Status.FAIL] == [
        "GPU1",
        "GPU3",
        "GPU5",
        "GPU7",
    ]
    assert only(findings, checks.GPU_HEALTH, "GPU1 0002:00:00.0").actual == "page retirement pending"


def test_a_remapping_failure_asks_for_an_rma() -> None:
    failure = {
        "        Remapping Failure Occurred        : No": "        Remapping Failure Occurred        : Yes"
    }
    findings = run_checks({"nvidia_smi_q": ok(smi_q(changes={0: failure}))})
    gpu0 = only(findings, checks.GPU_HEALTH, GPU0)
    assert (gpu0.status, gpu0.actual) == (Status.FAIL, "row remapping failure occurred")
    assert "RMA the GPU" in gpu0.hint


def test_xid_fault_fails_exactly_the_gpu_of_its_bus_id() -> None:
    """The lab's xid fault: an Xid 79 line in the kernel log for one GPU."""
    findings = run_checks({"kernel_log": ok(BOOT_LOG + XID79)})
    assert failing(findings) == {(checks.GPU_HEALTH, GPU1): Status.FAIL}
    gpu1 = only(findings, checks.GPU_HEALTH, GPU1)
    assert gpu1.actual == "Xid 79 (GPU has fallen off the bus) since boot"
    assert "https://docs.nvidia.com/deploy/xid-errors/index.html" in gpu1.hint


def test_ignored_xids_pass_and_are_named() -> None:
    xid13 = "[ 99.1] NVRM: Xid (PCI:0000:18:00): 13, pid=42, Graphics Exception\n" * 2
    findings = run_checks({"kernel_log": ok(BOOT_LOG + xid13)})
    assert failing(findings) == {}
    assert only(findings, checks.GPU_HEALTH, GPU0).actual.endswith("no Xid since boot (Xid 13 x2 ignored)")


def test_the_real_xid_119_on_a_gpu_nvidia_smi_does_not_list_fails_on_its_own() -> None:
    events = parse_xid_events((REAL / "dmesg-T-xid-119-gsp-timeout.txt").read_text(), "dmesg")
    query = parse_nvidia_smi_q(smi_q(), "smi")
    findings = check_gpu_health(query, events, GpuHealth())
    assert [(f.subject, f.status) for f in findings if f.status is not Status.PASS] == [
        ("PCI 0000:9b:00.0", Status.FAIL)
    ]
    stray = only(findings, checks.GPU_HEALTH, "PCI 0000:9b:00.0")
    assert stray.actual == "Xid 119 (GSP RPC timeout) x5 on a GPU `nvidia-smi -q` does not list"


def test_unreadable_nvidia_smi_is_an_error_naming_the_command() -> None:
    failed = Section(9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    findings = run_checks({"nvidia_smi_q": failed})
    assert failing(findings) == {(checks.GPU_HEALTH, "GPUs"): Status.ERROR}
    assert "nvidia-smi -q" in only(findings, checks.GPU_HEALTH, "GPUs").actual


def test_an_unreadable_kernel_log_is_an_error_beside_the_gpu_verdicts() -> None:
    denied = Section(1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")
    findings = run_checks({"kernel_log": denied})
    assert failing(findings) == {(checks.GPU_HEALTH, "kernel log"): Status.ERROR}
    assert "Operation not permitted" in only(findings, checks.GPU_HEALTH, "kernel log").actual


def test_a_persistence_mode_not_shown_is_an_error_not_a_pass() -> None:
    query = parse_nvidia_smi_q((REAL / "nvidia-smi-q-d-page-retirement-8gpu-pending.txt").read_text(), "d")
    findings = check_gpu_health(query, (), GpuHealth())
    assert only(findings, checks.GPU_HEALTH, "GPU0 0001:00:00.0").status is Status.ERROR


def test_ecc_on_without_a_volatile_counter_is_an_error_not_a_pass() -> None:
    counters = {
        f"            {name}{' ' * (30 - len(name))}: 0": f"            {name}{' ' * (30 - len(name))}: N/A"
        for name in ("DRAM Uncorrectable", "SRAM Uncorrectable Parity", "SRAM Uncorrectable SEC-DED")
    }
    findings = run_checks({"nvidia_smi_q": ok(smi_q(changes={0: counters}))})
    assert failing(findings) == {(checks.GPU_HEALTH, GPU0): Status.ERROR}
    assert "volatile uncorrectable ECC counter (ECC is on)" in only(findings, checks.GPU_HEALTH, GPU0).actual
