"""The wire at each cabled switch port (docs/checks/wire.md): its error, FEC and BER counters over the
counter window (switch.link_errors), its down transitions (switch.link_flaps) and its module's digital
diagnostics against the module's own thresholds (switch.optics). The judges are the host checks' own
(fabcheck.checks.wire), so a port and a NIC are held to the same limits, the intent's link_health.

Counters, not settings: no role sets them and they have no owned field; a failure's hint says what to
clean, reseat or replace. A platform whose probes yield no LinkDelta (or no ModuleOptics) cannot answer:
a named skip, never a pass.
"""

from __future__ import annotations

from typing import Any

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
from fabcheck.parsers.wire_records import LinkDelta, ModuleOptics

LINK_ERRORS = "switch.link_errors"
LINK_FLAPS = "switch.link_flaps"
OPTICS = "switch.optics"

OWNER = "the cabling: clean, reseat or replace the cable or a module (the hint names which)"


def _cabled(port: DesiredSwitchPort) -> bool:
    return port.peer is not None


def _end(desired: DesiredSwitch, port: str | None) -> str:
    return f"{desired.name}:{port}" if port else desired.name


def _errors(record: LinkDelta, port: str | None, desired: DesiredSwitch) -> Judged:
    return judge_errors(record, desired.link_health, _end(desired, port))


def _flaps(record: LinkDelta, port: str | None, desired: DesiredSwitch) -> Judged:
    return judge_flaps(record, desired.link_health, _end(desired, port))


def _optics(record: ModuleOptics, port: str | None, desired: DesiredSwitch) -> Judged:
    return judge_optics(record, desired.link_health, _end(desired, port))


def _want_errors(desired: DesiredSwitch, _port: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return errors_expected(desired.link_health)


def _want_flaps(desired: DesiredSwitch, _port: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return flaps_expected(desired.link_health)


def _want_optics(desired: DesiredSwitch, _port: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return optics_expected(desired.link_health)


def _judge_errors(
    r: LinkDelta,
    port: str | None,
    d: DesiredSwitch,
    _p: DesiredSwitchPort | None,
    _m: MoreRecords,
    _i: Inputs,
) -> Verdict:
    judged = _errors(r, port, d)
    return judged.status, judged.actual


def _judge_flaps(
    r: LinkDelta,
    port: str | None,
    d: DesiredSwitch,
    _p: DesiredSwitchPort | None,
    _m: MoreRecords,
    _i: Inputs,
) -> Verdict:
    judged = _flaps(r, port, d)
    return judged.status, judged.actual


def _judge_optics(
    r: ModuleOptics,
    port: str | None,
    d: DesiredSwitch,
    _p: DesiredSwitchPort | None,
    _m: MoreRecords,
    _i: Inputs,
) -> Verdict:
    judged = _optics(r, port, d)
    return judged.status, judged.actual


def _wire_check(check_id: str, summary: str, judge: SwitchJudge[Any, Inputs]) -> SwitchCheck:
    return switch_check(check_id, None, summary, judge, NO_INPUTS, role=None)


LINK_ERRORS_CHECK = _wire_check(
    LINK_ERRORS,
    "over the counter window: CRC/FCS, symbol, alignment errors and discards within `link_health`, no "
    "uncorrectable FEC block, pre-FEC BER <= `link_health.max_pre_fec_ber` (window 0: a named skip)",
    SwitchJudge(
        LinkDelta,
        _want_errors,
        _judge_errors,
        ports=_cabled,
        not_shown="the platform shows no error counters in the views the gate reads",
        owner=OWNER,
        advise=lambda r, port, d, _i: _errors(r, port, d).hint,
    ),
)
LINK_FLAPS_CHECK = _wire_check(
    LINK_FLAPS,
    "no link-down or state change inside the counter window; lifetime down transitions <= "
    "`link_health.flaps_allowed`",
    SwitchJudge(
        LinkDelta,
        _want_flaps,
        _judge_flaps,
        ports=_cabled,
        not_shown="the platform shows no link-down or link-change counter in the views the gate reads",
        owner=OWNER,
        advise=lambda r, port, d, _i: _flaps(r, port, d).hint,
    ),
)
OPTICS_CHECK = _wire_check(
    OPTICS,
    "every DOM reading within the module's own thresholds; RX power >= low alarm + "
    "`link_health.optics_rx_margin_db`; temperature <= high warning - `optics_temperature_margin_c` "
    "(no DOM, a DAC: a named skip)",
    SwitchJudge(
        ModuleOptics,
        _want_optics,
        _judge_optics,
        ports=_cabled,
        not_shown="the platform shows no transceiver diagnostics in the views the gate reads",
        owner=OWNER,
        advise=lambda r, port, d, _i: _optics(r, port, d).hint,
    ),
)
CHECKS: tuple[SwitchCheck, ...] = (LINK_ERRORS_CHECK, LINK_FLAPS_CHECK, OPTICS_CHECK)

FIELDS: tuple[FieldCheck, ...] = ()  # counters and diagnostics: nothing a push writes
