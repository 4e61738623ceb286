"""fabcheck.checks.host.pcie: each GPU and rail NIC's link against what both ends can do, AER errors,
ACS redirect between each GPU and its rail NIC, the rail NICs' IOMMU mode (docs/checks/bus.md). The
host is tests/checks/host/busdata.py's (each rail behind one PCIe switch); the ACS verdict is replayed
on a real PCIe switch with ACS redirect on (tests/data/real/host/INDEX.tsv:
lspci-vvxxx-n1sdp-plx8749-acs-on.txt)."""

from __future__ import annotations

from pathlib import Path

from fabcheck.checks import host as checks
from fabcheck.checks.host.pcie import Device, _judge_acs, judge_link
from fabcheck.checks.model import Status
from fabcheck.collect.script import Section
from fabcheck.intent.model import FabricIntent, Pcie
from fabcheck.parsers.lspci import parse_lspci
from tests.checks.host import busdata
from tests.checks.host.hostdata import INTENT, failing, not_passing, ok, only, run_checks

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "host"
GPU0 = f"GPU0 ({busdata.gpu_bdf(0)})"
NIC0 = f"mlx5_0 ({busdata.nic_bdf(0)})"
BUS_CHECKS = (checks.PCIE_LINK, checks.PCIE_ERRORS, checks.PCIE_ACS, checks.IOMMU)


def _bus_not_passing(findings: list) -> dict:  # type: ignore[type-arg]
    return {key: status for key, status in not_passing(findings).items() if key[0] in BUS_CHECKS}


def test_a_healthy_host_passes_every_bus_check_on_every_device() -> None:
    findings = run_checks()
    assert not_passing(findings) == {}
    judged = {(f.check, f.subject) for f in findings if f.check in BUS_CHECKS}
    assert (checks.PCIE_LINK, GPU0) in judged and (checks.PCIE_LINK, NIC0) in judged
    assert (checks.PCIE_ACS, "GPU1 -> mlx5_1") in judged and (checks.IOMMU, "mlx5_1") in judged
    assert (checks.PCIE_ERRORS, f"Downstream Port ({busdata.switch_down(0, 'nic')}) correctable") in judged


def test_a_nic_trained_x8_at_gen3_fails_exactly_its_link() -> None:
    sta = "Speed 8GT/s (downgraded), Width x8 (downgraded)"
    findings = run_checks({"lspci": ok(busdata.lspci(busdata.changed(busdata.nic_bdf(0), sta=sta)))})
    assert failing(findings) == {(checks.PCIE_LINK, NIC0): Status.FAIL}
    finding = only(findings, checks.PCIE_LINK, NIC0)
    assert finding.actual == "LnkSta 8 GT/s (Gen3) x8"
    assert finding.expected.startswith("32 GT/s (Gen5) x16 (the lower of its and 0000:17:02.0's LnkCap)")
    assert "reseat" in finding.hint


def test_a_nic_at_full_width_but_lower_speed_fails() -> None:
    sta = "Speed 16GT/s (downgraded), Width x16"
    findings = run_checks({"lspci": ok(busdata.lspci(busdata.changed(busdata.nic_bdf(0), sta=sta)))})
    assert failing(findings) == {(checks.PCIE_LINK, NIC0): Status.FAIL}


def test_an_idle_gpu_at_lower_speed_and_full_width_passes_and_says_why() -> None:
    sta = "Speed 2.5GT/s (downgraded), Width x16"
    findings = run_checks({"lspci": ok(busdata.lspci(busdata.changed(busdata.gpu_bdf(0), sta=sta)))})
    assert not_passing(findings) == {}
    assert "open-gpu-kernel-modules issue 731" in only(findings, checks.PCIE_LINK, GPU0).actual


def test_a_narrower_gpu_fails() -> None:
    sta = "Speed 32GT/s, Width x8 (downgraded)"
    findings = run_checks({"lspci": ok(busdata.lspci(busdata.changed(busdata.gpu_bdf(0), sta=sta)))})
    assert failing(findings) == {(checks.PCIE_LINK, GPU0): Status.FAIL}


def test_a_gen5_device_under_a_gen4_port_is_judged_against_gen4() -> None:
    functions = busdata.changed(busdata.switch_down(0, "nic"), cap=("16GT/s", 16), sta=("16GT/s", 16))
    functions[busdata.nic_bdf(0)] = functions[busdata.nic_bdf(0)].__class__(
        busdata.nic_bdf(0),
        busdata.NIC_NAME,
        "Endpoint",
        sta=("16GT/s", 16),
        ats="Enable-",
        driver="mlx5_core",
    )
    findings = run_checks({"lspci": ok(busdata.lspci(functions))})
    assert not_passing(findings) == {}
    assert only(findings, checks.PCIE_LINK, NIC0).expected.startswith("16 GT/s (Gen4) x16")


def test_acs_redirect_above_gpu0_and_its_nic_fails_that_rail_naming_both_bridges() -> None:
    functions = busdata.bus()
    for toward in ("gpu", "nic"):
        bdf = busdata.switch_down(0, toward)
        functions[bdf] = busdata.changed(bdf, acs=busdata.ACS_ON)[bdf]
    findings = run_checks({"lspci": ok(busdata.lspci(functions))})
    assert failing(findings) == {(checks.PCIE_ACS, "GPU0 -> mlx5_0"): Status.FAIL}
    finding = only(findings, checks.PCIE_ACS, "GPU0 -> mlx5_0")
    assert (
        "0000:17:00.0 ACSCtl ReqRedir+ CmpltRedir+; 0000:17:02.0 ACSCtl ReqRedir+ CmpltRedir+"
        in finding.actual
    )
    assert "setpci -s 0000:17:00.0 ECAP_ACS+0x6.w=0000" in finding.hint and "BIOS" in finding.hint


def test_the_real_switch_with_acs_on_fails_a_gpu_nic_path_through_it() -> None:
    real = (REAL / "lspci-vvxxx-n1sdp-plx8749-acs-on.txt").read_text()
    gpu = "\n0000:03:00.0 3D controller: NVIDIA Corporation Device 2330\n\tKernel driver in use: nvidia\n"
    tree = parse_lspci(real + gpu)
    finding = _judge_acs(
        tree,
        Device("GPU0", "0000:03:00.0", True),
        Device("nic", "0000:06:00.0", False),
        "GPU0 -> nic",
        "no redirect",
    )
    assert finding.status is Status.FAIL
    assert finding.actual.startswith("0000:02:08.0 ACSCtl ReqRedir+ CmpltRedir+; 0000:02:12.0 ACSCtl")
    # the real x1 link under the downstream port's x2 capability: the endpoint's own cap (x1) is the ceiling
    assert judge_link(tree, Device("sata", "0000:06:00.0", False)).status is Status.PASS


def test_without_root_the_bus_checks_are_errors_that_say_run_as_root() -> None:
    functions = busdata.changed(busdata.gpu_bdf(0), denied=True)
    findings = run_checks({"lspci": ok(busdata.lspci(functions))})
    assert failing(findings) == {
        (checks.PCIE_LINK, GPU0): Status.ERROR,
        (checks.PCIE_ACS, "GPU0 -> mlx5_0"): Status.ERROR,
    }
    assert "run the collection as root" in only(findings, checks.PCIE_LINK, GPU0).hint


def test_a_fatal_aer_error_fails_since_boot_and_correctable_growth_fails_over_the_window() -> None:
    nic = busdata.nic_bdf(0)
    after = busdata.aer({nic: {"fatal:Surprise Down Error": 1, "correctable:Receiver Error": 3}})
    before = busdata.aer({nic: {"fatal:Surprise Down Error": 1}})
    findings = run_checks({"aer": ok(after), "aer.before": ok(before)})
    assert failing(findings) == {
        (checks.PCIE_ERRORS, NIC0): Status.FAIL,
        (checks.PCIE_ERRORS, f"{NIC0} correctable"): Status.FAIL,
    }
    assert "(Surprise Down Error 1)" in only(findings, checks.PCIE_ERRORS, NIC0).hint
    assert only(findings, checks.PCIE_ERRORS, f"{NIC0} correctable").actual == "3 over 5 s"


def test_correctable_errors_within_the_intents_limit_pass() -> None:
    nic = busdata.nic_bdf(0)
    intent = INTENT.model_copy(update={"pcie": Pcie(max_correctable_errors=3)})
    after = busdata.aer({nic: {"correctable:Bad TLP": 3}})
    findings = run_checks({"aer": ok(after)}, intent)
    assert _bus_not_passing(findings) == {}


def test_window_0_skips_the_correctable_part_and_no_aer_files_skip_the_check() -> None:
    findings = run_checks({"counter_window": ok("0\n"), "aer.before": None})
    assert only(findings, checks.PCIE_ERRORS, "correctable").status is Status.SKIP
    assert not [f for f in findings if f.subject == f"{NIC0} correctable"]
    assert only(findings, checks.PCIE_ERRORS, NIC0).status is Status.PASS
    missing = "grep: /sys/bus/pci/devices/*/aer_dev_correctable: No such file or directory\n"
    none = Section(2, "", missing)
    findings = run_checks({"aer": none, "aer.before": none})
    assert only(findings, checks.PCIE_ERRORS, "host").status is Status.SKIP
    assert "no AER counters" in only(findings, checks.PCIE_ERRORS, "host").actual


def test_a_translated_iommu_domain_fails_with_the_passthrough_hint() -> None:
    findings = run_checks({"iommu_group:mlx5_0/1": ok("DMA-FQ\n"), "cmdline": ok("ro intel_iommu=on\n")})
    assert failing(findings) == {(checks.IOMMU, "mlx5_0"): Status.FAIL}
    finding = only(findings, checks.IOMMU, "mlx5_0")
    assert finding.actual == "IOMMU domain DMA-FQ (translated); cmdline intel_iommu=on"
    assert "iommu=pt" in finding.hint


def test_no_iommu_group_is_no_translation_and_passes() -> None:
    missing = Section(
        1, "", "cat: /sys/class/infiniband/mlx5_0/device/iommu_group/type: No such file or directory"
    )
    findings = run_checks({"iommu_group:mlx5_0/1": missing})
    assert only(findings, checks.IOMMU, "mlx5_0").status is Status.PASS
    assert "no IOMMU group" in only(findings, checks.IOMMU, "mlx5_0").actual


def test_translated_with_ats_passes_only_where_the_nic_has_ats_enabled() -> None:
    intent = INTENT.model_copy(update={"pcie": Pcie(iommu="translated_with_ats")})
    dma = {f"iommu_group:{dev}/1": ok("DMA\n") for dev in ("mlx5_0", "mlx5_1")}
    functions = busdata.changed(busdata.nic_bdf(0), ats="Enable+")
    findings = run_checks({**dma, "lspci": ok(busdata.lspci(functions))}, intent)
    assert _bus_not_passing(findings) == {(checks.IOMMU, "mlx5_1"): Status.FAIL}
    assert "ATS_ENABLED=true" in only(findings, checks.IOMMU, "mlx5_1").hint


def test_iommu_any_is_not_judged() -> None:
    intent: FabricIntent = INTENT.model_copy(update={"pcie": Pcie(iommu="any")})
    findings = run_checks({"iommu_group:mlx5_0/1": ok("DMA\n")}, intent)
    assert only(findings, checks.IOMMU, "host").status is Status.SKIP


def test_an_unreadable_lspci_is_an_error_of_each_lspci_check() -> None:
    findings = run_checks({"lspci": Section(127, "", "sh: lspci: not found")})
    errors = {key for key, status in failing(findings).items() if status is Status.ERROR}
    assert errors == {(checks.PCIE_LINK, "host"), (checks.PCIE_ERRORS, "host"), (checks.PCIE_ACS, "host")}


def test_a_round_trip_stopped_inside_the_window_is_an_error_of_the_correctable_part_only() -> None:
    findings = run_checks({"counter_window": None})
    correctable = only(findings, checks.PCIE_ERRORS, "correctable")
    assert correctable.status is Status.ERROR and "no second reading" in correctable.actual
    assert only(findings, checks.PCIE_ERRORS, NIC0).status is Status.PASS


def test_gpu_i_is_nvidia_smis_and_an_nvidia_gpu_it_does_not_list_is_an_error() -> None:
    functions = busdata.bus()
    lost = busdata.Function("0000:50:00.0", busdata.GPU_NAME, "Endpoint", driver="nvidia")
    findings = run_checks({"lspci": ok(busdata.lspci(functions | {lost.bdf: lost}))})
    assert failing(findings) == {(checks.PCIE_LINK, "0000:50:00.0"): Status.ERROR}
    assert "Xid 79" in only(findings, checks.PCIE_LINK, "0000:50:00.0").hint
    assert only(findings, checks.PCIE_LINK, f"GPU1 ({busdata.gpu_bdf(1)})").status is Status.PASS


def test_without_nvidia_smi_gpu_i_is_the_i_th_nvidia_function_of_lspci() -> None:
    findings = run_checks({"nvidia_smi_q": Section(127, "", "sh: nvidia-smi: not found")})
    assert only(findings, checks.PCIE_LINK, GPU0).status is Status.PASS
    assert only(findings, checks.PCIE_ACS, "GPU1 -> mlx5_1").status is Status.PASS
