"""One GPU host's desired record as a versioned JSON file: what `fabcheck node-check` judges the node
against, on the node itself (docs: README "Checks on the node").

The record holds what the host checks read, as the gate derived it: the host's DesiredHost (with its
NVLink domain attached, as the host stage hands it to the checks) and the host's resolved FabricIntent
(the checks read a few intent fields the desired record does not carry). Nothing here derives either:
`fabcheck desired-record` takes them from the gate's plan (fabcheck.gate.node_record). Writing then
reading a record gives back an equal one; a file that is not one is a RecordError naming the key.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from fabcheck.desired.nic import DesiredHost
from fabcheck.errors import FabcheckError
from fabcheck.intent.model import FabricIntent

RECORD_VERSION = 1  # raised when a field changes meaning: an older node-check refuses a newer record
DEFAULT_RECORD_PATH = "/etc/fabcheck/desired.json"  # where the roles install it and node-check reads it
RECORD_KIND = "fabcheck.desired-host"
MAX_RECORD_BYTES = 4 * 2**20  # a real record is a few kB; a bigger file is not one

_DESIRED = TypeAdapter(DesiredHost)
T = TypeVar("T")


class RecordError(FabcheckError):
    """A desired-record file that cannot be used: `key` is the path of the bad value ("" the whole)."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        where = f"{source}: key {key!r}" if key else source
        super().__init__(f"{where}: {problem}")
        self.key = key


@dataclass(frozen=True)
class HostRecord:
    """What node-check needs of one host: its desired state and its resolved intent."""

    desired: DesiredHost
    intent: FabricIntent

    @property
    def host(self) -> str:
        return self.desired.host


def record_json(record: HostRecord) -> str:
    """The record as the file holds it: versioned, keys in a fixed order, one trailing newline."""
    return json.dumps(_document(record), indent=2) + "\n"


def _document(record: HostRecord) -> dict[str, Any]:
    return {
        "kind": RECORD_KIND,
        "version": RECORD_VERSION,
        "host": record.host,
        "desired": _DESIRED.dump_python(record.desired, mode="json"),
        "intent": record.intent.model_dump(mode="json"),
    }


def read_record(text: str, source: str) -> HostRecord:
    """The HostRecord of a file's text; RecordError naming the key that is missing or wrong."""
    if len(text.encode("utf-8", "replace")) > MAX_RECORD_BYTES:
        raise RecordError(source, "", f"over {MAX_RECORD_BYTES} bytes: not a desired record")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(source, "", f"not JSON: {err}") from None
    if not isinstance(document, dict):
        raise RecordError(source, "", "not a JSON object")
    _expect(document, source, "kind", RECORD_KIND)
    version = _field(document, source, "version")
    if version != RECORD_VERSION:
        raise RecordError(
            source,
            "version",
            f"{version!r}: this fabcheck reads version {RECORD_VERSION}; write the record with the "
            "same fabcheck release as node-check",
        )
    unknown = sorted(set(document) - {"kind", "version", "host", "desired", "intent"})
    if unknown:
        raise RecordError(source, unknown[0], "not a key of a desired record")
    desired = _validated(
        source, "desired", lambda: _DESIRED.validate_json(_dump(document, source, "desired"), strict=True)
    )
    intent = _validated(
        source,
        "intent",
        lambda: FabricIntent.model_validate_json(_dump(document, source, "intent"), strict=True),
    )
    host = _field(document, source, "host")
    if host != desired.host:
        raise RecordError(source, "host", f"{host!r} is not desired.host {desired.host!r}")
    return HostRecord(desired, intent)


def _field(document: dict[str, Any], source: str, key: str) -> Any:
    if key not in document:
        raise RecordError(source, key, "missing")
    return document[key]


def _expect(document: dict[str, Any], source: str, key: str, wanted: str) -> None:
    found = _field(document, source, key)
    if found != wanted:
        raise RecordError(source, key, f"{found!r} is not {wanted!r}: not a fabcheck desired record")


def _dump(document: dict[str, Any], source: str, key: str) -> str:
    return json.dumps(_field(document, source, key))


def _validated(source: str, key: str, validate: Callable[[], T]) -> T:
    """validate() with a pydantic error turned into a RecordError naming the first bad key's path."""
    try:
        return validate()
    except ValidationError as err:
        first = err.errors()[0]
        path = ".".join([key, *(str(part) for part in first["loc"])])
        raise RecordError(source, path, f"{first['msg']} (input {first.get('input')!r:.80})") from None


# -- records as templates: how `validate --via slurm` hands each node its record (fabcheck.gate.step_judge)

# Argument limits for the step's srun command line: one argument may hold 128 KiB on Linux
# (MAX_ARG_STRLEN); the templates together stay well under the 2 MiB of argv + environment.
TEMPLATE_ARG_BYTES = 120 * 1024
TEMPLATES_TOTAL_BYTES = 512 * 1024
_HOST_NAME = "\x00fabcheck-host\x00"  # stands for the host's own name in a template: no name holds NUL


def _replaced(value: Any, find: str, put: str, *, names_kept: bool = False) -> Any:
    """The JSON value with every string equal to `find` replaced by `put` (the host's name <-> the
    template's stand-in for it). With `names_kept`, a list of several strings stays as it is: a list of
    names (an NVLink domain's members) is the same in each member's record, so the hosts of one domain
    share one template (each host its own, before: past ~340 NVLink hosts the rest sent raw output)."""
    if isinstance(value, str):
        return put if value == find else value
    if isinstance(value, list):
        if names_kept and len(value) > 1 and all(isinstance(item, str) for item in value):
            return value
        return [_replaced(item, find, put, names_kept=names_kept) for item in value]
    if isinstance(value, dict):
        return {key: _replaced(item, find, put, names_kept=names_kept) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class StepRecords:
    """The records a step hands its nodes: distinct templates (compressed JSON, base64) and each host's
    template index. Hosts left out of `index` did not fit the command line: they send raw output."""

    templates: tuple[str, ...]
    index: Mapping[str, int]

    @classmethod
    def of(cls, records: Mapping[str, HostRecord]) -> StepRecords:
        """Pure: every record as its template (each string equal to the host's name stands for it, but in
        a list of names), each distinct template once, in first-seen order, while they fit the argument
        limits."""
        templates: list[str] = []
        position: dict[str, int] = {}
        index: dict[str, int] = {}
        total = 0
        for host, record in records.items():
            templated = _replaced(_document(record), host, _HOST_NAME, names_kept=True)
            text = json.dumps(templated, separators=(",", ":"), sort_keys=True)
            at = position.get(text)
            if at is None:
                encoded = base64.b64encode(zlib.compress(text.encode(), 9)).decode("ascii")
                if len(encoded) > TEMPLATE_ARG_BYTES or total + len(encoded) > TEMPLATES_TOTAL_BYTES:
                    continue  # this host sends its raw output; the controller judges it
                total += len(encoded)
                at = position[text] = len(templates)
                templates.append(encoded)
            index[host] = at
        return cls(tuple(templates), index)


def record_from_template(encoded: str, host: str, source: str = "the step's record") -> HostRecord:
    """The host's record from its template; RecordError when it is not one."""
    try:
        text = zlib.decompress(base64.b64decode(encoded, validate=True)).decode("utf-8")
        document = _replaced(json.loads(text), _HOST_NAME, host)
    except (binascii.Error, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(source, "", f"not a fabcheck record template: {err}") from None
    return read_record(json.dumps(document), source)
