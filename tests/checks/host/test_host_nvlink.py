"""host.nvlink, host.imex and host.fabric_manager (fabcheck/checks/host/nvlink.py) judged on records built
as the parsers return them (fabcheck.parsers.nvlink_records), against a DesiredNvlinkHost built as the
plan derives it; and how the host stage skips, errs and attaches each host's NVLink domain.
host.nvlink_fabric: tests/checks/test_nvlink_fabric_checks.py and test_nvlink_real_checks.py."""

from __future__ import annotations

import dataclasses

from fabcheck.checks import host as checks
from fabcheck.checks.host import nvlink as nv
from fabcheck.checks.model import Status
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import desired_host
from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.gate.host_stage import with_nvlink
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nvlink_records import ImexNode, ImexStatus, NvlinkGpu, NvlinkLinkState, NvlinkStatus

GB200 = 53.125  # per link, NVIDIA/k8s-test-infra issue 371
H100 = 26.562  # per link, bottlerocket-os/bottlerocket PR 4418


def tray(host: str = "gpu01", **changes: object) -> DesiredNvlinkHost:
    """A tray of the two-tray domain nvl_rack1, as desired_nvlink_host derives it."""
    wanted = DesiredNvlinkHost(
        host=host,
        domain="nvl_rack1",
        members=("gpu01", "gpu02"),
        addresses=("10.0.0.1", "10.0.0.2"),
        gpus=4,
        links_per_gpu=18,
        link_gbytes=GB200,
        imex=True,
        fabric_manager=False,
        busbw_min_fraction=0.6,
    )
    return dataclasses.replace(wanted, **changes)  # type: ignore[arg-type]


def gpu(index: int, rate: float | None = GB200, links: int = 18, **odd: float | None) -> NvlinkGpu:
    """One GPU of `nvidia-smi nvlink -s`; odd: "link<n>" -> its rate (None: <inactive>)."""
    states = tuple(NvlinkLinkState(n, odd.get(f"link{n}", rate)) for n in range(links))
    return NvlinkGpu(index, "NVIDIA GB200", f"GPU-{index:08x}", states)


def status(*gpus: NvlinkGpu) -> NvlinkStatus:
    return NvlinkStatus(gpus or tuple(gpu(i) for i in range(4)))


def by_subject(findings: list) -> dict:  # type: ignore[type-arg]
    return {f.subject: f for f in findings}


# ---- host.nvlink -----------------------------------------------------------------------------------


def test_every_gpu_with_18_links_at_the_rate_passes_with_its_bandwidth() -> None:
    findings = nv.check_nvlink(status(), tray())
    assert [f.subject for f in findings] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert {f.status for f in findings} == {Status.PASS}
    assert findings[0].actual == "18 NVLinks active at 53.125 GB/s"
    assert findings[0].measure is not None and findings[0].measure.value == 956.25
    assert findings[0].measure.expected == 18 * GB200


def test_an_inactive_link_fails_that_gpu_naming_the_link() -> None:
    shown = status(gpu(0), gpu(1), gpu(2, link3=None), gpu(3))
    found = by_subject(nv.check_nvlink(shown, tray()))
    assert found["GPU2"].status is Status.FAIL
    assert found["GPU2"].actual == "17 of 18 NVLinks active (inactive: Link 3)"
    assert "nvidia-smi nvlink -e -i 2" in found["GPU2"].hint
    assert {found[g].status for g in ("GPU0", "GPU1", "GPU3")} == {Status.PASS}


def test_a_link_off_the_rate_fails_beyond_half_a_percent_only() -> None:
    shown = status(gpu(0, link5=GB200 * 1.004), gpu(1, link7=26.562), gpu(2), gpu(3))
    found = by_subject(nv.check_nvlink(shown, tray()))
    assert found["GPU0"].status is Status.PASS  # 0.4 % off: nvidia-smi's rounding, not a slow link
    assert found["GPU1"].status is Status.FAIL
    assert found["GPU1"].actual == "Link 7 at 26.562 GB/s (not 53.125 GB/s)"


def test_without_a_rate_every_link_of_the_host_must_show_one_rate() -> None:
    wanted = tray(link_gbytes=None, gpus=8)
    shown = NvlinkStatus((*(gpu(i, H100) for i in range(7)), gpu(7, H100, link0=13.281)))
    found = by_subject(nv.check_nvlink(shown, wanted))
    assert found["GPU0"].status is Status.PASS
    assert found["GPU0"].actual == "18 NVLinks active at 26.562 GB/s"
    assert found["GPU0"].measure is not None and found["GPU0"].measure.expected is None
    assert found["GPU7"].status is Status.FAIL
    assert found["GPU7"].actual == "Link 0 at 13.281 GB/s (not 26.562 GB/s)"


def test_a_missing_gpu_fails_the_host_count_naming_the_gpus_shown() -> None:
    found = by_subject(nv.check_nvlink(status(gpu(0), gpu(1), gpu(3)), tray()))
    assert found["GPUs"].status is Status.FAIL
    assert found["GPUs"].actual == "3 GPU(s) in `nvidia-smi nvlink -s`: GPU0, GPU1, GPU3"
    assert found["GPUs"].expected == "4 NVLink GPUs (nvlink.gpus)"


def test_a_gpu_that_prints_a_note_instead_of_links_fails() -> None:
    noted = NvlinkGpu(1, "NVIDIA H100", None, (), note="NVML: Unable to retrieve NVLink information")
    found = by_subject(nv.check_nvlink(status(gpu(0), noted, gpu(2), gpu(3)), tray()))
    assert found["GPU1"].status is Status.FAIL
    assert "no link listed" in found["GPU1"].actual


def test_fewer_links_than_the_intent_fails_even_when_none_is_inactive() -> None:
    found = by_subject(nv.check_nvlink(status(*(gpu(i, links=12) for i in range(4))), tray()))
    assert found["GPU0"].actual == "12 of 18 NVLinks active"


def test_an_unreadable_nvlink_status_is_an_error_naming_the_command() -> None:
    missing = Unreadable("nvidia-smi nvlink -s", "exit 9: NVIDIA-SMI has failed")
    (finding,) = nv.check_nvlink(missing, tray())
    assert finding.status is Status.ERROR
    assert "nvidia-smi nvlink -s" in finding.actual


# ---- host.imex -------------------------------------------------------------------------------------


def imex(*states: str, cells: dict[tuple[int, int], str] | None = None, domain: str = "UP") -> ImexStatus:
    nodes = tuple(ImexNode(i, f"10.0.0.{i + 1}", s) for i, s in enumerate(states or ("READY", "READY")))
    grid = {(a, b): "C" for a in range(len(nodes)) for b in range(len(nodes))}
    grid.update(cells or {})
    return ImexStatus(nodes, grid, domain)


def test_imex_active_with_the_domains_nodes_all_connected_passes() -> None:
    findings = nv.check_imex("active", ("10.0.0.2", "10.0.0.1"), imex(), tray())
    assert {f.status for f in findings} == {Status.PASS}
    assert [f.subject for f in findings] == [
        "nvidia-imex",
        "nodes_config.cfg",
        "IMEX domain",
        "IMEX node gpu01",
        "IMEX node gpu02",
    ]


def test_imex_inactive_fails_and_its_unanswered_status_is_a_named_skip() -> None:
    gone = Unreadable("nvidia-imex-ctl -N", "exit 1: connection refused")
    found = by_subject(nv.check_imex("inactive", ("10.0.0.1", "10.0.0.2"), gone, tray()))
    assert found["nvidia-imex"].status is Status.FAIL
    assert "systemctl enable --now nvidia-imex" in found["nvidia-imex"].hint
    assert found["IMEX domain"].status is Status.SKIP


def test_imex_status_unreadable_while_active_is_an_error() -> None:
    gone = Unreadable("nvidia-imex-ctl -N", "exit 1: connection refused")
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2"), gone, tray()))
    assert found["IMEX domain"].status is Status.ERROR


def test_imex_ctl_not_installed_is_an_error_not_a_pass() -> None:
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2"), None, tray()))
    assert found["IMEX domain"].status is Status.ERROR
    assert found["IMEX domain"].actual == "nvidia-imex-ctl is not installed"


def test_a_node_list_other_than_the_domain_names_missing_and_extra() -> None:
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.9.9"), imex(), tray()))
    assert found["nodes_config.cfg"].status is Status.FAIL
    assert found["nodes_config.cfg"].actual == "missing 10.0.0.2 (gpu02); extra 10.0.9.9"
    assert "systemctl restart nvidia-imex" in found["nodes_config.cfg"].hint


def test_an_address_listed_twice_fails() -> None:
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2", "10.0.0.1"), imex(), tray()))
    assert found["nodes_config.cfg"].actual == "listed twice 10.0.0.1"


def test_an_unreadable_node_list_is_an_error() -> None:
    absent = Unreadable("cat /etc/nvidia-imex/nodes_config.cfg", "exit 1: No such file or directory")
    found = by_subject(nv.check_imex("active", absent, imex(), tray()))
    assert found["nodes_config.cfg"].status is Status.ERROR


def test_a_peer_down_fails_naming_that_peer_and_the_domain_state() -> None:
    # gpu02's daemon stopped: this tray's -N shows it DOWN and never connected, the domain DEGRADED.
    down = imex("READY", "DOWN", cells={(0, 1): "N", (1, 0): "N", (1, 1): "N"}, domain="DEGRADED")
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2"), down, tray()))
    assert found["IMEX node gpu02"].status is Status.FAIL
    assert found["IMEX node gpu02"].actual.startswith("state DOWN; #0->#1 never connected")
    assert found["IMEX node gpu01"].status is Status.PASS  # its cells with gpu02 are gpu02's to answer for
    assert found["IMEX domain"].actual == "Domain State DEGRADED"


def test_a_domain_with_too_few_nodes_fails_its_count() -> None:
    one = ImexStatus((ImexNode(0, "10.0.0.1", "READY"),), {(0, 0): "C"}, "UP")
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2"), one, tray()))
    assert found["IMEX domain"].status is Status.FAIL
    assert found["IMEX domain"].actual == "1 node(s), not 2"


def test_a_node_outside_the_domain_fails_under_its_address() -> None:
    stray = ImexStatus(
        (ImexNode(0, "10.0.0.1", "READY"), ImexNode(1, "10.0.7.7", "READY")),
        {(a, b): "C" for a in range(2) for b in range(2)},
        "UP",
    )
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2"), stray, tray()))
    assert found["IMEX node 10.0.7.7"].status is Status.FAIL
    assert "no member of nvl_rack1" in found["IMEX node 10.0.7.7"].actual


# ---- host.fabric_manager ---------------------------------------------------------------------------


def test_fabric_manager_active_passes_and_anything_else_fails() -> None:
    (ok,) = nv.check_fabric_manager("active")
    assert ok.status is Status.PASS and ok.subject == "nvidia-fabricmanager"
    (bad,) = nv.check_fabric_manager("failed")
    assert bad.status is Status.FAIL and bad.actual == "failed"
    assert "systemctl enable --now nvidia-fabricmanager" in bad.hint
    assert "version must equal the driver" in bad.hint
    (unread,) = nv.check_fabric_manager(
        Unreadable("systemctl is-active nvidia-fabricmanager", "not collected")
    )
    assert unread.status is Status.ERROR


# ---- in the host stage -----------------------------------------------------------------------------


def test_the_host_stage_skips_by_name_what_the_intent_does_not_ask() -> None:

    intent = FabricIntent()
    unplanned = desired_host(intent, "gpu01")
    lone = dataclasses.replace(unplanned, nvlink=tray(gpus=None, imex=False, members=("gpu01",)))
    for desired, reason in ((unplanned, "no NVLink plan"), (lone, "")):
        findings = [
            f
            for f in checks.check_host(checks.HostEvidence(), desired, intent)
            if f.check.startswith(("host.nvlink", "host.imex", "host.fabric_manager"))
        ]
        assert [(f.check, f.status) for f in findings] == [
            (nv.NVLINK, Status.SKIP),
            (nv.IMEX, Status.SKIP),
            (nv.FABRIC_MANAGER, Status.SKIP),
        ]
        assert all(reason in f.actual and f.actual for f in findings)
    fleet = checks.check_fleet({"gpu01": checks.HostEvidence()}, {"gpu01": lone}, {"gpu01": intent})
    (fabric,) = [f for f in fleet["gpu01"] if f.check == nv.NVLINK_FABRIC]
    assert fabric.status is Status.SKIP and "nvlink.gpus is null" in fabric.actual


def test_the_host_stage_errors_on_what_it_could_not_read() -> None:

    intent = FabricIntent()
    desired = dataclasses.replace(desired_host(intent, "gpu01"), nvlink=tray(fabric_manager=True))
    findings = checks.check_host(checks.HostEvidence(), desired, intent)
    judged = {(f.check, f.subject): f for f in findings if f.check in (nv.NVLINK, nv.IMEX, nv.FABRIC_MANAGER)}
    assert {f.status for f in judged.values()} == {Status.ERROR, Status.SKIP}
    assert judged[(nv.NVLINK, "GPUs")].status is Status.ERROR
    assert "nvidia-smi nvlink -s" in judged[(nv.NVLINK, "GPUs")].actual
    assert judged[(nv.IMEX, "nodes_config.cfg")].status is Status.ERROR
    assert judged[(nv.FABRIC_MANAGER, "nvidia-fabricmanager")].status is Status.ERROR
    fleet = checks.check_fleet({"gpu01": checks.HostEvidence()}, {"gpu01": desired}, {"gpu01": intent})
    (fabric,) = [f for f in fleet["gpu01"] if f.check == nv.NVLINK_FABRIC]
    assert fabric.status is Status.ERROR and "nvidia-smi -q" in fabric.actual


def test_the_host_stage_attaches_each_hosts_planned_nvlink_domain() -> None:

    hosts = {h: desired_host(FabricIntent(), h) for h in ("gpu01", "gpu02", "cpu01")}
    attached = with_nvlink(hosts, {"gpu01": tray("gpu01"), "gpu02": tray("gpu02")})
    assert attached["gpu02"].nvlink == tray("gpu02")
    assert attached["cpu01"].nvlink is None


def test_two_ready_nodes_that_cannot_connect_both_fail_naming_the_cell() -> None:
    # E.g. a node map mismatch (one daemon restarted with another list): both READY, `!M!` both ways.
    mismatch = imex(cells={(0, 1): "!M!", (1, 0): "!M!"})
    found = by_subject(nv.check_imex("active", ("10.0.0.1", "10.0.0.2"), mismatch, tray()))
    assert found["IMEX node gpu01"].actual == "#0->#1 node map mismatch; #1->#0 node map mismatch"
    assert found["IMEX node gpu02"].status is Status.FAIL
