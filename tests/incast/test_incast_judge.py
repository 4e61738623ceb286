"""fabcheck.incast.judge, the pure verdict on recorded counters: healthy; PFC off on the victim NIC; a
leaf port that drops the lossless queue; ECN off on the leaf queue; a counter that could not be read; a
watchdog storm."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fabcheck.checks.model import Finding, Status
from fabcheck.collect.probes import Collected, ProbeError
from fabcheck.desired.nic import DesiredNic, desired_host
from fabcheck.incast import capture, judge
from fabcheck.incast.figure import CounterTable
from fabcheck.incast.plan import Incast
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.verdict import Measurement
from fabcheck.parsers.switch_records import QueueDrops, WatchdogStatus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import desired, intent

VICTIM = Endpoint("gpu01", "mlx5_0")
SENDERS = (Endpoint("gpu02", "mlx5_0"), Endpoint("gpu03", "mlx5_0"))
PORTS = {VICTIM: "swp1", SENDERS[0]: "swp2", SENDERS[1]: "swp3"}
NETDEV = "ens1f0np0"


def nic(device: str = "mlx5_0", **changes: Any) -> DesiredNic:
    return dataclasses.replace(desired_host(intent(), "gpu01").template, device=device, **changes)


RECEIVED = {
    "rx_prio3_packets": 24000,
    "tx_prio3_packets": 0,
    "tx_prio3_pause": 12,
    "rx_prio3_pause": 0,
    "rx_pause_ctrl_phy": 0,
    "tx_pause_ctrl_phy": 0,
    "rx_discards_phy": 0,
    "out_of_sequence": 0,
    "np_ecn_marked_roce_packets": 24,
    "np_cnp_sent": 24,
    "rp_cnp_handled": 0,
}
SENT = {**RECEIVED, "rx_prio3_packets": 0, "tx_prio3_packets": 12000, "tx_prio3_pause": 0}
SENT.update(rx_prio3_pause=6, np_ecn_marked_roce_packets=0, np_cnp_sent=0, rp_cnp_handled=12)


def zeroed(counters: Mapping[str, int]) -> dict[str, int]:
    return dict.fromkeys(counters, 0)


def host_captures(victim: Mapping[str, int] = RECEIVED, sent: Mapping[str, int] = SENT) -> tuple[dict, dict]:
    after = {"gpu01": {NETDEV: dict(victim)}, **{s.host: {NETDEV: dict(sent)} for s in SENDERS}}
    before = {host: {NETDEV: zeroed(c[NETDEV])} for host, c in after.items()}
    return before, after


def leaf(drops: int = 0, marked: int = 150, paused: int = 20, stormed: tuple[int, ...] = ()) -> Collected:
    found = Collected()
    for port in PORTS.values():
        found.records[(QueueDrops, port)] = QueueDrops(roce_class=drops if port == "swp1" else 0)
        found.records[(capture.PortPauseEcn, port)] = capture.PortPauseEcn(
            paused, paused, marked if port == "swp1" else 0
        )
        found.records[(WatchdogStatus, port)] = WatchdogStatus(stormed)
    return found


def quiet_leaf() -> Collected:
    """The leaf before the incast: counters at zero."""
    return leaf(drops=0, marked=0, paused=0)


def incasted(switch: bool = True) -> judge.Incasted:
    ports = tuple(PORTS.items()) if switch else ()
    incast = Incast(
        "leaf01" if switch else "rail mlx5_0", "leaf01" if switch else None, VICTIM, SENDERS, ports
    )
    ends = (VICTIM, *SENDERS)
    return judge.Incasted(
        incast, {e: nic() for e in ends}, dict.fromkeys(ends, NETDEV), desired("leaf01") if switch else None
    )


def measured(gbps: float | None = 180.0) -> dict[Pair, Measurement]:
    return {
        Pair(VICTIM, s): Measurement(Pair(VICTIM, s), gbps, 1, error=None if gbps else "client: timed out")
        for s in SENDERS
    }


def verdict(
    hosts: tuple[dict, dict] | None = None,
    switch: tuple[Any, Any] | None = None,
    measurements: dict[Pair, Measurement] | None = None,
    incast: judge.Incasted | None = None,
) -> judge.Verdicts:
    before, after = hosts or host_captures()
    switch_before, switch_after = switch or (quiet_leaf(), leaf())
    captured = judge.Captured(
        before, after, {"leaf01": switch_before}, {"leaf01": switch_after}, measurements or measured()
    )
    return judge.judge_incasts([incast or incasted()], captured)


def bad(found: judge.Verdicts) -> set[tuple[str, str, str]]:
    everything = [*found.hosts.items(), *found.switches.items()]
    return {
        (node, f.check, f.subject)
        for node, fs in everything
        for f in fs
        if f.status in (Status.FAIL, Status.ERROR)
    }


def one(found: judge.Verdicts, node: str, check: str, subject: str) -> Finding:
    [finding] = [
        f
        for f in [*found.hosts.get(node, []), *found.switches.get(node, [])]
        if (f.check, f.subject) == (check, subject)
    ]
    return finding


def test_a_healthy_incast_passes_every_check_on_every_nic_and_port() -> None:
    found = verdict()
    assert bad(found) == set()
    checks = {f.check for fs in found.hosts.values() for f in fs}
    assert {judge.TRAFFIC, judge.HOST_DROPS, judge.OUT_OF_SEQUENCE, judge.ECN_ENGAGED, judge.PAUSE} <= checks
    assert {(f.check, f.subject) for f in found.switches["leaf01"]} >= {
        (judge.SWITCH_DROPS, "leaf01:swp1"),
        (judge.SWITCH_DROPS, "leaf01:swp3"),
        (judge.SWITCH_ECN, "leaf01:swp1"),
        (judge.WATCHDOG, "leaf01:swp2"),
    }
    engaged = one(found, "gpu01", judge.PFC_ENGAGED, "leaf01 incast")
    assert engaged.status is Status.PASS and "on leaf01" in engaged.actual
    assert [row.role for row in found.rows] == ["victim", "sender", "sender"]
    assert "gpu01/mlx5_0" in CounterTable(tuple(found.rows)).svg()


def test_pfc_off_on_the_victim_nic_names_its_drops_there_with_its_switch_port() -> None:
    dropped = {**RECEIVED, "tx_prio3_pause": 0, "rx_discards_phy": 4, "out_of_sequence": 4}
    found = verdict(hosts=host_captures(victim=dropped))
    assert bad(found) == {("gpu01", judge.HOST_DROPS, "mlx5_0"), ("gpu01", judge.OUT_OF_SEQUENCE, "mlx5_0")}
    drops = one(found, "gpu01", judge.HOST_DROPS, "mlx5_0")
    assert "rx_discards_phy +4" in drops.actual and "victim" in drops.actual
    assert "roce_host" in drops.hint and "`ansible-playbook site.yml --limit gpu01 --tags pfc`" in drops.hint
    assert "leaf01:swp1: `ansible-playbook site.yml --limit leaf01 --tags pfc`" in drops.hint


def test_a_leaf_port_that_drops_the_lossless_queue_is_named_with_the_switch_role() -> None:
    found = verdict(switch=(quiet_leaf(), leaf(drops=30)))
    assert bad(found) == {("leaf01", judge.SWITCH_DROPS, "leaf01:swp1")}
    finding = one(found, "leaf01", judge.SWITCH_DROPS, "leaf01:swp1")
    assert finding.actual.startswith("30 packets dropped")
    assert "switch_qos (tag pfc)" in finding.hint and "--limit leaf01 --tags pfc" in finding.hint


def test_ecn_off_on_the_leaf_queue_names_the_queue_and_the_receiver() -> None:
    quiet = {**RECEIVED, "np_ecn_marked_roce_packets": 0, "np_cnp_sent": 0}
    silent = {**SENT, "rp_cnp_handled": 0}
    found = verdict(hosts=host_captures(quiet, silent), switch=(leaf(marked=0), leaf(marked=0)))
    failing = bad(found)
    assert ("leaf01", judge.SWITCH_ECN, "leaf01:swp1") in failing
    assert ("gpu01", judge.ECN_ENGAGED, "mlx5_0") in failing
    assert {check for _node, check, _subject in failing} == {judge.SWITCH_ECN, judge.ECN_ENGAGED}
    assert "tag ecn" in one(found, "leaf01", judge.SWITCH_ECN, "leaf01:swp1").hint


def test_a_counter_that_could_not_be_read_is_an_error_never_a_pass() -> None:
    before, after = host_captures()
    after["gpu02"] = "`ethtool -S` over ssh: Connection timed out"
    del after["gpu03"][NETDEV]
    broken = Collected()
    broken.errors.append(
        ProbeError("incast.nvue.roce_counters", "swp1", "nv show ...", "timed out", (QueueDrops,))
    )
    found = verdict(hosts=(before, after), switch=(quiet_leaf(), broken))
    failing = bad(found)
    assert ("gpu02", judge.COUNTERS, "mlx5_0") in failing and ("gpu03", judge.COUNTERS, "mlx5_0") in failing
    assert ("gpu01", judge.PFC_ENGAGED, "leaf01 incast") in failing
    assert ("leaf01", judge.SWITCH_DROPS, "leaf01:swp1") in failing
    assert "timed out" in one(found, "leaf01", judge.SWITCH_DROPS, "leaf01:swp1").actual
    assert "Connection timed out" in one(found, "gpu02", judge.COUNTERS, "mlx5_0").actual
    unreachable = verdict(switch=("switch leaf01: no SSH answer", leaf()))
    assert {c for node, c, _s in bad(unreachable) if node == "leaf01"} == {
        judge.SWITCH_DROPS,
        judge.SWITCH_ECN,
        judge.WATCHDOG,
    }


def test_a_sender_that_could_not_write_is_an_error_on_that_sender() -> None:
    found = verdict(measurements=measured(None))
    assert {(n, c, s) for n, c, s in bad(found)} == {
        ("gpu02", judge.TRAFFIC, "mlx5_0"),
        ("gpu03", judge.TRAFFIC, "mlx5_0"),
    }
    assert one(found, "gpu02", judge.TRAFFIC, "mlx5_0").actual == "client: timed out"


def test_a_watchdog_storm_on_the_lossless_class_fails_that_port() -> None:
    tc = desired("leaf01").lossless_traffic_class
    found = verdict(switch=(quiet_leaf(), leaf(stormed=(tc,))))
    assert {c for _n, c, _s in bad(found)} == {judge.WATCHDOG}
    assert "tag watchdog" in one(found, "leaf01", judge.WATCHDOG, "leaf01:swp1").hint


def test_no_pause_and_no_mark_anywhere_fails_pfc_engaged_on_the_victim() -> None:
    calm = {**RECEIVED, "tx_prio3_pause": 0, "np_ecn_marked_roce_packets": 0, "np_cnp_sent": 0}
    idle = {**SENT, "rx_prio3_pause": 0, "rp_cnp_handled": 0}
    found = verdict(hosts=host_captures(calm, idle), incast=incasted(switch=False))
    engaged = one(found, "gpu01", judge.PFC_ENGAGED, "rail mlx5_0 incast")
    assert engaged.status is Status.FAIL and "no pause frame and no ECN mark" in engaged.actual
    assert found.switches == {}  # no switch: host counters only


def test_a_missing_netdev_is_an_error_naming_the_host_stage() -> None:
    base = incasted()
    found = verdict(incast=dataclasses.replace(base, netdevs={**base.netdevs, VICTIM: None}))
    assert "no netdev" in one(found, "gpu01", judge.COUNTERS, "mlx5_0").actual
