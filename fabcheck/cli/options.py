"""Command-line value types and options more than one command takes (argparse reports a bad value as
a usage error naming the option)."""

from __future__ import annotations

import argparse
import math

from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.nic import DEFAULT_COUNTER_WINDOW_S, MAX_COUNTER_WINDOW_S, counter_window

DEFAULT_LIMITS = TimeLimits()


def seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive, finite number of seconds")
    return value


def window_seconds(text: str) -> int:
    """A counter window: whole seconds, 0..MAX_COUNTER_WINDOW_S (0: lifetime totals, one reading)."""
    try:
        return counter_window(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_counter_window(parser: argparse.ArgumentParser) -> None:
    """`--counter-window S`: the seconds between the two readings of every node's wire counters."""
    parser.add_argument(
        "--counter-window",
        type=window_seconds,
        default=DEFAULT_COUNTER_WINDOW_S,
        metavar="S",
        help="seconds between the two readings of every NIC and switch port's error, FEC and flap "
        f"counters, judged as what grew in between; every node waits it at once, so the run takes about "
        f"S longer (0..{MAX_COUNTER_WINDOW_S}; 0 reads lifetime totals once and the report says so; "
        f"default {DEFAULT_COUNTER_WINDOW_S})",
    )


def positive_count(text: str) -> int:
    """A whole number, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number, at least 1")
    return int(text)


def add_time_limits(parser: argparse.ArgumentParser, command_help: str, connect_help: str) -> None:
    """`--timeout S` (TimeLimits.command_s) and `--connect-timeout S` (the ssh ConnectTimeout)."""
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_LIMITS.command_s,
        metavar="S",
        help=f"{command_help} (default {DEFAULT_LIMITS.command_s:g})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=seconds,
        default=DEFAULT_LIMITS.connect_s,
        metavar="S",
        help=f"{connect_help} (default {DEFAULT_LIMITS.connect_s:g})",
    )


def time_limits(args: argparse.Namespace) -> TimeLimits:
    return TimeLimits(connect_s=args.connect_timeout, command_s=args.timeout)
