"""The wire at each cabled switch port (docs/checks/wire.md): its error, FEC and BER counters over the
counter window (switch.link_errors), its down transitions (switch.link_flaps) and its module's digital
diagnostics against the module's own thresholds (switch.optics). The judges are the host checks' own
(fabcheck.checks.wire), so a port and a NIC are held to the same limits, the intent's link_health.

Counters, not settings: no role sets them and they have no owned field; a failure's hint says what to
clean, reseat or replace. A platform whose probes yield no LinkDelta (or no ModuleOptics) cannot answer:
a named skip, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.switch.fields import FieldCheck
from fabcheck.checks.switch.judges import MoreRecords, SwitchCheck, SwitchJudge, Verdict, switch_check
from fabcheck.checks.wire import (
    Judged,
    errors_expected,
    flaps_expected,
    judge_errors,
    judge_flaps,
    judge_optics,
    optics_expected,
)
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.intent.model import LinkHealth
from fabcheck.parsers.wire_records import LinkDelta, ModuleOptics

LINK_ERRORS = "switch.link_errors"
LINK_FLAPS = "switch.link_flaps"
OPTICS = "switch.optics"

OWNER = "the cabling: clean, reseat or replace the cable or a module (the hint names which)"


def _cabled(port: DesiredSwitchPort) -> bool:
    return port.peer is not None


def _end(desired: DesiredSwitch, port: str | None) -> str:
    return f"{desired.name}:{port}" if port else desired.name


RecordT = TypeVar("RecordT", LinkDelta, ModuleOptics)


def _wire_judge(
    needs: type[RecordT],
    expected: Callable[[LinkHealth], str],
    judge: Callable[[RecordT, LinkHealth, str], Judged],
    not_shown: str,
) -> SwitchJudge[RecordT, Inputs]:
    """A judge of each cabled port's `needs` record by the shared wire `judge` against the intent's
    link_health, the port named as its cable end; the verdict's hint is the judged record's own."""

    def judged(record: RecordT, port: str | None, desired: DesiredSwitch) -> Judged:
        return judge(record, desired.link_health, _end(desired, port))

    def want(desired: DesiredSwitch, _port: DesiredSwitchPort | None, _inputs: Inputs) -> str:
        return expected(desired.link_health)

    def verdict(
        record: RecordT,
        port: str | None,
        desired: DesiredSwitch,
        _p: DesiredSwitchPort | None,
        _m: MoreRecords,
        _i: Inputs,
    ) -> Verdict:
        found = judged(record, port, desired)
        return found.status, found.actual

    # The record parameter's type read back from the verdict (the catalog's declared-type check) is
    # `needs` itself, not the TypeVar the closure is written with.
    verdict.__annotations__["record"] = needs
    return SwitchJudge(
        needs,
        want,
        verdict,
        ports=_cabled,
        not_shown=not_shown,
        owner=OWNER,
        advise=lambda record, port, desired, _i: judged(record, port, desired).hint,
    )


def _wire_check(check_id: str, summary: str, judge: SwitchJudge[Any, Inputs]) -> SwitchCheck:
    return switch_check(check_id, None, summary, judge, NO_INPUTS, role=None)


LINK_ERRORS_CHECK = _wire_check(
    LINK_ERRORS,
    "over the counter window: CRC/FCS, symbol, alignment errors and discards within `link_health`, no "
    "uncorrectable FEC block, pre-FEC BER <= `link_health.max_pre_fec_ber` (window 0: a named skip)",
    _wire_judge(
        LinkDelta,
        errors_expected,
        judge_errors,
        "the platform shows no error counters in the views the gate reads",
    ),
)
LINK_FLAPS_CHECK = _wire_check(
    LINK_FLAPS,
    "no link-down or state change inside the counter window; lifetime down transitions <= "
    "`link_health.flaps_allowed`",
    _wire_judge(
        LinkDelta,
        flaps_expected,
        judge_flaps,
        "the platform shows no link-down or link-change counter in the views the gate reads",
    ),
)
OPTICS_CHECK = _wire_check(
    OPTICS,
    "every DOM reading within the module's own thresholds; RX power >= low alarm + "
    "`link_health.optics_rx_margin_db`; temperature <= high warning - `optics_temperature_margin_c` "
    "(no DOM, a DAC: a named skip)",
    _wire_judge(
        ModuleOptics,
        optics_expected,
        judge_optics,
        "the platform shows no transceiver diagnostics in the views the gate reads",
    ),
)
CHECKS: tuple[SwitchCheck, ...] = (LINK_ERRORS_CHECK, LINK_FLAPS_CHECK, OPTICS_CHECK)

FIELDS: tuple[FieldCheck, ...] = ()  # counters and diagnostics: nothing a push writes
