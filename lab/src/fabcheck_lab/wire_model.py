"""The lab's model of the wire, shared by the mock NICs and the mock switch ports: counters that advance
with time and a module's digital diagnostics.

A clean link counts nothing but the bits it receives. A fault starts a rate (counts per second) on some
counters from the moment it is injected; healing it stops the rate and keeps what it counted, as real
counters do (a heal is a cleaned fibre, not a counter clear). Each mock renders the same state in its
own device's format and names (mlx5 `ethtool -S`, EOS JSON, SONiC tables, NVUE).

The state is plain JSON (each mock stores it with the rest of its node's state):
    {"base": {counter: value}, "rates": {fault: {"since": t, "rates": {counter: per_second}}},
     "frozen": {counter: value}, "dom": {quantity: value}}
Counter and quantity names are fabcheck's wire vocabulary (fabcheck.parsers.wire_records).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

# Bits a 400 Gb/s lab link receives per second (the BER denominator keeps counting on a clean link).
LINE_BITS_PER_S = 400 * 10**9

# What each wire fault makes rise (per second), on a host NIC or a switch port. Far above any limit a
# counter window of a second or more could forgive, so one window always sees it.
FAULT_RATES: Mapping[str, Mapping[str, float]] = {
    "link-errors": {"fcs_errors": 2000, "symbol_errors": 2000},
    # One flap every 2 s: a 2 s window sees one; the lifetime count (limit link_health.flaps_allowed, 50)
    # stays under it for the 100 s a fault may stay injected in a test.
    "link-flap": {"link_down": 0.5, "link_changes": 1},
    "switch-link-errors": {"fec_uncorrectable": 500},
}

# Counters a fresh link shows: it came up once (one down/up pair from boot-time negotiation).
FACTORY_COUNTERS: Mapping[str, int] = {
    "fcs_errors": 0,
    "symbol_errors": 0,
    "alignment_errors": 0,
    "rx_errors": 0,
    "tx_errors": 0,
    "rx_discards": 0,
    "tx_discards": 0,
    "rx_out_of_buffer": 0,
    "fec_corrected": 0,
    "fec_uncorrectable": 0,
    "uncorrected_symbols": 0,
    "corrected_bits": 0,
    "received_bits": 0,
    "link_down": 1,
    "link_changes": 2,
}


def fresh_state(now: float | None = None) -> dict[str, Any]:
    """A clean link's state, its bit counter starting at `now`."""
    return {"base": dict(FACTORY_COUNTERS), "rates": {}, "frozen": {}, "since": _now(now), "dom": {}}


def start_fault(state: dict[str, Any], fault: str, now: float | None = None) -> dict[str, Any]:
    """The state with `fault`'s counter rates running from `now` (a running fault is left as is)."""
    rates = FAULT_RATES.get(fault, {})
    running = dict(state.get("rates", {}))
    if fault not in running:
        running[fault] = {"since": _now(now), "rates": dict(rates)}
    return {**state, "rates": running}


def stop_fault(state: dict[str, Any], fault: str | None = None, now: float | None = None) -> dict[str, Any]:
    """The state with `fault` (every fault: None) stopped; what it counted stays counted."""
    at = _now(now)
    running = dict(state.get("rates", {}))
    frozen = dict(state.get("frozen", {}))
    for name in [fault] if fault is not None else list(running):
        entry = running.pop(name, None)
        if entry is None:
            continue
        for counter, rate in entry["rates"].items():
            frozen[counter] = frozen.get(counter, 0) + int(rate * max(0.0, at - entry["since"]))
    return {**state, "rates": running, "frozen": frozen}


def counters_at(state: Mapping[str, Any], now: float | None = None) -> dict[str, int]:
    """Every counter's value at `now`: factory values, what healed faults counted, running faults' rates,
    and the bits received since the link came up."""
    at = _now(now)
    values = {name: int(value) for name, value in state.get("base", FACTORY_COUNTERS).items()}
    for counter, value in state.get("frozen", {}).items():
        values[counter] = values.get(counter, 0) + int(value)
    for entry in state.get("rates", {}).values():
        for counter, rate in entry["rates"].items():
            values[counter] = values.get(counter, 0) + int(rate * max(0.0, at - entry["since"]))
    values["received_bits"] = values.get("received_bits", 0) + int(
        LINE_BITS_PER_S * max(0.0, at - float(state.get("since", at)))
    )
    return values


def _now(now: float | None) -> float:
    return time.time() if now is None else now


# What a DOM fault does to a module's live values, against the module's own thresholds: the RX power
# 3 dB under its low alarm (a dirty or cracked fibre), the temperature 3 °C over its high warning.
DOM_FAULTS: Mapping[str, tuple[str, str, float]] = {
    "optic-rx-low": ("rx_power", "low_alarm", -3.0),
    "switch-optic-hot": ("temperature", "high_warning", 3.0),
}


def dom_values(
    baseline: Mapping[str, float], thresholds: Mapping[str, Mapping[str, float]], faults: Iterable[str]
) -> dict[str, float]:
    """A module's live values (quantity -> value, e.g. "rx_power" in dBm, "temperature" in °C) with the
    running DOM faults applied against `thresholds` (quantity -> {"low_alarm": ..., "high_warning": ...},
    the module's own, from the cited real module the mock renders)."""
    values = dict(baseline)
    for fault in faults:
        if fault in DOM_FAULTS:
            quantity, threshold, offset = DOM_FAULTS[fault]
            values[quantity] = round(thresholds[quantity][threshold] + offset, 2)
    return values
