"""A GPU host set to the intent, as its one-round-trip collection brings it back, and the helpers the host
check tests (tests/checks/host/, and the collection and host-stage tests that reuse them) judge it with:
change one section, judge the host, look at the findings."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import hostgate
import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.host import (
    PERSIST_CONFIG,
    PERSIST_FILE_ORDER,
    PERSIST_FILES,
    PERSIST_UNIT_STATE,
    HostCollection,
)
from fabcheck.collect.script import Section
from fabcheck.desired.nic import PERSIST_PATHS, DesiredHost, desired_host
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import Dcqcn, FabricIntent, NicFirmware, NvlinkIntent
from fabcheck.parsers.ibv_devinfo import IbvDevice, IbvPort
from fabcheck.parsers.mlnx_qos import MlnxQos
from fabcheck.parsers.nic_persist import CONFIG_FORMAT
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.show_gids import GidEntry
from tests.checks.host import busdata
from tests.parsers.renderers import render_ibv_devinfo, render_mlnx_qos, render_rdma_link, render_show_gids

RAILS = {0: "mlx5_0", 1: "mlx5_1"}

NETDEVS = {"mlx5_0": "ens1np0", "mlx5_1": "ens2np0"}

# The firmware the lab and the example inventories pin for their ConnectX-7 part (docs/checks/bus.md).
FIRMWARE_PIN = NicFirmware(
    psid="MT_0000000838",
    version="28.39.1002",
    config={
        "LINK_TYPE_P1": "ETH",
        "ADVANCED_PCI_SETTINGS": False,
        "PCI_WR_ORDERING": "per_mkey",
        "ATS_ENABLED": False,
        "ROCE_CC_PRIO_MASK_P1": 255,
        "CNP_DSCP_P1": 48,
        "CNP_802P_PRIO_P1": 6,
    },
)
INTENT = FabricIntent(
    rails=RAILS, dcqcn=Dcqcn(rp_params={"rpg_gd": 11, "rpg_min_rate": 10}), nic_firmware=[FIRMWARE_PIN]
)
# The host is a tray of a three-tray NVLink domain (gpu01..gpu03, docs/checks/nvlink.md) whose NVLink plan
# asks everything the NVLink checks judge: its two GPUs' links at the GB200 rate, IMEX and the fabric
# manager. Only the host checks read it (DesiredHost.nvlink); INTENT itself stays NVLink-free, so the
# NCCL tests that share it keep their network floors.
NVLINK = NvlinkIntent(gpus=2, links_per_gpu=18, link_gbytes=53.125, imex=True, fabric_manager=True)

TOPO = (
    "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\tPIX\tSYS\t0-55\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tSYS\tPIX\t56-111\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\t X \tSYS\n"
    "NIC1\tSYS\tPIX\tSYS\t X \n"
    "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n"
)

LSMOD = (
    "Module                  Size  Used by\n"
    "nvidia_peermem         16384  0\n"
    "nvidia               9719808  1 nvidia_peermem\n"
    "mlx5_ib               483328  0\n"
)

# Real `modinfo -F license nvidia` and `uname -r` outputs (tests/data/real/host/INDEX.tsv).
REAL_HOST = Path(__file__).resolve().parents[2] / "data" / "real" / "host"
NVIDIA_LICENSE_PROPRIETARY = (REAL_HOST / "modinfo-F-license-nvidia-proprietary.txt").read_text()
NVIDIA_LICENSE_OPEN = (REAL_HOST / "modinfo-F-license-nvidia-open.txt").read_text()
KERNEL_RELEASE = (REAL_HOST / "uname-r-ubuntu-22.04.txt").read_text()
KERNEL_RELEASE_OLD = (REAL_HOST / "uname-r-centos-7.txt").read_text()

DEFAULT_DSCP_MAP = {d: d >> 3 for d in range(64)}


def qos(**changes: object) -> MlnxQos:
    base = MlnxQos(dcbx_mode="os", trust="dscp", dscp2prio=DEFAULT_DSCP_MAP, pfc_enabled=(3,), cable_len=7)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def port(**changes: object) -> IbvPort:
    base = IbvPort(
        number=1,
        state="PORT_ACTIVE",
        max_mtu=4096,
        active_mtu=4096,
        sm_lid=0,
        port_lid=0,
        port_lmc=0,
        link_layer="Ethernet",
        active_width="4X",
        active_speed="100.0 Gbps",  # 4X x 100 Gb/s: the intent's 400G
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def device(name: str, index: int, **port_changes: object) -> IbvDevice:
    guid = f"a088:c203:0000:{index:04x}"
    return IbvDevice(
        hca_id=name,
        transport="InfiniBand",
        fw_ver="28.39.1002",
        node_guid=guid,
        sys_image_guid=guid,
        vendor_id=0x02C9,
        vendor_part_id=4129,
        hw_ver="0x0",
        board_id="MT_0000000838",
        phys_port_cnt=1,
        ports=(port(**port_changes),),
    )


def links(**state: str) -> str:
    return render_rdma_link(
        [
            RdmaLink(dev, 1, state.get(dev, "ACTIVE"), "LINK_UP" if dev not in state else "DISABLED", netdev)
            for dev, netdev in NETDEVS.items()
        ]
    )


def ok(text: str) -> Section:
    return Section(0, text)


NVLINK_TRAYS = ("gpu01", "gpu02", "gpu03")
NVLINK_ADDRESSES = ("10.0.1.1", "10.0.1.2", "10.0.1.3")
CLUSTER_UUID = "dc6e40c4-d722-4357-9ba6-5291dd461278"  # the ClusterUUID of dra-driver issue 626
CLIQUE_ID = 2


def nvlink_tray(host: str, wanted: NvlinkIntent = NVLINK) -> DesiredNvlinkHost:
    """The host's NVLink domain as the gate plans it (GateDesired.nvlink): a tray of gpu01..gpu03."""
    return DesiredNvlinkHost(
        host=host,
        domain="nvl_rack1",
        members=NVLINK_TRAYS,
        addresses=NVLINK_ADDRESSES,
        gpus=wanted.gpus,
        links_per_gpu=wanted.links_per_gpu,
        link_gbytes=wanted.link_gbytes,
        imex=wanted.imex,
        fabric_manager=wanted.fabric_manager,
        busbw_min_fraction=wanted.busbw_min_fraction,
    )


def planned(intent: FabricIntent, host: str) -> DesiredHost:
    """The host's desired state with its NVLink domain attached, as the host stage judges it."""
    return dataclasses.replace(desired_host(intent, host), nvlink=nvlink_tray(host))


def nvlink_status(gpus: int = 2, rate: str = "53.125 GB/s") -> str:  # the two GPUs of GPU_BUSES
    """`nvidia-smi nvlink -s` as the real GB200 output shows each GPU (k8s-test-infra issue 371)."""
    blocks = []
    for index in range(gpus):
        blocks.append(f"GPU {index}: NVIDIA GB200 (UUID: GPU-{index:08x}-6d5b-03bd-3a71-f85b47a61bde)\n")
        blocks += [f"         Link {link}: {rate}\n" for link in range(18)]
    return "".join(blocks)


def imex_status(addresses: tuple[str, ...] = NVLINK_ADDRESSES) -> str:
    """`nvidia-imex-ctl -N` of a domain whose nodes are all READY and connected, in the real 2-node
    GH200 output's shape (tests/data/real/nvlink/INDEX.tsv)."""
    nodes = "".join(f"Node #{i:<3} - {a:<15} - READY\n" for i, a in enumerate(addresses))
    header = " Nodes From\\To  " + "  ".join(str(i) for i in range(len(addresses))) + "\n"
    rows = "".join(
        f"       {i}        " + "  ".join("C" for _ in addresses) + "\n" for i in range(len(addresses))
    )
    return f"3/25/2025 10:42:08.082\nNodes:\n{nodes}\n{header}{rows}Domain State: UP\n"


FABRIC_NA = (  # the real A10G's Fabric section (no NVLink fabric)
    "    Fabric\n"
    "        State                             : N/A\n"
    "        Status                            : N/A\n"
)


def fabric_section(state: str = "Completed", status: str = "Success", clique: int = CLIQUE_ID) -> str:
    return (
        "    Fabric\n"
        f"        State                             : {state}\n"
        f"        Status                            : {status}\n"
        f"        CliqueId                          : {clique}\n"
        f"        ClusterUUID                       : {CLUSTER_UUID}\n"
        "        Health\n"
        "            Summary                       : Healthy\n"
        "            Bandwidth                     : Full\n"
    )


def nvlink_sections() -> dict[str, Section]:
    return {
        "nvlink_status": ok(nvlink_status()),
        "imex_active": ok("active\n"),
        "imex_nodes": ok("".join(f"{a}\n" for a in NVLINK_ADDRESSES)),
        "imex_status": ok(imex_status()),
        "fabric_manager_active": ok("active\n"),
    }


def healthy_sections() -> dict[str, Section]:
    """What the collection script brings back from a host configured exactly to INTENT."""
    sections = {
        "time_limit": ok("/usr/bin/timeout"),
        "topo": ok(TOPO),
        "lsmod": ok(LSMOD),
        "rdma_link": ok(links()),
        "ibv_devinfo": ok(render_ibv_devinfo([device(n, i) for i, n in enumerate(NETDEVS)])),
        # host.gpudirect: the proprietary GPU module (no dma-buf), so nvidia_peermem (LSMOD) carries GDR.
        "nvidia_license": ok(NVIDIA_LICENSE_PROPRIETARY),
        "kernel_release": ok(KERNEL_RELEASE),
    }
    for dev, netdev in NETDEVS.items():
        sections[f"traffic_class:{dev}/1"] = ok("Global tclass=106\n")
        sections[f"mlnx_qos:{netdev}"] = ok(render_mlnx_qos(qos()))
        sections[f"mtu:{netdev}"] = ok("9000\n")
        sections[f"ecn_np_enable:{netdev}"] = ok("1\n")
        sections[f"ecn_rp_enable:{netdev}"] = ok("1\n")
        sections[f"cnp_dscp:{netdev}"] = ok("48\n")
        sections[f"cnp_802p_prio:{netdev}"] = ok("6\n")
        sections[f"min_time_between_cnps:{netdev}"] = ok("4\n")
        sections[f"roce_rp:{netdev}"] = ok(rp_listing(netdev))
        sections[f"driver:{netdev}"] = ok(ETHTOOL_I + busdata.bus_info(list(NETDEVS).index(dev)))
        sections[f"pfc_storm:{netdev}"] = ok("pfc-prevention-tout: 100\n")
        sections[f"cma_roce_tos:{dev}/1"] = ok("106\n")
        sections[f"cma_roce_mode:{dev}/1"] = ok("RoCE v2\n")
        sections |= wire_sections(netdev)
        sections[f"flint:{dev}/1"] = ok(flint_q())
        sections[f"mlxconfig:{dev}/1"] = ok(mlxconfig_e_q())
    sections["counter_window"] = ok(f"{COUNTER_WINDOW_S}\n")
    sections["show_gids"] = ok(render_show_gids(gids()))
    sections |= busdata.bus_sections(tuple(NETDEVS))
    sections |= gpu_health_sections()
    sections |= nvlink_sections()
    return sections | persisted_sections()


# The wire of a clean link (docs/checks/wire.md), from real outputs (tests/data/real/host/INDEX.tsv): mlx5
# `ethtool -S` *_phy counters and `ethtool -I --show-fec` statistics read twice alike (nothing grew over
# the window), and a CMIS module within its own thresholds.
REAL_HOST = Path(__file__).resolve().parents[2] / "data" / "real" / "host"
COUNTER_WINDOW_S = 5


def wire_sections(netdev: str) -> dict[str, Section]:
    stats = (REAL_HOST / "ethtool-S-mlx5-phy-rendered.txt").read_text()
    fec = (REAL_HOST / "ethtool-I-show-fec-rs-totals-rendered.txt").read_text()
    module = (REAL_HOST / "ethtool-m-cmis-qsfp-dd-rendered.txt").read_text()
    return {
        f"link_stats.before:{netdev}": ok(stats),
        f"link_stats:{netdev}": ok(stats),
        f"fec.before:{netdev}": ok(fec),
        f"fec:{netdev}": ok(fec),
        f"module:{netdev}": ok(module),
    }


def flint_q(version: str = "28.39.1002", psid: str = "MT_0000000838", running: str | None = None) -> str:
    """`flint -d DEV q` as the real one (tests/data/real/host/flint-q-bluefield-dpu.txt) with this NIC's
    image and PSID; `running`: the firmware that runs while that image waits for a reset."""
    text = (REAL_HOST / "flint-q-bluefield-dpu.txt").read_text()
    text = text.replace("24.33.1048", version).replace("MT_0000000723", psid)
    if running is not None:  # printed right after FW Version (flint/subcommands.cpp printInfo)
        text = text.replace(
            f"FW Version:            {version}\n",
            f"FW Version:            {version}\nFW Version(Running):   {running}\n",
            1,
        )
    return text


# A ConnectX-7 holding FIRMWARE_PIN's parameters: (Default, Current, Next Boot) as mlxconfig -e shows them.
FIRMWARE_PARAMS = {
    "LINK_TYPE_P1": ("ETH(2)", "ETH(2)", "ETH(2)"),
    "ADVANCED_PCI_SETTINGS": ("False(0)", "False(0)", "False(0)"),
    "PCI_WR_ORDERING": ("per_mkey(0)", "per_mkey(0)", "per_mkey(0)"),
    "ATS_ENABLED": ("False(0)", "False(0)", "False(0)"),
    "ROCE_CC_PRIO_MASK_P1": ("255", "255", "255"),
    "CNP_DSCP_P1": ("48", "48", "48"),
    "CNP_802P_PRIO_P1": ("6", "6", "6"),
}


def mlxconfig_e_q(**changed: tuple[str, str, str]) -> str:
    """`mlxconfig -d DEV -e q` in the real layout (tests/data/real/host: mlxconfig-e-q-connectx6lx-header.txt
    for the header, the ConnectX-7 query's rows: an 8-character prefix with `*` where Next Boot differs,
    names padded to 44, values to 20 and a space); `changed`: parameter -> its three values."""
    rows = ["", "Device #1:", "----------", "", f"{'Device type:':<20}{'ConnectX7':<20}", ""]
    rows.append(f"{'Configurations:':<57}{'Default':<20}{'Current':<16}Next Boot")
    for name, values in (FIRMWARE_PARAMS | changed).items():
        mark = "*" if values[2] != values[0] or values[2] != values[1] else " "
        rows.append(f"{mark}       {name:<44}" + " ".join(f"{value:<20}" for value in values))
    if any(row.startswith("*") for row in rows):
        rows.append("The '*' shows parameters with next value different from default/current value.")
    return "\n".join(rows) + "\n"


ETHTOOL_I = "driver: mlx5_core\nversion: 24.04-0.6.6\nfirmware-version: 28.39.1002 (MT_0000000838)\n"


def rp_listing(netdev: str, **values: int) -> str:
    """`grep -r -H '' .../ecn/roce_rp` of a NIC with the intent's rp_params (and any values given)."""
    shown = {"enable/3": 1, "rpg_gd": 11, "rpg_min_rate": 10, "rpg_ai_rate": 5} | values
    return "".join(f"/sys/class/net/{netdev}/ecn/roce_rp/{key}:{value}\n" for key, value in shown.items())


def gids(v2_at_3: bool = True) -> list[GidEntry]:
    """The GID table show_gids prints: link-local v1/v2, then IPv4-mapped v1 and v2 (index 3)."""
    rows = []
    for number, (dev, netdev) in enumerate(NETDEVS.items()):
        local, ipv4 = f"fe80:0000:0000:0000:0000:0000:0000:{number + 1:04x}", f"10.0.0.{number + 1}"
        mapped = f"0000:0000:0000:0000:0000:ffff:0a00:{number + 1:04x}"
        rows += [
            GidEntry(dev, 1, 0, local, None, "v1", netdev),
            GidEntry(dev, 1, 1, local, None, "v2", netdev),
            GidEntry(dev, 1, 2, mapped, ipv4, "v1", netdev),
            GidEntry(dev, 1, 3, mapped, ipv4, "v2" if v2_at_3 else "v1", netdev),
        ]
    return rows


def persisted_sections(intent: FabricIntent = INTENT) -> dict[str, Section]:
    """The boot files role roce_host leaves: the settings file of the desired state, the unit enabled."""
    settings = checks.boot_settings(desired_host(intent, "gpu01"))
    boot_file = json.dumps({"format": CONFIG_FORMAT, "settings": settings}, indent=2, sort_keys=True)
    listing = "".join(PERSIST_PATHS[key] + "\n" for key in PERSIST_FILE_ORDER)
    return {
        PERSIST_CONFIG: ok(boot_file + "\n"),
        PERSIST_UNIT_STATE: ok("enabled\n"),
        PERSIST_FILES: ok(listing),
    }


def run_checks(
    changes: Mapping[str, Section | None] | None = None, intent: FabricIntent = INTENT
) -> list[Finding]:
    sections = healthy_sections() | persisted_sections(intent)  # the boot file of this intent
    for name, section in (changes or {}).items():
        if section is None:
            sections.pop(name)
        else:
            sections[name] = section
    collection = HostCollection("gpu01", sections, complete=True, priority=intent.lossless.priority)
    return list(hostgate.judge(collection, intent, planned(intent, "gpu01")).findings)


def not_passing(findings: list[Finding]) -> dict[tuple[str, str], Status]:
    return {(f.check, f.subject): f.status for f in findings if f.status is not Status.PASS}


def failing(findings: list[Finding]) -> dict[tuple[str, str], Status]:
    return {(f.check, f.subject): f.status for f in findings if f.status in (Status.FAIL, Status.ERROR)}


def only(findings: list[Finding], check: str, subject: str) -> Finding:
    matches = [f for f in findings if f.check == check and f.subject == subject]
    assert len(matches) == 1, matches
    return matches[0]


TOKEN = "0123abcd"


def inventory_entry(name: str, *groups: str) -> HostEntry:
    return HostEntry(name, tuple(groups), INTENT, {"ansible_host": f"10.0.0.{len(name)}"})


def assert_fails_exactly(
    changes: dict[str, Section], check: str, subject: str, actual: str, command: str
) -> None:
    """One wrong setting fails exactly its check on exactly that subject, saying what it saw and the command
    that fixes it (and the role that sets it fleet-wide)."""
    findings = run_checks(changes)
    assert failing(findings) == {(check, subject): Status.FAIL}
    finding = only(findings, check, subject)
    assert finding.actual == actual
    assert command in finding.hint
    if check in (*checks.ROCE_ONLY_CHECKS, checks.RDMA_MTU):
        assert "role roce_host" in finding.hint
    if check == checks.GPUDIRECT:
        assert "role gpu_rdma" in finding.hint


def assert_fails_exactly_with_fix(
    changes: dict[str, Section], check: str, subject: str, fix: str, tag: str | None
) -> None:
    """A wrong value beyond the QoS table fails exactly its check on exactly that device with the fix;
    `tag` None: no fabcheck role sets it."""
    findings = run_checks(changes)
    assert not_passing(findings) == {(check, subject): Status.FAIL}
    failure = only(findings, check, subject)
    assert fix in failure.hint
    if tag is None:
        assert failure.hint.startswith("no fabcheck role sets it")
    else:
        assert failure.hint.startswith(f"role roce_host (tag {tag}) sets it fleet-wide")


# One row of a concern's FAULTS table: (test id, changed sections, check, subject, actual, fix command).
Fault = tuple[str, dict[str, Section], str, str, str, str]
# One row of a concern's WRONG table, by section: (what the section shows, check, subject).
Wrong = dict[str, tuple[Section, str, str]]


def one_wrong_setting_test(faults: list[Fault]) -> Callable[..., None]:
    """The test a concern module runs over its FAULTS table: each wrong setting fails exactly its check."""

    @pytest.mark.parametrize(
        ("changes", "check", "subject", "actual", "command"),
        [fault[1:] for fault in faults],
        ids=[fault[0] for fault in faults],
    )
    def test(changes: dict[str, Section], check: str, subject: str, actual: str, command: str) -> None:
        assert_fails_exactly(changes, check, subject, actual, command)

    return test


def wrong_value_tests(
    wrong: Wrong, fixes: Mapping[str, str], tags: Mapping[str, str | None]
) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two tests each concern module runs over its WRONG table: a wrong value fails exactly its check
    on exactly that device with the fix (and the role tag that runs it); an unreadable one is an error."""

    @pytest.mark.parametrize("section", sorted(wrong))
    def fails_with_fix(section: str) -> None:
        shown, check, subject = wrong[section]
        assert_fails_exactly_with_fix({section: shown}, check, subject, fixes[check], tags[check])

    @pytest.mark.parametrize("section", sorted(wrong))
    def unreadable_is_an_error(section: str) -> None:
        _shown, check, subject = wrong[section]
        findings = run_checks({section: Section(2, "", "cat: permission denied\n")})
        assert not_passing(findings) == {(check, subject): Status.ERROR}
        assert "permission denied" in only(findings, check, subject).actual

    return fails_with_fix, unreadable_is_an_error


# GPU health (host.gpu_health): the two GPUs of TOPO in `nvidia-smi -q`, each block the real A10G output of
# tests/data/real/host (DCGM issue 232) at its own bus id with persistence mode on, and a kernel log
# without Xid.
GPU_BUSES = ("00000000:18:00.0", "00000000:2A:00.0")
BOOT_LOG = "[    0.276715] iommu: Default domain type: Passthrough (set via kernel command line)\n"


def smi_q(
    persistence: str = "Enabled",
    buses: tuple[str, ...] = GPU_BUSES,
    changes: Mapping[int, Mapping[str, str]] | None = None,
) -> str:
    """`nvidia-smi -q` of GPUs at `buses`, each block the real A10G block at its bus id and its Fabric
    section registered in the domain (fabric_section); `changes`: GPU index -> {line text: its
    replacement} in that GPU's block."""
    real = (REAL_HOST / "nvidia-smi-q-a10g-535.txt").read_text()
    head, _, block = real.partition("GPU 00000000:00:1E.0\n")
    head = head.replace(
        "Attached GPUs                             : 1", f"Attached GPUs{' ' * 29}: {len(buses)}"
    )
    blocks = []
    for index, bus in enumerate(buses):
        text = block.replace("00000000:00:1E.0", bus)
        assert FABRIC_NA in text
        text = text.replace(FABRIC_NA, fabric_section(), 1)
        text = text.replace(
            "Persistence Mode                      : Disabled", f"Persistence Mode{' ' * 22}: {persistence}"
        )
        for old, new in (changes or {}).get(index, {}).items():
            assert old in text, old
            text = text.replace(old, new, 1)
        blocks.append(f"GPU {bus}\n{text}")
    return head + "\n".join(blocks)


def gpu_health_sections() -> dict[str, Section]:
    return {"nvidia_smi_q": ok(smi_q()), "kernel_log": ok(BOOT_LOG)}
