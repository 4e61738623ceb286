"""Gate snapshots: every raw output of a run with the probe that produced it, and an offline replay of it.

`fabcheck validate --save-snapshot DIR` writes

    DIR/snapshot.json         {"format": "fabcheck-snapshot", "version": 1, "hosts": [...], "switches": [...]}
    DIR/hosts/<host>.json     the host's one round trip: each section (the command it ran, rc, stdout,
                              stderr), whether the script ran to the end, and why not
    DIR/switches/<name>.json  each show command's output in the order it was read (probe, port,
                              command, text), the reasons of probes that failed, or why it was unreachable
    DIR/<stage>/<node>.json   what a stage that reads its nodes itself read (STAGE_FORMATS: sm,
                              each section's command, rc, stdout and stderr, whether it ran to the end)

`--from-snapshot DIR` judges those outputs again with the same parsers and checks, with no connection:
the host collector, the switch sessions and the stages' collectors are served from the files, so the
verdicts are the ones of the run that saved them. A planned node without its file, or a file that is
not what this module wrote, is one UsageError naming the file. A stage without a format (NCCL, perftest,
incast: they measure live traffic) cannot be replayed: naming it with --from-snapshot is a UsageError.
Snapshots from before the stages were recorded still load; their manifest lists no "stages".

A node's file name is its inventory name encoded (node_file_name): letters, digits, '.', '_' and '-'
stay as they are, every other byte is %XX and a leading '.' is %2E, so a name such as `../../tmp/x`
is one file inside its folder and `--save-snapshot` never writes, nor `--from-snapshot` reads, outside
DIR (a file there that is a symlink is refused as well).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabcheck.collect import host as collect
from fabcheck.collect import sm as sm_collect
from fabcheck.collect import ssh
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.sm import DesiredSubnetManager
from fabcheck.errors import UsageError
from fabcheck.gate.plan import GatePlan
from fabcheck.gate.stages import Stage, default_stage_names, stages_named
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.switch.connect import ConnectError, SwitchLogin

FORMAT = "fabcheck-snapshot"
VERSION = 1
MANIFEST = "snapshot.json"
HOSTS_DIR = "hosts"
SWITCHES_DIR = "switches"
# Stages whose reads are the host and switch files, and the link stage that judges only those.
READ_STAGES = ("host", "switch", "link")
_KEPT_BYTES = re.compile(rb"[A-Za-z0-9._-]")
# Below the 255 bytes a Linux file name may hold, with room for ".json"; longer names are cut and end
# in a hash of the whole name, so two long names never share a file.
_NAME_BYTES = 200


def node_file_name(node: str) -> str:
    """Pure: the file name of a node's record, `<encoded name>.json`, never a path: '/' and NUL are
    %2F and %00, a leading '.' is %2E ('.', '..' and hidden files cannot occur)."""
    encoded = "".join(
        chr(byte) if _KEPT_BYTES.fullmatch(bytes([byte])) else f"%{byte:02X}" for byte in node.encode()
    )
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    if len(encoded) > _NAME_BYTES:
        digest = hashlib.sha256(node.encode()).hexdigest()[:16]
        encoded = f"{encoded[: _NAME_BYTES - 17]}~{digest}"
    return f"{encoded}.json"


def node_path(folder: Path, node: str) -> Path:
    """The record of a node inside `folder`; its name is one path component by construction."""
    path = folder / node_file_name(node)
    assert path.parent == folder, path  # node_file_name never yields a separator
    return path


# -- what a run read, as plain data ------------------------------------------------------------------


def host_record(collection: HostCollection) -> dict[str, Any]:
    return {
        "host": collection.host,
        "priority": collection.priority,
        "complete": collection.complete,
        "error": collection.error,
        "expired": collection.expired,
        "sections": {
            name: _section_record(collect.section_command(name, collection.priority), section)
            for name, section in collection.sections.items()
        },
    }


def switch_record(result: Any) -> dict[str, Any]:
    """A fabcheck.gate.switch_stage.SwitchResult as data: outputs in reading order, failed probes' reasons."""
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


def sm_record(
    collection: sm_collect.SmCollection,
    target: SshTarget,
    desired: DesiredSubnetManager,
    service: str,
    limits: TimeLimits,
) -> dict[str, Any]:
    """An SM node's round trip as data (the arguments are the sm collector's)."""
    commands = sm_collect.section_commands(desired, service)
    return {
        "node": collection.node,
        "complete": collection.complete,
        "error": collection.error,
        "sections": {
            name: _section_record(commands.get(name, name), section)
            for name, section in collection.sections.items()
        },
    }


def _section_record(command: str, section: Section) -> dict[str, Any]:
    return {"command": command, "rc": section.rc, "stdout": section.stdout, "stderr": section.stderr}


def sm_unread(node: str, why: str) -> dict[str, Any]:
    """An SM node the stage never read (its connection variables were unusable): the replay stops at the
    same inventory error before it reads this."""
    return {"node": node, "complete": False, "error": why, "sections": {}}


def sm_restore(data: Mapping[str, Any], node: str) -> sm_collect.SmCollection:
    """The sm_collect.SmCollection of a saved record; KeyError, TypeError or ValueError when it is not one."""
    return sm_collect.SmCollection(
        node, _sections(data["sections"]), bool(data["complete"]), _optional_text(data["error"])
    )


@dataclass(frozen=True)
class StageFormat:
    """How a stage that reads its nodes itself is saved and replayed. The stage reads through its
    `collector` attribute, whose first argument is the node's SshTarget and whose answer is that node's
    collection; a replay hands the stage, by StageContext.collectors, one that answers from the files."""

    record: Callable[..., dict[str, Any]]  # (collection, *the collector's arguments) -> the node's file
    unread: Callable[[str, str], dict[str, Any]]  # (node, why) -> the file of a node never read
    restore: Callable[[Mapping[str, Any], str], Any]  # (a file's data, node) -> the node's collection


# The stages a snapshot records, by stage name; a stage not here measures live traffic (no replay).
STAGE_FORMATS: Mapping[str, StageFormat] = {"sm": StageFormat(sm_record, sm_unread, sm_restore)}


@dataclass
class StageRecorder:
    """A stage's collector that passes each node to `inner` and keeps the record of what came back."""

    inner: Callable[..., Any]
    format: StageFormat
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, target: SshTarget, *args: Any) -> Any:
        collection = self.inner(target, *args)
        record = self.format.record(collection, target, *args)
        with self.lock:
            self.records[target.name] = record
        return collection


@dataclass
class Recorder:
    """A collect.backends.Collector that passes each host to `inner` and keeps what came back; with `tap`, the
    same for the stages that a snapshot records."""

    inner: Any  # collect.backends.Collector
    collections: dict[str, HostCollection] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stages: dict[str, StageRecorder] = field(default_factory=dict)

    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        collection = self.inner(target, priority, limits)
        with self.lock:
            self.collections[target.name] = collection
        return collection

    def tap(self, stages: Sequence[Stage]) -> dict[str, Callable[..., Any]]:
        """StageContext.collectors that record each recordable stage's own live reads."""
        for stage in stages:
            if stage.name in STAGE_FORMATS:
                live = stage.collector  # type: ignore[attr-defined]  # StageFormat says it has one
                self.stages[stage.name] = StageRecorder(live, STAGE_FORMATS[stage.name])
        return dict(self.stages)


def save(directory: Path, recorder: Recorder, result: Any) -> None:
    """Write the snapshot of a gate run (fabcheck.gate.fabric.GateResult). A host the collector never
    reached (late for the deadline) is saved with the error it got, so the replay judges it the same."""
    hosts_dir, switches_dir = directory / HOSTS_DIR, directory / SWITCHES_DIR
    try:
        hosts_dir.mkdir(parents=True, exist_ok=True)
        switches_dir.mkdir(parents=True, exist_ok=True)
        for host in result.hosts:
            collection = recorder.collections.get(host.host) or _never_collected(host)
            _write(node_path(hosts_dir, host.host), host_record(collection))
        for switch in result.switches:
            _write(node_path(switches_dir, switch.switch), switch_record(switch))
        stages = _save_stages(directory, recorder, getattr(result, "stages", ()))
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "hosts": [h.host for h in result.hosts],
            "switches": [s.switch for s in result.switches],
            "stages": stages,
        }
        _write(directory / MANIFEST, manifest)
    except OSError as err:
        raise UsageError(f"--save-snapshot {directory}: cannot write: {err.strerror or err}") from None


def _save_stages(directory: Path, recorder: Recorder, outcomes: Sequence[Any]) -> dict[str, list[str]]:
    """DIR/<stage>/<node>.json of every node a recorded stage judged; the nodes of each, by stage."""
    saved: dict[str, list[str]] = {}
    for outcome in outcomes:
        stage = recorder.stages.get(outcome.stage)
        if stage is None:
            continue  # not recorded: a traffic stage, or a run that read no stage live (a replay)
        (directory / outcome.stage).mkdir(exist_ok=True)
        for node in outcome.nodes:
            reason = next((f.actual for f in node.findings), "not collected")
            record = stage.records.get(node.node) or stage.format.unread(node.node, reason)
            _write(node_path(directory / outcome.stage, node.node), record)
        saved[outcome.stage] = [node.node for node in outcome.nodes]
    return saved


def _never_collected(host: Any) -> HostCollection:
    """A host judged without a round trip: the error it got (a replay of a host with bad connection
    variables stops at the same inventory error before it reads this)."""
    reason = next((f.actual for f in host.findings), "not collected")
    return HostCollection(host.host, {}, False, reason, expired=ssh.COMMAND)


def _write(path: Path, data: Mapping[str, Any]) -> None:
    """Write the file itself: a symlink planted where it goes is refused (ELOOP), not followed."""
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o644), "w", encoding="utf-8") as handle:
        handle.write(text)


# -- replay -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    directory: Path
    hosts: Mapping[str, HostCollection]
    switches: Mapping[str, Mapping[str, Any]]

    def collector(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        """A collect.backends.Collector: the saved round trip of the host."""
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
    from fabcheck.collect.switch import PASSWORD_ENV, switch_login

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


@dataclass(frozen=True)
class StageReplay:
    """A recorded stage's collector in a replay: each node's saved collection, whatever else it is asked."""

    collections: Mapping[str, Any]

    def __call__(self, target: SshTarget, *_args: Any) -> Any:
        return self.collections[target.name]


def replayed_stages(requested: Sequence[str] | None) -> tuple[str, ...]:
    """The stages a replay runs: the --stages list, or the default stages a snapshot can replay.
    UsageError naming every requested stage that has no replay."""
    replayable = (*READ_STAGES, *STAGE_FORMATS)
    if requested is None:
        return tuple(stage for stage in default_stage_names() if stage in replayable)
    live = [stage for stage in requested if stage not in replayable]
    if live:
        raise UsageError(
            f"--from-snapshot cannot run stage(s) {', '.join(live)}: they measure live traffic, which a "
            f"snapshot does not hold; a replay runs some of {', '.join(replayable)}"
        )
    return tuple(requested)


def stage_nodes(plan: GatePlan) -> dict[str, list[str]]:
    """The nodes each recorded stage of the plan judges, by stage name: the files a replay reads."""
    return {
        stage.name: [entry.name for entry in plan.chosen if stage.claims(entry, plan.fabric)]
        for stage in stages_named(plan.stages)
        if stage.name in STAGE_FORMATS
    }


def load_stages(directory: Path, nodes: Mapping[str, Sequence[str]]) -> dict[str, Callable[..., Any]]:
    """StageContext.collectors of a replay: each stage's nodes from DIR/<stage>/<node>.json. UsageError
    naming the file that is missing or corrupt."""
    recorded = _manifest(directory).get("stages") or {}
    return {
        stage: StageReplay({node: _stage_node(directory, stage, node, stage in recorded) for node in names})
        for stage, names in nodes.items()
    }


def _stage_node(directory: Path, stage: str, node: str, recorded: bool) -> Any:
    path = node_path(directory / stage, node)
    if not recorded and not path.exists():
        raise UsageError(
            f"--from-snapshot: {path} is missing: this snapshot records no {stage} stage (saved by an "
            f"older fabcheck, or by a run without it): leave {stage} out of --stages"
        )
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("node") != node:
        raise _corrupt(path, f'"node" is not {node!r}')
    try:
        return STAGE_FORMATS[stage].restore(data, node)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise _corrupt(path, _why(err)) from None


def load(directory: Path, hosts: Sequence[str], switches: Sequence[str]) -> Snapshot:
    """Read the files of every planned node. UsageError naming the file that is missing or corrupt."""
    _manifest(directory)
    collections = {name: _host(node_path(directory / HOSTS_DIR, name), name) for name in hosts}
    switch_records = {name: _switch(node_path(directory / SWITCHES_DIR, name), name) for name in switches}
    return Snapshot(directory, collections, switch_records)


def _read_json(path: Path) -> Any:
    try:
        text = _read_regular(path)
    except FileNotFoundError:
        why = "is missing (was this node in the run that saved it?)"
        raise UsageError(f"--from-snapshot: {path} {why}") from None
    except OSError as err:
        raise UsageError(f"--from-snapshot: {path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise UsageError(f"--from-snapshot: {path}: cannot read: {err}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"--from-snapshot: {path}:{err.lineno}: not JSON ({err.msg})") from None
    except RecursionError:  # json.loads recurses once per [ or {
        raise UsageError(
            f"--from-snapshot: {path}: JSON nested too deep to read; expected a file --save-snapshot "
            "wrote (5 levels deep)"
        ) from None


def _read_regular(path: Path) -> str:
    """The text of a regular file; a symlink is refused, not followed, and a FIFO or device is not
    waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise OSError(err.errno, "a symlink, not the file --save-snapshot wrote") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return handle.read().decode("utf-8")


def _corrupt(path: Path, what: str) -> UsageError:
    return UsageError(f"--from-snapshot: {path}: {what} (not a file fabcheck --save-snapshot wrote)")


def _manifest(directory: Path) -> dict[str, Any]:
    if not directory.is_dir():
        raise UsageError(f"--from-snapshot: {directory} is not a directory")
    path = directory / MANIFEST
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _corrupt(path, f'"format" is not {FORMAT!r}')
    if data.get("version") != VERSION:
        raise _corrupt(path, f'"version" {data.get("version")!r}: this fabcheck reads version {VERSION}')
    if not isinstance(data.get("stages", {}), dict):
        raise _corrupt(path, '"stages" is not a mapping of stage to nodes')
    return data


def _host(path: Path, name: str) -> HostCollection:
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("host") != name:
        raise _corrupt(path, f'"host" is not {name!r}')
    try:
        sections = _sections(data["sections"])
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


def _sections(data: Mapping[str, Any]) -> dict[str, Section]:
    return {
        str(key): Section(_rc(value["rc"]), _text(value["stdout"]), _text(value["stderr"]))
        for key, value in data.items()
    }


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
