"""Per-rank NCCL proof on recorded logs: the lab's mock nccl-tests through real mpirun (2 hosts x 8 ranks,
healthy and no-rdma on gpu02) and public corpus logs (plugin network, bonds, TC 160, mixed GDR, Socket)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import CORPUS

from fabcheck.checks import nccl_ranks as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.nccl import DesiredNcclJob, desired_nccl_host, desired_nccl_job
from fabcheck.errors import DeadlinePassed, FabcheckError
from fabcheck.gate import fabric
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.nccl_stage import NcclStage, hidden_subsystems, judge, lowered_debug
from fabcheck.gate.stages import StageContext, StageOutcome
from fabcheck.intent.loader import HostEntry, Inventory, load_inventory
from fabcheck.intent.model import FabricIntent
from fabcheck.launch import LauncherConfig, LaunchRequest, LaunchResult
from fabcheck.parsers.nccl_ranks import parse_nccl_ranks
from fabcheck.parsers.topo import TopoMatrix, parse_topo

DATA = Path(__file__).parents[1] / "data" / "nccl_ranks"
REPO = Path(__file__).parents[2]
HOSTS = ("gpu01", "gpu02")


@pytest.fixture(scope="module")
def lab_intent() -> FabricIntent:
    document = yaml.safe_load((REPO / "inventory/lab/group_vars/all/fabric.yml").read_text())
    return FabricIntent.model_validate(document["lab_intents"]["roce"])


@pytest.fixture(scope="module")
def topo() -> TopoMatrix:
    return parse_topo((DATA / "lab-topo-gpu01.txt").read_text())


def lab_log(name: str) -> str:
    return (DATA / f"lab-2x8-{name}.txt").read_text()


def entries(intent: FabricIntent) -> list[HostEntry]:
    return [HostEntry(name, ("gpu_hosts",), intent, {}) for name in HOSTS]


def judged(text: str, intent: FabricIntent, topo: TopoMatrix, rc: int | None = 0) -> dict[str, list[Finding]]:
    result = LaunchResult(("mpirun",), rc, {0: tuple(text.splitlines())}, text, "", 4.0)
    job = desired_nccl_job([(h, intent) for h in HOSTS])
    desired = {h: desired_nccl_host(intent, h) for h in HOSTS}  # the gate's plan derives these
    return judge(entries(intent), result, 8, job, {h: topo for h in HOSTS}, "mpirun", desired)


def by_check(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


def test_parser_keeps_every_rank_apart_with_its_lines() -> None:
    ranks = parse_nccl_ranks(lab_log("healthy"))
    assert [r.rank for r in ranks] == list(range(16))
    rank7 = ranks[7]
    assert (rank7.host, rank7.gpu, rank7.nranks, rank7.init_complete) == ("gpu01", 7, 16, True)
    assert [d.name for d in rank7.devices] == [f"mlx5_{i}" for i in range(8)]
    assert rank7.env["NCCL_IB_GID_INDEX"][0] == "3" and rank7.env["NCCL_IB_TC"][0] == "106"
    assert [(c.direction, c.peer, c.device, c.gdr) for c in rank7.net_channels] == [("send", 8, 7, True)] * 2
    assert rank7.net_channels[0].quote.text.endswith("[send] via NET/IB/7/GDRDMA")


def test_parser_reads_plugin_networks_shared_facts_and_nvml_devices() -> None:
    ranks = parse_nccl_ranks((CORPUS / "nccl-log/nccl-tests-321-h20-vm-roce-tencent-plugin.txt").read_text())
    assert [(r.host, r.rank, r.cuda_dev, r.nvml_dev) for r in ranks] == [
        ("vm-host40", 0, 0, 1),
        ("vm-host40", 1, 1, 0),
        ("vm-host38", 2, 0, 1),
        ("vm-host38", 3, 1, 0),
    ]
    assert all(r.network == "NCCL RDMA Plugin v6" for r in ranks)
    assert [d.name for d in ranks[0].devices] == ["mlx5_bond_6", "mlx5_bond_7"]
    assert ranks[3].env["NCCL_IB_TC"][0] == "160"
    assert ranks[1].net_channels and all(c.gdr for r in ranks for c in r.net_channels)


def test_healthy_lab_passes_every_check_on_both_hosts(lab_intent: FabricIntent, topo: TopoMatrix) -> None:
    findings = judged(lab_log("healthy"), lab_intent, topo)
    for host in HOSTS:
        statuses = {f.check: f.status for f in findings[host]}
        assert statuses == {
            check: Status.PASS
            for check in (checks.BUSBW, "nccl.launch", *checks.RANK_CHECKS, checks.PAIR_TRANSPORT)
        }
    assert by_check(findings["gpu01"])[checks.RANKS].actual == "ranks 0-7 initialised"


def test_no_rdma_fails_transport_naming_socket_on_that_node_only(
    lab_intent: FabricIntent, topo: TopoMatrix
) -> None:
    findings = judged(lab_log("no-rdma-gpu02"), lab_intent, topo)
    bad = by_check(findings["gpu02"])[checks.TRANSPORT]
    assert bad.status is Status.FAIL and bad.subject == "gpu02: 8 of 8 ranks"
    assert "network Socket" in bad.actual and "NCCL INFO Using network Socket" in bad.actual
    assert by_check(findings["gpu01"])[checks.TRANSPORT].status is Status.PASS
    # Socket channels are the transport's failure: GDR and rail say so instead of failing twice.
    assert by_check(findings["gpu02"])[checks.GDR].status is Status.SKIP
    assert by_check(findings["gpu02"])[checks.HCA_LIST].status is Status.SKIP
    # One node on sockets drags the whole job's bus bandwidth under the floor.
    assert by_check(findings["gpu01"])[checks.BUSBW].status is Status.FAIL


def test_a_rank_on_a_far_nic_fails_rail_affinity_quoting_the_channel(
    lab_intent: FabricIntent, topo: TopoMatrix
) -> None:
    far = lab_log("healthy").replace(
        "7[7] -> 8[0] [send] via NET/IB/7/GDRDMA", "7[7] -> 8[0] [send] via NET/IB/2/GDRDMA"
    )
    finding = by_check(judged(far, lab_intent, topo)["gpu01"])[checks.RAIL_HCA]
    assert finding.status is Status.FAIL and finding.subject.startswith("rank 7 (GPU7, gpu01")
    assert "uses mlx5_2, affine NIC mlx5_7" in finding.actual and "via NET/IB/2/GDRDMA" in finding.actual


def test_a_channel_without_gdrdma_fails_gdr(lab_intent: FabricIntent, topo: TopoMatrix) -> None:
    plain = lab_log("healthy").replace(
        "15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA", "15[7] -> 0[0] [receive] via NET/IB/0"
    )
    finding = by_check(judged(plain, lab_intent, topo)["gpu01"])[checks.GDR]
    assert finding.status is Status.FAIL and finding.subject.startswith("rank 0 (GPU0")
    assert "2 of 2 NET channels without GDRDMA" in finding.actual
    relaxed = lab_intent.model_copy(
        update={"nccl": lab_intent.nccl.model_copy(update={"gdr_required": False})}
    )
    assert by_check(judged(plain, relaxed, topo)["gpu01"])[checks.GDR].status is Status.SKIP


def test_gid_index_not_passed_to_the_ranks_fails(lab_intent: FabricIntent, topo: TopoMatrix) -> None:
    text = "\n".join(line for line in lab_log("healthy").splitlines() if "NCCL_IB_GID_INDEX" not in line)
    finding = by_check(judged(text, lab_intent, topo)["gpu02"])[checks.GID_INDEX]
    assert finding.status is Status.FAIL and "the launcher did not pass it" in finding.actual


def test_a_missing_rank_fails_on_its_host(lab_intent: FabricIntent, topo: TopoMatrix) -> None:
    text = "\n".join(line for line in lab_log("healthy").splitlines() if "rank 13 nranks" not in line)
    findings = judged(text, lab_intent, topo, rc=1)
    finding = by_check(findings["gpu02"])[checks.RANKS]
    assert finding.status is Status.FAIL and finding.subject == "gpu02: rank(s) 13"
    assert by_check(findings["gpu01"])[checks.RANKS].status is Status.PASS
    assert by_check(findings["gpu01"])["nccl.launch"].status is Status.FAIL


def corpus_ranks(name: str) -> list:
    return list(parse_nccl_ranks((CORPUS / "nccl-log" / name).read_text()))


def test_corpus_plugin_network_bonds_and_traffic_class_fail_the_intent(lab_intent: FabricIntent) -> None:
    ranks = [
        r for r in corpus_ranks("nccl-tests-321-h20-vm-roce-tencent-plugin.txt") if r.host == "vm-host40"
    ]
    desired = desired_nccl_host(lab_intent, "vm-host40")
    found = by_check(checks.check_host_ranks("vm-host40", ranks, [0, 1], desired, None))
    assert (
        found[checks.TRANSPORT].status is Status.FAIL
        and "NCCL RDMA Plugin v6" in found[checks.TRANSPORT].actual
    )
    assert found[checks.HCA_LIST].status is Status.FAIL
    assert "stray device(s) mlx5_bond_6, mlx5_bond_7" in found[checks.HCA_LIST].actual
    tc = found[checks.TRAFFIC_CLASS]
    assert tc.status is Status.FAIL and "NCCL_IB_TC set by environment to 160." in tc.actual
    assert found[checks.GID_INDEX].status is Status.PASS
    assert found[checks.RAIL_HCA].status is Status.ERROR  # no topo of that host: never a pass
    plugin = lab_intent.model_copy(
        update={"nccl": lab_intent.nccl.model_copy(update={"allowed_networks": ["IB", "NCCL RDMA Plugin"]})}
    )
    again = checks.check_host_ranks("vm-host40", ranks, [0, 1], desired_nccl_host(plugin, "vm-host40"), None)
    assert by_check(again)[checks.TRANSPORT].status is Status.PASS


def test_corpus_mixed_gdr_channels_and_socket_pods(lab_intent: FabricIntent) -> None:
    desired = desired_nccl_host(lab_intent, "x")
    mixed = corpus_ranks("nccl-2345-rail-mixed-gdrdma-and-nongdr-channels.txt")
    gdr = by_check(checks.check_host_ranks("kg35-nvl03", mixed, [], desired, None))[checks.GDR]
    assert gdr.status is Status.FAIL and "2 of 4 NET channels without GDRDMA" in gdr.actual
    assert "Channel 01/0 : 7[3] -> 0[0] [receive] via NET/IB/1" in gdr.actual
    pods = corpus_ranks("nccl-1781-k8s-pods-same-node-net-socket-2.27.5.txt")
    transport = by_check(checks.check_host_ranks("worker-1", pods[1:], [1], desired, None))[checks.TRANSPORT]
    assert transport.status is Status.FAIL and "network Socket" in transport.actual  # from its channels


def test_busbw_floor_is_the_intents(lab_intent: FabricIntent) -> None:
    job = desired_nccl_job([("a", lab_intent), ("b", lab_intent)])
    assert job.busbw_floor_gbytes == pytest.approx(0.85 * 8 * 400 / 8)
    assert job.env == {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106",
    }
    assert job.args[job.args.index("-e") + 1] == str(1 << 30)
    assert checks.check_busbw(None, job, "job").status is Status.ERROR


def test_hosts_that_disagree_on_a_job_value_are_named(lab_intent: FabricIntent) -> None:
    other = lab_intent.model_copy(update={"nccl": lab_intent.nccl.model_copy(update={"traffic_class": 160})})
    with pytest.raises(FabcheckError, match=r"nccl\.traffic_class is 106 on a but 160 on b"):
        desired_nccl_job([("a", lab_intent), ("b", other)])


def test_infiniband_needs_no_gid_index() -> None:
    desired = desired_nccl_host(FabricIntent(kind="ib", roce_tos=104), "h")
    assert desired.gid_index is None
    assert isinstance(desired_nccl_job([("h", FabricIntent(kind="ib", roce_tos=104))]), DesiredNcclJob)


@pytest.mark.parametrize(
    ("subsys", "hidden"),
    [
        ("INIT,NET", []),
        ("ALL", []),
        ("INIT", ["NET"]),
        ("^NET", ["NET"]),
        ("^COLL", []),
        ("COLL,P2P", ["INIT", "NET"]),
    ],
)
def test_debug_subsystems_that_hide_the_proof(subsys: str, hidden: list[str]) -> None:
    assert hidden_subsystems(subsys) == hidden


def test_a_lowered_debug_level_is_named() -> None:
    assert lowered_debug({"NCCL_DEBUG": "TRACE"}) == []
    (note,) = lowered_debug({"NCCL_DEBUG": "WARN"})
    assert "NCCL_DEBUG=WARN" in note and "transport banner" in note


HOSTS_YML = """
all:
  children:
    gpu_hosts:
      hosts:
        gpu01: {ansible_host: 10.0.0.1}
        gpu02: {ansible_host: 10.0.0.2}
"""


def _two_hosts(root: Path, intent: FabricIntent) -> Inventory:
    (root / "group_vars" / "all").mkdir(parents=True)
    text = yaml.safe_dump({"fabric_intent": intent.model_dump(mode="json")})
    (root / "group_vars" / "all" / "fabric.yml").write_text(text)
    (root / "hosts.yml").write_text(HOSTS_YML)
    return load_inventory(root)


def test_the_stage_launches_one_rank_per_gpu_and_judges_what_came_back(
    tmp_path: Path, lab_intent: FabricIntent, topo: TopoMatrix
) -> None:
    inventory = _two_hosts(tmp_path, lab_intent)
    asked: list[LaunchRequest] = []

    def launch(config: LauncherConfig, request: LaunchRequest) -> LaunchResult:
        asked.append(request)
        text = lab_log("healthy")
        return LaunchResult(("mpirun", "..."), 0, {0: tuple(text.splitlines())}, text, "", 4.0)

    stage = NcclStage(
        launch=launch, environ=lambda: {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "=mlx5_0", "HOME": "/"}
    )
    plan = fabric.plan_gate(inventory, stages=["host", "nccl"])
    evidence = SimpleNamespace(topo=topo)
    hosts = {"host": StageOutcome("host", tuple(HostResult(h, (), evidence) for h in HOSTS))}  # type: ignore[arg-type]
    outcome = stage.run(StageContext(inventory, plan, TimeLimits(), 4, None, hosts))
    (request,) = asked
    assert (request.program, request.ranks_per_host, [h.name for h in request.hosts]) == (
        "all_reduce_perf",
        8,
        ["gpu01", "gpu02"],
    )
    # The user's NCCL_* reach the ranks and win; one that hides the proof is named in a note.
    assert request.env["NCCL_DEBUG"] == "WARN" and request.env["NCCL_IB_HCA"] == "=mlx5_0"
    assert request.env["NCCL_IB_GID_INDEX"] == "3" and "HOME" not in request.env
    assert any("NCCL_DEBUG=WARN" in note for note in outcome.notes)
    assert [n.node for n in outcome.nodes] == list(HOSTS)
    assert all(f.status is Status.PASS for n in outcome.nodes for f in n.findings)
    (figure,) = outcome.figures
    assert figure.svg().startswith("<svg") and "floor" in figure.svg()
    # The measured busbw is a figure of the finding (and its JSON), against the floor.
    busbw = next(f for f in outcome.nodes[0].findings if f.check == checks.BUSBW)
    assert busbw.measure is not None and busbw.measure.unit == "GB/s"
    assert busbw.measure.expected == 340.0  # 85 % of 8 NICs x 400 Gb/s, in GB/s
    assert busbw.measure.value >= busbw.measure.expected and f"{busbw.measure.value:.2f} GB/s" in busbw.actual


def test_one_host_has_no_inter_node_path_to_prove(tmp_path: Path) -> None:
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (tmp_path / "hosts.yml").write_text("all:\n  children:\n    gpu_hosts:\n      hosts:\n        gpu01:\n")
    inventory = load_inventory(tmp_path)
    plan = fabric.plan_gate(inventory, stages=["host", "nccl"])
    outcome = NcclStage().run(StageContext(inventory, plan, TimeLimits(), 4, None))
    ((finding,),) = [n.findings for n in outcome.nodes]
    # Asked for and not provable: not judged (error), never a skip that reads as nothing wrong.
    assert (
        finding.status is Status.ERROR
        and finding.actual.startswith("not judged:")
        and "needs two" in finding.actual
    )


def test_a_job_the_run_s_deadline_ended_is_deadline_passed_not_a_hung_collective(
    tmp_path: Path, lab_intent: FabricIntent, topo: TopoMatrix
) -> None:
    inventory = _two_hosts(tmp_path, lab_intent)
    plan = fabric.plan_gate(inventory, stages=["host", "nccl"])
    shown = SimpleNamespace(topo=topo)
    hosts = {"host": StageOutcome("host", tuple(HostResult(h, (), shown) for h in HOSTS))}  # type: ignore[arg-type]
    timeouts: list[float | None] = []

    def killed(config: LauncherConfig, request: LaunchRequest) -> LaunchResult:
        timeouts.append(request.timeout_s)
        return LaunchResult(("mpirun", "..."), None, {}, "", "", request.timeout_s or 0.0)

    soon = StageContext(inventory, plan, TimeLimits(), 4, 20, hosts, ends_at=time.monotonic() + 20)
    with pytest.raises(DeadlinePassed, match=r"--deadline 20 s\) ended the NCCL job"):
        NcclStage(launch=killed, environ=dict).run(soon)
    (timeout,) = timeouts
    assert timeout is not None and timeout <= 20

    passed = StageContext(inventory, plan, TimeLimits(), 4, 20, hosts, ends_at=time.monotonic() - 1)
    with pytest.raises(DeadlinePassed, match="passed before the NCCL job started"):
        NcclStage(launch=killed, environ=dict).run(passed)
    assert len(timeouts) == 1  # nothing was launched the second time
