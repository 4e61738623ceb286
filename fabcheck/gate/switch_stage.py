"""The gate's switch stage: one read-only session per planned switch (fabcheck.collect.switch), at
most `concurrency` open at once, judged against the desired state the plan holds.

A switch that cannot be reached, or whose session dies, is an ERROR for that switch's checks only;
the others finish. A switch without a usable login is an error for it alone.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.checks.model import Finding
from fabcheck.checks.switch import SwitchEvidence, check_switch
from fabcheck.collect.probes import Collected, Output
from fabcheck.collect.ssh import TimeLimits
from fabcheck.collect.switch import Connect, collect_switch, switch_login
from fabcheck.collect.switch_probes import PROBES, provided
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.errors import FabcheckError
from fabcheck.gate.reader import NodeReads, NotRead, Reader
from fabcheck.gate.snapshot import optional_text, text
from fabcheck.gate.stages import StageContext, StageOutcome
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.report.model import NodeKind
from fabcheck.switch.connect import ConnectError, SwitchLogin
from fabcheck.switch.connect import connect as netmiko_connect

STAGE_NAME = "switch"


@dataclass(frozen=True)
class SwitchResult:
    switch: str
    evidence: SwitchEvidence
    outputs: tuple[Output, ...]  # every raw output with the probe that produced it (snapshots)
    findings: tuple[Finding, ...]

    @property
    def node(self) -> str:
        return self.switch

    @property
    def kind(self) -> NodeKind:
        return NodeKind.SWITCH


@dataclass(frozen=True)
class SwitchItem:
    """What the reader hands the read of one switch: its desired state, and its login or why it has no
    usable one (a switch without a login is read as unreachable, so its snapshot says so too)."""

    desired: DesiredSwitch
    login: SwitchLogin | None
    refused: str = ""


@dataclass(frozen=True)
class SwitchRead:
    """What one session read: the evidence, every raw output with the probe that produced it, and the
    counter window its counter probes were read over (a replay reads them the same way)."""

    evidence: SwitchEvidence
    outputs: tuple[Output, ...]
    counter_window_s: int = 0


def read_switches(
    reader: Reader, items: Sequence[tuple[str, SwitchItem]], connect: Connect = netmiko_connect
) -> list[SwitchResult]:
    """Every switch through the reader (one session each), judged as it arrives."""

    by_name = dict(items)

    def judged(name: str, got: SwitchRead | NotRead) -> SwitchResult:
        desired = by_name[name].desired
        read = _not_read(desired, got) if isinstance(got, NotRead) else got
        findings = tuple(check_switch(read.evidence, desired))
        return SwitchResult(desired.name, read.evidence, read.outputs, findings)

    return reader.each(switch_reads(connect), items, judged)


def switch_reads(connect: Connect = netmiko_connect) -> NodeReads[SwitchItem, SwitchRead]:
    """How the switch stage reads one switch (one session through `connect`) and saves it: each show
    command's output in the order it was read, the reasons of probes that failed, or why the switch
    could not be read; a replay answers the same commands from them (ReplayedSession), so the parsers
    read the saved outputs again."""

    def read(item: SwitchItem, _limits: TimeLimits, ends_at: float | None) -> SwitchRead:
        return _read_one(item, connect, ends_at, item.desired.counter_window_s)

    def replay(item: SwitchItem, data: Mapping[str, Any]) -> SwitchRead:
        session = ReplayedSession(item.desired.name, switch_checked(data, item.desired.name))
        login = item.login or _no_secret_login(item.desired)

        def saved(_login: SwitchLogin) -> ReplayedSession:
            if data["unreachable"] is not None:
                raise ConnectError(data["unreachable"])
            return session

        # The saved session's window (a snapshot from before the window existed read its counters
        # twice at once: 0), without waiting it again.
        window = saved_window(data)
        return _read_one(SwitchItem(item.desired, login), saved, None, window, _no_wait)

    return NodeReads(STAGE_NAME, read, lambda _item, got: switch_record(got), replay)


def _no_wait(_seconds: float) -> None:
    return None


def _read_one(
    item: SwitchItem,
    connect: Connect,
    ends_at: float | None,
    window_s: int,
    sleep: Callable[[float], None] = time.sleep,
) -> SwitchRead:
    """One session to the switch and its probes, its counters `window_s` apart. Whatever goes wrong
    reading it is an error for this switch only."""
    desired, login = item.desired, item.login
    if login is None:
        why = f"no login ({item.refused}); give it credentials as the switch_qos role gets them"
        return _unreachable(desired, why)
    ports = [port.port for port in desired.ports]
    try:
        read = read_switch(login, desired.platform, ports, connect, ends_at, window_s, sleep)
        return SwitchRead(*read, counter_window_s=window_s)
    except FabcheckError:
        raise
    except Exception as err:  # one switch must never take the run down
        why = f"fabcheck failed reading this switch: {type(err).__name__}: {str(err)[:200]}"
        if login.password:
            why = why.replace(login.password, "<redacted>")
        return _unreachable(desired, why)


def _not_read(desired: DesiredSwitch, got: NotRead) -> SwitchRead:
    """A switch the reader has no read of: unreachable, saying why."""
    if got.late:
        why = f"switch {desired.name}: not read: the run's deadline passed before its session started"
    else:
        why = f"fabcheck failed reading this switch: {got.raised}: {got.reason[:200]}"
    return _unreachable(desired, why)


def _unreachable(desired: DesiredSwitch, why: str) -> SwitchRead:
    return SwitchRead(SwitchEvidence(desired.name, desired.platform, {}, frozenset(), unreachable=why), ())


def _no_secret_login(desired: DesiredSwitch) -> SwitchLogin:
    return SwitchLogin(desired.name, desired.platform, "replay", 22, "replay", "", read_timeout_s=5)


def switch_record(read: SwitchRead) -> dict[str, Any]:
    """One switch's read as snapshot data: outputs in reading order, failed probes' reasons."""
    evidence = read.evidence
    return {
        "switch": evidence.switch,
        "platform": evidence.platform,
        "unreachable": evidence.unreachable,
        "outputs": [
            {"probe": out.probe, "port": out.port, "command": out.command, "text": out.text}
            for out in read.outputs
        ],
        "failed": [{"port": port, "reason": reason} for _types, port, reason in evidence.missing],
        "counter_window_s": read.counter_window_s,
    }


def saved_window(data: Mapping[str, Any]) -> int:
    """The counter window a saved switch read was made with; 0 for a record from before it existed."""
    window = data.get("counter_window_s", 0)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f'"counter_window_s" {window!r} is not whole seconds')
    return window


def switch_checked(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A saved switch record, checked: ValueError, KeyError or TypeError when it is not one."""
    if data.get("switch") != name:
        raise ValueError(f'"switch" is not {name!r}')
    optional_text(data["unreachable"])
    for out in data["outputs"]:
        text(out["command"])
        text(out["text"])
    for item in data["failed"]:
        text(item["reason"])
    saved_window(data)
    return data


def read_switch(
    login: SwitchLogin,
    platform: str,
    ports: Sequence[str],
    connect: Connect = netmiko_connect,
    ends_at: float | None = None,
    window_s: int = 0,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[SwitchEvidence, tuple[Output, ...]]:
    probes = PROBES.get(platform)
    if probes is None:
        raise FabcheckError(f"switch {login.name}: no gate probes for platform {platform!r}")
    collected = collect_switch(
        login, platform, probes, ports, connect, ends_at, window_s=window_s, sleep=sleep
    )
    if isinstance(collected, str):
        return SwitchEvidence(login.name, platform, {}, provided(platform), unreachable=collected), ()
    return evidence_of(login.name, platform, collected), tuple(collected.outputs)


def evidence_of(switch: str, platform: str, collected: Collected) -> SwitchEvidence:
    """What the checks read of one switch: its records, and for each failed probe what it withheld."""
    missing = tuple(
        (error.provides, error.port, f"`{error.command}`: {error.reason}") for error in collected.errors
    )
    shown = provided(platform) - collected.not_in_release.keys()
    records = dict(collected.records)
    return SwitchEvidence(switch, platform, records, shown, missing, None, dict(collected.not_in_release))


@dataclass(frozen=True)
class SwitchStage:
    name: str = STAGE_NAME
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return any(switch.name == entry.name for switch in fabric.switches)

    def run(self, context: StageContext) -> StageOutcome:
        """Switches whose login resolves are read; one without a usable login is an error for it alone."""
        plan = context.plan
        login_of: Callable[[HostEntry, Fabric], SwitchLogin] = context.reads.switch_login or inventory_login
        items: list[tuple[str, SwitchItem]] = []
        for name in plan.switches:
            desired = plan.desired.switches[name]
            try:
                items.append((name, SwitchItem(desired, login_of(context.inventory.host(name), plan.fabric))))
            except FabcheckError as err:
                items.append((name, SwitchItem(desired, None, str(err))))
        connect = context.reads.switch_connect or netmiko_connect
        # Each session waits the counter window between its counter readings, all at once.
        return StageOutcome(self.name, tuple(read_switches(context.window_reader, items, connect)))


def inventory_login(entry: HostEntry, fabric: Fabric) -> SwitchLogin:
    return switch_login(fabric.switch(entry.name), entry.variables)


class ReplayedSession:
    """Answers show commands as the switch did: each command's outputs in reading order; a probe that
    failed then fails again with the reason it had."""

    def __init__(self, name: str, record: Mapping[str, Any]) -> None:
        self.name = name
        self.outputs: dict[str, deque[str]] = {}
        for out in record["outputs"]:
            self.outputs.setdefault(out["command"], deque()).append(out["text"])
        self.failed = [str(item["reason"]) for item in record["failed"]]

    def enable(self) -> None:
        return None

    def send_command(self, command: str, read_timeout: float | None = None) -> str:
        queue = self.outputs.get(command)
        if queue:
            return queue.popleft()
        raise OSError(self._reason(command))

    def _reason(self, command: str) -> str:
        # The live reason reads "`cmd`: switch NAME: `cmd`: WHY"; the gate's session adds the prefix again.
        prefix = f"`{command}`: switch {self.name}: `{command}`: "
        for reason in self.failed:
            if reason.startswith(prefix):
                return reason[len(prefix) :]
        return "no output for this command in the snapshot"

    def disconnect(self) -> None:
        return None


STAGE = SwitchStage()
