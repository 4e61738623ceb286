"""Runs perftest rounds on real hosts over ssh: per wave of pairs, every server first (each waits for
its client, so the client never races a listener that is not up), then every client, then the
servers' own output. A server that cannot take its port is restarted on another one."""

from __future__ import annotations

import dataclasses
import os
import selectors
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.checks.perftest import BANDWIDTH_INPUTS
from fabcheck.collect.ssh import SshTarget, TimeLimits, run_command
from fabcheck.desired.perftest import DesiredPerftest
from fabcheck.errors import ParseError
from fabcheck.launch.fanout import each, each_in_order
from fabcheck.pairs.commands import (
    PORT_RETRIES,
    HostSetup,
    PairCommand,
    pair_command,
    parse_setup,
    ports_of,
    setup_command,
)
from fabcheck.pairs.rounds import Pair, Round
from fabcheck.pairs.verdict import Measurement
from fabcheck.parsers.perftest import parse_perftest

SERVER_READY = "Waiting for client to connect"
# What a perftest server prints when its port is taken (and what the kernel says under it).
# Compared without case: perftest versions differ in capitals.
PORT_TAKEN = ("couldn't listen to port", "address already in use", "couldn't bind")


@dataclass
class _Server:
    command: PairCommand
    process: subprocess.Popen[bytes] | None
    output: str
    failure: str | None = None


@dataclass
class SshRunner:
    """Measures rounds of pairs on the hosts named by `targets` (inventory connection variables)."""

    targets: Mapping[str, SshTarget]
    desired: Mapping[str, DesiredPerftest]
    limits: TimeLimits = field(default_factory=TimeLimits)
    concurrency: int = 16
    setup: Mapping[str, HostSetup] = field(default_factory=dict)
    # Run each test for this many seconds (perftest -D) instead of a fixed iteration count (an incast
    # must keep its senders writing at once, whatever each link's speed).
    duration_s: int | None = None

    def probe(self, hosts: Sequence[str]) -> dict[str, HostSetup | str]:
        """numactl and NUMA nodes of each host's NICs; a host that cannot answer maps to the reason."""

        def one(host: str) -> HostSetup | str:
            done = self._ssh(host, setup_command(self.desired[host].nics), self.limits.client_s)
            if done.returncode != 0:
                return _said(done.stdout, f"exit status {done.returncode}")
            return parse_setup(done.stdout)

        return each(hosts, one, self.concurrency)

    def __call__(self, round_: Round, number: int) -> list[Measurement]:
        results: list[Measurement] = []
        step = max(1, self.concurrency)
        for start in range(0, len(round_), step):
            results += self._wave(round_[start : start + step], number)
        return results

    def _wave(self, pairs: Round, number: int) -> list[Measurement]:
        servers = each_in_order(pairs, lambda p: self._start_server(p, pairs), len(pairs))
        return each_in_order(servers, lambda s: self._finish(s, number), len(servers))

    def _start_server(self, pair: Pair, wave: Round) -> _Server:
        server = _Server(self._command(pair, wave, 0), None, "", "not started")
        for attempt in range(PORT_RETRIES):
            server = self._server(self._command(pair, wave, attempt))
            said = server.output.lower()
            taken = any(marker in said for marker in PORT_TAKEN)
            if server.failure is None or not taken:
                return server
        return server

    def _command(self, pair: Pair, wave: Round, attempt: int) -> PairCommand:
        port = ports_of(wave, attempt)[pair]
        address = self.targets[pair.server.host].address
        command = pair_command(pair, port, address, self.desired, self.setup, self.limits.command_s)
        return command if self.duration_s is None else timed(command, self.duration_s)

    def _server(self, command: PairCommand) -> _Server:
        argv = self._argv(command.pair.server.host, command.server)
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        except OSError as err:
            return _Server(command, None, "", f"cannot run ssh: {err.strerror or err}")
        deadline = time.monotonic() + self.limits.ssh_connect_timeout + self.limits.tool_s
        ready, output = _wait_for(process, SERVER_READY, deadline)
        if ready:
            return _Server(command, process, output)
        _stop(process)
        state = "exited" if process.returncode not in (None, -9) else "did not start in time"
        return _Server(command, None, output, f"server {state}: {_said(output, 'no output')}")

    def _finish(self, server: _Server, number: int) -> Measurement:
        pair = server.command.pair
        if server.failure is not None or server.process is None:
            return Measurement(pair, None, number, error=server.failure, evidence=server.output.strip())
        client = self._ssh(pair.client.host, server.command.client, self.limits.client_s)
        try:
            rest, _ = server.process.communicate(timeout=self.limits.client_s)
            server.output += rest.decode(errors="replace")
        except subprocess.TimeoutExpired:
            _stop(server.process)
        return measurement_of(pair, number, client)

    def run_on(self, host: str, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        """One command on one host over its ssh target, within the client's limit (a counter capture
        before and after a load)."""
        return self._ssh(host, command, self.limits.client_s)

    def _argv(self, host: str, command: Sequence[str]) -> list[str]:
        return self.targets[host].argv(shlex.join(command), self.limits.ssh_connect_timeout)

    def _ssh(self, host: str, command: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return run_command(self.targets[host], command, self.limits.ssh_connect_timeout, timeout)


def timed(command: PairCommand, seconds: int) -> PairCommand:
    """The pair's command lines with perftest's iteration count swapped for a duration (-D)."""

    def swap(argv: tuple[str, ...]) -> tuple[str, ...]:
        at = argv.index("-n")
        return (*argv[:at], "-D", str(seconds), *argv[at + 2 :])

    return dataclasses.replace(command, server=swap(command.server), client=swap(command.client))


def measurement_of(pair: Pair, number: int, client: subprocess.CompletedProcess[str]) -> Measurement:
    """The client's output -> its bandwidth at the largest message (or why there is none)."""
    try:
        run = parse_perftest(client.stdout, source=f"{pair.client}")
    except ParseError:
        return Measurement(
            pair, None, number, error=f"client: {_said(client.stdout, f'exit status {client.returncode}')}"
        )
    if run.errors:
        return Measurement(pair, None, number, error=f"client: {run.errors[0].message}")
    large = BANDWIDTH_INPUTS.large_message_bytes  # declared with perftest.link's inputs
    rows = [r for r in run.rows if r.bytes >= large and run.bw_gbps(r) is not None]
    if client.returncode != 0 or not rows:
        return Measurement(
            pair, None, number, error=f"client: {_said(client.stdout, f'exit status {client.returncode}')}"
        )
    best = max(rows, key=lambda r: run.bw_gbps(r) or 0.0)
    gbps = run.bw_gbps(best) or 0.0
    return Measurement(pair, gbps, number, evidence=f"{best.bytes} B: BW average {best.bw_avg} {run.bw_unit}")


def _wait_for(process: subprocess.Popen[bytes], marker: str, deadline: float) -> tuple[bool, str]:
    """Read the process's output until `marker` shows, the process ends, or the deadline passes."""
    assert process.stdout is not None
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while marker.encode() not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                break
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    return marker.encode() in data, data.decode(errors="replace")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()


def _said(output: str, otherwise: str) -> str:
    """The last line a command printed, for an error message."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else otherwise
