"""The InfiniBand fabric read of the `ib` stage: the whole fabric from ONE node (the planned reader), in
ONE ssh round trip of a static POSIX sh script, whatever the fabric's size.

The script speaks the host collection's protocol (fabcheck.collect.script: a random token's markers,
the launcher and SCRIPT_RUNTIME, so each tool is bounded on the node, a TERM from outside stops the
running tool, and truncated output is seen as such). Its sections (rdma-core infiniband-diags; each tool
gets `-C CA -P PORT` when the intent names the reader's port):

- `ibqueryerrors_before`: `ibqueryerrors --threshold-file /dev/null`, every threshold 0, so every
  non-zero counter of every port is printed (rdma-core ibqueryerrors.c: a counter is printed when its
  value exceeds its threshold; an empty threshold file leaves every threshold 0). Its exit 1 means
  "errors found" (print_summary returns the bad ports): an answer, not a failure. Read only when the
  counter window is not 0;
- `ibnetdiscover`: `ibnetdiscover -p`, one line per port;
- `saquery`: the SA's NodeRecords;
- `vendstat:<lid>`: `vendstat -N <lid>` for every distinct switch LID of the `ibnetdiscover` section
  (its `SW` lines' LID column, a number in the unicast range only);
- `counter_window`: the seconds waited, the rest of the window the reads above did not already take;
- `ibqueryerrors_after`: the second sweep (the only one when the window is 0).

Counters are never cleared (no -k/-K). Its inputs are positional arguments it validates itself: the
token, the per-tool limit, the window, and the reader's CA and port (both empty: the tools' own choice).
"""

from __future__ import annotations

import math
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.collect.script import (
    COUNTER_WINDOW,
    LAUNCHER,
    MIB,
    ROUND_TRIP_CAP_BYTES,
    SCRIPT_RUNTIME,
    SECTION_CAP_BYTES,
    OutputCaps,
    Section,
)
from fabcheck.collect.ssh import RoundTrip, SshTarget, TimeLimits, ended_early, round_trip
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.desired.nic import MAX_COUNTER_WINDOW_S

# Section names (as the parsers and the snapshot know them).
IBNETDISCOVER, SAQUERY = "ibnetdiscover", "saquery"
ERRORS_BEFORE, ERRORS_AFTER = "ibqueryerrors_before", "ibqueryerrors_after"
VENDSTAT = "vendstat"  # "vendstat:<lid>"
TIME_LIMIT = "time_limit"
# The threshold file of both sweeps: empty, so every threshold is 0 (see the module's docstring).
THRESHOLDS = "/dev/null"
MAX_UNICAST_LID = 0xBFFF  # IBA: unicast LIDs are 0x0001-0xBFFF

# $1 token, $2 seconds per tool, $3 the counter window (0..@MAX_WINDOW@), $4 the reader's CA, $5 its
# port (both empty, or a plain device name and a port number 1..254).
_ARGUMENTS = r"""
set -f
token=$1 limit=$2 window=$3 ca=$4 caport=$5
case $token in ''|*[!0-9a-f]*) echo "fabcheck: bad token" >&2; exit 2;; esac
case $limit in ''|*[!0-9]*|0*) echo "fabcheck: bad time limit" >&2; exit 2;; esac
case $window in ''|*[!0-9]*|0?*|????*) echo "fabcheck: bad counter window" >&2; exit 2;; esac
[ "$window" -le @MAX_WINDOW@ ] || { echo "fabcheck: bad counter window" >&2; exit 2; }
case $ca$caport in
'') ;;
*) case $ca in ''|-*|*[!A-Za-z0-9_.-]*) echo "fabcheck: bad CA name" >&2; exit 2;; esac
   case $caport in [1-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-4]) ;;
   *) echo "fabcheck: bad CA port" >&2; exit 2;; esac;;
esac
"""
# After the runtime: "$@" is the local port selection every tool gets. The topology is captured once,
# so the vendstat LIDs are the section's own; the window starts when the first sweep ends, the other
# reads run inside it, and only what is left of it is waited.
_FABRIC = r"""if [ -n "$ca" ]; then set -- -C "$ca" -P "$caport"; else set --; fi
if [ "$window" -gt 0 ]; then
    section ibqueryerrors_before ibqueryerrors "$@" --threshold-file @THRESHOLDS@
    started=$(date +%s 2>/dev/null)
fi
topo=$(trap stop TERM INT HUP PIPE; bound ibnetdiscover "$@" -p 2>"$err" </dev/null)
topo_rc=$? topo_err=
[ ! -s "$err" ] || topo_err=$(cat "$err")
recorded ibnetdiscover "$topo_rc" "$topo" "$topo_err"
section saquery saquery "$@"
lids=$(printf '%s\n' "$topo" | awk '$1 == "SW" && $2 ~ /^[0-9]+$/ && $2 + 0 > 0 &&
    $2 + 0 <= @MAX_LID@ && !seen[$2 + 0]++ { print $2 + 0 }')
topo=
for lid in $lids; do
    case $lid in ''|*[!0-9]*) continue;; esac
    section "vendstat:$lid" vendstat "$@" -N "$lid"
done
if [ "$window" -gt 0 ]; then
    pause "$(window_left)"
fi
recorded counter_window "$paused" "$window" "$pause_err"
section ibqueryerrors_after ibqueryerrors "$@" --threshold-file @THRESHOLDS@
[ "$err" = /dev/null ] || rm -f "$err"
printf '%s %s complete>>>\n' '<<<fabcheck' "$token"
"""
IB_SCRIPT = (
    _ARGUMENTS.replace("@MAX_WINDOW@", str(MAX_COUNTER_WINDOW_S))
    + SCRIPT_RUNTIME
    + _FABRIC.replace("@THRESHOLDS@", THRESHOLDS).replace("@MAX_LID@", str(MAX_UNICAST_LID))
)

# What one fabric read may send back grows with the fabric: per planned port (both ends of every
# planned cable, and each switch's port 0) each section may hold this much (a saquery NodeRecord is
# about 700 bytes, an ibnetdiscover -p line at most about 250, an ibqueryerrors port line with every
# counter about 400), and never less than a host section's cap.
SECTION_BYTES_PER_PORT = 1024
SECTIONS_PER_FABRIC = 4  # ibnetdiscover, saquery, the two sweeps; vendstat's are small
VENDSTAT_BYTES = 1024  # vendstat.c prints 9 short lines


def ib_caps(desired: DesiredIbFabric) -> OutputCaps:
    """The caps of a fabric read: the host collection's, grown with the planned fabric's ports."""
    ports = 2 * len(desired.links) + len(desired.switches)
    section = max(SECTION_CAP_BYTES, math.ceil(ports * SECTION_BYTES_PER_PORT / MIB) * MIB)
    whole = SECTIONS_PER_FABRIC * section + len(desired.switches) * VENDSTAT_BYTES
    return OutputCaps(section_bytes=section, round_trip_bytes=max(ROUND_TRIP_CAP_BYTES, whole))


@dataclass(frozen=True)
class IbCollection:
    """What the fabric read brought back from the reader node."""

    node: str
    sections: Mapping[str, Section]
    complete: bool
    error: str | None = None


def vendstat_section(lid: int) -> str:
    return f"{VENDSTAT}:{lid}"


def port_words(desired: DesiredIbFabric) -> list[str]:
    """`-C CA -P PORT` when the intent names the reader's port, else nothing."""
    if desired.read_port is None:
        return []
    ca, port = desired.read_port
    return ["-C", ca, "-P", str(port)]


def section_commands(
    desired: DesiredIbFabric, sections: Mapping[str, Section] | None = None
) -> dict[str, str]:
    """Each section's command as a user would type it (the vendstat ones of `sections`)."""
    via = "".join(f" {shlex.quote(word)}" for word in port_words(desired))
    sweep = f"ibqueryerrors{via} --threshold-file {THRESHOLDS}"
    commands = {
        ERRORS_BEFORE: sweep,
        IBNETDISCOVER: f"ibnetdiscover{via} -p",
        SAQUERY: f"saquery{via}",
        COUNTER_WINDOW: "sleep <the rest of the counter window>",
        ERRORS_AFTER: sweep,
        TIME_LIMIT: "command -v timeout",
    }
    for name in sections or {}:
        kind, _, lid = name.partition(":")
        if kind == VENDSTAT:
            commands[name] = f"vendstat{via} -N {lid}"
    return commands


def script_words(token: str, desired: DesiredIbFabric, limits: TimeLimits) -> list[str]:
    """The script and its arguments, as the launcher runs them; the window is the limits'."""
    ca, port = desired.read_port if desired.read_port is not None else ("", "")
    return [IB_SCRIPT, "fabcheck-ib", token, str(limits.tool_s), str(limits.counter_window_s), ca, str(port)]


def remote_command(token: str, desired: DesiredIbFabric, limits: TimeLimits) -> str:
    """The one remote command line: the launcher and the static script, quoted; the window is the
    limits' (the gate's window reader adds it to the host's limit)."""
    script = script_words(token, desired, limits)
    return shlex.join(["sh", "-c", LAUNCHER, "fabcheck-ib", str(limits.host_s), *script])


def collect_ib(target: SshTarget, desired: DesiredIbFabric, limits: TimeLimits) -> IbCollection:
    """One round trip to the reader node; never raises for an unreachable node."""
    token = secrets.token_hex(8)
    remote = remote_command(token, desired, limits)
    done = round_trip(target, remote, token, limits, ib_caps(desired))
    if done.error is not None:
        return IbCollection(target.name, {}, False, done.error)
    if done.timed_out:
        return IbCollection(target.name, {}, False, f"no complete answer within {limits.client_s:g} s")
    return fabric_read(target, done)


def fabric_read(target: SshTarget, done: RoundTrip) -> IbCollection:
    """The fabric's sections of a round trip that ran (its own, or the SM node's that read it along).

    Complete only when the fabric script itself ran: its first section (time_limit) is there and the
    last complete line was read. A script that refused its arguments prints neither, and the complete
    line of a script before it in the same round trip (the SM node's) is not the fabric's."""
    parsed = done.parsed
    if parsed.over_caps:
        return IbCollection(target.name, parsed.sections, False, "; ".join(parsed.over_caps))
    if parsed.complete and TIME_LIMIT in parsed.sections:
        return IbCollection(target.name, parsed.sections, True)
    return IbCollection(target.name, parsed.sections, False, ended_early(target.where, done.rc, done.stderr))
