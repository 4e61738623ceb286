"""What the gate read from one switch, as the switch checks receive it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from fabcheck.parsers.switch_records import Record

RecordT = TypeVar("RecordT")


@dataclass(frozen=True)
class SwitchEvidence:
    """What the gate read from one switch: records by (type, port or None), and why any are missing."""

    switch: str
    platform: str
    records: Mapping[tuple[type, str | None], Record]
    provided: frozenset[type]  # record types this platform's probes yield at all
    missing: Sequence[tuple[tuple[type, ...], str | None, str]] = ()  # (types, port, reason)
    unreachable: str | None = None  # why nothing could be read (connection refused, timeout)
    # Record types the platform yields but this switch's release has no view of, and why (not provided).
    not_in_release: Mapping[type, str] = field(default_factory=dict)

    def get(self, kind: type[RecordT], port: str | None) -> tuple[RecordT | None, bool]:
        """(record, whether it is the port's own); a port falls back to the switch-wide record.
        Records are kept by their type, so the one found is a `kind`."""
        if port is not None and (kind, port) in self.records:
            return _of(kind, self.records[(kind, port)]), True
        return _of(kind, self.records.get((kind, None))), port is None

    def why_missing(self, kinds: Sequence[type], port: str | None) -> tuple[str, bool]:
        """(reason, whether it concerns the whole switch: a switch-wide probe failed)."""
        for types, where, reason in self.missing:
            if where in (port, None) and set(types) & set(kinds):
                return reason, where is None
        names = ", ".join(k.__name__ for k in kinds)
        return f"the switch showed no {names} for port {port}", False


def _of(kind: type[RecordT], record: object) -> RecordT | None:
    return record if isinstance(record, kind) else None
