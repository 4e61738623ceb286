"""A probe is declared once: its name, scope, the read-only command it sends and the parser of its output.

`collect` runs a table of probes over one session (any `run(command) -> output` callable: a netmiko
channel for a switch, later a host's collection script) and returns what they parsed, every raw output
with the probe that produced it, and one error per probe that failed. A failed probe never yields a
record, so a check that needs its record reports an error, never a pass.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fabcheck.errors import FabcheckError, ParseError
from fabcheck.parsers.switch_records import Placed, QueueDrops, Record
from fabcheck.parsers.wire_records import LinkCounters

Scope = Literal["switch", "switch-port"]  # host, nic and sm scopes come with the host stage
Release = tuple[int, int]  # (major, minor) of the switch's OS release
Parse = Callable[[str, str | None, str], list[Placed]]  # (output, port or None, source) -> records
# Port names go into commands: only what switch port names are made of, nothing a shell or CLI reads.
SAFE_PORT = re.compile(r"[A-Za-z][A-Za-z0-9/._-]{0,63}", re.ASCII)


@dataclass(frozen=True)
class Probe:
    name: str
    scope: Scope
    command: str  # "{port}" is replaced by each port's name for a switch-port probe
    parse: Parse
    provides: tuple[type, ...]  # the record types it yields: what a check may ask of this platform
    # Read at the start and the end of the counter window: the record is the difference (QueueDrops
    # minus, LinkCounters -> LinkDelta); other records of a counter probe come from the later reading.
    counter: bool = False
    # [since, before): a view the platform has only in these releases (before None: still there). Such a
    # probe is sent only to a switch whose session read a release inside it (collect's release_read).
    releases: tuple[Release, Release | None] | None = None

    def sent_to(self, release: Release | None) -> bool:
        """Whether a switch of `release` (None: not known) has this probe's view."""
        if self.releases is None:
            return True
        since, before = self.releases
        return release is not None and since <= release and (before is None or release < before)

    def missing_in(self, release: Release) -> str:
        """Why a switch of `release` is not asked this probe's view (it is bound to other releases)."""
        since, before = self.releases or ((0, 0), None)
        bounds = f">= {_dotted(since)}" + (f" and < {_dotted(before)}" if before is not None else "")
        command = self.command.replace("{port}", "<port>")
        return f"release {_dotted(release)} has no `{command}` (releases {bounds})"

    def command_for(self, port: str | None) -> str:
        if self.scope == "switch":
            return self.command
        if port is None or not SAFE_PORT.fullmatch(port):
            raise FabcheckError(f"probe {self.name}: unusable port name {port!r}")
        return self.command.format(port=port)


@dataclass(frozen=True)
class ReleaseRead:
    """How a session learns the switch's release, read once before the probes when some probe is bound
    to releases: a show command and the parser of its output (ParseError when it names no release)."""

    name: str
    command: str
    parse: Callable[[str, str], Release]  # (output, source) -> (major, minor)


@dataclass(frozen=True)
class Output:
    probe: str
    port: str | None
    command: str
    text: str


@dataclass(frozen=True)
class ProbeError:
    probe: str
    port: str | None
    command: str
    reason: str
    provides: tuple[type, ...] = ()  # the records this failure withheld


@dataclass
class Collected:
    records: dict[tuple[type, str | None], Record] = field(default_factory=dict)
    outputs: list[Output] = field(default_factory=list)
    errors: list[ProbeError] = field(default_factory=list)
    # Record types no probe sent to this switch yields because its release lacks their view, and why.
    not_in_release: dict[type, str] = field(default_factory=dict)

    def get(self, kind: type, port: str | None) -> Record | None:
        """The port's record of `kind`, else the switch-wide one (NVUE's global profiles)."""
        if port is not None and (kind, port) in self.records:
            return self.records[(kind, port)]
        return self.records.get((kind, None))

    def failure(self, kinds: Iterable[type], port: str | None) -> ProbeError | None:
        """The probe error that explains a missing record of one of `kinds` at `port`, if any."""
        wanted = set(kinds)
        for error in self.errors:
            if error.port in (port, None) and wanted & set(error.provides):
                return error
        return None


def _place(collected: Collected, placed: Iterable[Placed]) -> None:
    for port, record in placed:
        collected.records[(type(record), port)] = record


def collect(
    run: Callable[[str], str],
    probes: Sequence[Probe],
    ports: Sequence[str],
    source: str,
    window_s: float = 0.0,
    wait: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    release_read: ReleaseRead | None = None,
) -> Collected:
    """Run every probe (switch probes once, port probes per port) through `run`.

    Counter probes are read first, then the others, then, `window_s` after that first reading began
    (`wait` sleeps out what is left of it), the counter probes again: a port's LinkCounters of every
    counter probe are merged per reading and become its LinkDelta over the window. Window 0 reads the
    wire counters once (lifetime totals, `LinkDelta.lifetime`); a probe that yields QueueDrops is still
    read twice, around the others, as before the window existed.

    A probe bound to releases is sent only where `release_read` read a release inside them: a release
    without the view is not asked (its record is simply not provided); a release that could not be read
    is an error naming the release read, and none of the bound probes is sent."""
    collected = Collected()
    bound = [probe for probe in probes if probe.releases is not None]
    if bound:
        withheld = tuple(dict.fromkeys(kind for probe in bound for kind in probe.provides))
        release = _read_release(collected, run, release_read, source, withheld)
        sent = [probe for probe in probes if probe.sent_to(release)]
        if release is not None:
            yielded = {kind for probe in sent for kind in probe.provides}
            for probe in probes:
                for kind in probe.provides:
                    if kind not in yielded and not probe.sent_to(release):
                        collected.not_in_release.setdefault(kind, probe.missing_in(release))
        probes = sent
    calls = [
        (probe, port) for probe in probes for port in (ports if probe.scope == "switch-port" else [None])
    ]
    twice = [(probe, port) for probe, port in calls if probe.counter and (window_s > 0 or _drops(probe))]
    first: dict[tuple[str, str | None], list[Placed]] = {}
    started = clock()
    for probe, port in twice:
        parsed = _run_one(collected, run, probe, port, source)
        if parsed is not None:
            first[(probe.name, port)] = parsed
    earlier_links: dict[str | None, LinkCounters] = {}
    later_links: dict[str | None, LinkCounters] = {}
    # The probes read once run inside the window (on a switch of a few hundred ports they take longer
    # than it), so only what is left of it is waited before the second reading.
    read_twice = set(twice)
    once = [call for call in calls if call not in read_twice]
    for index, (probe, port) in enumerate(once + twice):
        if index == len(once):
            left = window_s - (clock() - started)
            if window_s > 0 and left > 0:
                wait(left)
        parsed = _run_one(collected, run, probe, port, source)
        if parsed is None:
            continue
        if probe.counter:
            before = first.get((probe.name, port))
            if before is None and (probe, port) in read_twice:
                continue  # its first reading failed and is already an error
            _merge_links(earlier_links, before or [])
            _merge_links(later_links, parsed)
            parsed = _differences(before or [], parsed)
        _place(collected, parsed)
    for port, reading in later_links.items():
        earlier = earlier_links.get(port) if window_s > 0 else None
        if window_s > 0 and earlier is None:
            continue  # no first reading of this port's counters: no delta (its probe's error says why)
        _place(collected, [(port, reading.since(earlier, window_s))])
    return collected


def _read_release(
    collected: Collected,
    run: Callable[[str], str],
    read: ReleaseRead | None,
    source: str,
    withheld: tuple[type, ...],
) -> Release | None:
    """The switch's release, its output kept (a replay answers it again); None, with an error that
    withholds the bound probes' records, when the switch did not say (or the caller has no way to ask)."""
    unsent = "the probes bound to releases were not sent"
    if read is None:
        reason = f"no release read given: {unsent}"
        collected.errors.append(ProbeError("release", None, "", reason, withheld))
        return None
    try:
        text = run(read.command)
    except FabcheckError as err:
        collected.errors.append(ProbeError(read.name, None, read.command, f"{err}; {unsent}", withheld))
        return None
    collected.outputs.append(Output(read.name, None, read.command, text))
    try:
        return read.parse(text, f"{source}: {read.command}")
    except ParseError as err:
        reason = f"unparsable output: {err.message}; {unsent}"
        collected.errors.append(ProbeError(read.name, None, read.command, reason, withheld))
        return None


def _dotted(release: Release) -> str:
    return ".".join(str(part) for part in release)


def _drops(probe: Probe) -> bool:
    return QueueDrops in probe.provides


def _merge_links(readings: dict[str | None, LinkCounters], placed: Iterable[Placed]) -> None:
    """A port's LinkCounters from several views (errors, FEC, flaps) are one reading: merged."""
    for port, record in placed:
        if isinstance(record, LinkCounters):
            known = readings.get(port)
            readings[port] = record if known is None else known.merged(record)


def _run_one(
    collected: Collected, run: Callable[[str], str], probe: Probe, port: str | None, source: str
) -> list[Placed] | None:
    command = probe.command_for(port)
    try:
        text = run(command)
    except FabcheckError as err:
        collected.errors.append(_error(probe, port, command, str(err)))
        return None
    collected.outputs.append(Output(probe.name, port, command, text))
    try:
        return probe.parse(text, port, f"{source}: {command}")
    except ParseError as err:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        shown = f" ({first[:120]!r})" if first and not first.startswith(("{", "[")) else ""
        collected.errors.append(_error(probe, port, command, f"unparsable output{shown}: {err.message}"))
        return None


def _error(probe: Probe, port: str | None, command: str, reason: str) -> ProbeError:
    return ProbeError(probe.name, port, command, reason, probe.provides)


def _differences(before: list[Placed], after: list[Placed]) -> list[Placed]:
    """A counter probe's records from its two readings: QueueDrops the difference, LinkCounters none
    here (collect merges them per port and makes the LinkDelta), anything else the later reading's."""
    earlier = {(port, type(record)): record for port, record in before}
    result: list[Placed] = []
    for port, record in after:
        old = earlier.get((port, type(record)))
        if isinstance(record, QueueDrops):
            if isinstance(old, QueueDrops):
                result.append((port, record.minus(old)))
        elif not isinstance(record, LinkCounters):
            result.append((port, record))
    return result
