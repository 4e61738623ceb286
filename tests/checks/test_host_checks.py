"""Host checks of `fabcheck validate`: every check passes on a host set to the intent, fails on the one
setting that is wrong, and is an ERROR (never a pass) when its evidence is missing; plus the section
splitter of the one-round-trip collection and the gate's verdict / exit-code rules."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
from collections.abc import Mapping

import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.cli import validate as validate_cli
from fabcheck.collect import host as collect
from fabcheck.collect.host import (
    COLLECT_SCRIPT,
    PERSIST_CONFIG,
    PERSIST_FILE_ORDER,
    PERSIST_FILES,
    PERSIST_UNIT_STATE,
    HostCollection,
    remote_command,
    section_command,
)
from fabcheck.collect.script import Section, split_sections
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.nic import PERSIST_PATHS, DesiredHost, desired_host
from fabcheck.errors import ParseError
from fabcheck.gate import host_stage as validate
from fabcheck.gate.fabric import GateResult, gate_report
from fabcheck.gate.plan import plan_gate
from fabcheck.gate.stages import StageOutcome
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.intent.model import Dcqcn, FabricIntent
from fabcheck.parsers import host_sysfs
from fabcheck.parsers.ibv_devinfo import IbvDevice, IbvPort
from fabcheck.parsers.mlnx_qos import MlnxQos
from fabcheck.parsers.nic_persist import CONFIG_FORMAT
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.show_gids import GidEntry
from fabcheck.report.model import exit_code
from tests.parsers.renderers import render_ibv_devinfo, render_mlnx_qos, render_rdma_link, render_show_gids

RAILS = {0: "mlx5_0", 1: "mlx5_1"}
NETDEVS = {"mlx5_0": "ens1np0", "mlx5_1": "ens2np0"}
INTENT = FabricIntent(rails=RAILS, dcqcn=Dcqcn(rp_params={"rpg_gd": 11, "rpg_min_rate": 10}))
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


def healthy_sections() -> dict[str, Section]:
    """What the collection script brings back from a host configured exactly to INTENT."""
    sections = {
        "time_limit": ok("/usr/bin/timeout"),
        "topo": ok(TOPO),
        "lsmod": ok(LSMOD),
        "rdma_link": ok(links()),
        "ibv_devinfo": ok(render_ibv_devinfo([device(n, i) for i, n in enumerate(NETDEVS)])),
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
        sections[f"driver:{netdev}"] = ok(ETHTOOL_I)
        sections[f"pfc_storm:{netdev}"] = ok("pfc-prevention-tout: 100\n")
        sections[f"cma_roce_tos:{dev}/1"] = ok("106\n")
        sections[f"cma_roce_mode:{dev}/1"] = ok("RoCE v2\n")
    sections["show_gids"] = ok(render_show_gids(gids()))
    return sections | persisted_sections()


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
    return list(validate.judge(collection, intent).findings)


def not_passing(findings: list[Finding]) -> dict[tuple[str, str], Status]:
    return {(f.check, f.subject): f.status for f in findings if f.status is not Status.PASS}


def failing(findings: list[Finding]) -> dict[tuple[str, str], Status]:
    return {(f.check, f.subject): f.status for f in findings if f.status in (Status.FAIL, Status.ERROR)}


def only(findings: list[Finding], check: str, subject: str) -> Finding:
    matches = [f for f in findings if f.check == check and f.subject == subject]
    assert len(matches) == 1, matches
    return matches[0]


# ---- a healthy host ----------------------------------------------------------------------------


def test_host_set_to_the_intent_passes_every_check_on_every_rail() -> None:
    findings = run_checks()
    assert not_passing(findings) == {}
    assert {f.check for f in findings} == set(checks.HOST_CHECKS)
    per_nic = [f for f in findings if f.check == checks.TRUST]
    assert [f.subject for f in per_nic] == ["mlx5_0", "mlx5_1"]


def test_traffic_class_accepts_the_plain_upstream_form() -> None:
    findings = run_checks({"traffic_class:mlx5_0/1": ok("106\n")})
    assert only(findings, checks.ROCE_TOS, "mlx5_0/1").status is Status.PASS


# ---- one wrong setting fails exactly its check, with the fixing command ------------------------

FAULTS: list[tuple[str, dict[str, Section], str, str, str, str]] = [
    (
        "trust",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(trust="pcp", dscp2prio={}, dscp2prio_shown=False)))},
        checks.TRUST,
        "mlx5_0",
        "trust pcp",
        "mlnx_qos -i ens1np0 --trust dscp",
    ),
    (
        "pfc-off",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(pfc_enabled=())))},
        checks.PFC,
        "mlx5_0",
        "PFC off on every priority",
        "mlnx_qos -i ens1np0 --pfc 0,0,0,1,0,0,0,0",
    ),
    (
        "pfc-extra",
        {"mlnx_qos:ens2np0": ok(render_mlnx_qos(qos(pfc_enabled=(3, 4))))},
        checks.PFC,
        "mlx5_1",
        "PFC on priority 3,4 only",
        "mlnx_qos -i ens2np0 --pfc 0,0,0,1,0,0,0,0",
    ),
    (
        "dscp-map",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(dscp2prio=DEFAULT_DSCP_MAP | {26: 0})))},
        checks.DSCP2PRIO,
        "mlx5_0",
        "DSCP 26 -> prio 0, DSCP 48 -> prio 6",
        "mlnx_qos -i ens1np0 --dscp2prio set,26,3",
    ),
    (
        "cnp-map",
        {"mlnx_qos:ens1np0": ok(render_mlnx_qos(qos(dscp2prio=DEFAULT_DSCP_MAP | {48: 3})))},
        checks.DSCP2PRIO,
        "mlx5_0",
        "DSCP 26 -> prio 3, DSCP 48 -> prio 3",
        "mlnx_qos -i ens1np0 --dscp2prio set,48,6",
    ),
    (
        "ecn-np-off",
        {"ecn_np_enable:ens1np0": ok("0\n")},
        checks.ECN_ENABLE,
        "mlx5_0",
        "roce_np/enable/3=0 roce_rp/enable/3=1",
        "echo 1 > /sys/class/net/ens1np0/ecn/roce_np/enable/3",
    ),
    (
        "ecn-rp-off",
        {"ecn_rp_enable:ens2np0": ok("0\n")},
        checks.ECN_ENABLE,
        "mlx5_1",
        "roce_np/enable/3=1 roce_rp/enable/3=0",
        "echo 1 > /sys/class/net/ens2np0/ecn/roce_rp/enable/3",
    ),
    (
        "cnp-dscp",
        {"cnp_dscp:ens1np0": ok("46\n")},
        checks.CNP,
        "mlx5_0",
        "cnp_dscp=46 cnp_802p_prio=6",
        "echo 48 > /sys/class/net/ens1np0/ecn/roce_np/cnp_dscp",
    ),
    (
        "cnp-prio",
        {"cnp_802p_prio:ens1np0": ok("7\n")},
        checks.CNP,
        "mlx5_0",
        "cnp_dscp=48 cnp_802p_prio=7",
        "echo 6 > /sys/class/net/ens1np0/ecn/roce_np/cnp_802p_prio",
    ),
    (
        "tos",
        {"traffic_class:mlx5_1/1": ok("Global tclass=0\n")},
        checks.ROCE_TOS,
        "mlx5_1/1",
        "traffic_class 0",
        "echo 106 > /sys/class/infiniband/mlx5_1/tc/1/traffic_class",
    ),
    (
        "netdev-mtu",
        {"mtu:ens1np0": ok("1500\n")},
        checks.NETDEV_MTU,
        "mlx5_0",
        "ens1np0 MTU 1500",
        "ip link set dev ens1np0 mtu 9000",
    ),
    (
        "rdma-mtu",
        {"ibv_devinfo": ok(render_ibv_devinfo([device("mlx5_0", 0, active_mtu=1024), device("mlx5_1", 1)]))},
        checks.RDMA_MTU,
        "mlx5_0/1",
        "active_mtu 1024 (max_mtu 4096)",
        "ip link set dev ens1np0 mtu 9000",
    ),
    (
        "peermem",
        {"lsmod": ok("Module                  Size  Used by\nmlx5_ib               483328  0\n")},
        checks.PEERMEM,
        "host",
        "not loaded (lsmod)",
        "modprobe nvidia_peermem",
    ),
    (
        "port-down",
        {"rdma_link": ok(links(mlx5_1="DOWN"))},
        checks.PORT_STATE,
        "mlx5_1/1",
        "DOWN/DISABLED",
        "rdma link show mlx5_1/1",
    ),
    (
        "link-layer",
        {
            "ibv_devinfo": ok(
                render_ibv_devinfo([device("mlx5_0", 0), device("mlx5_1", 1, link_layer="InfiniBand")])
            )
        },
        checks.LINK_LAYER,
        "mlx5_1/1",
        "InfiniBand",
        "mlxconfig -d mlx5_1 set 'LINK_TYPE_P1=ETH(2)'",  # quoted: ( ) are shell syntax
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


@pytest.mark.parametrize(
    ("changes", "check", "subject", "actual", "command"),
    [case[1:] for case in FAULTS],
    ids=[case[0] for case in FAULTS],
)
def test_one_wrong_setting_fails_exactly_its_check(
    changes: dict[str, Section], check: str, subject: str, actual: str, command: str
) -> None:
    findings = run_checks(changes)
    assert failing(findings) == {(check, subject): Status.FAIL}
    finding = only(findings, check, subject)
    assert finding.actual == actual
    assert command in finding.hint
    if check in (*checks.ROCE_ONLY_CHECKS, checks.RDMA_MTU):
        assert "role roce_host" in finding.hint
    if check == checks.PEERMEM:
        assert "role gpu_rdma" in finding.hint


def test_nic_trusting_pcp_skips_its_dscp_map_with_the_reason() -> None:
    pcp = ok(render_mlnx_qos(qos(trust="pcp", dscp2prio={}, dscp2prio_shown=False)))
    skipped = only(run_checks({"mlnx_qos:ens1np0": pcp}), checks.DSCP2PRIO, "mlx5_0")
    assert skipped.status is Status.SKIP
    assert skipped.actual == "the NIC trusts pcp: its DSCP map is not in use (host.trust)"


def test_missing_rail_nic_fails_device_check_and_skips_nothing_silently() -> None:
    rdma = render_rdma_link([RdmaLink("mlx5_0", 1, "ACTIVE", "LINK_UP", "ens1np0")])
    devinfo = render_ibv_devinfo([device("mlx5_0", 0)])
    findings = run_checks({"rdma_link": ok(rdma), "ibv_devinfo": ok(devinfo)})
    assert not_passing(findings) == {(checks.RDMA_DEVICE, "mlx5_1"): Status.FAIL}
    missing = only(findings, checks.RDMA_DEVICE, "mlx5_1")
    assert missing.actual == "not listed by `rdma link` and `ibv_devinfo`"
    assert "role gpu_rdma" in missing.hint


NO_NIC_TOPO = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\t0-55\t0\t\tN/A\n"
    "GPU1\tNV18\t X \t56-111\t1\t\tN/A\n"
    "\nLegend:\n\n  X    = Self\n"
)


def test_host_without_rdma_devices_fails_devices_and_affinity() -> None:
    # As the tools print it: `rdma link` prints nothing; ibv_devinfo says so on stderr and exits 255.
    findings = run_checks(
        {
            "rdma_link": ok(""),
            "ibv_devinfo": Section(255, "", "No IB devices found\n"),
            "topo": ok(NO_NIC_TOPO),
        }
    )
    assert failing(findings) == {
        (checks.RDMA_DEVICE, "mlx5_0"): Status.FAIL,
        (checks.RDMA_DEVICE, "mlx5_1"): Status.FAIL,
        (checks.AFFINITY, "GPU0"): Status.FAIL,
        (checks.AFFINITY, "GPU1"): Status.FAIL,
    }
    assert "no NIC in topology" in only(findings, checks.AFFINITY, "GPU0").actual
    assert not any(f.check in checks.ROCE_ONLY_CHECKS for f in findings)  # nothing to judge, nothing passed


def test_ibv_devinfo_failing_for_another_reason_is_an_error() -> None:
    broken = Section(255, "", "Failed to get IB devices list: Function not implemented\n")
    device = only(run_checks({"ibv_devinfo": broken}), checks.RDMA_DEVICE, "host")
    assert device.status is Status.ERROR
    assert device.actual.endswith("exit 255: Failed to get IB devices list: Function not implemented")


def test_pfc_must_be_off_everywhere_when_the_intent_is_lossy() -> None:
    lossy = FabricIntent(rails=RAILS, congestion_control="ecn_only", lossless={"pfc": False})
    findings = run_checks(intent=lossy)
    pfc = only(findings, checks.PFC, "mlx5_0")
    assert pfc.status is Status.FAIL
    assert pfc.expected == "PFC off on every priority"
    assert "--pfc 0,0,0,0,0,0,0,0" in pfc.hint


def test_pfc_only_intent_wants_nic_dcqcn_off() -> None:
    pfc_only = FabricIntent(rails=RAILS, congestion_control="pfc_only")
    ecn = only(run_checks(intent=pfc_only), checks.ECN_ENABLE, "mlx5_0")
    assert ecn.status is Status.FAIL
    assert ecn.expected == "roce_np/enable/3=0 roce_rp/enable/3=0"
    disabled = {f"ecn_{p}_enable:{n}": ok("0\n") for p in ("np", "rp") for n in NETDEVS.values()}
    assert only(run_checks(disabled, intent=pfc_only), checks.ECN_ENABLE, "mlx5_0").status is Status.PASS


def test_peermem_not_judged_when_gdr_is_not_required() -> None:
    no_gdr = FabricIntent(rails=RAILS, nccl={"gdr_required": False})
    findings = run_checks({"lsmod": ok("Module   Size  Used by\n")}, intent=no_gdr)
    assert only(findings, checks.PEERMEM, "host").status is Status.SKIP


def test_trust_pcp_intent_skips_the_dscp_map() -> None:
    pcp = INTENT.model_copy(update={"trust": "pcp"})
    findings = run_checks(
        {
            f"mlnx_qos:{n}": ok(render_mlnx_qos(qos(trust="pcp", dscp2prio={}, dscp2prio_shown=False)))
            for n in ("ens1np0", "ens2np0")
        },
        intent=pcp,
    )
    assert not_passing(findings) == {
        (checks.DSCP2PRIO, "mlx5_0"): Status.SKIP,
        (checks.DSCP2PRIO, "mlx5_1"): Status.SKIP,
    }


def test_infiniband_intent_skips_roce_only_checks_with_a_reason() -> None:
    ib = FabricIntent(kind="ib", roce_tos=104, rails=RAILS)
    ib_ports = render_ibv_devinfo([device(n, i, link_layer="InfiniBand") for i, n in enumerate(NETDEVS)])
    findings = run_checks({"ibv_devinfo": ok(ib_ports)}, intent=ib)
    skipped = {f.check for f in findings if f.status is Status.SKIP}
    assert skipped == {*checks.ROCE_ONLY_CHECKS, checks.NIC_PERSISTENCE}  # RoCE boot files too
    assert all("RoCE-only" in f.actual for f in findings if f.status is Status.SKIP)
    assert not any(f.status is Status.FAIL for f in findings)


# ---- missing evidence is an ERROR naming the command -------------------------------------------

MISSING = [
    (
        "mlnx_qos:ens1np0",
        Section(127, "", "sh: 1: mlnx_qos: not found\n"),
        checks.TRUST,
        "mlnx_qos -i ens1np0",
    ),
    ("mtu:ens2np0", None, checks.NETDEV_MTU, "cat /sys/class/net/ens2np0/mtu"),
    ("ecn_np_enable:ens1np0", Section(1, "", "cat: No such file\n"), checks.ECN_ENABLE, "roce_np/enable/3"),
    ("cnp_dscp:ens1np0", ok("forty-eight\n"), checks.CNP, "cat /sys/class/net/ens1np0/ecn/roce_np/cnp_dscp"),
    ("traffic_class:mlx5_0/1", Section(None, "Glob"), checks.ROCE_TOS, "tc/1/traffic_class"),
    ("lsmod", ok("garbage\n"), checks.PEERMEM, "lsmod"),
    ("topo", Section(127, "", "nvidia-smi: not found\n"), checks.AFFINITY, "nvidia-smi topo -m"),
    ("rdma_link", None, checks.RDMA_DEVICE, "rdma link"),
    ("ibv_devinfo", ok("hca_id:\n"), checks.RDMA_DEVICE, "ibv_devinfo -v"),
]


@pytest.mark.parametrize(("section", "replacement", "check", "command"), MISSING, ids=[m[0] for m in MISSING])
def test_unreadable_evidence_is_an_error_never_a_pass(
    section: str, replacement: Section | None, check: str, command: str
) -> None:
    findings = run_checks({section: replacement})
    errors = [f for f in findings if f.check == check and f.status is Status.ERROR]
    assert errors, not_passing(findings)
    assert command in errors[0].actual
    assert validate.verdict(findings) is Status.ERROR
    assert not any(f.status is Status.FAIL for f in findings)


def test_truncated_and_failed_sections_say_why() -> None:
    findings = run_checks({"traffic_class:mlx5_0/1": Section(None, "Glob")})
    assert "output truncated" in only(findings, checks.ROCE_TOS, "mlx5_0/1").actual
    findings = run_checks({"mlnx_qos:ens1np0": Section(127, "", "sh: 1: mlnx_qos: not found\n")})
    assert only(findings, checks.PFC, "mlx5_0").actual == (
        "could not read `mlnx_qos -i ens1np0`: exit 127: sh: 1: mlnx_qos: not found"
    )


def test_unreachable_host_is_one_error() -> None:
    collection = HostCollection(
        "gpu09", {}, complete=False, error="ssh to 10.0.0.9 failed: Connection refused"
    )
    result = validate.judge(collection, INTENT)
    assert result.verdict is Status.ERROR
    assert [(f.check, f.status) for f in result.findings] == [(validate.COLLECTION_CHECK, Status.ERROR)]
    assert "Connection refused" in result.findings[0].actual


def test_partial_collection_keeps_an_error_even_if_every_section_passed() -> None:
    collection = HostCollection("gpu01", healthy_sections(), complete=False, error="no answer within 5 s")
    result = validate.judge(collection, INTENT)
    assert result.verdict is Status.ERROR
    assert result.findings[0].check == validate.COLLECTION_CHECK


def _exit_code(results: list[validate.HostResult]) -> int:
    """The exit code `fabcheck validate` gives these host results."""
    return exit_code(gate_report(GateResult((StageOutcome("host", tuple(results)),))))


def test_exit_codes_follow_the_worst_host() -> None:
    good = validate.judge(HostCollection("a", healthy_sections(), True), INTENT)
    bad = validate.judge(
        HostCollection("b", {**healthy_sections(), "mtu:ens1np0": ok("1500\n")}, True), INTENT
    )
    down = validate.judge(HostCollection("c", {}, False, error="timeout"), INTENT)
    assert _exit_code([good]) == 0
    assert _exit_code([good, bad, down]) == 1
    assert _exit_code([good, down]) == 3
    assert _exit_code([down]) == 3


# ---- small readers ---------------------------------------------------------------------------


def test_sysfs_readers() -> None:
    assert host_sysfs.sysfs_int("9000\n", "x") == 9000
    assert host_sysfs.traffic_class("Global tclass=106\n", "x") == 106
    assert host_sysfs.traffic_class("106\n", "x") == 106
    for bad in ("", "abc", "1 2", "Global tclass=", "1" * 30):
        with pytest.raises(ParseError):
            host_sysfs.sysfs_int(bad, "x")
    with pytest.raises(ParseError):
        host_sysfs.traffic_class("Global tclass=300", "x")
    assert host_sysfs.loaded_modules(LSMOD, "lsmod") == {"nvidia_peermem", "nvidia", "mlx5_ib"}


# ---- the section splitter --------------------------------------------------------------------

TOKEN = "0123abcd"


def marked(name: str, stdout: str, rc: int, stderr: str = "", token: str = TOKEN) -> str:
    return (
        f"<<<fabcheck {token} begin {name}>>>\n{stdout}\n<<<fabcheck {token} stderr {name}>>>\n{stderr}\n"
        f"<<<fabcheck {token} end {name} rc={rc}>>>\n"
    )


def test_split_sections_keeps_stdout_exact_with_rc_and_stderr() -> None:
    text = (
        "motd banner line\n"
        + marked("topo", "a\tb\n", 0)
        + marked("mtu:ens1np0", "no newline at end", 0)
        + marked("lsmod", "", 127, "sh: 1: lsmod: not found\n")
        + f"<<<fabcheck {TOKEN} complete>>>\n"
    )
    parsed = split_sections(text, TOKEN)
    assert parsed.complete
    assert parsed.sections == {
        "topo": Section(0, "a\tb\n", ""),
        "mtu:ens1np0": Section(0, "no newline at end", ""),
        "lsmod": Section(127, "", "sh: 1: lsmod: not found\n"),
    }


def test_split_sections_truncated_output() -> None:
    text = marked("topo", "x\n", 0) + f"<<<fabcheck {TOKEN} begin lsmod>>>\nModule  Size  Used by\nmlx5"
    parsed = split_sections(text, TOKEN)
    assert not parsed.complete
    assert parsed.sections["topo"] == Section(0, "x\n", "")
    assert parsed.sections["lsmod"].rc is None
    assert parsed.sections["lsmod"].stdout.startswith("Module")
    cut_mid_marker = marked("topo", "x\n", 0)[:-10]
    assert split_sections(cut_mid_marker, TOKEN).sections["topo"].rc is None


def test_split_sections_ignores_markers_of_another_token() -> None:
    forged = marked("lsmod", "nvidia_peermem 1 0", 0, token="ffff0000")
    text = marked("topo", forged.rstrip("\n"), 0) + f"<<<fabcheck {TOKEN} complete>>>\n"
    parsed = split_sections(text, TOKEN)
    assert set(parsed.sections) == {"topo"}
    assert parsed.sections["topo"].stdout == forged.rstrip("\n")


def test_split_sections_complete_marker_inside_a_section_is_not_completion() -> None:
    text = f"<<<fabcheck {TOKEN} begin topo>>>\nx\n<<<fabcheck {TOKEN} complete>>>\n"
    parsed = split_sections(text, TOKEN)
    assert not parsed.complete and parsed.sections["topo"].rc is None


def test_collection_script_runs_under_posix_sh_and_splits_back() -> None:
    """The real script under the local sh: tools missing here are reported per section, then complete."""
    done = subprocess.run(
        ["/bin/sh", "-c", COLLECT_SCRIPT, "fabcheck-collect", TOKEN, "3", "10"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"PATH": "/nonexistent"},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete
    assert {"topo", "lsmod", "ibv_devinfo", "rdma_link"} <= set(parsed.sections)
    assert all(s.rc not in (None, 0) for s in parsed.sections.values())


def test_collection_script_rejects_bad_arguments() -> None:
    for token, prio, limit in (
        ("not-hex", "3", "10"),
        (TOKEN, "8", "10"),
        (TOKEN, "3;reboot", "10"),
        (TOKEN, "3", "0"),
        (TOKEN, "3", "1;reboot"),
    ):
        done = subprocess.run(
            ["sh", "-c", COLLECT_SCRIPT, "x", token, prio, limit],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 2 and "<<<fabcheck" not in done.stdout
    with pytest.raises(ValueError):
        remote_command(TOKEN, 9)


def test_section_command_names_what_ran() -> None:
    assert section_command("mlnx_qos:ens1np0", 3) == "mlnx_qos -i ens1np0"
    assert section_command("ecn_rp_enable:ens1np0", 5) == "cat /sys/class/net/ens1np0/ecn/roce_rp/enable/5"
    assert (
        section_command("traffic_class:mlx5_0/1", 3) == "cat /sys/class/infiniband/mlx5_0/tc/1/traffic_class"
    )


def test_ssh_argv_from_ansible_host_vars_keeps_host_key_checking() -> None:
    target = SshTarget.from_host_vars(
        "gpu01",
        {
            "ansible_host": "10.0.0.1",
            "ansible_port": 2222,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": "/keys/id",
            "ansible_ssh_common_args": "-o UserKnownHostsFile='/k h/known' -o StrictHostKeyChecking=yes",
        },
    )
    argv = target.argv("true", 10)
    assert argv[:4] == ["ssh", "-n", "-o", "BatchMode=yes"]
    assert argv[-3:] == ["--", "10.0.0.1", "true"]
    assert argv[4:6] == ["-p", "2222"] and argv[6:8] == ["-l", "root"] and argv[8:10] == ["-i", "/keys/id"]
    assert "UserKnownHostsFile=/k h/known" in argv
    assert not any("StrictHostKeyChecking=no" in a for a in argv)
    bare = SshTarget.from_host_vars("gpu02", {}).argv("true", 5)
    assert bare == [
        "ssh", "-n", "-o", "BatchMode=yes", "-o", "ControlPersist=no", "-o", "ConnectTimeout=5",
        "-o", "KexAlgorithms=^curve25519-sha256", "--", "gpu02", "true",
    ]  # fmt: skip


def test_no_ssh_master_outlives_the_round_trip_whatever_the_inventory_persists() -> None:
    # ssh keeps an option's first value: ours comes before the inventory's ControlPersist=60s, so a
    # master this round trip opens closes with it (open connections stay within --concurrency).
    options = "-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=/run/cm/%C"
    argv = SshTarget.from_host_vars("gpu01", {"ansible_ssh_common_args": options}).argv("true", 5)
    persist = [argv[i + 1] for i, word in enumerate(argv) if word == "-o" and "ControlPersist" in argv[i + 1]]
    assert persist == ["ControlPersist=no", "ControlPersist=60s"]
    assert "ControlMaster=auto" in argv  # an open master (Ansible's) is still used


# ---- orchestration and report (no ssh: the collector is injected) ------------------------------


def _entry(name: str, *groups: str) -> HostEntry:
    return HostEntry(name, tuple(groups), INTENT, {"ansible_host": f"10.0.0.{len(name)}"})


def test_plan_judges_gpu_hosts_and_lists_the_rest() -> None:
    inventory = Inventory(
        "inv",
        INTENT,
        (_entry("gpu01", "gpu_hosts"), _entry("sm01", "subnet_managers"), _entry("leaf1", "switches")),
    )
    chosen = plan_gate(inventory, None, ("host",))
    assert [h.name for h in chosen.hosts] == ["gpu01"]
    assert [h.name for h in chosen.not_checked] == ["sm01", "leaf1"]


def test_validate_collects_each_host_with_its_target_and_lossless_priority() -> None:
    seen: list[tuple[str, str, int, TimeLimits]] = []

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        seen.append((target.name, target.address, priority, limits))
        if target.name == "gpu02":
            return HostCollection(target.name, {}, False, "ssh to 10.0.0.5 failed: Connection refused")
        return HostCollection(target.name, healthy_sections(), True, priority=priority)

    limits = TimeLimits(connect_s=3, command_s=7)
    results = validate.validate(
        [_entry("gpu01", "gpu_hosts"), _entry("gpu02", "gpu_hosts")], limits, collector
    )
    assert sorted(seen, key=lambda s: s[0]) == [
        ("gpu01", "10.0.0.5", 3, limits),
        ("gpu02", "10.0.0.5", 3, limits),
    ]
    assert [(r.host, r.verdict) for r in results] == [("gpu01", Status.PASS), ("gpu02", Status.ERROR)]
    report = validate_cli.render(results).splitlines()
    assert report[0] == "ERROR gpu02"  # what could not be checked comes before passes
    assert "PASS  gpu01" in report
    assert "  ERROR host.collection [gpu02]" in report
    assert report[-1] == "ERROR: 2 host(s): 1 pass, 0 fail, 1 could not be checked"
    assert results[1].to_json()["verdict"] == "error"


# ---- one bad host never breaks or fools the run ------------------------------------------------

HUGE = "9" * 5000
HOSTILE_VALUES = {
    "double-minus": "--1\n",
    "superscript": "\u00b2\n",
    "5000-digits": HUGE + "\n",
    "nul": "1\x002\n",
}
HEALTHY_QOS = render_mlnx_qos(qos())
HOSTILE_SECTIONS: dict[str, tuple[str, str]] = {
    # id: (section, hostile text). Sysfs files get each hostile value; tools get them inside real output.
    **{
        f"{kind}-{value_id}": (f"{kind}:ens1np0", value)
        for kind in ("mtu", "ecn_np_enable", "ecn_rp_enable", "cnp_dscp", "cnp_802p_prio")
        for value_id, value in HOSTILE_VALUES.items()
    },
    **{f"traffic_class-{i}": ("traffic_class:mlx5_0/1", v) for i, v in HOSTILE_VALUES.items()},
    "mlnx_qos-huge-pfc": (
        "mlnx_qos:ens1np0",
        HEALTHY_QOS.replace("enabled     0   0   0   1", f"enabled     0   0   0   {HUGE}"),
    ),
    "mlnx_qos-huge-dscp": ("mlnx_qos:ens1np0", HEALTHY_QOS.replace("dscp:24,25,26,", f"dscp:24,25,{HUGE},")),
    "mlnx_qos-nul": ("mlnx_qos:ens1np0", "\x00" * 64),
    "topo-superscript": ("topo", TOPO.replace("GPU0\t X \tNV18\tPIX", "GPU0\t X \tNV\u00b2\tPIX")),
    "topo-nul": ("topo", "\x00" * 64),
    "lsmod-nul": ("lsmod", "\x00Module Size\n"),
    "rdma_link-nul": ("rdma_link", "link mlx5_0/\x00 state ACTIVE\n"),
    "ibv_devinfo-huge-mtu": ("ibv_devinfo", "hca_id:\tmlx5_0\n\tphys_port_cnt:\t\t" + HUGE + "\n"),
}


def _text_sections(overrides: Mapping[str, str]) -> dict[str, Section]:
    return {**healthy_sections(), **{name: ok(text) for name, text in overrides.items()}}


@pytest.mark.parametrize(("section", "text"), HOSTILE_SECTIONS.values(), ids=list(HOSTILE_SECTIONS))
def test_hostile_section_on_one_host_is_an_error_for_that_host_only(section: str, text: str) -> None:
    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        sections = _text_sections({section: text}) if target.name == "gpu02" else healthy_sections()
        return HostCollection(target.name, sections, True, priority=priority)

    hosts = [_entry("gpu01", "gpu_hosts"), _entry("gpu02", "gpu_hosts"), _entry("gpu03", "gpu_hosts")]
    results = {r.host: r for r in validate.validate(hosts, collector=collector)}
    assert results["gpu01"].verdict is Status.PASS and results["gpu03"].verdict is Status.PASS
    bad = results["gpu02"]
    assert bad.verdict is not Status.PASS
    command = section_command(section, 3)
    named = [f for f in bad.findings if f.status is Status.ERROR and f"`{command}`" in f.actual]
    assert named, [f.actual for f in bad.findings if f.status is not Status.PASS]
    assert all(len(f.actual) < 1000 for f in bad.findings)  # a 5000-digit value is never echoed whole


def test_a_parser_crash_is_unreadable_evidence_naming_the_section(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str, source: str) -> object:
        raise RecursionError("parser bug")

    table = tuple(
        dataclasses.replace(probe, parse=broken) if probe.name == "topo" else probe
        for probe in collect.HOST_PROBES
    )
    monkeypatch.setattr(collect, "HOST_PROBES", table)
    findings = run_checks()
    error = only(findings, checks.AFFINITY, "topology")
    assert error.status is Status.ERROR
    assert (
        error.actual == "could not read `nvidia-smi topo -m`: unreadable output (RecursionError: parser bug)"
    )
    assert only(findings, checks.TRUST, "mlx5_0").status is Status.PASS  # the other sections still judged


def test_an_unexpected_error_judging_one_host_spares_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    real_check_host = validate.check_host

    def check_host(
        evidence: checks.HostEvidence, desired: DesiredHost, intent: FabricIntent
    ) -> list[Finding]:
        if evidence.modules == frozenset({"boom"}):
            raise KeyError("boom")
        return real_check_host(evidence, desired, intent)

    monkeypatch.setattr(validate, "check_host", check_host)

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        lsmod = "Module  Size  Used by\nboom 1 0\n" if target.name == "gpu02" else LSMOD
        return HostCollection(target.name, _text_sections({"lsmod": lsmod}), True)

    results = validate.validate(
        [_entry("gpu01", "gpu_hosts"), _entry("gpu02", "gpu_hosts")], collector=collector
    )
    assert [(r.host, r.verdict) for r in results] == [("gpu01", Status.PASS), ("gpu02", Status.ERROR)]
    [finding] = results[1].findings
    assert finding.check == validate.COLLECTION_CHECK and "KeyError: 'boom'" in finding.actual


BAD_CONNECTION_VARS = [
    ({"ansible_port": "abc"}, "ansible_port = 'abc'"),
    ({"ansible_port": -1}, "ansible_port = -1"),
    ({"ansible_port": 70000}, "ansible_port = 70000"),
    ({"ansible_port": "0"}, "ansible_port = '0'"),
    ({"ansible_port": True}, "ansible_port = True"),
    ({"ansible_port": "2\u00b2"}, "ansible_port = '2\u00b2'"),
    ({"ansible_port": "{{ base_port }}"}, "ansible_port = '{{ base_port }}'"),
    ({"ansible_ssh_port": "22x"}, "ansible_ssh_port = '22x'"),
    ({"ansible_host": "10.0.0.1 -oProxyCommand=x"}, "ansible_host = '10.0.0.1 -oProxyCommand=x'"),
    ({"ansible_user": "-oProxyCommand=x"}, "ansible_user = '-oProxyCommand=x'"),
    ({"ansible_ssh_private_key_file": ["a", "b"]}, "ansible_ssh_private_key_file = ['a', 'b']"),
    ({"ansible_ssh_common_args": "-o 'unclosed"}, 'ansible_ssh_common_args = "-o \'unclosed"'),
]


@pytest.mark.parametrize(("variables", "named"), BAD_CONNECTION_VARS, ids=[b[1] for b in BAD_CONNECTION_VARS])
def test_bad_connection_variable_is_an_error_for_that_host_naming_it(variables: dict, named: str) -> None:
    called: list[str] = []

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        called.append(target.name)
        return HostCollection(target.name, healthy_sections(), True)

    bad = HostEntry("gpu02", ("gpu_hosts",), INTENT, {"ansible_host": "10.0.0.2", **variables})
    results = validate.validate([_entry("gpu01", "gpu_hosts"), bad], collector=collector)
    assert called == ["gpu01"]  # the bad host is never contacted with a guessed value
    assert [(r.host, r.verdict) for r in results] == [("gpu01", Status.PASS), ("gpu02", Status.ERROR)]
    [finding] = results[1].findings
    assert (finding.check, finding.subject) == (validate.INVENTORY_CHECK, "gpu02")
    assert finding.actual.startswith(named), finding.actual


def test_good_connection_variables_in_every_form_ansible_allows() -> None:
    target = SshTarget.from_host_vars("gpu01", {"ansible_port": "2222", "ansible_ssh_user": "ops"})
    assert (target.port, target.user, target.address) == (2222, "ops", "gpu01")
    assert SshTarget.from_host_vars("gpu01", {"ansible_ssh_port": 22}).port == 22
    assert (
        SshTarget.from_host_vars("gpu01", {"ansible_port": None, "ansible_ssh_common_args": ""}).port is None
    )


def test_bad_connection_variable_names_its_inventory_file_and_line(tmp_path) -> None:
    from fabcheck.intent.loader import load_inventory

    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    gpu_hosts:\n      hosts:\n        gpu01:\n          ansible_port: abc\n"
    )
    [entry] = load_inventory(tmp_path).hosts
    [result] = validate.validate([entry], collector=lambda *_: pytest.fail("must not connect"))
    assert result.findings[0].actual.startswith(f"{tmp_path / 'hosts.yml'}:6: ansible_port = 'abc': ")


# ---- time limits and the deadline ----------------------------------------------------------------


def test_time_limits_split_connect_host_tool_and_client() -> None:
    limits = TimeLimits(connect_s=10, command_s=30)
    assert (limits.ssh_connect_timeout, limits.host_s, limits.tool_s) == (10, 30, 10)
    assert limits.client_s == 10 + 30 + 5  # the host's own limit fires before the client gives up
    cut = limits.within(12.5)
    assert cut.client_s == 12.5 and cut.host_s == 13 and cut.ssh_connect_timeout == 10
    assert limits.within(100) is limits
    assert TimeLimits(command_s=300, per_tool_s=2).tool_s == 2
    assert TimeLimits(command_s=3, per_tool_s=60).tool_s == 3  # never longer than the host's own limit
    assert TimeLimits(command_s=300, per_tool_s=2).within(10).tool_s == 2
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            TimeLimits(connect_s=bad)
    command = shlex.split(remote_command(TOKEN, 3, limits))
    assert command[:2] == ["sh", "-c"] and command[3:5] == ["fabcheck-collect", "30"]
    assert command[-3:] == [TOKEN, "3", "10"]  # token, lossless priority, seconds per tool


def test_deadline_cuts_round_trips_and_hosts_not_started_are_errors() -> None:
    now = [0.0]
    seen: dict[str, TimeLimits] = {}

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        seen[target.name] = limits
        now[0] += 50  # each round trip uses 50 s of the run
        if target.name == "gpu01":
            return HostCollection(target.name, healthy_sections(), True)
        return HostCollection(
            target.name, {}, False, "command timeout: no complete answer", expired="command"
        )

    hosts = [_entry(f"gpu0{i}", "gpu_hosts") for i in (1, 2, 3)]
    limits = TimeLimits(connect_s=10, command_s=30)
    results = validate.validate(hosts, limits, collector, deadline_s=60, clock=lambda: now[0], workers=1)
    assert [r.verdict for r in results] == [Status.PASS, Status.ERROR, Status.ERROR]
    assert seen["gpu01"] == limits
    assert seen["gpu02"].client_s == 10  # the 10 s the deadline still left, not the 45 s of the limits
    assert "gpu03" not in seen  # nothing left: never contacted
    for result in results[1:]:
        [finding] = result.findings
        assert finding.check == validate.COLLECTION_CHECK
        assert finding.actual.startswith("not collected before the deadline (--deadline 60 s)")
    assert results[1].findings[0].actual.endswith("command timeout: no complete answer")


def test_collection_errors_say_which_limit_expired_in_the_hint() -> None:
    connect = HostCollection(
        "gpu01", {}, False, "connect timeout (ssh ConnectTimeout 10 s)", expired="connect"
    )
    [finding] = validate.judge(connect, INTENT).findings
    assert "--connect-timeout" in finding.hint
    hung = HostCollection(
        "gpu01", healthy_sections(), False, "command timeout on the host", expired="command"
    )
    assert "--timeout" in validate.judge(hung, INTENT).findings[0].hint


def test_host_without_timeout_is_judged_but_never_passes() -> None:
    findings = run_checks({"time_limit": Section(127, "", "timeout: not found")})
    unbounded = only(findings, validate.COLLECTION_CHECK, "gpu01")
    assert unbounded.status is Status.ERROR and "timeout: not found" in unbounded.actual
    assert only(findings, checks.TRUST, "mlx5_0").status is Status.PASS
    assert validate.verdict(findings) is Status.ERROR


# ---- hints print commands a user can paste -------------------------------------------------------

HOSTILE_NIC, HOSTILE_NETDEV = "mlx5_0;rm -rf /", "ens1$(reboot)"


def test_every_hint_command_quotes_hostile_names() -> None:
    """Names from a host (or an inventory) may hold shell syntax: every command a hint prints keeps each
    of them one quoted word."""
    wrong_qos = qos(trust="pcp", pfc_enabled=(), dscp2prio=DEFAULT_DSCP_MAP | {26: 0})
    port_name, zero = f"{HOSTILE_NIC}/1", {"mtu": 1500, "min_time_between_cnps": 0}
    records: dict[tuple[str, str], object] = {
        ("topo", ""): checks.Unreadable("nvidia-smi topo -m", "not needed here"),
        ("rdma_link", ""): (RdmaLink(HOSTILE_NIC, 1, "DOWN", "DISABLED", HOSTILE_NETDEV),),
        ("ibv_devinfo", ""): (device(HOSTILE_NIC, 0, active_mtu=1024, link_layer="InfiniBand"),),
        ("lsmod", ""): frozenset(),
        ("mlnx_qos", HOSTILE_NETDEV): wrong_qos,
        ("roce_rp", HOSTILE_NETDEV): {"rpg_gd": 1, "rpg_min_rate": 1},
        ("traffic_class", port_name): 0,
        ("cma_roce_tos", port_name): 0,
        ("cma_roce_mode", port_name): "IB/RoCE v1",
    }
    for probe in ("ecn_np_enable", "ecn_rp_enable", "cnp_dscp", "cnp_802p_prio", *zero):
        records[(probe, HOSTILE_NETDEV)] = zero.get(probe, 0)
    intent = INTENT.model_copy(update={"rails": {}})  # no rails: the NICs judged are the ones the host shows
    desired = desired_host(intent, "gpu01")
    findings = checks.check_host(checks.HostEvidence(records), desired, intent)
    records[("mlnx_qos", HOSTILE_NETDEV)] = qos(trust="dscp", dscp2prio=DEFAULT_DSCP_MAP | {26: 0})
    shown = checks.HostEvidence(records)
    findings += checks.check_dscp2prio(HOSTILE_NIC, HOSTILE_NETDEV, shown, desired.nic(HOSTILE_NIC))
    commands = [c for f in findings if f.status is Status.FAIL for c in f.hint.split("`")[1::2]]
    assert len(commands) >= 10, commands
    for command in commands:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        assert not {"rm", "-rf", "reboot", "$("} & set(words), command
        for name in (HOSTILE_NIC, HOSTILE_NETDEV):
            if name[:4] in command:
                assert any(name in word for word in words), (name, command)
    assert "mlnx_qos -i 'ens1$(reboot)' --trust dscp" in commands


@pytest.mark.parametrize(
    ("width", "speed", "status"),
    [
        ("4X", "100.0 Gbps", Status.PASS),  # 400G as intended
        ("4X", "25.0 Gbps", Status.FAIL),  # a 400G intent with the port at 100G
        ("1X", "100.0 Gbps", Status.FAIL),  # one lane trained
        ("8X", "100.0 Gbps", Status.FAIL),  # 800G: not what the intent sized the fabric for
        (None, None, Status.ERROR),  # not shown: never a pass
    ],
)
def test_every_rail_port_runs_at_the_intended_speed(
    width: str | None, speed: str | None, status: Status
) -> None:
    devinfo = render_ibv_devinfo(
        [device("mlx5_0", 0, active_width=width, active_speed=speed), device("mlx5_1", 1)]
    )
    findings = run_checks({"ibv_devinfo": ok(devinfo)})
    judged = only(findings, checks.PORT_SPEED, "mlx5_0/1")
    assert judged.status is status, judged
    assert only(findings, checks.PORT_SPEED, "mlx5_1/1").status is Status.PASS
    if status is Status.FAIL:
        assert "ethtool" in judged.hint and "Gb/s" in judged.actual
