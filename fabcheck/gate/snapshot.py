"""Gate snapshots: ONE format for every read stage, written and read back through the gate's reader.

`fabcheck validate --save-snapshot DIR` writes

    DIR/snapshot.json         {"format": "fabcheck-snapshot", "version": 2,
                               "stages": {"host": [node, ...], "switch": [...], "sm": [...]}}
    DIR/<stage>/<node>.json   {"stage": STAGE, "node": NODE, "read": what the stage read of it}
                              or {"stage": ..., "node": ..., "not_read": {"reason", "late", "raised"}}

where "read" is the stage's own record of one node (its NodeReads.record, beside its reader: the
host's round trip section by section with the command each ran, a switch's show commands in the order
they were read with the reasons of probes that failed, an SM node's sections), and "not_read" a node
the reader has no read of (the deadline passed before its turn, or its read raised).

`--from-snapshot DIR` judges those reads again with the same parsers and checks, with no connection:
the reader serves each node's saved read to the stage's own judge (fabcheck.gate.reader), so the
verdicts are the ones of the run that saved them. A node the replay needs without its file, or a file
that is not what this module wrote, ends the run with one UsageError naming the file. A traffic stage
(NCCL, perftest, incast: they measure live traffic) cannot be replayed: naming it with --from-snapshot
is a UsageError. Snapshots of version 1 (hosts/, switches/ and sm/ folders holding the reads
themselves) still load.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fabcheck.collect.script import Section
from fabcheck.errors import UsageError
from fabcheck.gate.reader import NotRead, ReplayError
from fabcheck.gate.stages import all_stages, default_stage_names
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.switch.connect import SwitchLogin

FORMAT = "fabcheck-snapshot"
VERSION = 2
MANIFEST = "snapshot.json"
# Version 1 kept each stage's reads, not wrapped, in a folder of its own name but for these two.
VERSION_1_FOLDERS = {"host": "hosts", "switch": "switches"}
_KEPT_BYTES = re.compile(rb"[A-Za-z0-9._-]")
# Below the 255 bytes a Linux file name may hold, with room for ".json"; longer names are cut and end
# in a hash of the whole name, so two long names never share a file.
_NAME_BYTES = 200
Read = TypeVar("Read")


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


# -- the parts the stages' records share ------------------------------------------------------------


def section_record(command: str, section: Section) -> dict[str, Any]:
    """One section of a node's script output as data, with the command it ran."""
    return {"command": command, "rc": section.rc, "stdout": section.stdout, "stderr": section.stderr}


def sections_restored(data: Mapping[str, Any]) -> dict[str, Section]:
    """The sections of section_record data; TypeError or ValueError when they are not."""
    return {
        str(key): section_of(value["rc"], value["stdout"], value["stderr"]) for key, value in data.items()
    }


# -- record ------------------------------------------------------------------------------------------


@dataclass
class Recording:
    """A reader.Tape that keeps every node's read of this run, by stage (--save-snapshot writes them,
    --extra-checks hands them to your tests); served back by a Replay."""

    reads: dict[str, dict[str, Mapping[str, Any] | NotRead]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def replaying(self) -> bool:
        return False

    def keep(self, stage: str, node: str, read: Mapping[str, Any] | NotRead) -> None:
        with self.lock:
            self.reads.setdefault(stage, {})[node] = read

    def replayed(self, stage: str, node: str, restore: Callable[[Mapping[str, Any]], Read]) -> Read | NotRead:
        raise ReplayError(f"stage {stage}: this run reads {node} live, it replays no snapshot")

    def read_of(self, stage: str, node: str) -> Mapping[str, Any] | None:
        """The record of what the stage read of the node (None: not read)."""
        kept = self.reads.get(stage, {}).get(node)
        return None if kept is None or isinstance(kept, NotRead) else kept

    def save(self, directory: Path) -> None:
        """Write the snapshot: every node's file, then the manifest. UsageError when it cannot."""
        try:
            for stage, nodes in self.reads.items():
                (directory / stage).mkdir(parents=True, exist_ok=True)
                for node, read in nodes.items():
                    _write(node_path(directory / stage, node), _envelope(stage, node, read))
            stages = {stage: sorted(nodes) for stage, nodes in self.reads.items()}
            directory.mkdir(parents=True, exist_ok=True)
            _write(directory / MANIFEST, {"format": FORMAT, "version": VERSION, "stages": stages})
        except OSError as err:
            raise UsageError(f"--save-snapshot {directory}: cannot write: {err.strerror or err}") from None


def _envelope(stage: str, node: str, read: Mapping[str, Any] | NotRead) -> dict[str, Any]:
    if isinstance(read, NotRead):
        why = {"reason": read.reason, "late": read.late, "raised": read.raised}
        return {"stage": stage, "node": node, "not_read": why}
    return {"stage": stage, "node": node, "read": dict(read)}


def _write(path: Path, data: Mapping[str, Any]) -> None:
    """Write the file itself: a symlink planted where it goes is refused (ELOOP), not followed."""
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o644), "w", encoding="utf-8") as handle:
        handle.write(text)


# -- replay ------------------------------------------------------------------------------------------


@dataclass
class Replay(Recording):
    """A reader.Tape serving the reads a snapshot saved (and keeping them, as a Recording, for the
    extra checks). Open it with `replay`."""

    directory: Path = Path()
    version: int = VERSION
    recorded: Mapping[str, Sequence[str]] = field(default_factory=dict)  # the manifest's stages

    @property
    def replaying(self) -> bool:
        return True

    def replayed(self, stage: str, node: str, restore: Callable[[Mapping[str, Any]], Read]) -> Read | NotRead:
        folder = self.directory / (VERSION_1_FOLDERS.get(stage, stage) if self.version == 1 else stage)
        path = node_path(folder, node)
        unrecorded = stage not in self.recorded and not (self.version == 1 and stage in VERSION_1_FOLDERS)
        if unrecorded and not path.exists():
            raise ReplayError(
                f"--from-snapshot: {path} is missing: this snapshot records no {stage} stage (saved by "
                f"an older fabcheck, or by a run without it): leave {stage} out of --stages"
            )
        data = _read_json(path)
        try:
            if self.version == 1:  # the file is the read itself
                return restore(data)
            if not isinstance(data, dict) or data.get("node") != node or data.get("stage") != stage:
                raise ValueError(f'"stage" and "node" are not {stage!r} and {node!r}')
            if "not_read" in data:
                why = data["not_read"]
                return NotRead(node, text(why["reason"]), why["late"] is True, optional_text(why["raised"]))
            return restore(data["read"])
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            raise _corrupt(path, _why(err)) from None


def replay(directory: Path) -> Replay:
    """The snapshot in `directory`, ready to serve its reads. UsageError when it is not one."""
    manifest = _manifest(directory)
    version = manifest["version"]
    recorded = manifest.get("stages") or {}
    if version == 1:
        recorded = {**recorded, "host": manifest.get("hosts", []), "switch": manifest.get("switches", [])}
    return Replay(directory=directory, version=version, recorded=recorded)


def replay_login(entry: HostEntry, fabric: Fabric) -> SwitchLogin:
    """A switch login that needs no credentials: a replay opens no connection, so the inventory's
    secret (vault, lookup) is not resolved and a placeholder stands in for it."""
    from fabcheck.collect.switch import PASSWORD_ENV, switch_login

    return switch_login(fabric.switch(entry.name), {}, environ={PASSWORD_ENV: "not-used-by-a-replay"})


def replayable_stages() -> tuple[str, ...]:
    """Every stage a snapshot replays: those that load no traffic."""
    return tuple(stage.name for stage in all_stages() if not stage.traffic)


def replayed_stages(requested: Sequence[str] | None) -> tuple[str, ...]:
    """The stages a replay runs: the --stages list, or the default stages a snapshot can replay.
    UsageError naming every requested stage that has no replay."""
    replayable = replayable_stages()
    if requested is None:
        return tuple(stage for stage in default_stage_names() if stage in replayable)
    live = [stage for stage in requested if stage not in replayable]
    if live:
        raise UsageError(
            f"--from-snapshot cannot run stage(s) {', '.join(live)}: they measure live traffic, which a "
            f"snapshot does not hold; a replay runs some of {', '.join(replayable)}"
        )
    return tuple(requested)


def _read_json(path: Path) -> Any:
    try:
        text = _read_regular(path)
    except FileNotFoundError:
        why = "is missing (was this node in the run that saved it?)"
        raise ReplayError(f"--from-snapshot: {path} {why}") from None
    except OSError as err:
        raise ReplayError(f"--from-snapshot: {path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ReplayError(f"--from-snapshot: {path}: cannot read: {err}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ReplayError(f"--from-snapshot: {path}:{err.lineno}: not JSON ({err.msg})") from None
    except RecursionError:  # json.loads recurses once per [ or {
        raise ReplayError(
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
    return ReplayError(f"--from-snapshot: {path}: {what} (not a file fabcheck --save-snapshot wrote)")


def _manifest(directory: Path) -> dict[str, Any]:
    if not directory.is_dir():
        raise ReplayError(f"--from-snapshot: {directory} is not a directory")
    path = directory / MANIFEST
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _corrupt(path, f'"format" is not {FORMAT!r}')
    if data.get("version") not in (1, VERSION):
        raise _corrupt(
            path, f'"version" {data.get("version")!r}: this fabcheck reads versions 1 and {VERSION}'
        )
    if not isinstance(data.get("stages", {}), dict):
        raise _corrupt(path, '"stages" is not a mapping of stage to nodes')
    return data


def _why(err: Exception) -> str:
    return f"missing key {err}" if isinstance(err, KeyError) else str(err) or type(err).__name__


def section_of(rc: Any, stdout: Any, stderr: Any) -> Section:
    """The Section of saved (or sent) values; ValueError when they are not an exit code and two texts."""
    return Section(_rc(rc), text(stdout), text(stderr))


def _rc(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"rc {value!r} is not an exit code")


def text(value: Any) -> str:
    """The value, when it is text (ValueError otherwise)."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not text")
    return value


def optional_text(value: Any) -> str | None:
    """None, or the text it is (ValueError otherwise)."""
    return None if value is None else text(value)
