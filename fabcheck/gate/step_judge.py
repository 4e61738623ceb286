"""`validate --via slurm` judged where the evidence is: each node of the srun step judges its own host
checks and sends back its findings, not its raw output.

The controller hands every node its desired record in the step's arguments (the plan's records, derived
once; `StepRecords` below folds hosts whose records differ only in the host's own name into one
template, so a homogeneous fleet of any size sends one); the node runs the collection script locally
under the same bounds as a native round trip, judges it with the host stage's own `judge`, and prints
ONE section, `fabcheck.judged`: its findings and the raw sections the controller still reads. Those are
the sections of the probes the fleet checks declare they read (what must agree across hosts is compared
where every host is), or every section when a later consumer of the host evidence runs (the link, nccl
and incast stages, --metrics, --extra-checks). The controller parses only those, so it merges instead
of judging: findings identical to a native run, at a fraction of the controller's CPU.

A node that cannot judge (no fabcheck on it, another build of fabcheck, a record it cannot read) says
why on stderr and sends the raw collection instead: the controller judges that node as before. The
fingerprint of fabcheck's own code, not its version string, decides "the same build".
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import re
import sys
import typing
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import PydanticSchemaGenerationError, TypeAdapter, ValidationError

from fabcheck.checks.host import FLEET_CHECK_DECLS
from fabcheck.checks.model import Finding, Measure, Status, Where
from fabcheck.collect import host as probes
from fabcheck.collect.backends.slurm import EVERY_SECTION, JUDGED_SECTION, STEP_JUDGE_SAYS
from fabcheck.collect.host import HostCollection, Unreadable, read_records
from fabcheck.collect.script import COMPLETE, EARLIER, MARK, ROUND_TRIP_CAP_BYTES, Section
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.record import HostRecord, RecordError, record_from_template
from fabcheck.gate.snapshot import optional_text, section_of, text

PAYLOAD_VERSION = 1
LINE_CHARS = 512  # a packed payload's line: well under srun's 1,024-byte cut
MAX_PAYLOAD_BYTES = ROUND_TRIP_CAP_BYTES  # a judgement holds at most what one round trip may send
RAW = 75  # step-judge's exit code for "not judged here: run the raw collection" (EX_TEMPFAIL)
# The sections every forward list includes: the port listing every record is read through, the counter
# window's reading and whether the host could bound its run (read_records reads them first).
ALWAYS_FORWARDED = frozenset({probes.RDMA_LINK, probes.TIME_LIMIT, probes.COUNTER_WINDOW})
# What the fleet checks compare, as their declarations say, and what present_nics reads to find the NICs.
FLEET_READS = frozenset(
    {probe for check in FLEET_CHECK_DECLS for probe in check.reads if probe in probes.PROBES_BY_NAME}
    | {probes.IBV_DEVINFO}
)
_STATUS_OF = {status.value: status for status in Status}  # Status(value), without the enum call
_TOKEN = re.compile(r"[0-9a-f]{8,64}")
_FORWARD = re.compile(r"\*|[a-z0-9_]+(,[a-z0-9_]+)*|")


class PayloadError(ValueError):
    """A judged section the controller cannot read: the node's error names it."""


# -- the fingerprint ---------------------------------------------------------------------------------


@cache
def code_fingerprint() -> str:
    """The digest of fabcheck's own source (every .py under the package, by path): a node judges only
    with the very code the controller runs, so its findings are the controller's."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


# -- what the node sends back ------------------------------------------------------------------------


def forward_list(probe_names: Collection[str] | None) -> str:
    """The forward argument: the probes whose sections go back (None: every section)."""
    if probe_names is None:
        return EVERY_SECTION
    return ",".join(sorted(set(probe_names) | ALWAYS_FORWARDED))


def narrowed(forward: str, record: HostRecord) -> str:
    """The forward list cut to what the fleet checks read of THIS host: a fleet check that does not
    apply to it (another kind, no NVLink plan) never reads its evidence (checks.host.check_fleet and
    each fleet judge skip it), so its sections stay on the node."""
    if forward == EVERY_SECTION:
        return forward
    needed = {probes.IBV_DEVINFO} | ALWAYS_FORWARDED
    for check in FLEET_CHECK_DECLS:
        if check.not_applicable(record.intent, record.desired) is None:
            needed |= set(check.reads)
    return ",".join(probe for probe in forward.split(",") if probe in needed)


def forwarded(sections: Mapping[str, Section], forward: str) -> dict[str, Section]:
    """The sections of the listed probes (with a counter probe's first reading), or every one ("*")."""
    if forward == EVERY_SECTION:
        return dict(sections)
    wanted = set(forward.split(","))
    kept = {}
    for name, section in sections.items():
        probe = name.partition(":")[0].removesuffix(EARLIER)
        if probe in wanted:
            kept[name] = section
    return kept


def payload_json(collection: HostCollection, findings: Iterable[Finding], forward: str) -> str:
    """The judged section's text: the node's findings (as rows), how its collection ended, and what the
    controller still reads of it: with a probe list, those probes' records as the controller's parsers
    read them (typed JSON: the controller validates them, it parses no text); with every section ("*"),
    or a record that cannot be written as JSON, the raw sections."""
    records = None
    if forward != EVERY_SECTION:
        with contextlib.suppress(RecordCodecError):
            records = record_rows(read_records(collection.sections, collection.priority, _probes(forward)))
    document = {
        "version": PAYLOAD_VERSION,
        "host": collection.host,
        "forward": forward,
        "complete": collection.complete,
        "error": collection.error,
        "expired": collection.expired,
        "findings": [_finding_row(finding) for finding in findings],
        "records": records,
        "sections": {}
        if records is not None
        else {
            name: [section.rc, section.stdout, section.stderr]
            for name, section in forwarded(collection.sections, forward).items()
        },
    }
    return json.dumps(document, separators=(",", ":"))


def _probes(forward: str) -> list[probes.HostProbe]:
    wanted = set(forward.split(","))
    return [probe for probe in probes.HOST_PROBES if probe.name in wanted]


def _finding_row(finding: Finding) -> list[Any]:
    return [
        finding.check,
        finding.status.value,
        finding.subject,
        finding.expected,
        finding.actual,
        finding.hint,
        None if finding.where is None else finding.where.to_json(),
        None if finding.measure is None else finding.measure.to_json(),
    ]


def _finding_of(row: Any) -> Finding:
    """The Finding of a row; TypeError, KeyError (an unknown status) or ValueError when it is not one."""
    if not isinstance(row, list) or len(row) != 8:
        raise TypeError("a finding row is a list of 8")
    check, status, subject, expected, actual, hint, where, measure = row
    for field_text in (check, subject, expected, actual, hint):
        if not isinstance(field_text, str):
            raise TypeError(f"{field_text!r} is not text")
    return Finding(
        check,
        _STATUS_OF[status],
        subject,
        expected,
        actual,
        hint,
        None if where is None else Where.from_json(where),
        None if measure is None else Measure.from_json(measure),
    )


# -- records as typed JSON ---------------------------------------------------------------------------


class RecordCodecError(ValueError):
    """A record that cannot be written or read as its probe's type."""


@cache
def _adapter(probe_name: str) -> TypeAdapter[Any]:
    """The pydantic adapter of a probe's record type (its parser's return type)."""
    probe = probes.PROBES_BY_NAME.get(probe_name.removesuffix(EARLIER))
    if probe is None:
        raise RecordCodecError(f"no probe {probe_name!r}")
    # Optional: an optional probe's tool that is not installed reads as None (collect.host.read_section).
    record_type = typing.get_type_hints(probe.parse)["return"]
    return TypeAdapter(record_type | None)


def _plain_mapping(value: Any) -> Any:
    if isinstance(value, MappingProxyType):  # the parsers freeze their mappings
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def record_rows(records: Mapping[tuple[str, str], Any]) -> list[list[Any]]:
    """Records as rows [probe, subject, {"ok": value} or {"unreadable": [command, reason]}]."""
    rows: list[list[Any]] = []
    for (probe, subject), record in records.items():
        if isinstance(record, Unreadable):
            rows.append([probe, subject, {"unreadable": [record.command, record.reason]}])
            continue
        adapter = _adapter(probe)
        try:
            value = adapter.dump_python(record, mode="json", fallback=_plain_mapping, warnings=False)
            # Sent only when it reads back as the very record: else the raw sections go instead.
            same = adapter.validate_python(value) == record
        # ValueError covers pydantic-core's serialization error (not a distribution fabcheck requires).
        except (TypeError, ValueError, PydanticSchemaGenerationError) as err:
            raise RecordCodecError(f"{probe}: {err}") from None
        if not same:
            raise RecordCodecError(f"{probe} {subject}: does not read back as itself")
        rows.append([probe, subject, {"ok": value}])
    return rows


def records_of(rows: Any) -> dict[tuple[str, str], Any]:
    """The records of record_rows; RecordCodecError naming the first that is not its probe's type."""
    if not isinstance(rows, list):
        raise RecordCodecError("records are a list")
    records: dict[tuple[str, str], Any] = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 3 or not all(isinstance(x, str) for x in row[:2]):
            raise RecordCodecError(f"{str(row)[:80]}: not a record row")
        probe, subject, value = row
        if isinstance(value, dict) and set(value) == {"unreadable"}:
            command, reason = value["unreadable"]
            records[(probe, subject)] = Unreadable(text(command), text(reason))
        elif isinstance(value, dict) and set(value) == {"ok"}:
            try:
                records[(probe, subject)] = _adapter(probe).validate_python(value["ok"])
            except ValidationError as err:
                raise RecordCodecError(f"{probe} {subject}: {err.errors()[0]['msg']}") from None
        else:
            raise RecordCodecError(f"{probe} {subject}: neither ok nor unreadable")
    return records


def packed(payload: str) -> str:
    """The payload compressed, in base64 lines short enough for srun: with --label, srun cuts a task's
    line at 1,024 bytes (seen in the lab's Slurm 22.05), which would break one long JSON line."""
    encoded = base64.b64encode(zlib.compress(payload.encode("utf-8"), 6)).decode("ascii")
    return "\n".join(encoded[at : at + LINE_CHARS] for at in range(0, len(encoded), LINE_CHARS))


def unpacked(text: str) -> str:
    """The payload of `packed` text; PayloadError when it is not one or grows beyond the cap."""
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
        inflater = zlib.decompressobj()
        plain = inflater.decompress(data, MAX_PAYLOAD_BYTES)
        if inflater.unconsumed_tail:
            raise PayloadError(f"it inflates beyond {MAX_PAYLOAD_BYTES} bytes")
        return plain.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as err:
        raise PayloadError(f"not a packed judgement: {err}") from None


def judged_output(token: str, payload: str) -> str:
    """The node's whole answer in the collection's own framing: one section (the payload packed), then
    the complete line."""
    return (
        f"{MARK} {token} begin {JUDGED_SECTION}>>>\n{packed(payload)}\n"
        f"{MARK} {token} stderr {JUDGED_SECTION}>>>\n\n"
        f"{MARK} {token} end {JUDGED_SECTION} rc=0>>>\n{MARK} {token} {COMPLETE}>>>\n"
    )


# -- reading it (controller) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """A node's judgement as the controller reads it."""

    findings: tuple[Finding, ...]
    sections: Mapping[str, Section]
    forward: str
    complete: bool
    error: str | None
    expired: str | None
    sent_records: Mapping[tuple[str, str], Any] | None = None  # the node's records, when it sent them

    def records(self, priority: int) -> dict[tuple[str, str], Any]:
        """What the controller reads of the node: its records as sent, else its forwarded sections'
        (parsing only the probes that were sent)."""
        if self.sent_records is not None:
            return dict(self.sent_records)
        if self.forward == EVERY_SECTION:
            return read_records(self.sections, priority)
        return read_records(self.sections, priority, _probes(self.forward))


def read_payload(text: str, host: str) -> Judged:
    """The Judged of a judged section's (packed) text; PayloadError naming what is wrong."""
    try:
        document = json.loads(unpacked(text))
    except (json.JSONDecodeError, RecursionError) as err:
        raise PayloadError(f"not JSON: {err}"[:300]) from None
    if not isinstance(document, dict):
        raise PayloadError("not a JSON object")
    if document.get("version") != PAYLOAD_VERSION:
        raise PayloadError(f"version {document.get('version')!r}, not {PAYLOAD_VERSION}")
    if document.get("host") != host:
        raise PayloadError(f"host {document.get('host')!r}, not {host!r}")
    try:
        forward = document["forward"]
        if not isinstance(forward, str) or not _FORWARD.fullmatch(forward):
            raise PayloadError(f"forward {forward!r} is not a probe list")
        findings = tuple(_finding_of(row) for row in document["findings"])
        sections = {
            str(name): section_of(rc, stdout, stderr)
            for name, (rc, stdout, stderr) in document["sections"].items()
        }
        rows = document["records"]
        return Judged(
            findings,
            sections,
            forward,
            bool(document["complete"]),
            optional_text(document["error"]),
            optional_text(document["expired"]),
            None if rows is None else records_of(rows),
        )
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as err:
        if isinstance(err, PayloadError):
            raise
        raise PayloadError(f"{type(err).__name__}: {err}"[:300]) from None


def raw_reads(collection: HostCollection) -> HostCollection | None:
    """The node's own collection, when its judged section carries every raw section ("*"); else None."""
    section = collection.sections.get(JUDGED_SECTION)
    if section is None or not section.ok:
        return None
    try:
        judged = read_payload(section.stdout, collection.host)
    except PayloadError:
        return None
    if judged.forward != EVERY_SECTION or judged.sent_records is not None:
        return None
    return HostCollection(
        collection.host, judged.sections, judged.complete, judged.error, collection.priority, judged.expired
    )


# -- the node's command ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepArguments:
    """What the step's wrapper hands `fabcheck step-judge` on the node."""

    token: str
    host: str
    fingerprint: str
    forward: str
    template: str
    host_s: int
    tool_s: int
    window_s: int

    @classmethod
    def parse(cls, argv: Sequence[str]) -> StepArguments:
        """ValueError naming the first bad argument."""
        if len(argv) != 8:
            raise ValueError(f"expected 8 arguments, got {len(argv)}")
        token, host, fingerprint, forward, template, host_s, tool_s, window_s = argv
        if not _TOKEN.fullmatch(token):
            raise ValueError("bad token")
        if not _FORWARD.fullmatch(forward) or not forward:
            raise ValueError(f"bad forward list {forward!r}")
        numbers = []
        for name, digits in (("host limit", host_s), ("tool limit", tool_s), ("counter window", window_s)):
            if not digits.isdigit():
                raise ValueError(f"bad {name} {digits!r}")
            numbers.append(int(digits))
        if numbers[0] <= numbers[2] or numbers[1] < 1:
            raise ValueError("the host limit must exceed the counter window and the tool limit be >= 1 s")
        return cls(token, host, fingerprint, forward, template, *numbers)

    @property
    def limits(self) -> TimeLimits:
        """The controller's limits as the node runs them: the same host, tool and window seconds."""
        return TimeLimits(
            1.0,
            float(self.host_s - self.window_s),
            per_tool_s=float(self.tool_s),
            counter_window_s=self.window_s,
        )


def main(argv: Sequence[str]) -> int:
    """`fabcheck step-judge ARGS` on a node of the step: print the judged section (exit 0), or say why
    not on stderr and exit RAW so the wrapper runs the raw collection."""
    try:
        args = StepArguments.parse(argv)
    except ValueError as err:
        print(f"{STEP_JUDGE_SAYS}{err}", file=sys.stderr)
        return RAW
    if args.fingerprint != code_fingerprint():
        print(
            f"{STEP_JUDGE_SAYS}this node's fabcheck ({code_fingerprint()}) is not the controller's "
            f"({args.fingerprint}): sending the raw collection",
            file=sys.stderr,
        )
        return RAW
    try:
        record = record_from_template(args.template, args.host)
    except RecordError as err:
        print(f"{STEP_JUDGE_SAYS}{err}: sending the raw collection", file=sys.stderr)
        return RAW
    from fabcheck.collect.backends.local import collect_local  # only a judging node starts a collection
    from fabcheck.gate.host_stage import judge

    collection = collect_local(args.host, record.desired.template.ecn_priority, args.limits)
    result = judge(collection, record.intent, record.desired)
    forward = narrowed(args.forward, record)
    sys.stdout.write(judged_output(args.token, payload_json(collection, result.findings, forward)))
    sys.stdout.flush()
    return 0
