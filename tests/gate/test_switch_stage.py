"""The switch stage with stand-in sessions answering from captured mock outputs: an unreachable switch
is an error for it alone, a session that dies stops sending, concurrency bounds the open sessions,
and logins resolve the password as the switch_qos role does without ever showing it."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ansible.template import trust_as_template

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from switchfabric import DATA, SWITCHES, fabric, snapshot_stem
from switchgate import collect_switches

from fabcheck.checks.model import Status
from fabcheck.collect.switch import switch_login
from fabcheck.collect.switch_probes import PROBES, RELEASE_READS
from fabcheck.errors import IntentError
from fabcheck.switch.connect import ConnectError, SwitchLogin

SECRET = "Sw1tch-S3cret"


def login(name: str) -> SwitchLogin:
    return SwitchLogin(name, "linux", "127.0.0.1", 22, "admin", SECRET, read_timeout_s=5)


class Replay:
    """A netmiko stand-in: each show command answered from tests/data/switch/<state>/<switch>/."""

    open_now = 0
    most_open = 0
    lock = threading.Lock()

    def __init__(self, name: str, state: str = "converged", die_after: int | None = None) -> None:
        self.name, self.folder, self.die_after = name, DATA / state / name, die_after
        self.sent: list[str] = []
        self.answers = {}
        ports = [p for p in _ports(name)]
        for probe in PROBES[SWITCHES[name]]:
            for port in ports if probe.scope == "switch-port" else [None]:
                self.answers[probe.command_for(port)] = (probe.name, probe.counter, port)
        release_read = RELEASE_READS.get(SWITCHES[name])
        if release_read is not None:  # read first where probes are bound to releases
            self.answers[release_read.command] = (release_read.name, False, None)
        with Replay.lock:
            Replay.open_now += 1
            Replay.most_open = max(Replay.most_open, Replay.open_now)

    def enable(self) -> None:
        self.sent.append("enable")

    def send_command(self, command: str, read_timeout: float) -> str:
        from netmiko.exceptions import ReadTimeout

        time.sleep(0.001)  # let other sessions' threads run while this one is open
        if self.die_after is not None and len(self.sent) >= self.die_after:
            raise ReadTimeout(f"Pattern not detected: 'admin@{self.name}' in output. {SECRET}")
        self.sent.append(command)
        probe, counter, port = self.answers[command]
        stem = snapshot_stem(probe, port)
        before = self.folder / f"{stem}.before.txt"
        if counter and self.sent.count(command) == 1 and before.exists():
            return before.read_text()
        return (self.folder / f"{stem}.txt").read_text()

    def disconnect(self) -> None:
        with Replay.lock:
            Replay.open_now -= 1


def _ports(name: str) -> list[str]:
    from switchfabric import desired

    return [port.port for port in desired(name).ports]


def _desired() -> dict[str, Any]:
    from switchfabric import desired

    return {name: desired(name) for name in SWITCHES}


def test_an_unreachable_switch_is_an_error_for_it_only() -> None:
    def connect(lg: SwitchLogin) -> Replay:
        if lg.name == "leaf02":
            raise ConnectError(f"switch {lg.name} (127.0.0.1:22, linux): no SSH answer within 3 s")
        return Replay(lg.name)

    results = collect_switches(_desired(), {n: login(n) for n in SWITCHES}, connect=connect)
    findings = [finding for result in results for finding in result.findings]
    by_switch = {n: {f.status for f in findings if f.subject.split(":")[0] == n} for n in SWITCHES}
    assert by_switch["leaf02"] == {Status.ERROR}
    assert Status.ERROR not in by_switch["leaf01"] | by_switch["leaf03"]
    assert Status.FAIL not in by_switch["leaf01"] | by_switch["leaf03"]
    assert all("no SSH answer" in f.hint for f in findings if f.subject == "leaf02")


def test_a_session_that_dies_sends_nothing_more_and_errors_without_the_secret() -> None:
    sessions: dict[str, Replay] = {}

    def connect(lg: SwitchLogin) -> Replay:
        sessions[lg.name] = Replay(lg.name, die_after=3)
        return sessions[lg.name]

    results = collect_switches(_desired(), {"leaf01": login("leaf01")}, connect=connect, switches=["leaf01"])
    assert len(sessions["leaf01"].sent) == 3
    findings = results[0].findings
    assert Status.ERROR in {f.status for f in findings} and Status.FAIL not in {f.status for f in findings}
    assert all(SECRET not in f.hint + f.actual for f in findings)
    assert any("session was lost" in f.hint for f in findings)


def test_open_sessions_never_exceed_the_concurrency() -> None:
    Replay.most_open = 0
    names = list(SWITCHES) * 3
    logins = {n: login(n) for n in SWITCHES}
    for _ in range(2):
        collect_switches(
            _desired(), logins, concurrency=2, connect=lambda lg: Replay(lg.name), switches=names
        )
    assert 1 <= Replay.most_open <= 2 and Replay.open_now == 0


def test_eos_sessions_are_privileged_first() -> None:
    sessions: dict[str, Replay] = {}

    def connect(lg: SwitchLogin) -> Replay:
        sessions[lg.name] = Replay(lg.name)
        return sessions[lg.name]

    collect_switches(_desired(), {"leaf03": login("leaf03")}, connect=connect, switches=["leaf03"])
    assert sessions["leaf03"].sent[0] == "enable"
    assert all(c.startswith("show ") for c in sessions["leaf03"].sent[1:])


def test_logins_resolve_the_password_as_the_role_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    switch = fabric().switch("leaf01")
    monkeypatch.setenv("LAB_PW", SECRET)
    template = trust_as_template("{{ lookup('ansible.builtin.env', 'LAB_PW') }}")  # as the inventory loads it
    resolved = switch_login(switch, {"switch_password": template})
    assert resolved.password == SECRET and SECRET not in repr(resolved)
    fallback = switch_login(switch, {}, environ={"FABCHECK_SWITCH_PASSWORD": SECRET})
    assert fallback.password == SECRET
    known = tmp_path / "known_hosts"
    assert (
        switch_login(switch, {"switch_password": "x", "switch_known_hosts": str(known)}).known_hosts == known
    )
    with pytest.raises(IntentError) as refused:
        switch_login(switch, {}, environ={})
    assert "FABCHECK_SWITCH_PASSWORD" in str(refused.value)
    with pytest.raises(IntentError) as broken:
        missing = trust_as_template("{{ lookup('ansible.builtin.file', '/nonexistent/" + SECRET + "') }}")
        switch_login(switch, {"switch_password": missing})
    assert SECRET not in str(broken.value)
