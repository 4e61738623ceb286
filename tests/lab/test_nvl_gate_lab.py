"""NVLink domains end to end on `fabcheck lab up --profile nvl --hosts 6`: six GB200-like trays of 4 GPUs
(18 NVLinks x 53.125 GB/s each) in two NVLink domains of three trays, nvl_rack1 = gpu01..gpu03 and
nvl_rack2 = gpu04..gpu06, on RoCE between the domains (three trays: a tray in another clique is a
minority the check can name; two trays with two keys are a tie, and both fail).

One lab, converged once by site.yml (its role `nvlink` writes each domain's IMEX node list and starts
nvidia-imex). Converged, `fabcheck validate --stages host,nccl` passes: every GPU's links, fabric
registration and IMEX domain pass on every tray, and the nccl stage's ranks talk P2P/MNNVL inside a
domain and NET/IB with GDRDMA across, which nccl.pair_transport judges pair by pair. Each NVLink fault
fails exactly its check on exactly that tray or GPU, and the nccl stage agrees where MNNVL breaks:
- nvlink-down on gpu05: host.nvlink on gpu05's GPU0 alone (NCCL still forms the domain: one link of 18);
- clique-mismatch on gpu02: host.nvlink_fabric on gpu02's four GPUs (the tray in the minority), and
  nvl_rack1's pairs fall to NET: nccl.pair_transport fails on
  both of its trays, nothing of nvl_rack2, and the job's busbw falls under the floor of the planned
  layout (nccl.busbw, a job finding on every host);
- imex-down on gpu02: host.imex on gpu02 (its service) and on gpu01 and gpu03 (their view of the
  domain names gpu02), and nvl_rack1's pairs and the job's busbw fail as above.
Heal gives the converged verdicts back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labsupport import injected, requires_lab, run_playbook, running_lab, validate_json

from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06")
RACK1 = ("gpu01", "gpu02", "gpu03")
NVLINK_CHECKS = ("host.nvlink", "host.nvlink_fabric", "host.imex")
PAIR = "nccl.pair_transport"
Verdicts = frozenset[tuple[str, str, str]]  # (host, check, subject) of every finding that fails or errs


def validate(paths: LabPaths, stages: str) -> tuple[int, dict[str, list[dict]]]:
    rc, subjects = validate_json(paths, "--stages", stages)
    return rc, {s["host"]: s["findings"] for s in subjects if "host" in s}


def not_passing(found: dict[str, list[dict]]) -> Verdicts:
    return frozenset(
        (host, f["check"], f["subject"])
        for host, findings in found.items()
        for f in findings
        if f["status"] in ("fail", "error")
    )


def job_busbw(bad: Verdicts) -> Verdicts:
    """The job's all_reduce busbw, judged on every host of the job: a domain that fell back to NET runs
    its ring through each tray's 4 NICs instead of the domain's 12, under the floor of the planned layout."""
    busbw = frozenset(v for v in bad if v[1] == "nccl.busbw")
    assert {host for host, _c, _s in busbw} == set(HOSTS), busbw
    return busbw


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with running_lab(profile="nvl", hosts=len(HOSTS), switches=0) as (paths, _state):
        converged = run_playbook(paths, "--skip-tags", "gate")
        assert converged.rc == 0, converged.output[-4000:]
        yield paths


def test_a_converged_nvl_lab_passes_the_host_and_nccl_stages(lab: LabPaths) -> None:
    rc, found = validate(lab, "host,nccl")
    assert (rc, not_passing(found)) == (0, frozenset())
    assert set(found) == set(HOSTS)
    for host, findings in found.items():
        passed = {f["check"] for f in findings if f["status"] == "pass"}
        assert {*NVLINK_CHECKS, PAIR} <= passed, (host, sorted({*NVLINK_CHECKS, PAIR} - passed))
        # An NVL72-like tray runs no fabric manager on the host (NVLink 5: the switch trays do): a named skip.
        manager = [f for f in findings if f["check"] == "host.fabric_manager"]
        assert manager and {f["status"] for f in manager} == {"skip"}, manager
    pairs = [f for f in found["gpu01"] if f["check"] == PAIR and f["status"] == "pass"]
    shown = " ".join(f["actual"] for f in pairs)
    assert "inside the NVLink domain on P2P" in shown and "across domains on RDMA NET" in shown, shown


def test_nvlink_down_fails_host_nvlink_on_that_gpu_alone(lab: LabPaths) -> None:
    with injected(lab, "nvlink-down", "gpu05"):
        rc, found = validate(lab, "host")
    assert rc == 1
    assert not_passing(found) == {("gpu05", "host.nvlink", "GPU0")}
    [finding] = [f for f in found["gpu05"] if f["check"] == "host.nvlink" and f["subject"] == "GPU0"]
    assert "3" in finding["actual"] and "inactive" in finding["actual"], finding


def test_clique_mismatch_fails_the_fabric_check_of_that_tray_and_its_domains_pairs(lab: LabPaths) -> None:
    with injected(lab, "clique-mismatch", "gpu02"):
        rc, found = validate(lab, "host,nccl")
    assert rc == 1
    bad = not_passing(found)
    fabric = {v for v in bad if v[1] == "host.nvlink_fabric"}
    assert fabric == {("gpu02", "host.nvlink_fabric", f"GPU{i}") for i in range(4)}, bad
    pairs = {v for v in bad if v[1] == PAIR}
    assert pairs and {host for host, _c, _s in pairs} <= set(RACK1), pairs
    assert bad == fabric | pairs | job_busbw(bad), bad - fabric - pairs


def test_imex_down_fails_host_imex_on_that_tray_and_its_peers_view_of_it(lab: LabPaths) -> None:
    with injected(lab, "imex-down", "gpu02"):
        rc, found = validate(lab, "host,nccl")
    assert rc == 1
    bad = not_passing(found)
    imex = {v for v in bad if v[1] == "host.imex"}
    assert {host for host, _c, _s in imex} == set(RACK1), bad
    for peer in ("gpu01", "gpu03"):
        seen = {s for h, _c, s in imex if h == peer}
        assert seen and all("gpu02" in s for s in seen - {"IMEX domain"}), imex
    pairs = {v for v in bad if v[1] == PAIR}
    assert pairs and {host for host, _c, _s in pairs} <= set(RACK1), pairs
    assert bad == imex | pairs | job_busbw(bad), bad - imex - pairs


def test_healed_nvl_lab_passes_again(lab: LabPaths) -> None:
    rc, found = validate(lab, "host,nccl")
    assert (rc, not_passing(found)) == (0, frozenset())
