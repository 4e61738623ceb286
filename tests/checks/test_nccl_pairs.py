"""nccl.pair_transport: each pair of ranks over its class's transport, in `analyze nccl-log` (the hosts'
domains from --nvlink-domain / -i, each host its own otherwise) and in the nccl stage (GateDesired.nvlink).
Inside an NVLink domain P2P (MNNVL between trays), NVLS or SHM pass and NET fails; across domains RDMA NET
passes, Socket or P2P fail; each failure names both ranks, their hosts and the line. Real logs:
tests/data/real/nccl/INDEX.tsv; the domain logs follow NCCL's P2P/MNNVL format (src/transport/p2p.cc:423 at
NVIDIA/nccl 5067397c2676d5aed50042fc39e5c8ee96eb0027)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import CORPUS

from fabcheck.analyze import Options, analyze
from fabcheck.checks import nccl_ranks as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.nccl_log import check_nccl_log
from fabcheck.desired.nccl import desired_nccl_host, desired_nccl_job
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.gate.nccl_stage import judge
from fabcheck.intent.loader import HostEntry
from fabcheck.intent.model import FabricIntent
from fabcheck.intent.nvlink import NvlinkDomain, NvlinkPlan
from fabcheck.launch import LaunchResult
from fabcheck.parsers.nccl_log import parse_nccl_log
from fabcheck.parsers.topo import parse_topo

TESTS = Path(__file__).parents[1]
REAL = TESTS / "data" / "real" / "nccl"
LAB = TESTS / "data" / "nccl_ranks"
PAIR = "nccl.pair_transport"
RING_24 = "nv-peer-memory-56-2.4-ring-lines-p2p-ipc-and-net-ib.txt"


NVLINK_INTENT = FabricIntent.model_validate({"nvlink": {"gpus": 8}})  # HGX-like: every host's GPUs on NVLink


def domains(**members: tuple[str, ...]) -> NvlinkPlan:
    return NvlinkPlan(tuple(NvlinkDomain(name, hosts, ()) for name, hosts in members.items()))


def analyzed(
    text: str, plan: NvlinkPlan | None = None, intent: FabricIntent | None = None
) -> dict[str, Finding]:
    options = Options(nvlink_domains=plan or NvlinkPlan())
    result = analyze("nccl-log", [text], "log", intent or FabricIntent(), options)
    return {f.check: f for f in result.findings}


def test_2_4_ring_log_passes_with_each_host_its_own_domain() -> None:
    found = analyzed((REAL / RING_24).read_text())
    assert found[PAIR].status is Status.PASS
    assert found[PAIR].actual == (
        "0 pair(s) inside NVLink domains on P2P/SHM, 2 across domains on RDMA NET, "
        "6 inside a host with no NVLink planned"  # the default intent plans no NVLink (nvlink.gpus null)
    )
    assert found["nccl.transport"].status is Status.PASS  # IB, read from the Ring lines
    assert found["nccl.gpudirect_rdma"].status is Status.FAIL  # 'via NET/IB/0' without /GDRDMA


def test_net_between_hosts_of_one_declared_domain_fails_naming_both_ranks() -> None:
    found = analyzed((REAL / RING_24).read_text(), domains(rack1=("master_node", "secondary_node")))
    pair = found[PAIR]
    assert pair.status is Status.FAIL and pair.subject == "2 rank pairs"  # 2<->6 (both ends print it), 3->6
    assert pair.actual.startswith(
        "rank 2 (master_node) <-> rank 6 (secondary_node): NET inside one NVLink domain "
        '(line 4: "master_node:11717:11986 [2] NCCL INFO Ring 00 : 6 -> 2 [receive] via NET/IB/0")'
    )
    assert "IMEX" in pair.hint and "host.nvlink_fabric" in pair.hint


def test_net_between_gpus_of_one_host_fails() -> None:
    # NCCL_P2P_LEVEL=LOC and NCCL_SHM_DISABLE=1 sent every pair of one host through its NICs.
    text = (REAL / "nccl-707-2.7.6-one-host-net-ib-loopback-p2p-level-loc.txt").read_text()
    found = analyzed(text, intent=NVLINK_INTENT)
    assert found["nccl.transport"].status is Status.PASS
    pair = found[PAIR]
    assert pair.status is Status.FAIL and pair.subject == "5 rank pairs"
    assert "rank 0 (10-90-43-152) <-> rank 2 (10-90-43-152): NET inside one NVLink domain" in pair.actual
    # An intent that plans no NVLink (a PCIe server) leaves NCCL its choice inside the host: only TCP fails.
    pcie = analyzed(text)[PAIR]
    assert pcie.status is Status.PASS and "5 inside a host with no NVLink planned" in pcie.actual


def test_one_rank_s_log_of_a_socket_job_still_fails_transport() -> None:
    # The rank's P2P lines do not make the job an NVLink one: its log names no other rank's host.
    found = analyzed((REAL / "hypercomputer-lab12-2.22.3-a3-rank0-socket-excerpt.txt").read_text())
    assert found["nccl.transport"].status is Status.FAIL
    assert found[PAIR].status is Status.SKIP and "names both hosts" in found[PAIR].actual


def test_socket_between_two_pods_fails_across_or_inside_a_domain() -> None:
    # NVIDIA/nccl#1781: two Kubernetes pods of one node, NCCL over NET/Socket between them.
    text = (CORPUS / "nccl-log/nccl-1781-k8s-pods-same-node-net-socket-2.27.5.txt").read_text()
    pods = ("nccl-tests-gdr-2-worker-0", "nccl-tests-gdr-2-worker-1")
    apart = parse_nccl_log(text)
    pair = {f.check: f for f in check_nccl_log(apart, FabricIntent())}[PAIR]
    assert pair.status is Status.FAIL and pair.subject == f"rank 1 ({pods[1]}) <-> rank 0 ({pods[0]})"
    assert pair.actual.startswith(
        f"rank 1 ({pods[1]}) <-> rank 0 ({pods[0]}): TCP across NVLink domains (line 38:"
    )
    together = analyzed(text, domains(node=pods))[PAIR]
    assert together.status is Status.FAIL and ": NET inside one NVLink domain" in together.actual


def mnnvl_log() -> str:
    """The lab's 2 hosts x 8 ranks with NCCL's MNNVL lines where its NET lines were: one NVLink domain. The
    sender alone prints a P2P line, so the NET receive lines go."""
    text = (LAB / "lab-2x8-healthy.txt").read_text()
    text = "".join(line for line in text.splitlines(keepends=True) if "[receive] via NET/" not in line)
    return re.sub(r"(\d+\[\d+\] -> \d+\[\d+\]) \[send\] via NET/IB/\d+/GDRDMA", r"\1 via P2P/MNNVL", text)


def test_an_all_nvlink_communicator_inside_its_domain_is_no_network_proof() -> None:
    text = mnnvl_log()
    found = analyzed(text, domains(nvl_rack1=("gpu01", "gpu02")), NVLINK_INTENT)
    assert found[PAIR].status is Status.PASS
    assert found[PAIR].actual == "16 pair(s) inside NVLink domains on P2P/SHM, 0 across domains on RDMA NET"
    for check in ("nccl.transport", "nccl.gpudirect_rdma"):
        assert found[check].status is Status.SKIP, check
        assert "inside NVLink domain nvl_rack1" in found[check].actual
    # Without the domain the same trays are two domains: P2P between them is no network path.
    alone = analyzed(text, intent=NVLINK_INTENT)
    assert alone[PAIR].status is Status.FAIL
    assert "rank 7 (gpu01) <-> rank 8 (gpu02): P2P across NVLink domains" in alone[PAIR].actual
    assert "--nvlink-domain" in alone[PAIR].hint
    assert alone["nccl.transport"].status is Status.PASS  # two domains: its processes chose IB


# ---- the nccl stage: each pair's class from GateDesired.nvlink
HOSTS = ("gpu01", "gpu02")


@pytest.fixture(scope="module")
def lab_intent() -> FabricIntent:
    document = yaml.safe_load((TESTS.parent / "inventory/lab/group_vars/all/fabric.yml").read_text())
    return FabricIntent.model_validate(document["lab_intents"]["roce"])


def one_domain() -> dict[str, DesiredNvlinkHost]:
    return {
        host: DesiredNvlinkHost(host, "nvl_rack1", HOSTS, HOSTS, 8, 18, 26.562, True, False, 0.6)
        for host in HOSTS
    }


def stage(
    text: str, intent: FabricIntent, nvlink: dict[str, DesiredNvlinkHost]
) -> dict[str, dict[str, Finding]]:
    result = LaunchResult(("mpirun",), 0, {0: tuple(text.splitlines())}, text, "", 4.0)
    topo = parse_topo((LAB / "lab-topo-gpu01.txt").read_text())
    entries = [HostEntry(name, ("gpu_hosts",), intent, {}) for name in HOSTS]
    job = desired_nccl_job([(h, intent) for h in HOSTS])
    desired = {h: desired_nccl_host(intent, h) for h in HOSTS}
    found = judge(entries, result, 8, job, {h: topo for h in HOSTS}, "mpirun", desired, nvlink)
    return {host: {f.check: f for f in findings} for host, findings in found.items()}


def test_stage_net_between_trays_of_one_domain_fails_on_both(lab_intent: FabricIntent) -> None:
    found = stage((LAB / "lab-2x8-healthy.txt").read_text(), lab_intent, one_domain())
    for host, pairs in (("gpu01", ((7, 8), (0, 15))), ("gpu02", ((8, 7), (15, 0)))):
        pair = found[host][checks.PAIR_TRANSPORT]
        assert pair.status is Status.FAIL and pair.subject == f"{host}: 2 rank pairs", host
        for mine, peer in pairs:
            other = "gpu02" if host == "gpu01" else "gpu01"
            assert (
                f"rank {mine} ({host}) <-> rank {peer} ({other}): NET inside one NVLink domain" in pair.actual
            )
        # The lab's comm lines say MNNVL 0: NCCL never enabled multi-node NVLink between the trays.
        assert "; NCCL did not enable MNNVL (line " in pair.actual and 'MNNVL 0")' in pair.actual


def test_stage_mnnvl_inside_the_domain_passes_and_needs_no_nic(lab_intent: FabricIntent) -> None:
    found = stage(mnnvl_log(), lab_intent, one_domain())
    for host in HOSTS:
        assert found[host][checks.PAIR_TRANSPORT].status is Status.PASS
        assert found[host][checks.GDR].status is Status.SKIP
        assert found[host][checks.TRANSPORT].status is Status.SKIP
        assert found[host][checks.RAIL_HCA].status is Status.SKIP
    # Each host its own domain (no GateDesired.nvlink entry): MNNVL between them is not the network path.
    apart = stage(mnnvl_log(), lab_intent, {})
    assert apart["gpu01"][checks.PAIR_TRANSPORT].status is Status.FAIL
    assert "P2P across NVLink domains" in apart["gpu01"][checks.PAIR_TRANSPORT].actual
