"""The mock host's PCIe bus (issue 36), in process (no lab, no subprocess): the tree agrees with
`nvidia-smi topo -m`, `lspci` prints the pciutils format (pciutils/pciutils ls-caps.c, ls-ecaps.c, lspci.c
at 0f5b941aa5cf8b1b126ff3e4176b1c32b2158289), the AER files the kernel's ABI format (torvalds/linux
Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats at 0e7d29a39a546161ea3a49e8e282a43212d7ff68),
and the faults pcie-degraded, acs-on and iommu-translated change exactly their device, slow the mock
perftest and NCCL where the fault would, and heal byte for byte."""

from __future__ import annotations

import glob
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mocknode import node_of, prepared

from fabcheck.collect.host import AER_FILES
from fabcheck.errors import UsageError
from fabcheck.parsers.bus_records import PcieLink
from fabcheck.parsers.lspci import parse_lspci
from fabcheck.parsers.pcie_sysfs import (
    TRANSLATED_DOMAIN_TYPES,
    aer_answer,
    parse_cmdline,
    parse_iommu_group_type,
)
from fabcheck_lab import nodeinit
from fabcheck_lab.mockhost import heal, inject
from fabcheck_lab.mockhost import layout as mock_layout
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.profiles import HOST_PROFILES, pcie_tree_for, rails_for
from fabcheck_lab.mockhost.tools import nccl_tests, pcie
from fabcheck_lab.mockhost.tools.common import Node
from fabcheck_lab.mockhost.tools.nvidia_smi import link

PCIE_FAULTS = ("pcie-degraded", "acs-on", "iommu-translated")
GPU0, NIC0 = "0000:18:00.0", "0000:1a:00.0"
PORT_ABOVE_GPU0, PORT_ABOVE_NIC0, SWITCH_UP0, ROOT_PORT0 = (
    "0000:17:00.0",
    "0000:17:02.0",
    "0000:16:00.0",
    "0000:15:01.0",
)
# The line shapes pciutils prints (the printf formats of the cited sources, as patterns).
LNKCAP = re.compile(r"^\t\tLnkCap:\tPort #\d+, Speed (\d+(?:\.\d)?)GT/s, Width x(\d+), ASPM not supported$")
LNKSTA = re.compile(
    r"^\t\tLnkSta:\tSpeed (\d+(?:\.\d)?)GT/s( \(downgraded\))?, Width x(\d+)( \(downgraded\))?$"
)
ACSCTL = re.compile(r"^\t\tACSCtl:\t(SrcValid[+-]) (TransBlk[+-]) (ReqRedir[+-]) (CmpltRedir[+-]) ")
BUS = re.compile(r"^\tBus: primary=([0-9a-f]{2}), secondary=([0-9a-f]{2}), subordinate=([0-9a-f]{2}), ")
AER_LINE = re.compile(r"^(.+) (\d+)$")


@pytest.fixture
def paths(tmp_path: Path) -> MockNodePaths:
    return prepared(tmp_path)


def lspci(paths: MockNodePaths, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert pcie.lspci(node_of(paths), list(args)) == 0
    return capsys.readouterr().out


def blocks(text: str) -> dict[str, list[str]]:
    """`lspci -D -vvv` cut into one list of lines per function, keyed by BDF."""
    found = {}
    for block in text.strip("\n").split("\n\n"):
        lines = block.splitlines()
        found[lines[0].split()[0]] = lines
    return found


def link_of(lines: list[str], pattern: re.Pattern[str]) -> tuple[Any, ...]:
    return next(m.groups() for line in lines if (m := pattern.match(line)))


def tree_bytes(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


# --- the tree -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", list(HOST_PROFILES))
def test_bus_ranges_nest_and_every_device_hangs_under_one_root_port(profile: str) -> None:
    functions = pcie_tree_for(profile, 0)
    bridges = [f for f in functions if "secondary" in f]
    for function in functions:
        bus = pcie.bus_of(function["bdf"])
        owners = [b for b in bridges if b["secondary"] <= bus <= b["subordinate"]]
        # A bus lies in the range of exactly the bridges above it: a chain, never two siblings' ranges.
        spans = sorted(b["subordinate"] - b["secondary"] for b in owners)
        assert len(set(spans)) == len(spans), (profile, function["bdf"], owners)
    for a in bridges:
        for b in bridges:
            if a is not b:
                inside = b["secondary"] <= a["secondary"] <= b["subordinate"]
                assert not inside or a["subordinate"] <= b["subordinate"], (a["bdf"], b["bdf"])
    endpoints = [f for f in functions if f["kind"] in ("gpu", "nic")]
    roots = [f for f in bridges if f["kind"] == "root_port"]
    assert all(
        any(r["secondary"] <= pcie.bus_of(e["bdf"]) <= r["subordinate"] for r in roots) for e in endpoints
    )


@pytest.mark.parametrize(
    ("profile", "fault"), [("rail8", None), ("ib", None), ("pcie", None), ("rail8", "affinity")]
)
def test_tree_agrees_with_topo_m(tmp_path: Path, profile: str, fault: str | None) -> None:
    """PIX in `nvidia-smi topo -m` exactly where the tree puts the two devices behind one PCIe switch
    (a shared bridge below the root port), else NODE/SYS by NUMA: the two views are one placement, also
    after the affinity fault moves GPU0's rail NIC away."""
    paths = prepared(tmp_path, profile)
    if fault:
        inject(paths, fault)
    node = node_of(paths)
    functions = pcie.tree(node)
    devices = [(g["bus_id"].lower()[4:], g) for g in node.gpus()] + [(n["pci"], n) for n in node.all_nics()]
    for a_bdf, a in devices:
        for b_bdf, b in devices:
            if a_bdf != b_bdf:
                behind_one_switch = bool(pcie.p2p_path(functions, a_bdf, b_bdf))
                assert (link(a, b) == "PIX") == behind_one_switch, (a_bdf, b_bdf, link(a, b))


def test_rail8_gpu_and_its_rail_nic_sit_on_two_downstream_ports_of_one_switch(paths: MockNodePaths) -> None:
    functions = pcie.tree(node_of(paths))
    rails = rails_for("rail8")
    for gpu in node_of(paths).gpus():
        nic = node_of(paths).nic_by_name(rails[gpu["index"]])
        assert nic is not None
        path = pcie.p2p_path(functions, gpu["bus_id"].lower()[4:], nic["pci"])
        assert [f["kind"] for f in path] == ["switch_down", "switch_up", "switch_down"]
    first = [f["bdf"] for f in pcie.p2p_path(functions, GPU0, NIC0)]
    assert first == [PORT_ABOVE_GPU0, SWITCH_UP0, PORT_ABOVE_NIC0]  # the example tree


def test_pcie_profile_puts_each_nic_on_its_own_root_port(tmp_path: Path) -> None:
    node = node_of(prepared(tmp_path, "pcie"))
    functions = pcie.tree(node)
    for nic in node.all_nics():
        parent = pcie.function_by(functions, nic["pci"])
        assert parent is not None and pcie.function_by(functions, parent["parent"])["kind"] == "root_port"
        assert all(not pcie.p2p_path(functions, g["bus_id"].lower()[4:], nic["pci"]) for g in node.gpus())


# --- lspci ----------------------------------------------------------------------------------------------
def test_lspci_vvv_prints_links_acs_ats_bus_ranges_and_drivers(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    found = blocks(lspci(paths, capsys, "-D", "-vvv"))
    assert found[GPU0][0] == f"{GPU0} 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"
    assert found[NIC0][0] == f"{NIC0} Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert "\tKernel driver in use: mlx5_core" in found[NIC0]
    assert "\tKernel driver in use: nvidia" in found[GPU0]
    assert "\tCapabilities: [40] Express (v2) Downstream Port (Slot+), MSI 00" in found[PORT_ABOVE_GPU0]
    assert "\tCapabilities: [40] Express (v2) Upstream Port, MSI 00" in found[SWITCH_UP0]
    assert "\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00" in found[ROOT_PORT0]
    assert link_of(found[ROOT_PORT0], BUS) == ("15", "16", "1a")
    assert link_of(found[SWITCH_UP0], BUS) == ("16", "17", "1a")
    assert link_of(found[PORT_ABOVE_NIC0], BUS) == ("17", "1a", "1a")
    assert link_of(found[NIC0], LNKCAP) == ("32", "16")
    assert link_of(found[NIC0], LNKSTA) == ("32", None, "16", None)
    # An H100 at idle: 2.5 GT/s marked downgraded at the device, full width; the port above prints no
    # marking at all (pciutils link_compare() never marks root or downstream ports).
    assert link_of(found[GPU0], LNKSTA) == ("2.5", " (downgraded)", "16", None)
    assert link_of(found[PORT_ABOVE_GPU0], LNKSTA) == ("2.5", None, "16", None)
    assert link_of(found[PORT_ABOVE_GPU0], ACSCTL) == ("SrcValid-", "TransBlk-", "ReqRedir-", "CmpltRedir-")
    assert link_of(found[ROOT_PORT0], ACSCTL) == ("SrcValid+", "TransBlk-", "ReqRedir+", "CmpltRedir+")
    assert not any(line.startswith("\t\tACSCtl:") for line in found[SWITCH_UP0])
    assert "\t\tATSCtl:\tEnable-, Smallest Translation Unit: 00" in found[NIC0]


def test_lspci_without_D_s_selects_and_without_root_denies_capabilities(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lspci(paths, capsys, "-s", "1a:00.0") == (
        "1a:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
    )
    assert list(blocks(lspci(paths, capsys, "-D", "-vvv", "-s", "17:"))) == [PORT_ABOVE_GPU0, PORT_ABOVE_NIC0]
    monkeypatch.setattr(pcie.os, "geteuid", lambda: 1000)
    user = blocks(lspci(paths, capsys, "-D", "-vvv"))[NIC0]
    assert "\tCapabilities: <access denied>" in user
    assert not any("LnkSta" in line or "ATSCtl" in line for line in user)


def test_lspci_refuses_options_the_mock_does_not_model(paths: MockNodePaths) -> None:
    with pytest.raises(pcie.ToolError) as refused:
        pcie.lspci(node_of(paths), ["-x"])
    assert refused.value.code == 2 and "-x" in refused.value.message


def test_lspci_tv_draws_the_bus_ranges_as_ls_tree_does(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """ls-tree.c: a bridge as `DD.F-[SS-EE]-` (`-[SS]-` for one bus), `+-`/`\\-` between siblings, `--`
    for an only child, `|` carried down; -v names end devices only. Real shape: `+-03.1-[61-67]----00.0-
    [62-67]--+-02.0-[63]----00.0` (https://github.com/noonghunna/club-3090/issues/1261)."""
    lines = lspci(paths, capsys, "-tv").splitlines()
    gpu = "  NVIDIA Corporation GH100 [H100 SXM5 80GB]"
    nic = "  Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert lines[0] == "-+-[0000:15]---01.0-[16-1a]----00.0-[17-1a]--+-00.0-[18]----00.0" + gpu
    assert lines[1] == " |                                           \\-02.0-[1a]----00.0" + nic
    assert lines[-2].startswith(" \\-[0000:d8]---01.0-[d9-dc]----00.0-[da-dc]--+-00.0-[db]----00.0")
    assert lines[-1] == " " * 45 + "\\-02.0-[dc]----00.0" + nic
    drawn = {
        tuple(int(x, 16) for x in r.split("-")) for r in re.findall(r"-\[([0-9a-f-]+)\]-", "".join(lines))
    }
    ranges = [(f["secondary"], f["subordinate"]) for f in pcie_tree_for("rail8", 0) if "secondary" in f]
    assert drawn == {(low,) if low == high else (low, high) for low, high in ranges}


# --- sysfs and the kernel command line ------------------------------------------------------------------
def test_aer_files_per_function_in_the_kernel_abi_format(paths: MockNodePaths) -> None:
    devices = paths.state / mock_layout.PCI_DEVICES_DIR
    probe = sorted(glob.glob(f"{devices}/*/aer_dev_correctable"))
    assert len(probe) == len(pcie_tree_for("rail8", 0))  # every function, bridges included
    lines = (devices / NIC0 / "aer_dev_correctable").read_text().splitlines()
    assert lines[0] == "Receiver Error 0" and lines[-1] == "TOTAL_ERR_COR 0"
    assert all(AER_LINE.match(line) for line in lines)
    assert (devices / NIC0 / "aer_dev_fatal").read_text().splitlines()[-1] == "TOTAL_ERR_FATAL 0"
    assert "ACS Violation 0" in (devices / NIC0 / "aer_dev_nonfatal").read_text().splitlines()
    assert (devices / ROOT_PORT0 / "aer_rootport_total_err_cor").read_text() == "0\n"
    assert not (devices / NIC0 / "aer_rootport_total_err_cor").exists()


def test_nodeinit_binds_the_folders_prepare_writes() -> None:
    assert nodeinit.PCI_DEVICES_DIR == mock_layout.PCI_DEVICES_DIR == pcie.PCI_DEVICES_DIR
    assert nodeinit.CMDLINE_FILE == mock_layout.CMDLINE_FILE


@pytest.mark.parametrize("fault", [None, "pcie-degraded"])
def test_sysfs_link_attributes_are_the_links_lspci_shows(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str], fault: str | None
) -> None:
    """current_/max_link_speed and _width in the kernel's spelling (`32.0 GT/s PCIe`, a lane count), for
    every function, equal to LnkSta/LnkCap: one trained link, two views."""
    if fault:
        inject(paths, fault)
    found = blocks(lspci(paths, capsys, "-D", "-vvv"))
    devices = paths.state / mock_layout.PCI_DEVICES_DIR
    for bdf, lines in found.items():
        attribute = {name: (devices / bdf / name).read_text().strip() for name in pcie.LINK_FILES}
        speed, _, width, _ = link_of(lines, LNKSTA)
        cap_speed, cap_width = link_of(lines, LNKCAP)
        assert attribute["current_link_speed"] == f"{float(speed):.1f} GT/s PCIe", bdf
        assert attribute["max_link_speed"] == f"{float(cap_speed):.1f} GT/s PCIe", bdf
        assert (attribute["current_link_width"], attribute["max_link_width"]) == (width, cap_width), bdf
    nic0 = (devices / NIC0 / "current_link_speed").read_text()
    assert nic0 == ("8.0 GT/s PCIe\n" if fault else "32.0 GT/s PCIe\n")


def test_factory_iommu_is_passthrough(paths: MockNodePaths) -> None:
    assert "iommu=pt" in (paths.state / mock_layout.CMDLINE_FILE).read_text().split()
    for nic in node_of(paths).rdma_nics():
        assert node_of(paths).read_sys(f"infiniband/{nic['name']}/device/iommu_group/type") == "identity"


# --- faults ---------------------------------------------------------------------------------------------
def outputs(paths: MockNodePaths, capsys: pytest.CaptureFixture[str]) -> str:
    node = node_of(paths)
    groups = [node.read_sys(f"infiniband/{n['name']}/device/iommu_group/type") for n in node.rdma_nics()]
    cmdline = (paths.state / mock_layout.CMDLINE_FILE).read_text()
    return lspci(paths, capsys, "-D", "-vvv") + cmdline + repr(groups)


@pytest.mark.parametrize("fault", PCIE_FAULTS)
def test_fault_heals_byte_for_byte(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    before_files = tree_bytes(paths.state, paths.sys_class)
    before = outputs(paths, capsys)
    inject(paths, fault)
    assert outputs(paths, capsys) != before
    heal(paths, fault)
    assert outputs(paths, capsys) == before
    assert tree_bytes(paths.state, paths.sys_class) == before_files


def test_pcie_degraded_trains_only_nic0_at_x8_gen3(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    before = blocks(lspci(paths, capsys, "-D", "-vvv"))
    inject(paths, "pcie-degraded")
    after = blocks(lspci(paths, capsys, "-D", "-vvv"))
    assert link_of(after[NIC0], LNKSTA) == ("8", " (downgraded)", "8", " (downgraded)")
    assert link_of(after[NIC0], LNKCAP) == ("32", "16")
    assert link_of(after[PORT_ABOVE_NIC0], LNKSTA) == ("8", None, "8", None)  # the link's other end
    changed = {bdf for bdf in before if before[bdf] != after[bdf]}
    assert changed == {NIC0, PORT_ABOVE_NIC0}


def test_acs_on_sets_redirect_on_the_two_ports_above_gpu0_and_its_rail_nic(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    before = blocks(lspci(paths, capsys, "-D", "-vvv"))
    inject(paths, "acs-on")
    after = blocks(lspci(paths, capsys, "-D", "-vvv"))
    for port in (PORT_ABOVE_GPU0, PORT_ABOVE_NIC0):
        assert link_of(after[port], ACSCTL) == ("SrcValid+", "TransBlk-", "ReqRedir+", "CmpltRedir+")
    assert {bdf for bdf in before if before[bdf] != after[bdf]} == {PORT_ABOVE_GPU0, PORT_ABOVE_NIC0}


def test_acs_on_needs_gpus(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs GPUs and NICs"):
        inject(prepared(tmp_path, "sm"), "acs-on")


def test_iommu_translated_drops_iommu_pt_and_turns_every_rail_group_dma_fq(paths: MockNodePaths) -> None:
    inject(paths, "iommu-translated")
    words = (paths.state / mock_layout.CMDLINE_FILE).read_text().split()
    assert "iommu=pt" not in words and "intel_iommu=on" in words
    node = node_of(paths)
    assert {node.read_sys(f"infiniband/{n['name']}/device/iommu_group/type") for n in node.rdma_nics()} == {
        "DMA-FQ"
    }


# --- what the faults do to the traffic ------------------------------------------------------------------
def rank(node: Node, gpu_index: int, *, gdr: bool) -> dict[str, Any]:
    """One NCCL rank of the mock's model for GPU gpu_index on its rail NIC (as nccl_tests.my_ranks builds)."""
    nic = node.nic_by_name(rails_for("rail8")[gpu_index])
    assert nic is not None
    profile = {"link_layer": "Ethernet", "mtu": 4096, "rate_gbps": nic["rate_gbps"]}
    profile["pcie_gbps"] = pcie.carried_gbps(node, nic, gpu_index if gdr else None)
    return {"net": {"transport": "IB", "distance": 3, "gdr": gdr}, "profile": profile}


def test_factory_pcie_carries_the_line_rate(paths: MockNodePaths) -> None:
    node = node_of(paths)
    for nic in node.rdma_nics():
        assert pcie.carried_gbps(node, nic) > nic["rate_gbps"]
        assert pcie.carried_gbps(node, nic, 0) > nic["rate_gbps"]  # the idle GPU trains up under load
    assert nccl_tests.rank_penalty(rank(node, 0, gdr=True)) == 1.0


def test_pcie_degraded_caps_perftest_and_nccl_at_what_x8_gen3_carries(paths: MockNodePaths) -> None:
    inject(paths, "pcie-degraded")
    node = node_of(paths)
    nic0, nic1 = node.rdma_nics()[:2]
    x8_gen3 = 8 * 8 * 128 / 130 * 256 / 280  # GT/s x lanes x 128b/130b x TLP payload share
    assert pcie.carried_gbps(node, nic0) == pytest.approx(x8_gen3)
    assert pcie.carried_gbps(node, nic1) > nic1["rate_gbps"]
    # NCCL: the slow rail paces the ring, with or without GPUDirect
    assert nccl_tests.rank_penalty(rank(node, 0, gdr=True)) == pytest.approx(x8_gen3 / 400)
    assert nccl_tests.rank_penalty(rank(node, 0, gdr=False)) == pytest.approx(x8_gen3 / 400 * 0.8)
    assert nccl_tests.rank_penalty(rank(node, 1, gdr=True)) == 1.0


def test_acs_on_slows_gpudirect_between_gpu0_and_nic0_only(paths: MockNodePaths) -> None:
    inject(paths, "acs-on")
    node = node_of(paths)
    nic0 = node.rdma_nics()[0]
    assert pcie.carried_gbps(node, nic0, 0) == pcie.ROOT_COMPLEX_P2P_GBPS
    assert pcie.carried_gbps(node, nic0) > nic0["rate_gbps"]  # host-memory traffic does not cross ACS
    assert nccl_tests.rank_penalty(rank(node, 0, gdr=True)) == pytest.approx(pcie.ROOT_COMPLEX_P2P_GBPS / 400)
    assert nccl_tests.rank_penalty(rank(node, 1, gdr=True)) == 1.0


def test_iommu_translated_leaves_the_bandwidth_model_alone(paths: MockNodePaths) -> None:
    """No public figure for the cost of translation without ATS: the mock does not invent one."""
    inject(paths, "iommu-translated")
    assert nccl_tests.rank_penalty(rank(node_of(paths), 0, gdr=True)) == 1.0


# --- read back with the product's own parsers -----------------------------------------------------------
def test_lspci_reads_back_through_parse_lspci(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = parse_lspci(lspci(paths, capsys, "-D", "-vvv"), "lspci -D -vvv")
    assert len(tree.functions) == len(pcie_tree_for("rail8", 0))
    assert [bridge.bdf for bridge in tree.path(GPU0, NIC0)] == [PORT_ABOVE_GPU0, SWITCH_UP0, PORT_ABOVE_NIC0]
    nic, gpu, port = tree.functions[NIC0], tree.functions[GPU0], tree.functions[PORT_ABOVE_GPU0]
    assert nic.link_capability == PcieLink(32.0, 16) == nic.link_status
    assert (nic.driver, nic.ats_enabled, nic.port_type) == ("mlx5_core", False, "Endpoint")
    assert gpu.link_status == PcieLink(2.5, 16) and gpu.driver == "nvidia"
    assert port.bridge and port.port_type == "Downstream Port" and port.acs_redirect == ()
    assert tree.functions[ROOT_PORT0].acs_redirect == ("ReqRedir", "CmpltRedir")
    inject(paths, "pcie-degraded")
    inject(paths, "acs-on")
    tree = parse_lspci(lspci(paths, capsys, "-D", "-vvv"), "lspci -D -vvv")
    assert tree.functions[NIC0].link_status == PcieLink(8.0, 8)
    assert [b.bdf for b in tree.path(GPU0, NIC0) if b.acs_redirect] == [PORT_ABOVE_GPU0, PORT_ABOVE_NIC0]


def test_lspci_as_a_user_reads_back_as_access_denied(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pcie.os, "geteuid", lambda: 1000)
    tree = parse_lspci(lspci(paths, capsys, "-D", "-vvv"), "lspci -D -vvv")
    assert all(f.access_denied and f.link_status is None for f in tree.functions.values())


def test_aer_cmdline_and_iommu_group_read_back_through_the_probe_parsers(paths: MockNodePaths) -> None:
    """The AER probe's own command (`grep -H "" <files>`, run in the node's folder as it is bound over
    /sys/bus/pci/devices), the kernel command line and a rail NIC's group type, factory and translated."""
    devices = paths.state / mock_layout.PCI_DEVICES_DIR
    files = [f"sys/bus/pci/devices/{pattern.rsplit('/', 2)[1]}/{Path(pattern).name}" for pattern in AER_FILES]
    mirror = paths.root / "probe" / "sys" / "bus" / "pci"
    mirror.mkdir(parents=True)
    (mirror / "devices").symlink_to(devices)
    done = subprocess.run(
        f"grep -H '' {' '.join(files)}", shell=True, cwd=paths.root / "probe", capture_output=True, text=True
    )
    aer = aer_answer(done.returncode, done.stdout, done.stderr, "aer")
    assert set(aer) == {f["bdf"] for f in pcie_tree_for("rail8", 0)}
    assert all(aer[NIC0].total(severity) == 0 for severity in ("correctable", "nonfatal", "fatal"))
    assert aer[NIC0].counts["correctable"]["RELAY_NUM Rollover"] == 0
    cmdline = (paths.state / mock_layout.CMDLINE_FILE).read_text()
    assert parse_cmdline(cmdline, "cmdline").passthrough is True
    group = node_of(paths).read_sys("infiniband/mlx5_0/device/iommu_group/type") or ""
    assert parse_iommu_group_type(group, "type") == "identity"
    inject(paths, "iommu-translated")
    assert parse_cmdline((paths.state / mock_layout.CMDLINE_FILE).read_text(), "cmdline").passthrough is None
    group = node_of(paths).read_sys("infiniband/mlx5_0/device/iommu_group/type") or ""
    assert parse_iommu_group_type(group, "type") in TRANSLATED_DOMAIN_TYPES
