"""The incast stage over the three switch platforms at once: 3 GPU hosts cabled across an NVUE, a SONiC
and an EOS leaf (the lab cycles platforms in that order), converged by site.yml. Each leaf gets its own
incast (the i-th leaf's victim is the i-th host). Healthy, every leaf's drops and watchdog are read and
pass; ECN marks are read on NVUE alone, a skip that says so elsewhere. PFC on the wrong priority of the
EOS leaf fails that leaf's drops on the victim's port and the victim's out-of-sequence, nothing else.

Three leaves also prove that switch logins (a file lookup in the lab inventory) resolve before the
captures run side by side."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labsupport import converged_lab, injected, requires_lab
from test_incast_stage_lab import failing, incast

from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

LEAVES = ("leaf01", "leaf02", "leaf03")  # nvue, sonic, eos
EOS_VICTIM = ("gpu03", "mlx5_1", "leaf03:Ethernet6/1")  # the third host's NIC on the third leaf


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with converged_lab(profile="roce", hosts=3, switches=3) as paths:
        yield paths


def test_every_platform_reads_its_leaf_and_passes(lab: LabPaths) -> None:
    rc, found = incast(lab)
    assert rc == 0, failing(found)
    by_leaf = {leaf: {(f["check"], f["status"]) for f in found if f["node"] == leaf} for leaf in LEAVES}
    for leaf in LEAVES:
        assert {("incast.switch_drops", "pass"), ("incast.watchdog", "pass")} <= by_leaf[leaf], by_leaf[leaf]
    assert ("incast.switch_ecn", "pass") in by_leaf["leaf01"]
    skips = {(f["node"], f["check"]) for f in found if f["status"] == "skip"}
    assert skips == {("leaf02", "incast.switch_ecn"), ("leaf03", "incast.switch_ecn")}
    assert all(f["actual"] for f in found if f["status"] == "skip")


def test_pfc_on_the_wrong_priority_of_the_eos_leaf_fails_its_drops_there(lab: LabPaths) -> None:
    with injected(lab, "switch-pfc-prio", "leaf03"):
        rc, found = incast(lab)
    host, nic, port = EOS_VICTIM
    assert rc == 1
    assert failing(found) == {("leaf03", "incast.switch_drops", port), (host, "incast.out_of_sequence", nic)}
    drops = next(f for f in found if f["check"] == "incast.switch_drops" and f["subject"] == port)
    assert drops["actual"].endswith("packets dropped (leaf03 incast)"), drops
    assert int(drops["actual"].split()[0]) > 0
