"""How fabcheck reaches a node: its ssh target from the inventory's connection variables (checked, never
passed to a shell unquoted), the time limits of a round trip, and the one ssh runner that the host, the
subnet-manager and the perftest collections share.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import selectors
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fabcheck.collect.script import OutputCaps, SectionReader, Sections
from fabcheck.parsers.numbers import is_int_token


class ConnectionVarError(ValueError):
    """An inventory connection variable fabcheck cannot use: names the variable, its value and its origin."""

    def __init__(self, variable: str, value: object, allowed: str, where: str = "") -> None:
        self.variable = variable
        self.value = value
        self.allowed = allowed
        self.where = where  # "file:line: " when the inventory tags the value with its origin
        super().__init__(str(self))

    def __str__(self) -> str:
        # ansible's tagged str/int subclasses print like the plain value; a long value is cut.
        plain = str(self.value) if isinstance(self.value, str) else self.value
        shown = repr(plain)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        return f"{self.where}{self.variable} = {shown}: {self.allowed}"


_UNSAFE_WORD = re.compile(r"[\s\x00-\x1f\x7f]")


def _origin(value: object) -> str:
    from fabcheck.intent.loader import where_of  # the loader's origin lookup (ansible's value tags)

    try:
        return where_of(value)
    except Exception:  # an origin is a courtesy; a value without one is still reported
        return ""


def _var(variables: Mapping[str, Any], *names: str) -> tuple[str, Any]:
    """The first of several alias variables that is set (Ansible's own precedence), and its value."""
    for name in names:
        if variables.get(name) is not None:
            return name, variables[name]
    return names[0], None


def _reject(name: str, value: object, allowed: str) -> ConnectionVarError:
    return ConnectionVarError(name, value, allowed, _origin(value))


def _no_template(name: str, value: str) -> None:
    if "{{" in value or "{%" in value:
        raise _reject(name, value, "templated connection variables are not resolved by validate; set a value")


def _port(variables: Mapping[str, Any]) -> int | None:
    name, value = _var(variables, "ansible_port", "ansible_ssh_port")
    if value is None:
        return None
    allowed = "a TCP port, an integer 1..65535"
    if isinstance(value, bool):
        raise _reject(name, value, allowed)
    if isinstance(value, str):
        _no_template(name, value)
        if not is_int_token(value.strip(), max_digits=5):
            raise _reject(name, value, allowed)
        number = int(value.strip())
    elif isinstance(value, int):
        number = value
    else:
        raise _reject(name, value, allowed)
    if not 1 <= number <= 65535:
        raise _reject(name, value, allowed)
    return number


def _word(variables: Mapping[str, Any], allowed: str, *names: str, dash_ok: bool = True) -> str | None:
    """A one-word variable (host, user, key path): a string with no blank or control character."""
    name, value = _var(variables, *names)
    if value is None:
        return None
    if not isinstance(value, str) or not value or _UNSAFE_WORD.search(value):
        raise _reject(name, value, allowed)
    if not dash_ok and value.startswith("-"):
        raise _reject(name, value, allowed)
    _no_template(name, value)
    return str(value)


def _ssh_args(variables: Mapping[str, Any]) -> list[str]:
    options: list[str] = []
    for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        value = variables.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str) or "\x00" in value:
            raise _reject(name, value, "ssh options as one string, e.g. '-o ProxyJump=bastion'")
        _no_template(name, value)
        try:
            options += _split_words(str(value))
        except ValueError as err:
            raise _reject(name, value, f"cannot be split like a shell command line ({err})") from None
    return options


@functools.lru_cache(maxsize=64)
def _split_words(value: str) -> tuple[str, ...]:
    # Every host of a fleet usually shares its group's ssh options: split each distinct string once.
    return tuple(shlex.split(value))


@dataclass(frozen=True)
class SshTarget:
    """How to reach one inventory host, from the connection variables Ansible uses."""

    name: str
    address: str
    port: int | None = None
    user: str | None = None
    private_key: str | None = None
    extra_options: tuple[str, ...] = ()

    @classmethod
    def from_host_vars(cls, name: str, variables: Mapping[str, Any]) -> SshTarget:
        """Raises ConnectionVarError naming the variable and its value when one cannot be used."""
        address = _word(variables, "a host name or address (no blanks)", "ansible_host", "ansible_ssh_host")
        user = _word(
            variables,
            "a user name (no blanks, no leading '-')",
            "ansible_user",
            "ansible_ssh_user",
            dash_ok=False,
        )
        key = _word(
            variables,
            "a key file path (no blanks)",
            "ansible_ssh_private_key_file",
            "ansible_private_key_file",
        )
        return cls(
            name=name,
            address=address or name,
            port=_port(variables),
            user=user,
            private_key=key,
            extra_options=tuple(_ssh_args(variables)),
        )

    def argv(self, remote_command: str, connect_timeout_s: int, *, stdin: bool = False) -> list[str]:
        """ssh argv; host-key checking stays as configured (ssh_config / the inventory's options).
        With ``stdin`` ssh passes its standard input on (no -n): the remote side sees it close."""
        argv = ["ssh", "-o", "BatchMode=yes"] if stdin else ["ssh", "-n", "-o", "BatchMode=yes"]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.user:
            argv += ["-l", self.user]
        if self.private_key:
            argv += ["-i", self.private_key]
        # ssh keeps the first value of an option. First ours: no ControlMaster outlives its round trip
        # (a master the inventory's options open would stay for ControlPersist and hold a connection
        # beyond --concurrency; one already open, e.g. Ansible's, is still used). Then the inventory's
        # options, which win over the connect timeout default and over our key exchange: curve25519-sha256
        # offered first (`^`: the default set kept after it) costs the client ~8 ms of CPU a connection
        # against ~66 ms for OpenSSH 9's default sntrup761x25519 (docs/performance.md, Benchmarks); an
        # inventory KexAlgorithms comes earlier and wins.
        argv += ["-o", "ControlPersist=no", *self.extra_options, "-o", f"ConnectTimeout={connect_timeout_s}"]
        argv += ["-o", f"KexAlgorithms={FAST_KEX}"] if fast_kex_known() else []
        return [*argv, "--", self.address, remote_command]

    @property
    def where(self) -> str:
        return f"{self.address}:{self.port}" if self.port else self.address


# The host's own limit fires first; this leaves its partial output and exit code time to arrive.
GRACE_S = 5.0
FAST_KEX = "^curve25519-sha256"  # `^`: prepended to the client's default set (Debian 12's OpenSSH 9.2)


@functools.cache
def fast_kex_known() -> bool:
    """Whether this ssh client takes FAST_KEX (an older one refuses `^` lists): asked once per run."""
    try:
        done = subprocess.run(
            ["ssh", "-G", "-o", f"KexAlgorithms={FAST_KEX}", "fabcheck-kex-probe"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "kexalgorithms curve25519-sha256," in done.stdout


CONNECT = "connect"
COMMAND = "command"


@dataclass(frozen=True)
class TimeLimits:
    """How long one host's round trip may take, in parts that each say what expired.

    connect_s: ssh ConnectTimeout (TCP connect and the banner exchange). command_s: the collection on
    the host, enforced there by `timeout` and by the client with a grace period; each tool on the host
    gets ``per_tool_s`` of it. cap_s: the run's deadline leaves this host no more than this.
    counter_window_s: the whole seconds the host collection waits between its two counter readings
    (`--counter-window`); the host's limit grows by it, a tool's does not (`with_window`).
    """

    connect_s: float = 10.0
    command_s: float = 30.0
    cap_s: float | None = None
    per_tool_s: float | None = None  # default: a third of the host's limit
    counter_window_s: int = 0

    def __post_init__(self) -> None:
        for value in (self.connect_s, self.command_s, self.cap_s, self.per_tool_s):
            if value is not None and not (0 < value < math.inf):
                raise ValueError(f"time limits must be positive and finite, not {value}")
        window = self.counter_window_s
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ValueError(f"the counter window must be whole seconds, at least 0, not {window!r}")

    @property
    def ssh_connect_timeout(self) -> int:
        return max(1, math.ceil(self.connect_s))

    @property
    def _command_s(self) -> int:
        return max(1, math.ceil(self.command_s))

    @property
    def host_s(self) -> int:
        """The collection's limit on the host: its commands' time and the counter window."""
        return self._command_s + self.counter_window_s

    @property
    def tool_s(self) -> int:
        # A third: one hung tool leaves time for the others, so the host is still mostly judged.
        wanted = self._command_s / 3 if self.per_tool_s is None else self.per_tool_s
        return max(1, min(self._command_s, math.ceil(wanted)))

    @property
    def client_s(self) -> float:
        total = self.ssh_connect_timeout + self.host_s + GRACE_S
        return total if self.cap_s is None else min(total, self.cap_s)

    def with_window(self, window_s: int) -> TimeLimits:
        """These limits with a counter window: the host collection waits it between its readings."""
        return dataclasses.replace(self, counter_window_s=window_s)

    def within(self, left_s: float) -> TimeLimits:
        """These limits, shortened so that the whole round trip ends within ``left_s``. The counter
        window keeps at most half of what is left, so the readings around it still have time."""
        if left_s >= self.client_s:
            return self
        window = min(self.counter_window_s, math.floor(left_s / 2))
        rest = left_s - window
        return TimeLimits(
            min(self.connect_s, rest), min(self.command_s, rest), left_s, self.per_tool_s, window
        )


def text_of(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def ssh_said(stderr: str) -> str:
    """What ssh (or the remote shell) printed on stderr, in a few lines: the reason a user needs."""
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines()]
    lines = [line for line in lines if line and not line.startswith("Warning: Permanently added")]
    said = "; ".join(dict.fromkeys(lines[-3:]))
    return said if len(said) <= 300 else said[:300] + "..."


def ended_early(where: str, rc: int | None, stderr: str) -> str:
    """Why a round trip that ran gave no complete answer: the exit status and what was said on stderr
    (ssh's, or the remote script's own refusal, e.g. "fabcheck: bad CA port")."""
    said = ssh_said(stderr)
    return f"ssh to {where} ended early (exit {rc})" + (f": {said}" if said else "")


@dataclass(frozen=True)
class RoundTrip:
    """What one ssh round trip of a marked-section script brought back (fabcheck.collect.script)."""

    parsed: Sections
    rc: int | None  # None: the client gave up (time or output cap), or ssh could not start
    stderr: str
    timed_out: bool = False  # the client's limit (TimeLimits.client_s) ended it
    error: str | None = None  # ssh could not start at all


STDERR_KEEP_BYTES = 64 * 1024  # ssh's own words are in its last lines; a flood before them is dropped
_READ_BYTES = 256 * 1024


class CommandTarget(Protocol):
    """Where round_trip runs a launcher line: an SshTarget, or this node itself
    (fabcheck.collect.backends.local.LocalTarget, for `fabcheck node-check`)."""

    def argv(self, remote_command: str, connect_timeout_s: int, *, stdin: bool = False) -> list[str]: ...


def round_trip(
    target: CommandTarget,
    remote: str,
    token: str,
    limits: TimeLimits,
    caps: OutputCaps | None = None,
    *,
    watch_stdin: bool = False,
) -> RoundTrip:
    """Run `remote` (a launcher line from fabcheck.collect.script) on the target over ssh, once, within
    the client's limit; never raises for an unreachable node.

    The output is read as it arrives (fabcheck.collect.script.SectionReader, under `caps`): ssh is
    stopped once the round trip cap is reached, so a node that prints without end costs the controller
    at most the caps. With `watch_stdin` ssh's standard input is a pipe this process holds open and never
    writes: when this process dies, however, it closes, and the remote command can see that
    (script.STDIN_WATCHER)."""
    argv = target.argv(remote, limits.ssh_connect_timeout, stdin=watch_stdin)
    reader = SectionReader(token, caps)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if watch_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as err:
        return RoundTrip(Sections(), None, "", error=f"cannot run ssh: {err.strerror or err}")
    stderr = bytearray()
    ends_at = time.monotonic() + limits.client_s
    try:
        timed_out, cut = _read_until_closed(process, reader, stderr, ends_at)
        stopped = timed_out or cut
        if not stopped:
            try:
                process.wait(timeout=max(0.0, ends_at - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = stopped = True
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    text = text_of(bytes(stderr))
    rc = None if stopped else process.returncode
    return RoundTrip(reader.finish(), rc, text, timed_out=timed_out)


def _read_until_closed(
    process: subprocess.Popen[bytes], reader: SectionReader, stderr: bytearray, ends_at: float
) -> tuple[bool, bool]:
    """Read ssh's stdout into the reader and the tail of its stderr until both close; (timed out,
    round trip cap reached)."""
    assert process.stdout is not None and process.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, "stdout")
        selector.register(process.stderr, selectors.EVENT_READ, "stderr")
        while selector.get_map():
            left = ends_at - time.monotonic()
            if left <= 0:
                return True, False
            for key, _events in selector.select(left):
                data = os.read(key.fd, _READ_BYTES)
                if not data:
                    selector.unregister(key.fileobj)
                elif key.data == "stderr":
                    stderr += data
                    del stderr[:-STDERR_KEEP_BYTES]
                elif not reader.feed(data):
                    return False, True
    return False, False


def run_command(
    target: SshTarget, command: Sequence[str], connect_timeout_s: int, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """One command (argv words, shell-quoted here) on the target over ssh, stdout and stderr together;
    exit 124 when `timeout_s` ended it, 127 when ssh could not start."""
    argv = target.argv(shlex.join(command), connect_timeout_s)
    try:
        return subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, f"timed out after {timeout_s:g} s\n")
    except OSError as err:
        return subprocess.CompletedProcess(argv, 127, f"cannot run {argv[0]}: {err.strerror or err}\n")
