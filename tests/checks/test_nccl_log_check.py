"""NCCL log check: RDMA path on every rank, link layer, GPUDirect, transport errors explained."""

from __future__ import annotations

from conftest import CORPUS

from fabcheck.checks.model import Status, verdict
from fabcheck.checks.nccl_log import check_nccl_log
from fabcheck.intent.model import FabricIntent, Nccl
from fabcheck.parsers.nccl_log import parse_nccl_log


def findings_for(name: str, intent: FabricIntent | None = None) -> dict:
    log = parse_nccl_log((CORPUS / "nccl-log" / name).read_text().splitlines(keepends=True), name)
    return {f.check: f for f in check_nccl_log(log, intent or FabricIntent())}


def test_roce_plugin_with_gdr_passes() -> None:
    findings = findings_for("nccl-tests-321-h20-vm-roce-tencent-plugin.txt")
    assert {c: f.status for c, f in findings.items()} == {
        "nccl.transport": Status.PASS,
        "nccl.link_layer": Status.PASS,
        "nccl.gpudirect_rdma": Status.PASS,
        "nccl.init": Status.PASS,
        "nccl.errors": Status.PASS,
        "nccl.pair_transport": Status.PASS,
    }


def test_socket_fallback_fails_transport() -> None:
    finding = findings_for("h800-1node-no-ib-device-socket-fallback-excerpt.txt")["nccl.transport"]
    assert finding.status is Status.FAIL and "Socket" in finding.actual
    assert "gpu_rdma" in finding.hint


def test_ib_hcas_in_a_roce_fabric_fail_link_layer() -> None:
    finding = findings_for("mle-ib-8hca-plus-bond-roce-one-line.txt")["nccl.link_layer"]
    assert finding.status is Status.FAIL
    assert finding.actual.endswith("on IB/RoCE")
    ib = FabricIntent(kind="ib", roce_tos=104)
    assert findings_for("nccl-tests-293-ib-hdr-ibext-no-gdr-default-truncated.txt", ib)[
        "nccl.link_layer"
    ].status is (Status.PASS)


def test_gdr_off_fails_and_unknown_gdr_is_an_error_not_a_pass() -> None:
    assert findings_for("nccl-tests-293-ib-hdr-ibext-no-gdr-default-truncated.txt")[
        "nccl.gpudirect_rdma"
    ].status is (Status.FAIL)
    unknown = findings_for("nccl-707-2.7.6-a100-1node-9hca-ib-roce-init-excerpt.txt")["nccl.gpudirect_rdma"]
    assert unknown.status is Status.ERROR
    relaxed = FabricIntent(nccl=Nccl(gdr_required=False))
    assert (
        findings_for("nccl-707-2.7.6-a100-1node-9hca-ib-roce-init-excerpt.txt", relaxed)[
            "nccl.gpudirect_rdma"
        ].status
        is Status.SKIP
    )


def test_retry_exceeded_errors_are_explained() -> None:
    log_name = "nccl-1405-roce-ipv6-gid-status12-vendor129-plugin.txt"
    log = parse_nccl_log((CORPUS / "nccl-log" / log_name).read_text(), log_name)
    errors = [f for f in check_nccl_log(log, FabricIntent()) if f.check == "nccl.errors"]
    assert errors and all(f.status is Status.FAIL for f in errors)
    assert any("IBV_WC_RETRY_EXC_ERR (12)" in f.hint for f in errors)


def test_one_host_on_sockets_fails_the_whole_job() -> None:
    lines = []
    for host, network in (("nodeA", "IB"), ("nodeB", "Socket")):
        lines.append(f"{host}:1:1 [0] NCCL INFO Using network {network}\n")
        suffix = "IB/0/GDRDMA" if network == "IB" else "Socket/0"
        lines.append(f"{host}:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/{suffix}\n")
    log = parse_nccl_log(lines, "mixed")
    findings = check_nccl_log(log, FabricIntent())
    assert verdict(findings) is Status.FAIL
    transport = next(f for f in findings if f.check == "nccl.transport")
    assert transport.subject == "nodeB" and "Socket on nodeB" in transport.actual


def test_rank_with_a_host_staged_rail_fails_gdr() -> None:
    # NET/IB/1 receives without GDRDMA (far-socket NIC) while NET/IB/0 uses it: not GDR on every channel.
    finding = findings_for("nccl-2345-rail-mixed-gdrdma-and-nongdr-channels.txt")["nccl.gpudirect_rdma"]
    assert finding.status is Status.FAIL
    assert finding.subject == "kg35-nvl03[0]"
