"""Switch reads through the shared read path (fabcheck.collect.switch) against the lab's mock switch
server, in this process on loopback: real SSH (asyncssh) and real netmiko sessions.

Issue 23 "reads flake under load": a command's output never includes a prompt or an echo, whatever the
timing; the mock made hostile (mockswitch.server.Timing: every write split, its pieces late, the prompt
cut too, lines typed meanwhile echoed together) reproduces the race netmiko's per-command prompt lookup
loses (7 of 10 SONiC sessions read `admin@leaf02:~$ {` with it), and 200 sessions in a row read
clean.
Issue 27: a switch answering every piece late is bounded by the run's deadline and is an error naming
the command; a switch silent after login is an error for that switch, never a traceback.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fabcheck.collect.probes import Collected
from fabcheck.collect.switch import collect_switch, command_output
from fabcheck.collect.switch_probes import PROBES
from fabcheck.intent.platforms import DEVICE_TYPES
from fabcheck.switch.connect import SwitchLogin, connect
from fabcheck_lab.mockswitch.server import SwitchServer, Timing
from fabcheck_lab.mockswitch.spec import SwitchSpec, known_hosts_path, write_spec

PORTS = {"nvue": ("swp1", "swp2"), "sonic": ("Ethernet0", "Ethernet8"), "eos": ("Ethernet1/1", "Ethernet2/1")}
USERS = {"nvue": "cumulus", "sonic": "admin", "eos": "admin"}
PASSWORD = "not-a-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Switches:
    """The mock switch server of one switch per platform, served by a thread of this process."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.specs = {
            platform: SwitchSpec(
                f"leaf0{i}", platform, "127.0.0.1", free_port(), USERS[platform], PASSWORD, ports
            )
            for i, (platform, ports) in enumerate(PORTS.items(), 1)
        }
        write_spec(run_dir, list(self.specs.values()))
        self.server = SwitchServer(run_dir)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(60)

    def login(self, platform: str, read_timeout_s: float = 20.0) -> SwitchLogin:
        spec = self.specs[platform]
        return SwitchLogin(
            spec.name,
            DEVICE_TYPES[platform],
            spec.address,
            spec.port,
            spec.username,
            PASSWORD,
            known_hosts_path(self.run_dir),
            connect_timeout_s=10.0,
            read_timeout_s=read_timeout_s,
            fast_cli=True,
        )

    def behave(self, platform: str, timing: Timing | None) -> None:
        name = self.specs[platform].name
        if timing is None:
            self.server.timing.pop(name, None)
        else:
            self.server.timing[name] = timing

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Switches]:
    served = Switches(tmp_path_factory.mktemp("switches"))
    try:
        yield served
    finally:
        served.close()


def read(
    switches: Switches, platform: str, probes: int, ends_at: float | None = None, **login: float
) -> Collected | str:
    spec = switches.specs[platform]
    return collect_switch(
        switches.login(platform, **login),
        platform,
        PROBES[platform][:probes],
        spec.ports[:1],
        connect,
        ends_at,
    )


# ---- the output of a command, whatever came around it ----------------------------------------------

PROMPT = "admin@leaf02:~"
JSON = '{\n  "Ethernet0": {}\n}'


def no_more(_wait: float, _have: str) -> str:
    raise AssertionError("read on although the output was whole")


@pytest.mark.parametrize(
    "raw",
    [
        f"show x --json\n{JSON}\n{PROMPT}$ ",  # as it should be
        f"{PROMPT}$ \n{PROMPT}$ show x --json\n{JSON}\n{PROMPT}$ ",  # stray prompts before the echo
        f"show x --json\n{PROMPT}$ {JSON}\n{PROMPT}$ ",  # a typed-ahead line's prompt after the echo
        f"show x --json\r\n{PROMPT}$ {PROMPT}$ {JSON}\r\n{PROMPT}$ ",  # two of them, tty line ends
    ],
)
def test_the_output_is_what_lies_between_the_echo_and_the_prompt(raw: str) -> None:
    assert command_output(raw, "show x --json", PROMPT, no_more) == JSON


def test_a_read_stopped_at_a_stray_prompt_reads_on_to_the_commands_own() -> None:
    """What netmiko returns when it stopped at the stray prompt: the rest is read up to the next one."""
    asked: list[float] = []

    def more(wait: float, _have: str) -> str:
        asked.append(wait)
        return f'": {{}}\n}}\r\n{PROMPT}$ '

    assert command_output(f'show x --json\n{PROMPT}$ {{\n  "Ethernet0', "show x --json", PROMPT, more) == JSON
    assert asked == [float("inf")]  # no wait of its own: the command's read timeout bounds it


def test_an_empty_output_after_a_stray_prompt_waits_briefly_for_more() -> None:
    assert command_output(f"show x\n{PROMPT}$ ", "show x", PROMPT, lambda _wait, _have: "") == ""


# ---- against the mock switch server ------------------------------------------------------------------

HOSTILE = Timing(delay_s=0.05, chunk_bytes=2, pieces=3)
SESSIONS = 200


def test_two_hundred_sessions_in_a_row_read_clean(switches: Switches) -> None:
    """200 hostile sessions (a third per platform, 10 at once): every one reads without error, and no
    output holds a prompt or an echo."""
    for platform in PORTS:
        switches.behave(platform, HOSTILE)
    platforms = [list(PORTS)[i % len(PORTS)] for i in range(SESSIONS)]
    try:
        with ThreadPoolExecutor(max_workers=10) as pool:
            # The read timeout is generous: this test is about what a read returns, and a loaded CI
            # machine (10 sessions and the server in one process) must not turn slowness into errors.
            sessions = list(pool.map(lambda p: (p, read(switches, p, 1, read_timeout_s=120)), platforms))
    finally:
        for platform in PORTS:
            switches.behave(platform, None)
    failed = [
        (platform, got if isinstance(got, str) else [(e.command, e.reason) for e in got.errors])
        for platform, got in sessions
        if isinstance(got, str) or got.errors
    ]
    assert not failed, f"{len(failed)} of {SESSIONS} sessions: {failed[:3]}"
    for platform, got in sessions:
        assert isinstance(got, Collected) and got.outputs
        name = switches.specs[platform].name
        for output in got.outputs:
            lines = output.text.strip().splitlines() or [""]
            for line in (lines[0], lines[-1]):  # no prompt (`admin@leaf02:~$ `, `leaf03#`), no echo
                assert not re.match(rf"\S*{name}\S*[#$>]", line) and line.strip() != output.command


def test_a_switch_late_with_every_piece_is_an_error_by_the_deadline(switches: Switches) -> None:
    switches.behave("nvue", Timing(delay_s=1.5, chunk_bytes=40, pieces=1000))
    try:
        started = time.monotonic()
        got = read(switches, "nvue", 4, ends_at=started + 8)
        took = time.monotonic() - started
    finally:
        switches.behave("nvue", None)
    assert took < 8 + 5, took  # the deadline, plus one read loop and the disconnect
    if isinstance(got, str):  # too slow even to log in before the deadline
        assert "switch leaf01" in got
        return
    assert got.errors and not got.records
    first = got.errors[0]
    assert first.reason.startswith(f"switch leaf01: `{first.command}`: no complete answer within")
    assert all("not sent" in e.reason for e in got.errors[1:])


def test_a_switch_silent_after_login_is_an_error_for_it(switches: Switches) -> None:
    switches.behave("sonic", Timing(silent_after=0))
    try:
        started = time.monotonic()
        got = read(switches, "sonic", 2, read_timeout_s=3.0)
        took = time.monotonic() - started
    finally:
        switches.behave("sonic", None)
    assert isinstance(got, str), got
    assert got.startswith("switch leaf02 (127.0.0.1:") and "logged in, but no prompt within 3 s" in got
    assert took < 60, took


def test_a_switch_silent_after_its_first_answer_names_the_command(switches: Switches) -> None:
    switches.behave("sonic", Timing(silent_after=1))  # the login's prompt, one answer, then nothing
    try:
        got = read(switches, "sonic", 3, read_timeout_s=3.0)
    finally:
        switches.behave("sonic", None)
    if isinstance(got, str):  # netmiko's login itself sent the line that got the one answer
        assert "switch leaf02" in got and PASSWORD not in got
        return
    assert got.errors and "no complete answer within 3 s" in got.errors[0].reason
