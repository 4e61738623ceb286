"""The incast stage on the smallest lab that has one: 3 GPU hosts on one NVUE leaf, converged by site.yml.
Healthy, the 8->1 incast into gpu01/mlx5_0 passes every incast check; PFC off on that victim NIC fails
its drops there; ECN off on the leaf's lossless queue fails ECN marking on the victim's port and DCQCN
engagement on the receiver; PFC on the wrong priority of the victim's port fails that port's drops."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from labsupport import REPO, converged_lab, injected, requires_lab

from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

GENEROUS = ("--timeout", "120", "--connect-timeout", "60")  # no healthy node can miss these when loaded
VICTIM_PORT = "leaf01:swp1"  # gpu01/mlx5_0, cabled first; the victim of the one leaf's incast

Found = set[tuple[str, str, str]]  # (node, check, subject)


def incast(paths: LabPaths) -> tuple[int, list[dict]]:
    """(exit code, every incast.* finding with its node) of `fabcheck validate --stages host,incast`."""
    argv = [sys.executable, "-m", "fabcheck.cli", "validate", "-i", str(paths.inventory.parent)]
    argv += ["--stages", "host,incast", "--checks", "incast.*", "--json", *GENEROUS]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1, 3), done.stderr
    subjects = [json.loads(line) for line in done.stdout.splitlines()]
    found = [
        {**f, "node": s.get("host") or s.get("switch")}
        for s in subjects
        for f in s.get("findings", [])
        if f["check"].startswith("incast.")
    ]
    return done.returncode, found


def failing(found: list[dict]) -> Found:
    return {(f["node"], f["check"], f["subject"]) for f in found if f["status"] in ("fail", "error")}


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with converged_lab(profile="roce", hosts=3, switches=1) as paths:
        yield paths


def test_a_converged_fabric_passes_the_incast(lab: LabPaths) -> None:
    rc, found = incast(lab)
    assert rc == 0, failing(found)
    passing = {(f["node"], f["check"], f["subject"]) for f in found if f["status"] == "pass"}
    assert {
        ("gpu01", "incast.host_drops", "mlx5_0"),
        ("gpu01", "incast.ecn_engaged", "mlx5_0"),
        ("gpu01", "incast.pfc_engaged", "leaf01 incast"),
        ("leaf01", "incast.switch_drops", VICTIM_PORT),
        ("leaf01", "incast.switch_ecn", VICTIM_PORT),
        ("leaf01", "incast.watchdog", VICTIM_PORT),
    } <= passing
    senders = {f["node"] for f in found if f["check"] == "incast.traffic" and f["status"] == "pass"}
    assert senders == {"gpu02", "gpu03"}


def test_pfc_off_on_the_victim_nic_fails_its_drops_there(lab: LabPaths) -> None:
    with injected(lab, "pfc-off", "gpu01"):
        rc, found = incast(lab)
    assert rc == 1
    assert failing(found) == {
        ("gpu01", "incast.host_drops", "mlx5_0"),
        ("gpu01", "incast.out_of_sequence", "mlx5_0"),
    }


def test_ecn_off_on_the_leaf_fails_marking_on_the_victim_port_and_on_the_receiver(lab: LabPaths) -> None:
    with injected(lab, "switch-ecn-off", "leaf01"):
        rc, found = incast(lab)
    bad = failing(found)
    assert rc == 1
    assert ("leaf01", "incast.switch_ecn", VICTIM_PORT) in bad
    assert ("gpu01", "incast.ecn_engaged", "mlx5_0") in bad
    # The senders handle no CNP either; nothing but ECN engagement may fail.
    assert {check for _node, check, _subject in bad} == {"incast.switch_ecn", "incast.ecn_engaged"}


def test_pfc_on_the_wrong_priority_of_the_victim_port_fails_that_port_drops(lab: LabPaths) -> None:
    with injected(lab, "switch-pfc-prio", "leaf01"):
        rc, found = incast(lab)
    bad = failing(found)
    assert rc == 1
    assert ("leaf01", "incast.switch_drops", VICTIM_PORT) in bad
    switch_side = {(node, subject) for node, _check, subject in bad if node == "leaf01"}
    assert switch_side == {("leaf01", VICTIM_PORT)}, bad
