"""fabcheck.incast.capture: a host capture is one round trip for every netdev, a leaf capture reads drops,
pause, ECN marks and the watchdog of each port (recorded NVUE outputs, fake sessions), and a capture
that fails is the reason, never zeros."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fabcheck.collect.probes import Collected
from fabcheck.incast import capture
from fabcheck.parsers.switch_records import QueueDrops, WatchdogStatus
from fabcheck.switch.connect import SwitchLogin


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
