"""The incast stage without a lab: who is victim and sender, the captures' readers, and the pure verdict
(healthy; PFC off on the victim NIC; a leaf port that drops the lossless queue; ECN off on the leaf
queue; a counter that could not be read; a watchdog storm) on recorded counters and fake sessions."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fabcheck.checks.model import Finding, Status
from fabcheck.collect.probes import Collected, ProbeError
from fabcheck.desired.nic import DesiredNic, desired_host
from fabcheck.desired.perftest import desired_perftest
from fabcheck.errors import UsageError
from fabcheck.gate import incast_stage
from fabcheck.gate.stages import STAGE_MODULES, all_stages
from fabcheck.incast import capture, judge
from fabcheck.incast.figure import CounterTable
from fabcheck.incast.plan import Incast, bounded_int, plan_by_leaf, plan_by_rail
from fabcheck.intent.fabric import Link
from fabcheck.pairs.commands import PairCommand, pair_command
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.runner import timed
from fabcheck.pairs.verdict import Measurement
from fabcheck.parsers.switch_records import QueueDrops, WatchdogStatus
from fabcheck.switch.connect import SwitchLogin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import desired, intent

VICTIM = Endpoint("gpu01", "mlx5_0")
SENDERS = (Endpoint("gpu02", "mlx5_0"), Endpoint("gpu03", "mlx5_0"))
PORTS = {VICTIM: "swp1", SENDERS[0]: "swp2", SENDERS[1]: "swp3"}
NETDEV = "ens1f0np0"


# -- the plan -------------------------------------------------------------------------------------


def links(cabling: Mapping[tuple[str, str], str]) -> list[Link]:
    return [Link(host, nic, *end.split(":")) for (host, nic), end in cabling.items()]


def test_one_leaf_three_hosts_takes_the_first_host_as_victim_and_senders_one_per_host_in_turn() -> None:
    cabling = {
        (h, n): f"leaf01:swp{i}"
        for i, (h, n) in enumerate(
            ((h, n) for h in ("gpu01", "gpu02", "gpu03") for n in ("mlx5_0", "mlx5_1")), start=1
        )
    }
    plan = plan_by_leaf(["gpu01", "gpu02", "gpu03"], links(cabling), fan_in=3)
    [incast] = plan.incasts
    assert incast.victim == VICTIM
    # The victim's rail first on each host, one NIC per host per turn, capped at 3.
    assert incast.senders == (*SENDERS, Endpoint("gpu02", "mlx5_1"))
    assert incast.port_of(VICTIM) == "swp1" and incast.port_of(Endpoint("gpu02", "mlx5_1")) == "swp4"
    assert all(pair.server == VICTIM for pair in incast.pairs)


def test_the_victim_rotates_over_the_leaves_and_a_leaf_with_one_host_is_left_out_with_the_reason() -> None:
    cabling = {
        ("gpu01", "mlx5_0"): "leaf01:swp1",
        ("gpu02", "mlx5_0"): "leaf01:swp2",
        ("gpu01", "mlx5_1"): "leaf02:swp1",
        ("gpu02", "mlx5_1"): "leaf02:swp2",
        ("gpu01", "mlx5_2"): "leaf03:swp1",
    }
    plan = plan_by_leaf(["gpu01", "gpu02"], links(cabling), fan_in=8)
    assert [(i.where, i.victim) for i in plan.incasts] == [
        ("leaf01", VICTIM),
        ("leaf02", Endpoint("gpu02", "mlx5_1")),
    ]
    assert plan.left_out == ("leaf03: only gpu01 has NICs there, no sender for an incast",)


def test_without_switches_there_is_one_incast_per_rail() -> None:
    plan = plan_by_rail(
        {"gpu01": ("mlx5_0", "mlx5_1"), "gpu02": ("mlx5_0", "mlx5_1"), "gpu03": ("mlx5_0",)}, 8
    )
    assert [(i.where, i.victim, i.senders, i.switch) for i in plan.incasts] == [
        ("rail mlx5_0", VICTIM, SENDERS, None),
        ("rail mlx5_1", Endpoint("gpu02", "mlx5_1"), (Endpoint("gpu01", "mlx5_1"),), None),
    ]


@pytest.mark.parametrize("value", [0, -1, 65, "8", True, 2.5])
def test_a_bad_fan_in_is_a_usage_error_naming_the_variable(value: Any) -> None:
    with pytest.raises(UsageError, match=r"incast_fan_in=.*whole number from 1 to 64"):
        bounded_int({"incast_fan_in": value}, "incast_fan_in", 8, 64)
    assert bounded_int({}, "incast_fan_in", 8, 64) == 8


def test_incasts_pack_into_waves_without_splitting_one() -> None:
    one = Incast("leaf01", "leaf01", VICTIM, SENDERS)
    big = Incast("leaf02", "leaf02", VICTIM, SENDERS * 3)
    assert incast_stage.waves([one, one, big, one], width=4) == [[one, one], [big], [one]]


def test_the_stage_is_plugged_not_by_default_and_reads_the_host_stage() -> None:
    assert "fabcheck.gate.incast_stage" in STAGE_MODULES
    stage = next(s for s in all_stages() if s.name == "incast")
    assert stage.by_default is False and stage.requires == ("host",)


def test_timed_pairs_run_for_a_duration_instead_of_an_iteration_count() -> None:
    perftest = {h: desired_perftest(intent(), h) for h in ("gpu01", "gpu02")}
    command = pair_command(Pair(VICTIM, SENDERS[0]), 18515, "10.0.0.1", perftest, {})
    swapped = timed(command, 2)
    assert isinstance(swapped, PairCommand)
    for argv in (swapped.server, swapped.client):
        assert "-n" not in argv and argv[argv.index("-D") + 1] == "2"
    assert swapped.client[-1] == "10.0.0.1" and swapped.port == 18515


# -- the readers ----------------------------------------------------------------------------------


def ethtool(blocks: Mapping[str, Mapping[str, int]]) -> str:
    return "".join(
        f"$ ethtool -S {dev}\nNIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in c.items()) + "\n"
        for dev, c in blocks.items()
    )


class FakeRunner:
    def __init__(self, rc: int, text: str) -> None:
        self.rc, self.text = rc, text
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def run_on(self, host: str, command: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        self.asked.append((host, command))
        return subprocess.CompletedProcess(list(command), self.rc, self.text)


def test_a_host_capture_is_one_round_trip_for_every_netdev_and_reads_each_block() -> None:
    runner = FakeRunner(0, ethtool({"ens1": {"rx_prio3_packets": 5}, "ens2": {"rx_prio3_packets": 7}}))
    got = capture.capture_host(runner, "gpu01", ["ens1", "ens2"])  # type: ignore[arg-type]
    assert got == {"ens1": {"rx_prio3_packets": 5}, "ens2": {"rx_prio3_packets": 7}}
    [(host, command)] = runner.asked
    assert host == "gpu01" and command[-2:] == ("ens1", "ens2")


def test_a_host_capture_that_fails_is_the_reason_never_zeros() -> None:
    assert capture.capture_host(FakeRunner(255, "ssh: connect refused\n"), "gpu01", ["ens1"]) == (  # type: ignore[arg-type]
        "`ethtool -S` over ssh: ssh: connect refused"
    )
    said = capture.capture_host(FakeRunner(0, "NIC statistics:\n     rx: many\n"), "gpu01", ["ens1"])  # type: ignore[arg-type]
    assert isinstance(said, str) and said.startswith("`ethtool -S` output unreadable")


# NVIDIA's CL 5.16 samples (tests/data/real/INDEX.tsv): the nested counters table and the watchdog table.
REAL_NVUE = Path(__file__).resolve().parents[1] / "data" / "real" / "nvue"
NVUE_COUNTERS = (REAL_NVUE / "nv-show-interface-swp16-qos-roce-counters.txt").read_text()
NVUE_WATCHDOG = (REAL_NVUE / "nv-show-interface-swp1-qos-pfc-watchdog.txt").read_text()


class FakeSession:
    """A netmiko session that answers NVUE's show commands."""

    def __init__(self, answers: Mapping[str, str]) -> None:
        self.answers, self.closed = answers, False
        self.sent: list[str] = []

    def send_command(self, command: str, read_timeout: float) -> str:
        self.sent.append(command)
        return self.answers[command]

    def enable(self) -> None:
        self.sent.append("enable")

    def disconnect(self) -> None:
        self.closed = True


def login(name: str = "leaf01") -> SwitchLogin:
    return SwitchLogin(name, "cumulus_linux", "192.0.2.1", 22, "cumulus", "secret")


def test_a_leaf_capture_reads_drops_pause_and_ecn_of_each_port_and_the_watchdog() -> None:
    answers = {
        "nv show interface swp1 qos roce counters": NVUE_COUNTERS,
        "nv show interface swp1 qos pfc-watchdog": NVUE_WATCHDOG,
    }
    session = FakeSession(answers)
    got = capture.capture_switch(login(), "nvue", ["swp1"], lambda _login: session)
    assert isinstance(got, Collected), got
    assert got.errors == [] and session.closed
    # tx-stats -> tx-roce-stats -> unicast-no-buffer-discard, not the CNP copy (0) beside it
    assert got.get(QueueDrops, "swp1") == QueueDrops(roce_class=663060754115)
    assert got.get(capture.PortPauseEcn, "swp1") == capture.PortPauseEcn(0, 0, 693777677344)
    assert got.get(WatchdogStatus, "swp1") == WatchdogStatus((2, 7))
    assert session.sent == list(answers)  # each command once: the two captures make the difference


def test_an_eos_leaf_capture_reads_queue_drops_and_the_watchdog_in_privileged_mode() -> None:
    # Outputs of the lab's mock EOS after one modelled flow into Ethernet1 under switch-pfc-prio.
    data = Path(__file__).resolve().parents[1] / "data" / "switch" / "switch-pfc-prio" / "leaf03"
    watchdog = (data / "eos.watchdog_counters.txt").read_text()
    answers = {
        "show interfaces counters queue detail | json": (data / "eos.queue_drops.txt").read_text(),
        "show priority-flow-control counters watchdog | json": watchdog,
    }
    session = FakeSession(answers)
    got = capture.capture_switch(login("leaf03"), "eos", ["Ethernet1", "Ethernet2"], lambda _login: session)
    assert isinstance(got, Collected), got
    assert got.errors == [] and session.closed
    assert session.sent == ["enable", *answers]  # each command once, after `enable`
    drops = got.get(QueueDrops, "Ethernet1")
    assert isinstance(drops, QueueDrops) and dict(drops.by_queue)[3] == 16
    assert got.get(WatchdogStatus, "Ethernet1") == WatchdogStatus(stormed=())


def test_an_unreachable_leaf_is_the_reason_and_no_platform_but_nvue_shows_pause_and_ecn() -> None:
    from fabcheck.switch.connect import ConnectError

    def refuse(_login: SwitchLogin) -> Any:
        raise ConnectError("switch leaf01 (192.0.2.1:22): no SSH answer within 10 s")

    assert capture.capture_switch(login(), "nvue", ["swp1"], refuse) == (
        "switch leaf01 (192.0.2.1:22): no SSH answer within 10 s"
    )
    assert capture.reads("nvue", QueueDrops) and capture.reads("sonic", WatchdogStatus)
    assert capture.reads("eos", QueueDrops) and capture.reads("eos", WatchdogStatus)
    assert not capture.reads("eos", capture.PortPauseEcn) and not capture.reads("sonic", capture.PortPauseEcn)


# -- the verdict ----------------------------------------------------------------------------------


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
