"""Hand-made runs for the reporter tests: a fabric of four GPU hosts, one failing, one unreachable."""

from __future__ import annotations

from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.checks.topo import CHECK as AFFINITY
from fabcheck.parsers.topo import parse_topo
from fabcheck.report.model import Affinity, LinkDetail, LinkEnds, LinkSetting, NodeKind, Run, Subject

# GPU1's rail NIC mlx5_1 sits across the SMP interconnect (SYS): the affinity check fails for GPU1 only.
TOPO_TEXT = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tNIC2\tNIC3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\tNV18\tNV18\tPIX\tSYS\tSYS\tSYS\t0-55\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tNV18\tNV18\tSYS\tSYS\tPIX\tSYS\t0-55\t0\t\tN/A\n"
    "GPU2\tNV18\tNV18\t X \tNV18\tSYS\tSYS\tPIX\tSYS\t56-111\t1\t\tN/A\n"
    "GPU3\tNV18\tNV18\tNV18\t X \tSYS\tSYS\tSYS\tPIX\t56-111\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\n"
    "NIC1\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\n"
    "NIC2\tSYS\tPIX\tPIX\tSYS\tSYS\tSYS\t X \tSYS\n"
    "NIC3\tSYS\tSYS\tSYS\tPIX\tSYS\tSYS\tSYS\t X \n"
    "\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n  NIC2: mlx5_2\n  NIC3: mlx5_3\n"
)
TOPO = parse_topo(TOPO_TEXT, "topo.txt")
RAILS = {0: "mlx5_0", 1: "mlx5_1", 2: "mlx5_2", 3: "mlx5_3"}


def affinity_findings(failing_gpu: int | None) -> list[Finding]:
    out = []
    for index, nic in RAILS.items():
        gpu = f"GPU{index}"
        link = TOPO.link(gpu, nic)
        expected = f"{gpu} -> {nic} at PXB or better"
        if index == failing_gpu:
            out.append(failed(AFFINITY, gpu, expected, f"{gpu} -> {nic} {link}", "move the NIC"))
        else:
            out.append(passed(AFFINITY, gpu, expected, f"{gpu} -> {nic} PIX"))
    return out


TRUST_FAIL = failed(
    "host.trust",
    "mlx5_0",
    "trust dscp",
    "trust pcp",
    "role roce_host sets it fleet-wide; on this host: `mlnx_qos -i ens1np0 --trust dscp`",
)
UNREACHABLE = errored(
    "host.collection", "gpu04", "one ssh round trip", "Connection refused", "check that the host answers"
)
LINK_PFC_FAIL = failed(
    "link.pfc",
    "gpu02:mlx5_0 <-> leaf01:swp2",
    "PFC on priority 3 at both ends",
    "NIC 3, port 4",
    "role switch_qos fixes leaf01 (--tags pfc)",
)
LINK_MTU_PASS = passed("link.mtu", "gpu01:mlx5_0 <-> leaf01:swp1", "9000 at both ends", "9000 / 9216")


def fabric_run() -> Run:
    """gpu01 passes, gpu02 fails trust and GPU1 affinity, gpu03 only skips, gpu04 is unreachable."""
    gpu01 = Subject(
        "gpu01",
        NodeKind.HOST,
        (*affinity_findings(None), passed("host.pfc", "mlx5_0", "pfc 3", "pfc 3"), LINK_MTU_PASS),
        affinity=Affinity(TOPO, RAILS),
    )
    gpu02 = Subject(
        "gpu02",
        NodeKind.HOST,
        (passed("host.pfc", "mlx5_0", "pfc 3", "pfc 3"), TRUST_FAIL, *affinity_findings(1), LINK_PFC_FAIL),
        affinity=Affinity(TOPO, RAILS),
    )
    gpu03 = Subject("gpu03", NodeKind.HOST, (skipped("host.ecn_enable", "mlx5_0", "IB intent"),))
    gpu04 = Subject("gpu04", NodeKind.HOST, (UNREACHABLE,))
    links = (
        LinkDetail(
            LinkEnds("gpu01", "mlx5_0", "leaf01", "swp1"),
            (LinkSetting("pfc", "3", "3"), LinkSetting("mtu", "9000", "9216")),
        ),
        LinkDetail(
            LinkEnds("gpu02", "mlx5_0", "leaf01", "swp2"),
            (LinkSetting("pfc", "3", "4"), LinkSetting("mtu", "9000", "9216")),
        ),
        LinkDetail(LinkEnds("gpu03", "mlx5_0", "leaf01", "swp3"), (LinkSetting("pfc", "3", "3"),)),
    )
    return Run("validate", (gpu01, gpu02, gpu03, gpu04), links, notes=("not checked: sm01",))


def fleet(hosts: int, failing: set[int]) -> Run:
    """`hosts` hosts of 8 NICs, 4 hosts a leaf, every NIC and link passing PFC except NIC mlx5_3 of
    the hosts in `failing` (indexes); no switch was judged."""
    subjects = []
    for index in range(hosts):
        name = f"gpu{index:03d}"
        findings: list[Finding] = []
        for nic in range(8):
            subject = f"mlx5_{nic}"
            bad = index in failing and nic == 3
            if bad:
                findings.append(failed("host.pfc", subject, "3", "none", "role roce_host"))
            else:
                findings.append(passed("host.pfc", subject, "3", "3"))
            link = f"{name}:{subject} <-> leaf{index // 4:02d}:swp{index % 4 * 8 + nic + 1}"
            findings.append(passed("link.pfc", link, "3", "3"))
        subjects.append(Subject(name, NodeKind.HOST, tuple(findings)))
    return Run("validate", tuple(subjects))
