"""The wire, judged: one port's error, FEC, BER and flap counters over the counter window, and its module's
digital diagnostics against the module's own thresholds. Pure, and shared: the host checks (a rail NIC's
netdev), the switch checks (a cabled port) and link.health (both ends of a cable) judge with these.

Each judge returns a `Judged`: the verdict, what was expected and shown (the device's own counter names
and the window: "rx_crc_errors_phy +8123 in 5 s"), the hint, and the `problems` it found, which
link.health reads to name the direction of a fault across the cable.

Rules (docs/checks/wire.md holds the thresholds and their sources):
- A counter the device does not expose is absent and not judged; a device that exposes none of a
  check's counters (or a module without diagnostics: a DAC) is a named SKIP, never a pass.
- A counter lower at the end of the window than at its start was cleared: it is not judged, and the
  actual says so.
- A window of 0 reads lifetime totals only: the per-window error check is a named SKIP quoting them;
  the lifetime flap count and the optics are judged all the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from fabcheck.checks.model import Status
from fabcheck.collect.host import Unreadable
from fabcheck.intent.model import LinkHealth
from fabcheck.parsers.wire_records import (
    NO_LIGHT_DBM,
    UNITS,
    CounterName,
    DomReading,
    LinkDelta,
    ModuleOptics,
    Quantity,
    Thresholds,
)

# What a judge found wrong, by where the fault is likely to be (link.health reads these):
Problem = Literal[
    "rx_errors",  # frames or symbols arrived corrupted here: the far end's transmitter, the cable, this optic
    "uncorrectable",  # FEC could not correct what arrived here: traffic lost on receive
    "ber",  # the pre-FEC bit error ratio here is over the limit: the received signal is poor
    "tx_errors",  # this end failed to send
    "discards",  # this end's port discarded frames (buffers, pause): not the cable
    "host_drops",  # the host ran out of receive buffers (rx_out_of_buffer): not the cable
    "flap",  # the link went down (or changed state) inside the window
    "flaps_lifetime",  # more down transitions since the last clear than allowed
    "no_light",  # the receiver sees no light at all
    "rx_power",  # receive power under the module's low alarm + margin (or over its high alarm)
    "tx_power",  # this module's transmit power outside its own thresholds
    "hot",  # the module's temperature over its high warning - margin (or outside its alarms)
    "module",  # another diagnostic (voltage, bias) outside the module's thresholds
]
RECEIVE: frozenset[Problem] = frozenset({"rx_errors", "uncorrectable", "ber"})


@dataclass(frozen=True)
class Judged:
    """One judge's verdict on one port."""

    status: Status
    expected: str
    actual: str
    hint: str = ""
    problems: frozenset[Problem] = frozenset()


def _window(delta: LinkDelta) -> str:
    return f"in {delta.window_s:g} s"


def _cleared(delta: LinkDelta, names: Iterable[CounterName]) -> str:
    back = [delta.native_name(name) for name in delta.went_back if name in set(names)]
    if not back:
        return ""
    return f"; cleared inside the window, not judged: {', '.join(back)}"


def unreadable(expected: str, missing: Unreadable) -> Judged:
    """A record that could not be read: an ERROR naming the command, never a pass."""
    return Judged(
        Status.ERROR,
        expected,
        f"could not read `{missing.command}`: {missing.reason}",
        "fix collection first (tool installed? run as root?), then run validate again",
    )


# ---- errors: CRC/FCS, symbol, alignment, receive/transmit totals, discards, FEC, pre-FEC BER ----------


@dataclass(frozen=True)
class _Limit:
    names: tuple[CounterName, ...]  # counted together against the limit
    limit: int
    problem: Problem
    what: str


def _limits(limits: LinkHealth) -> tuple[_Limit, ...]:
    crc, symbol, discards = limits.max_crc_errors, limits.max_symbol_errors, limits.max_discards
    return (
        # Alignment (framing) errors are bad frames as a CRC error is: counted with them.
        _Limit(("fcs_errors", "alignment_errors"), crc, "rx_errors", "CRC/FCS errors"),
        _Limit(("symbol_errors",), symbol, "rx_errors", "symbol errors"),
        # A platform's receive-error total holds CRC and symbol errors both: judged against their sum.
        _Limit(("rx_errors",), crc + symbol, "rx_errors", "receive errors"),
        _Limit(("tx_errors",), crc, "tx_errors", "transmit errors"),
        _Limit(("rx_discards",), discards, "discards", "receive discards"),
        _Limit(("tx_discards",), discards, "discards", "transmit discards"),
        _Limit(("rx_out_of_buffer",), discards, "host_drops", "receive-buffer drops"),
        # Every uncorrectable FEC block or symbol is lost traffic whatever the limits (ALWAYS_FAIL).
        _Limit(("fec_uncorrectable",), 0, "uncorrectable", "uncorrectable FEC blocks"),
        _Limit(("uncorrected_symbols",), 0, "uncorrectable", "symbols left uncorrected after FEC"),
    )


ERROR_COUNTERS: tuple[CounterName, ...] = tuple(name for rule in _limits(LinkHealth()) for name in rule.names)
SHOWN_ONLY: tuple[CounterName, ...] = ("fec_corrected", "corrected_bits", "received_bits")


def errors_expected(limits: LinkHealth) -> str:
    return (
        f"per counter window: CRC/FCS errors <= {limits.max_crc_errors}, symbol errors <= "
        f"{limits.max_symbol_errors}, discards <= {limits.max_discards}, no uncorrectable FEC block, "
        f"pre-FEC BER <= {limits.max_pre_fec_ber:g}"
    )


def judge_errors(delta: LinkDelta | Unreadable, limits: LinkHealth, end: str) -> Judged:
    """The error counters over the window against the limits; `end` names the port in the hint."""
    expected = errors_expected(limits)
    if isinstance(delta, Unreadable):
        return unreadable(expected, delta)
    exposed = [n for n in ERROR_COUNTERS if n in delta.reading.values]
    ber = delta.pre_fec_ber
    if not exposed and ber is None:
        return Judged(
            Status.SKIP,
            expected,
            f"{end} exposes none of the error counters (CRC/FCS, symbol, discards, FEC) nor a pre-FEC BER",
        )
    if delta.lifetime:
        shown = ", ".join(f"{delta.native_name(n)} {delta.grown.get(n, 0)}" for n in exposed)
        ber_text = f"; pre-FEC BER {ber:.2g}" if ber is not None else ""
        return Judged(
            Status.SKIP,
            expected,
            f"counter window 0 (lifetime values only, not judged per window): {shown or 'no counter'}"
            f"{ber_text}",
        )
    judged = [n for n in exposed if n in delta.grown]
    if not judged and ber is None:
        return Judged(
            Status.SKIP,
            expected,
            f"every error counter of {end} was cleared inside the window: nothing to judge"
            + _cleared(delta, exposed),
        )
    over: list[str] = []
    problems: set[Problem] = set()
    for rule in _limits(limits):
        names = [n for n in rule.names if n in delta.grown]
        if not names:
            continue
        count = sum(delta.grown[n] for n in names)
        if count > rule.limit:
            grown = ", ".join(f"{delta.native_name(n)} +{delta.grown[n]}" for n in names if delta.grown[n])
            over.append(f"{grown} {_window(delta)} (limit {rule.limit})")
            problems.add(rule.problem)
    ber_text = ""
    if ber is not None:
        ber_text = f"pre-FEC BER {ber:.2g}"
        if ber > limits.max_pre_fec_ber:
            over.append(f"{ber_text} (limit {limits.max_pre_fec_ber:g})")
            problems.add("ber")
    fec = delta.reading.fec_mode
    context = f"FEC {fec}" if fec else ""
    corrected = [f"{delta.native_name(n)} +{delta.grown[n]}" for n in SHOWN_ONLY if delta.grown.get(n)]
    notes = "; ".join(p for p in (context, ", ".join(corrected)) if p)
    notes = f" ({notes})" if notes else ""
    cleared = _cleared(delta, exposed)
    if not over:
        counted = ", ".join(delta.native_name(n) for n in judged)
        shown = f"no error counter grew {_window(delta)} ({counted})" if counted else "no error counter read"
        if ber_text:
            shown += f"; {ber_text}"
        return Judged(Status.PASS, expected, shown + notes + cleared)
    return Judged(
        Status.FAIL,
        expected,
        "; ".join(over) + notes + cleared,
        errors_hint(frozenset(problems), end),
        frozenset(problems),
    )


def errors_hint(problems: frozenset[Problem], end: str) -> str:
    parts = []
    if problems & RECEIVE:
        parts.append(
            f"{end} receives a corrupted signal: clean both connectors of the fibre and reseat the cable at "
            "both ends; if the errors keep rising, replace the optic at the far end (its transmitter), then "
            "the cable (link.health names the direction)"
        )
    if "tx_errors" in problems:
        parts.append(f"{end} fails to transmit: reseat its module, then replace it")
    if "discards" in problems:
        parts.append(
            f"{end} discards frames at the port: not the cable; check PFC on this link (link.pfc) and "
            "the buffers of the lossless class"
        )
    if "host_drops" in problems:
        parts.append(
            f"{end} ran out of receive buffers (rx_out_of_buffer): not the cable; raise the receive ring "
            "(`ethtool -G`) and check the IRQ/CPU affinity of its queues"
        )
    return "; ".join(parts)


# ---- flaps ------------------------------------------------------------------------------------------


def flaps_expected(limits: LinkHealth) -> str:
    return (
        f"no link-down or state change inside the counter window; at most {limits.flaps_allowed} down "
        "transitions since the counters were cleared"
    )


def lifetime_downs(delta: LinkDelta) -> tuple[int, str] | None:
    """Down transitions since the last clear, and how the device counts them; None: it shows none."""
    values = delta.reading.values
    if "link_down" in values:
        return values["link_down"], f"{delta.native_name('link_down')} {values['link_down']}"
    if "link_changes" in values:
        changes = values["link_changes"]
        # Every down has its up: changes / 2 downs, rounded up (ANTA allows 100 changes = 50 downs).
        return (
            changes + 1
        ) // 2, f"{delta.native_name('link_changes')} {changes} (= {(changes + 1) // 2} down)"
    return None


def judge_flaps(delta: LinkDelta | Unreadable, limits: LinkHealth, end: str) -> Judged:
    expected = flaps_expected(limits)
    if isinstance(delta, Unreadable):
        return unreadable(expected, delta)
    lifetime = lifetime_downs(delta)
    if lifetime is None:
        return Judged(Status.SKIP, expected, f"{end} exposes no link-down or link-change counter")
    downs, lifetime_text = lifetime
    over: list[str] = []
    problems: set[Problem] = set()
    if delta.lifetime:
        window_text = "counter window 0: no window judged"
    else:
        grown = [
            f"{delta.native_name(n)} +{delta.grown[n]}"
            for n in ("link_down", "link_changes")
            if delta.grown.get(n)
        ]
        if grown:
            over.append(f"{', '.join(grown)} {_window(delta)}")
            problems.add("flap")
        window_text = f"no down transition {_window(delta)}"
    if downs > limits.flaps_allowed:
        over.append(f"{lifetime_text} since the last clear (allowed {limits.flaps_allowed})")
        problems.add("flaps_lifetime")
    cleared = _cleared(delta, ("link_down", "link_changes"))
    if not over:
        return Judged(Status.PASS, expected, f"{window_text}; {lifetime_text} since the last clear{cleared}")
    hint = (
        f"the link at {end} went down: reseat the cable at both ends; if it keeps flapping replace "
        "the cable, then the optics (the kernel or switch log names each down)"
        if "flap" in problems
        else f"{end} went down {downs} times since its counters were cleared: reseat or replace the cable, "
        "then clear the counters to restart the count"
    )
    return Judged(Status.FAIL, expected, "; ".join(over) + cleared, hint, frozenset(problems))


# ---- optics -----------------------------------------------------------------------------------------


def optics_expected(limits: LinkHealth) -> str:
    return (
        "every DOM reading within the module's own alarm and warning thresholds; RX power >= low alarm + "
        f"{limits.optics_rx_margin_db:g} dB and above {NO_LIGHT_DBM:g} dBm (light); temperature <= high "
        f"warning - {limits.optics_temperature_margin_c:g} °C"
    )


def _lane(reading: DomReading) -> str:
    name = reading.quantity.replace("_", " ")
    return f"{name} lane {reading.lane}" if reading.lane is not None else name


def _value(reading: DomReading, value: float) -> str:
    if math.isinf(value):
        return "no light (0 mW)"
    return f"{value:.2f} {UNITS[reading.quantity]}"


def _reading_faults(reading: DomReading, limits: LinkHealth) -> list[tuple[Problem, str]]:
    """What is wrong with one reading ([] = nothing), each with its problem."""
    value, t = reading.value, reading.thresholds or Thresholds()
    if value is None:
        return []
    shown, unit = f"{_lane(reading)} {_value(reading, value)}", UNITS[reading.quantity]
    if reading.quantity == "rx_power":
        if value <= NO_LIGHT_DBM:
            return [("no_light", f"{shown}: no light (<= {NO_LIGHT_DBM:g} dBm)")]
        if t.low_alarm is not None and value < t.low_alarm + limits.optics_rx_margin_db:
            floor = t.low_alarm + limits.optics_rx_margin_db
            return [("rx_power", f"{shown} < {floor:g} dBm (low alarm {t.low_alarm:g} + margin)")]
    if reading.quantity == "temperature" and t.high_warning is not None:
        ceiling = t.high_warning - limits.optics_temperature_margin_c
        if value > ceiling:
            return [("hot", f"{shown} > {ceiling:g} °C (high warning {t.high_warning:g} - margin)")]
    problem = _PROBLEM_OF.get(reading.quantity, "module")
    # Alarms first (the graver); a quantity with its own margin rule above is judged by it on that side.
    bounds = (
        ("high alarm", t.high_alarm, 1),
        ("low alarm", t.low_alarm, -1),
        ("high warning", t.high_warning, 1),
        ("low warning", t.low_warning, -1),
    )
    for name, bound, side in bounds:
        if bound is None:
            continue
        if reading.quantity == "rx_power" and side < 0:
            continue  # judged against low alarm + margin above
        if reading.quantity == "temperature" and name == "high warning":
            continue  # judged against high warning - margin above
        if (side > 0 and value > bound) or (side < 0 and value < bound):
            return [(problem, f"{shown} {'>' if side > 0 else '<'} {name} {bound:g} {unit}")]
    return []


_PROBLEM_OF: dict[str, Problem] = {"rx_power": "rx_power", "tx_power": "tx_power", "temperature": "hot"}


def _judgeable(reading: DomReading) -> bool:
    if reading.value is None:
        return False
    return reading.thresholds is not None or reading.quantity == "rx_power"


def judge_optics(optics: ModuleOptics | Unreadable, limits: LinkHealth, end: str) -> Judged:
    expected = optics_expected(limits)
    if isinstance(optics, Unreadable):
        return unreadable(expected, optics)
    if not optics.present:
        return Judged(
            Status.FAIL,
            expected,
            f"{end} shows no module in its cage",
            f"seat the module or cable in {end}",
            frozenset({"module"}),
        )
    media = f" ({optics.media})" if optics.media else ""
    if not optics.diagnostics:
        return Judged(
            Status.SKIP, expected, f"the module of {end}{media} has no digital diagnostics (a DAC has none)"
        )
    unused = _unused_lanes(optics)
    judged = [r for r in optics.readings if _judgeable(r) and (r.lane is None or r.lane not in unused)]
    dark = (
        f"; lanes {','.join(map(str, sorted(unused)))} dark both ways: not in use, not judged"
        if unused
        else ""
    )
    if not judged:
        return Judged(
            Status.SKIP, expected, f"the module of {end}{media} shows no DOM reading with thresholds"
        )
    faults = [fault for reading in judged for fault in _reading_faults(reading, limits)]
    if not faults:
        return Judged(Status.PASS, expected, _summary(judged) + media + dark)
    problems = frozenset(problem for problem, _text in faults)
    return Judged(
        Status.FAIL,
        expected,
        "; ".join(text for _problem, text in faults) + media + dark,
        optics_hint(problems, end),
        problems,
    )


def _unused_lanes(optics: ModuleOptics) -> frozenset[int]:
    """Lanes whose own transmitter and receiver are both dark: a port running fewer lanes than its
    module has (a 40G SR4 module at 10G lights lane 1 only). A lane lit one way only is judged."""

    def dark(quantity: Quantity) -> set[int]:
        return {
            r.lane
            for r in optics.of(quantity)
            if r.lane is not None and r.value is not None and r.value <= NO_LIGHT_DBM
        }

    return frozenset(dark("tx_power") & dark("rx_power"))


def _summary(readings: Sequence[DomReading]) -> str:
    """A passing module in brief: its temperature and the worst RX power against its threshold."""
    parts = [f"{len(readings)} readings within thresholds"]
    for reading in readings:
        if reading.quantity == "temperature" and reading.value is not None:
            parts.append(f"temperature {reading.value:.1f} °C")
    rx = [r for r in readings if r.quantity == "rx_power" and r.value is not None]
    if rx:
        low = min(rx, key=lambda r: r.value if r.value is not None else math.inf)
        assert low.value is not None
        parts.append(f"lowest RX power {_value(low, low.value)}")
    return ", ".join(parts)


def optics_hint(problems: frozenset[Problem], end: str) -> str:
    parts = []
    if "no_light" in problems:
        parts.append(
            f"{end} receives no light: check the fibre is plugged at both ends and the far end transmits"
        )
    if "rx_power" in problems:
        parts.append(
            f"{end} receives too little light: clean both connectors of the fibre; if the far end's TX power "
            "is normal replace the fibre, else the far end's optic"
        )
    if "hot" in problems:
        parts.append(
            f"the module of {end} runs hot: check the airflow and reseat it; replace it if it stays hot"
        )
    if problems & {"tx_power", "module"}:
        parts.append(f"the module of {end} is outside its own thresholds: reseat it, then replace it")
    return "; ".join(parts)
