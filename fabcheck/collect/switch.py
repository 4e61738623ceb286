"""One read-only session to a switch: connect, prepare, the probes over the ports, disconnect.

The gate's switch stage (fabcheck.gate.switch_stage) and the incast captures both read switches
through `collect_switch`: the platform's probes (fabcheck.collect.switch_probes), each bounded by the
login's read timeout and by the run's deadline; after a timeout or a lost channel no further command
is sent. A command's output is what the switch printed between the echo of that command and the next
prompt, never a prompt or an echo, whatever the timing (`command_output`). Logins come from
the inventory as the switch_qos role gets them (switch_password from ansible-vault or a lookup, else
FABCHECK_SWITCH_PASSWORD); the password appears in no message. Nothing here judges what it reads.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fabcheck.collect.probes import Collected, Probe, collect
from fabcheck.collect.switch_probes import RELEASE_READS
from fabcheck.errors import FabcheckError, IntentError
from fabcheck.intent import ansible_session
from fabcheck.intent.fabric import Switch
from fabcheck.intent.platforms import platform_named
from fabcheck.switch.connect import ConnectError, SwitchLogin

PASSWORD_ENV = "FABCHECK_SWITCH_PASSWORD"  # the switch_qos role's fallback, read the same way here
GATE_CONNECT_TIMEOUT_S = 10.0
GATE_READ_TIMEOUT_S = 20.0  # one show command; a healthy switch answers in well under a second


class SessionLost(FabcheckError):
    """A show command timed out or the channel closed; the session's remaining probes are not sent."""


Connect = Callable[[SwitchLogin], Any]


def collect_switch(
    login: SwitchLogin,
    platform: str,
    probes: Sequence[Probe],
    ports: Sequence[str],
    connect: Connect,
    ends_at: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    window_s: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Collected | str:
    """One read-only session: connect, prepare, the probes over the ports, disconnect. A str says why
    the switch could not be read at all (unreachable, or the session died before any probe).

    With `ends_at` (the run's deadline on `clock`) the login and every command are cut to end by it,
    and a command that would start after it is not sent: the probe is an error naming it. The counter
    probes are read `window_s` apart (collect.probes.collect); the wait between ends at the deadline."""
    if ends_at is not None:
        left = ends_at - clock()
        if left <= 0:
            return f"switch {login.name}: not read: the run's deadline passed before its session started"
        login = dataclasses.replace(
            login,
            connect_timeout_s=min(login.connect_timeout_s, left),
            read_timeout_s=min(login.read_timeout_s, left),
        )
    try:
        connection = connect(login)
    except ConnectError as err:
        return str(err)
    except Exception as err:  # whatever the library raises while logging in: an error for this switch
        return f"switch {login.name}: the session did not start: {_reason(err, login)}"
    try:
        runner = _Runner(connection, login, ends_at, clock)
        try:
            runner.prepare(platform_named(platform).needs_enable)
        except SessionLost as err:
            return str(err)

        def wait(seconds: float) -> None:
            sleep(seconds if ends_at is None else max(0.0, min(seconds, ends_at - clock())))

        release_read = RELEASE_READS.get(platform)
        return collect(runner.run, probes, ports, f"switch {login.name}", window_s, wait, clock, release_read)
    finally:
        _disconnect(connection)


_WHOLE_PROMPT = r"[\r\n][^\r\n]*[#$>%] ?$"
_NOT_A_PROMPT = re.compile(r"[#$>%] |\s")
# After a prompt that followed the echo at once (a stray, answering a line sent before this command), the
# output may be empty or still to come: this long at most is waited for the prompt that ends it.
STRAY_PROMPT_WAIT_S = 2.0


class _Runner:
    """Sends one show command at a time on the session; after a timeout or a lost channel, no more."""

    def __init__(
        self,
        connection: Any,
        login: SwitchLogin,
        ends_at: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.connection = connection
        self.login = login
        self.ends_at = ends_at
        self.clock = clock
        self.lost: str | None = None

    def prepare(self, needs_enable: bool) -> None:
        """The session's prompt, then privileged mode where the platform's shows need it (its record's
        needs_enable)."""
        self._guard("the prompt", self._learn_prompt, self.login.read_timeout_s)
        if needs_enable:
            self._guard("enable", self._enable, self.login.read_timeout_s)

    def _learn_prompt(self) -> None:
        """The prompt as the whole line after an empty line's echo. netmiko takes the last line of what
        it read after a clear_buffer; when a prompt arrives in pieces that may be its tail only
        (`leaf02:~$`), and every read anchored on it then stops early."""
        from netmiko import BaseConnection

        connection = self.connection
        if not isinstance(connection, BaseConnection):  # a replayed or scripted session
            return
        found = str(connection.base_prompt).rstrip("#$>% ")  # netmiko's may be a bare `>` too
        for _attempt in range(3):
            timeout = self._left(self.login.read_timeout_s, "the prompt")
            connection.read_timeout_override = timeout
            connection.write_channel(connection.RETURN)
            # Up to a prompt that ends what was read and follows a line end: this empty line's, or a
            # whole earlier one (the same text).
            seen = str(connection.read_until_pattern(pattern=_WHOLE_PROMPT, read_timeout=timeout))
            whole = seen.replace("\r", "\n").rstrip(" ").rsplit("\n", 1)[-1][:-1]  # without # $ > %
            # Only a longer form of the prompt netmiko found, and one prompt: a banner line cut after a
            # `#` is none, nor are two prompts of typed-ahead lines on one line (`P$ P$ `).
            one = not found or whole.count(found) == 1
            if whole.endswith(found) and one and whole and not _NOT_A_PROMPT.search(whole):
                connection.base_prompt = whole
                return

    def _enable(self) -> None:
        """`enable`, read up to the privileged prompt (`NAME#`) that follows it: netmiko's own enable
        checks the mode by a prompt it asks for with an extra line, whose answer may be one that was
        already on its way (a stray `NAME>`), and then fails though the mode changed."""
        from netmiko import BaseConnection

        connection = self.connection
        if not isinstance(connection, BaseConnection):  # a replayed or scripted session
            connection.enable()
            return
        timeout = self._left(self.login.read_timeout_s, "enable")
        connection.read_timeout_override = timeout
        privileged = re.escape(str(connection.base_prompt)) + r"[^\s>#]*#"
        connection.write_channel(connection.normalize_cmd("enable"))
        connection.read_until_pattern(pattern=privileged, read_timeout=timeout)

    def run(self, command: str) -> str:
        if self.lost is not None:
            raise SessionLost(f"not sent: the session was lost earlier ({self.lost})")
        timeout = self._left(self.login.read_timeout_s, command)
        return self._guard(command, lambda: self._send(command, timeout), timeout)

    def _left(self, timeout: float, command: str) -> float:
        """The command's read timeout, cut to the run's deadline; SessionLost when none is left."""
        if self.ends_at is None:
            return timeout
        left = self.ends_at - self.clock()
        if left <= 0:
            self.lost = f"`{command}`: not sent: the run's deadline passed"
            raise SessionLost(f"switch {self.login.name}: {self.lost}")
        return min(timeout, left)

    def _send(self, command: str, timeout: float) -> str:
        from netmiko import BaseConnection

        if not isinstance(self.connection, BaseConnection):  # a replayed or scripted session
            return str(self.connection.send_command(command, read_timeout=timeout))
        return self._read(command, timeout)

    def _read(self, command: str, timeout: float) -> str:
        """The command's output, read up to the prompt that follows it. No line is sent but the
        command: a prompt looked up per command (netmiko's auto_find_prompt) sends a line whose prompt
        may come back after the next command's echo."""
        connection = self.connection
        # netmiko takes read_timeout_override over any read_timeout it is given: this command's.
        connection.read_timeout_override = timeout
        ends = self.clock() + timeout
        prompt = str(connection.base_prompt)
        pattern = re.escape(prompt)
        raw = connection.send_command(
            command,
            expect_string=pattern,
            read_timeout=timeout,
            auto_find_prompt=False,
            strip_prompt=False,
            strip_command=False,
        )

        def more(wait_s: float, have: str) -> str:
            """What comes up to the next prompt, searched across what `have` ends with: a prompt that
            arrives in pieces starts in what was read and ends in what comes."""
            from netmiko.exceptions import ReadTimeout

            until = min(self.clock() + wait_s, ends)
            tail, data = have[-(len(prompt) + 8) :], ""
            while self.clock() < until:
                data += str(connection.read_channel())
                if _ends_with_prompt(tail + data.replace("\r", "\n"), prompt):
                    return data
                time.sleep(0.01)
            if wait_s < math.inf:
                return data  # an empty output after all
            raise ReadTimeout(f"no prompt after the output of {command!r}")

        return command_output(str(raw), command, prompt, more)

    def _guard(self, what: str, call: Callable[[], Any], timeout: float | None = None) -> Any:
        from netmiko.exceptions import NetmikoBaseException, ReadTimeout
        from paramiko.ssh_exception import SSHException

        try:
            return call()
        except ReadTimeout:
            waited = self.login.read_timeout_s if timeout is None else timeout
            self.lost = f"`{what}`: no complete answer within {waited:g} s"
            raise SessionLost(f"switch {self.login.name}: {self.lost}") from None
        except (NetmikoBaseException, SSHException, OSError, EOFError, ValueError) as err:
            self.lost = f"`{what}`: {_reason(err, self.login)}"
            raise SessionLost(f"switch {self.login.name}: {self.lost}") from None


def command_output(raw: str, command: str, base_prompt: str, more: Callable[[float, str], str]) -> str:
    """What the switch printed for `command`: the lines after the line of its echo, up to the line of
    the prompt that ends it. A prompt right after the echo answers a line sent earlier (its echo came
    with this command's, as a tty echoes typed-ahead lines at once): it is dropped, and the output read
    on to the next prompt (`more(seconds, text so far)` reads up to it). Pure but for `more`."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    echo = text.find(command)
    if echo >= 0:
        line_end = text.find("\n", echo + len(command))
        text = "" if line_end < 0 else text[line_end + 1 :]
    stray = re.compile(r"\n*" + re.escape(base_prompt) + r"[^\s{\[]*?[#$>%] ?")
    while True:
        found = stray.match(text)
        if found is None:
            break
        text = text[found.end() :]
        if not _ends_with_prompt(text, base_prompt):
            wait = STRAY_PROMPT_WAIT_S if not text.strip() else math.inf
            text += more(wait, text).replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    while len(lines) > 1 and not lines[-1].strip() and base_prompt in lines[-2]:
        lines.pop()  # a line end after the prompt: the echo of a line typed ahead
    if lines and base_prompt in lines[-1]:
        lines = lines[:-1]  # the prompt that ended the output
    return "\n".join(lines)


def _ends_with_prompt(text: str, base_prompt: str) -> bool:
    last = text.rstrip().rsplit("\n", 1)[-1]
    return last.startswith(base_prompt)


def _reason(err: BaseException, login: SwitchLogin) -> str:
    said = str(err).strip()
    return _scrub(said.splitlines()[0] if said else type(err).__name__, login)[:200]


def _scrub(text: str, login: SwitchLogin) -> str:
    return text.replace(login.password, "<redacted>") if login.password else text


def _disconnect(connection: Any) -> None:
    try:
        connection.disconnect()
    except Exception:  # a session that is already gone needs no closing
        return


# -- credentials, as the switch_qos role reads them -------------------------------------------------


def switch_login(
    switch: Switch,
    variables: Mapping[str, Any],
    *,
    connect_timeout_s: float = GATE_CONNECT_TIMEOUT_S,
    read_timeout_s: float = GATE_READ_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
) -> SwitchLogin:
    """The login of one switch from its inventory variables (the password resolved, never shown)."""
    password = _password(
        switch.name, variables.get("switch_password"), variables, os.environ if environ is None else environ
    )
    known_hosts = variables.get("switch_known_hosts")
    return SwitchLogin(
        name=switch.name,
        device_type=switch.device_type,
        address=switch.address,
        port=switch.ssh_port,
        username=switch.username,
        password=password,
        known_hosts=Path(str(known_hosts)) if known_hosts else None,
        connect_timeout_s=connect_timeout_s,
        read_timeout_s=read_timeout_s,
        fast_cli=True,  # read-only show commands: netmiko's default timing is safe and 5x faster here
    )


def _password(name: str, raw: Any, variables: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    if raw is None:
        value = environ.get(PASSWORD_ENV, "")
        if not value:
            raise IntentError([f"{name}: switch_password is not set and {PASSWORD_ENV} is empty"])
        return value
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    ansible_session.init_collection_loader()  # lookups by full name, as in ansible-playbook
    try:
        value = Templar(loader=DataLoader(), variables=dict(variables)).template(raw)
    except Exception:  # ansible raises many types; its message may quote the secret
        raise IntentError(
            [f"{name}: switch_password: cannot resolve the value (vault password or lookup)"]
        ) from None
    text = str(value)
    if not text:
        raise IntentError([f"{name}: switch_password resolves to an empty string"])
    return text
