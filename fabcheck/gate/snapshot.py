"""Gate snapshots: every raw output of a run with the probe that produced it, and an offline replay of it.

`fabcheck validate --save-snapshot DIR` writes

    DIR/snapshot.json         {"format": "fabcheck-snapshot", "version": 1, "hosts": [...], "switches": [...]}
    DIR/hosts/<host>.json     the host's one round trip: each section (the command it ran, rc, stdout,
                              stderr), whether the script ran to the end, and why not
    DIR/switches/<name>.json  each show command's output in the order it was read (probe, port,
                              command, text), the reasons of probes that failed, or why it was unreachable

`--from-snapshot DIR` judges those outputs again with the same parsers and checks, with no connection:
the host collector and the switch sessions of the gate are served from the files, so the verdicts are
the ones of the run that saved them. A planned node without its file, or a file that is not what this
module wrote, is one UsageError naming the file.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabcheck.collect import host as collect
from fabcheck.collect.host import HostCollection, Section, SshTarget, TimeLimits
from fabcheck.errors import UsageError
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.switch.connect import ConnectError, SwitchLogin

FORMAT = "fabcheck-snapshot"
VERSION = 1
MANIFEST = "snapshot.json"
HOSTS_DIR = "hosts"
SWITCHES_DIR = "switches"


# -- what a run read, as plain data ------------------------------------------------------------------


def host_record(collection: HostCollection) -> dict[str, Any]:
    return {
        "host": collection.host,
        "priority": collection.priority,
        "complete": collection.complete,
        "error": collection.error,
        "expired": collection.expired,
        "sections": {
            name: {
                "command": collect.section_command(name, collection.priority),
                "rc": section.rc,
                "stdout": section.stdout,
                "stderr": section.stderr,
            }
            for name, section in collection.sections.items()
        },
    }


def switch_record(result: Any) -> dict[str, Any]:
    """A fabcheck.gate.switches.SwitchResult as data: outputs in reading order, failed probes' reasons."""
    evidence = result.evidence
    return {
        "switch": result.switch,
        "platform": evidence.platform,
        "unreachable": evidence.unreachable,
        "outputs": [
            {"probe": out.probe, "port": out.port, "command": out.command, "text": out.text}
            for out in result.outputs
        ],
        "failed": [{"port": port, "reason": reason} for _types, port, reason in evidence.missing],
    }


@dataclass
class Recorder:
    """A validate.Collector that passes each host to `inner` and keeps what came back."""

    inner: Any  # validate.Collector
    collections: dict[str, HostCollection] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        collection = self.inner(target, priority, limits)
        with self.lock:
            self.collections[target.name] = collection
        return collection


def save(directory: Path, recorder: Recorder, result: Any) -> None:
    """Write the snapshot of a gate run (fabcheck.gate.fabric.GateResult). A host the collector never
    reached (late for the deadline) is saved with the error it got, so the replay judges it the same."""
    hosts_dir, switches_dir = directory / HOSTS_DIR, directory / SWITCHES_DIR
    try:
        hosts_dir.mkdir(parents=True, exist_ok=True)
        switches_dir.mkdir(parents=True, exist_ok=True)
        for host in result.hosts:
            collection = recorder.collections.get(host.host) or _never_collected(host)
            _write(hosts_dir / f"{host.host}.json", host_record(collection))
        for switch in result.switches:
            _write(switches_dir / f"{switch.switch}.json", switch_record(switch))
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "hosts": [h.host for h in result.hosts],
            "switches": [s.switch for s in result.switches],
        }
        _write(directory / MANIFEST, manifest)
    except OSError as err:
        raise UsageError(f"--save-snapshot {directory}: cannot write: {err.strerror or err}") from None


def _never_collected(host: Any) -> HostCollection:
    """A host judged without a round trip: the error it got (a replay of a host with bad connection
    variables stops at the same inventory error before it reads this)."""
    reason = next((f.actual for f in host.findings), "not collected")
    return HostCollection(host.host, {}, False, reason, expired=collect.COMMAND)


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# -- replay -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    directory: Path
    hosts: Mapping[str, HostCollection]
    switches: Mapping[str, Mapping[str, Any]]

    def collector(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        """A validate.Collector: the saved round trip of the host."""
        return self.hosts[target.name]

    def connect(self, login: SwitchLogin) -> ReplayedSession:
        """A gate session opener: the saved outputs of the switch, in the order they were read."""
        record = self.switches[login.name]
        if record["unreachable"] is not None:
            raise ConnectError(record["unreachable"])
        return ReplayedSession(login.name, record)


def replay_login(entry: HostEntry, fabric: Fabric) -> SwitchLogin:
    """A switch login that needs no credentials: a replay opens no connection, so the inventory's
    secret (vault, lookup) is not resolved and a placeholder stands in for it."""
    from fabcheck.gate.switches import PASSWORD_ENV, switch_login

    return switch_login(fabric.switch(entry.name), {}, environ={PASSWORD_ENV: "not-used-by-a-replay"})


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


def load(directory: Path, hosts: Sequence[str], switches: Sequence[str]) -> Snapshot:
    """Read the files of every planned node. UsageError naming the file that is missing or corrupt."""
    _manifest(directory)
    collections = {name: _host(directory / HOSTS_DIR / f"{name}.json", name) for name in hosts}
    switch_records = {name: _switch(directory / SWITCHES_DIR / f"{name}.json", name) for name in switches}
    return Snapshot(directory, collections, switch_records)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        why = "is missing (was this node in the run that saved it?)"
        raise UsageError(f"--from-snapshot: {path} {why}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"--from-snapshot: {path}: cannot read: {err}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"--from-snapshot: {path}:{err.lineno}: not JSON ({err.msg})") from None


def _corrupt(path: Path, what: str) -> UsageError:
    return UsageError(f"--from-snapshot: {path}: {what} (not a file fabcheck --save-snapshot wrote)")


def _manifest(directory: Path) -> None:
    if not directory.is_dir():
        raise UsageError(f"--from-snapshot: {directory} is not a directory")
    path = directory / MANIFEST
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _corrupt(path, f'"format" is not {FORMAT!r}')
    if data.get("version") != VERSION:
        raise _corrupt(path, f'"version" {data.get("version")!r}: this fabcheck reads version {VERSION}')


def _host(path: Path, name: str) -> HostCollection:
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("host") != name:
        raise _corrupt(path, f'"host" is not {name!r}')
    try:
        sections = {
            str(key): Section(_rc(value["rc"]), _text(value["stdout"]), _text(value["stderr"]))
            for key, value in data["sections"].items()
        }
        priority = data["priority"]
        if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 7:
            raise ValueError(f'"priority" {priority!r} is not 0..7')
        return HostCollection(
            name,
            sections,
            bool(data["complete"]),
            _optional_text(data["error"]),
            priority,
            _optional_text(data["expired"]),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise _corrupt(path, _why(err)) from None


def _switch(path: Path, name: str) -> Mapping[str, Any]:
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("switch") != name:
        raise _corrupt(path, f'"switch" is not {name!r}')
    try:
        _optional_text(data["unreachable"])
        for out in data["outputs"]:
            _text(out["command"])
            _text(out["text"])
        for item in data["failed"]:
            _text(item["reason"])
    except (KeyError, TypeError, ValueError) as err:
        raise _corrupt(path, _why(err)) from None
    return data


def _why(err: Exception) -> str:
    return f"missing key {err}" if isinstance(err, KeyError) else str(err) or type(err).__name__


def _rc(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"rc {value!r} is not an exit code")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not text")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)
