"""How a switch check is declared and judged: the judge generic over the record it reads, the one
declaration helper, and the run that turns a judge and a switch's records into findings.

A judge (SwitchJudge) binds its record type once, in `needs`: its verdict receives that record typed,
its expectation and verdict receive the check's own inputs typed (switch_check binds the two), and the
further records it reads (`also`) come through MoreRecords, each by its type. A record a port has is
judged per port (subject `leaf01:swp1`); a switch-wide record (NVUE's global profiles) is judged once
for the switch. A record that could not be read is an ERROR naming the probe; a check the platform
cannot answer, or one the intent makes moot, is a SKIP with the reason.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from fabcheck.checks.declare import Check, Inputs
from fabcheck.checks.model import Finding, Status, Where, errored, skipped
from fabcheck.checks.roles import SWITCH_QOS_ROLE
from fabcheck.checks.switch.evidence import SwitchEvidence
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort

RecordT = TypeVar("RecordT")
InputsT = TypeVar("InputsT", bound=Inputs)

Verdict = tuple[Status, str]  # (PASS/FAIL/ERROR/SKIP, actual)


@dataclass(frozen=True)
class MoreRecords:
    """The further records a verdict reads (SwitchJudge.also) that the switch showed for the port."""

    records: Mapping[type, object] = field(default_factory=dict)

    def get(self, kind: type[RecordT]) -> RecordT | None:
        record = self.records.get(kind)
        return record if isinstance(record, kind) else None


def _every_port(_port: DesiredSwitchPort) -> bool:
    return True


@dataclass(frozen=True)
class SwitchJudge(Generic[RecordT, InputsT]):
    """How a switch check judges: the record type it needs, what it expects and the verdict on a record,
    which ports it concerns, and why a platform that shows no such record cannot answer it."""

    needs: type[RecordT]  # the record judged
    # the desired switch, the port (None: switch-wide), the check's inputs -> the expected result shown
    expected: Callable[[DesiredSwitch, DesiredSwitchPort | None, InputsT], str]
    # the record, its port (None: switch-wide), the desired switch and port, the further records, the
    # inputs -> the verdict
    verdict: Callable[
        [RecordT, str | None, DesiredSwitch, DesiredSwitchPort | None, MoreRecords, InputsT], Verdict
    ]
    also: tuple[type, ...] = ()  # further records the verdict reads when the platform provides them
    ports: Callable[[DesiredSwitchPort], bool] = _every_port  # which ports it concerns
    not_shown: str = ""  # why a platform whose probes lack the record cannot answer it
    # Who sets what it judges when no fabcheck role does (the check's role is then None): the hint.
    owner: str = ""
    # The hint of a failure read from the record itself (the wire checks: what to clean, reseat or
    # replace at which end), in place of the role's fix; given what the verdict was given but `more`.
    advise: Callable[[RecordT, str | None, DesiredSwitch, InputsT], str] | None = None


# A catalog holds checks over different records: each declaration binds its own (switch_check).
SwitchCheck = Check[SwitchJudge[Any, Any]]
SCOPE = "port (switch-wide where the platform keeps one)"


def switch_check(
    check_id: str,
    tag: str | None,
    summary: str,
    judge: SwitchJudge[Any, InputsT],
    inputs: InputsT,
    applies: Callable[[DesiredSwitch], str | None] | None = None,
    role: str | None = SWITCH_QOS_ROLE,
) -> SwitchCheck:
    """A switch check: role switch_qos fixes it (tag `tag`) unless `role` is None (the judge's owner
    then names who does), it reads the records its judge needs, and its judge takes `inputs`."""
    return Check(
        check_id,
        "switch",
        SCOPE,
        (judge.needs.__name__, *(kind.__name__ for kind in judge.also)),
        summary,
        role,
        tag,
        judge,
        inputs,
        applies=applies or (lambda _desired: None),
    )


def fix_hint(switch: str, tag: str, what: str) -> str:
    command = shlex.join(["ansible-playbook", "site.yml", "--limit", switch, "--tags", tag])
    return f"{what}; role {SWITCH_QOS_ROLE} (tag {tag}) sets it; on this switch: `{command}`"


# -- how the verdicts spell what they show -----------------------------------------------------------


def pairs(mapping: Mapping[int, int]) -> str:
    return ", ".join(f"{key}->{value}" for key, value in sorted(mapping.items())) or "none"


def ids(values: Sequence[int]) -> str:
    return ",".join(map(str, values)) if values else "none"


def or_unknown(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def map_drift(
    table: str, source: str, target: str, wanted: Mapping[int, int], have: Sequence[tuple[int, int]] | None
) -> list[str]:
    """How a SONiC map bound to the port differs from the intent's, entry by entry ([] = the same)."""
    if have is None:
        return [f"the port binds no {table}"]
    shown = dict(have)
    return [
        f"{table}: {source} {key} -> {target} {shown.get(key, 'unmapped')} (not {value})"
        for key, value in sorted(wanted.items())
        if shown.get(key) != value
    ]


# -- running one declaration on one switch -----------------------------------------------------------


def run_check(check: SwitchCheck, evidence: SwitchEvidence, desired: DesiredSwitch) -> list[Finding]:
    assert check.judge is not None  # every switch check is judged here
    judge, inputs, name = check.judge, check.inputs, evidence.switch
    if evidence.unreachable is not None:
        return [
            errored(check.id, name, judge.expected(desired, None, inputs), "not read", evidence.unreachable)
        ]
    if judge.needs not in evidence.provided:
        not_shown = (
            evidence.not_in_release.get(judge.needs)
            or judge.not_shown
            or f"the gate reads no {judge.needs.__name__} there"
        )
        reason = f"{evidence.platform}: {not_shown}"
        return [skipped(check.id, name, reason)]
    not_applicable = check.applies(desired)
    if not_applicable is not None:
        return [skipped(check.id, name, not_applicable)]
    findings: list[Finding] = []
    judged_switch_wide = False
    ports = [port for port in desired.ports if judge.ports(port)]
    if not ports:
        return [skipped(check.id, name, "no port of this switch is concerned")]
    for port in ports:
        record, own = evidence.get(judge.needs, port.port)
        if record is None:
            reason, switch_wide = evidence.why_missing((judge.needs,), port.port)
            if not (switch_wide and judged_switch_wide):
                subject = name if switch_wide else f"{name}:{port.port}"
                wanted = judge.expected(desired, None if switch_wide else port, inputs)
                unread = errored(check.id, subject, wanted, "not read", reason)
                findings.append(replace(unread, where=_where(name, None if switch_wide else port)))
            judged_switch_wide = judged_switch_wide or switch_wide
            continue
        if not own and judged_switch_wide:
            continue
        subject = f"{name}:{port.port}" if own else name
        wanted = judge.expected(desired, port if own else None, inputs)
        judged_switch_wide = judged_switch_wide or not own
        more = _also(judge, evidence, port.port)
        at = port if own else None
        status, actual = judge.verdict(record, port.port if own else None, desired, at, more, inputs)
        found = _finding(check, status, subject, wanted, actual, name)
        if status is Status.FAIL and judge.advise is not None:
            found = replace(found, hint=judge.advise(record, port.port if own else None, desired, inputs))
        findings.append(replace(found, where=_where(name, at)))
    return findings


def _where(switch: str, port: DesiredSwitchPort | None) -> Where:
    """The switch, the port a per-port finding judges, and the host NIC the cabling map puts there."""
    if port is None:
        return Where(switch)
    return Where(switch, port.port, port.peer or "")


def _also(judge: SwitchJudge[Any, Any], evidence: SwitchEvidence, port: str) -> MoreRecords:
    found: dict[type, object] = {}
    for kind in judge.also:
        record, _own = evidence.get(kind, port)
        if record is not None:
            found[kind] = record
    return MoreRecords(found)


def _finding(
    check: SwitchCheck, status: Status, subject: str, expected: str, actual: str, switch: str
) -> Finding:
    if status is Status.PASS:
        return Finding(check.id, status, subject, expected, actual)
    if status is Status.SKIP:
        return skipped(check.id, subject, actual)
    if status is Status.ERROR:
        return Finding(
            check.id, status, subject, expected, actual, "the switch's output cannot be judged as shown"
        )
    what = f"{subject}: {check.summary}"
    hint = (
        fix_hint(switch, check.tag or "", what)
        if check.role
        else f"{what}; no fabcheck role sets it: {check.judge.owner if check.judge else 'unknown'}"
    )
    return Finding(check.id, status, subject, expected, actual, hint)
