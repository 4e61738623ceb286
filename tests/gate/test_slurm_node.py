"""node-check --slurm (fabcheck.gate.slurm_node) against a fake scontrol on PATH (tests/gate/
fake_scontrol.py: Slurm's own `show node` shape and update rules): a failing node is drained with a
reason naming the check, a passing one resumed only when fabcheck drained it, and a node drained by
someone else, down or failing is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_scontrol import FakeScontrol

from fabcheck.checks.model import Finding, Status, Where, errored, failed, passed
from fabcheck.gate.slurm_node import (
    REASON_BYTES,
    SlurmError,
    act_on_node,
    decide,
    drain_reason,
    parse_show_node,
)

PFC_OFF = Finding(
    "host.pfc",
    Status.FAIL,
    "mlx5_0",
    "PFC on priority 3",
    "PFC off on priority 3",
    "mlnx_qos -i ens1np0 --pfc 0,0,0,1,0,0,0,0",
    Where("gpu02", "mlx5_0", "leaf01:swp2"),
)
MTU = failed("host.netdev_mtu", "ens2np0", "9000", "1500", "ip link set")
PASSING = [passed("host.pfc", "mlx5_0", "PFC on priority 3", "PFC on priority 3")]


@pytest.fixture
def scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeScontrol:
    fake = FakeScontrol(tmp_path / "slurm-bin", "gpu02")
    monkeypatch.setenv("PATH", f"{fake.path.parent}:/usr/bin:/bin")
    return fake


def test_the_reason_names_the_check_part_and_actual_and_counts_the_rest() -> None:
    assert drain_reason([PFC_OFF]) == "fabcheck: host.pfc mlx5_0: PFC off on priority 3"
    assert (
        drain_reason([*PASSING, PFC_OFF, MTU]) == "fabcheck: host.pfc mlx5_0: PFC off on priority 3 (+1 more)"
    )
    assert drain_reason(PASSING) is None
    assert drain_reason([errored("host.pfc", "mlx5_0", "x", "unreadable", "h")]) is None


def test_the_reason_is_one_line_cut_to_what_slurm_accounting_keeps() -> None:
    long = failed("host.pcie_link", "GPU0", "x", "é\nline two " + "w" * 600, "h")
    reason = drain_reason([long, MTU])
    assert reason is not None and "\n" not in reason
    assert len(reason.encode()) <= REASON_BYTES and reason.endswith("... (+1 more)")
    reason.encode().decode("utf-8")  # never a cut multi-byte character


def test_a_failing_node_is_drained_and_sinfo_shows_the_reason(scontrol: FakeScontrol) -> None:
    action = act_on_node("gpu02", Status.FAIL, [PFC_OFF])
    assert action.kind == "drain"
    assert scontrol.calls == [
        ["show", "node", "gpu02"],
        [
            "update",
            "NodeName=gpu02",
            "State=DRAIN",
            "Reason=fabcheck: host.pfc mlx5_0: PFC off on priority 3",
        ],
    ]
    assert scontrol.node["state"] == "IDLE+DRAIN"
    again = act_on_node("gpu02", Status.FAIL, [PFC_OFF])  # the next health check: nothing to change
    assert again.kind == "none" and len(scontrol.updates()) == 1
    other = act_on_node("gpu02", Status.FAIL, [MTU])  # a different failure: the reason follows it
    assert other.kind == "drain" and scontrol.node["reason"].startswith("fabcheck: host.netdev_mtu ens2np0")


def test_a_repaired_node_is_resumed_only_from_fabchecks_own_drain(scontrol: FakeScontrol) -> None:
    act_on_node("gpu02", Status.FAIL, [PFC_OFF])
    action = act_on_node("gpu02", Status.PASS, PASSING)
    assert action.kind == "resume"
    assert scontrol.updates()[-1] == ["update", "NodeName=gpu02", "State=RESUME"]
    assert scontrol.node["state"] == "IDLE" and not scontrol.node["reason"]
    assert act_on_node("gpu02", Status.PASS, PASSING).kind == "none"  # not drained: nothing to resume


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ("IDLE+DRAIN", "disk replacement"),  # drained by hand
        ("MIXED+DRAIN", "NHC: check_fs_mount: /scratch not mounted"),  # another health checker's
        ("DOWN", "Not responding"),
        ("DOWN+DRAIN", "fabcheck: host.pfc mlx5_0: PFC off on priority 3"),  # ours, but the node is down
        ("IDLE+DRAIN+FAIL", "fabcheck: host.pfc mlx5_0: PFC off on priority 3"),
        ("IDLE+MAINTENANCE+RESERVED", ""),
        ("IDLE+NOT_RESPONDING", ""),
        ("IDLE+POWERED_DOWN", ""),
        ("IDLE+DRAIN+REBOOT_REQUESTED", "fabcheck: host.pfc mlx5_0: PFC off on priority 3"),
    ],
)
@pytest.mark.parametrize("verdict", [Status.FAIL, Status.PASS, Status.ERROR])
def test_a_node_in_someone_elses_hands_is_never_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, reason: str, verdict: Status
) -> None:
    fake = FakeScontrol(tmp_path / "bin", "gpu02", state, reason, by="admin")
    monkeypatch.setenv("PATH", f"{fake.path.parent}:/usr/bin:/bin")
    findings = [PFC_OFF] if verdict is Status.FAIL else PASSING
    action = act_on_node("gpu02", verdict, findings)
    assert action.kind == "none", action
    assert fake.updates() == [] and fake.node["state"] == state


def test_a_node_that_could_not_be_judged_is_left_as_it_is(scontrol: FakeScontrol) -> None:
    assert act_on_node("gpu02", Status.ERROR, [errored("host.pfc", "mlx5_0", "x", "y", "z")]).kind == "none"
    act_on_node("gpu02", Status.FAIL, [PFC_OFF])
    assert act_on_node("gpu02", Status.ERROR, []).kind == "none"
    assert scontrol.node["state"] == "IDLE+DRAIN"  # neither resumed nor drained again


def test_the_reason_is_read_without_slurms_user_and_time_and_multi_line_reasons_keep_line_one() -> None:
    text = (
        "NodeName=gpu02 Arch=x86_64 CoresPerSocket=1 \n   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0\n"
        "   Reason=fabcheck: host.pfc mlx5_0: PFC off [root@2026-12-07T06:00:00]\n          second line\n"
    )
    node = parse_show_node(text, "gpu02")
    assert (node.base, node.flags, node.reason) == (
        "IDLE",
        frozenset({"DRAIN"}),
        "fabcheck: host.pfc mlx5_0: PFC off",
    )
    assert node.fabcheck_reason and node.drained
    assert decide(node, Status.PASS, None).kind == "resume"


def test_scontrol_errors_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol anywhere
    with pytest.raises(SlurmError, match="--slurm needs Slurm's scontrol on this node's PATH"):
        act_on_node("gpu02", Status.FAIL, [PFC_OFF])
    fake = FakeScontrol(tmp_path / "bin", "gpu01")
    monkeypatch.setenv("PATH", f"{fake.path.parent}:/usr/bin:/bin")
    with pytest.raises(SlurmError, match=r"exit 1.*Node gpu02 not found"):
        act_on_node("gpu02", Status.FAIL, [PFC_OFF])
    with pytest.raises(SlurmError, match="printed no NodeName=gpu02"):
        parse_show_node("", "gpu02")
