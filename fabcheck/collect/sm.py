"""The subnet-manager round trip: every InfiniBand SM node in one ssh round trip of a static POSIX sh
script that prints marked sections (fabcheck.collect.script's markers and launcher, so a hung tool is
stopped on the node and truncated output is seen as such): `sminfo` (the master the node's port
follows), `sminfo LID` of the node's own first port (its own SM), opensm.conf, partitions.conf and the
service state. Its inputs are positional arguments it validates itself: the token, the per-tool limit,
fabcheck's fixed file paths and the unit name (role variable opensm_service).

When the SM node is also the run's InfiniBand fabric reader (the ib stage's, DesiredIbFabric.reader),
the same round trip runs the fabric's script (fabcheck.collect.ib) once this one has run to its end:
one ssh session, one token, the SM sections the SmCollection's and the rest its `fabric`.
"""

from __future__ import annotations

import dataclasses
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.collect.ib import IbCollection, fabric_read, ib_caps, script_words
from fabcheck.collect.script import LAUNCHER, ROUND_TRIP_CAP_BYTES, Section
from fabcheck.collect.ssh import RoundTrip, SshTarget, TimeLimits, ended_early, round_trip
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.desired.sm import DesiredSubnetManager

INFINIBAND_DIR = "/sys/class/infiniband"
# Section names and the command each one ran, as a user would type it.
MASTER_SMINFO, OWN_SMINFO = "sminfo", "sminfo_own"
OPENSM_CONF, PARTITIONS_CONF = "opensm_conf", "partitions_conf"
ENABLED, ACTIVE = "is_enabled", "is_active"
SM_SECTIONS = frozenset({MASTER_SMINFO, OWN_SMINFO, OPENSM_CONF, PARTITIONS_CONF, ENABLED, ACTIVE})

# $1 token, $2 seconds per tool, $3 opensm.conf, $4 partitions.conf, $5 the infiniband sysfs dir, $6 the
# unit. The own LID is read from the first port's sysfs file and used only when it is a hex number.
SM_SCRIPT = r"""
set -f
token=$1 limit=$2 conf=$3 parts=$4 ibdir=$5 unit=$6
case $token in ''|*[!0-9a-f]*) echo "fabcheck: bad token" >&2; exit 2;; esac
case $limit in ''|*[!0-9]*|0*) echo "fabcheck: bad time limit" >&2; exit 2;; esac
for word in "$conf" "$parts" "$ibdir"; do
    case $word in /*) ;; *) echo "fabcheck: bad path" >&2; exit 2;; esac
    case $word in *[!A-Za-z0-9_./-]*) echo "fabcheck: bad path" >&2; exit 2;; esac
done
case $unit in ''|-*|*[!A-Za-z0-9_.@-]*) echo "fabcheck: bad unit" >&2; exit 2;; esac
err=$(mktemp 2>/dev/null) || err=/dev/null
trap '[ "$err" = /dev/null ] || rm -f "$err"; exit 143' TERM INT HUP PIPE
bounded=
command -v timeout >/dev/null 2>&1 && bounded=yes
mark() { printf '%s %s %s>>>\n' '<<<fabcheck' "$token" "$1"; }
section() {  # name command...
    name=$1; shift
    mark "begin $name"
    if [ -n "$bounded" ]; then
        timeout -k 1 "$limit" "$@" 2>"$err" </dev/null
    else
        "$@" 2>"$err" </dev/null
    fi
    rc=$?
    printf '\n'; mark "stderr $name"
    [ "$err" = /dev/null ] || cat "$err"
    printf '\n'; mark "end $name rc=$rc"
}
recorded() {  # name rc stderr
    mark "begin $1"; printf '\n'; mark "stderr $1"; printf '%s\n' "$3"; mark "end $1 rc=$2"
}
section sminfo sminfo
lid=
set +f
for file in "$ibdir"/*/ports/1/lid; do
    [ -r "$file" ] && { lid=$(cat "$file"); break; }
done
set -f
hex=${lid#0x}
case $lid in 0x*) case $hex in ''|*[!0-9a-fA-F]*) lid=;; esac;; *) lid=;; esac
if [ -n "$lid" ]; then
    section sminfo_own sminfo "$lid"
else
    recorded sminfo_own 1 "no InfiniBand port with a LID under $ibdir"
fi
section opensm_conf cat "$conf"
if [ -e "$parts" ]; then section partitions_conf cat "$parts"; else recorded partitions_conf 3 "absent"; fi
section is_enabled systemctl is-enabled "$unit"
section is_active systemctl is-active "$unit"
[ "$err" = /dev/null ] || rm -f "$err"
printf '%s %s complete>>>\n' '<<<fabcheck' "$token"
"""
# $1 N, the count of the SM script's $0 and arguments, $2 the SM script, then those N words, then the
# fabric's script, its $0 and arguments. N travels with the words (remote_command_with_fabric counts
# them), so a word added to the SM script cannot shift the fabric's. The subshell keeps the first N
# words only (rotating "$@"). The fabric is read once the SM script ran to its end (its complete line;
# the fabric script's is the last).
SM_AND_FABRIC = r"""
count=$1 sm=$2; shift 2
case $count in ''|0|*[!0-9]*) echo "fabcheck: bad SM word count" >&2; exit 2;; esac
[ "$#" -gt "$count" ] || { echo "fabcheck: bad SM word count" >&2; exit 2; }
(
    i=0
    for word; do
        shift
        [ "$i" -ge "$count" ] || set -- "$@" "$word"
        i=$((i + 1))
    done
    exec sh -c "$sm" "$@"
) || exit
shift "$count"
fabric=$1; shift
exec sh -c "$fabric" "$@"
"""


@dataclass(frozen=True)
class SmCollection:
    node: str
    sections: Mapping[str, Section]
    complete: bool
    error: str | None = None
    # The InfiniBand fabric read in the same round trip (this node is the ib stage's reader), else None.
    fabric: IbCollection | None = None


def section_commands(desired: DesiredSubnetManager, service: str) -> dict[str, str]:
    return {
        MASTER_SMINFO: "sminfo",
        OWN_SMINFO: f"sminfo <LID of {INFINIBAND_DIR}/*/ports/1>",
        OPENSM_CONF: f"cat {desired.opensm_conf_path}",
        PARTITIONS_CONF: f"cat {desired.partitions_conf_path}",
        ENABLED: f"systemctl is-enabled {service}",
        ACTIVE: f"systemctl is-active {service}",
    }


def remote_command(
    token: str,
    desired: DesiredSubnetManager,
    service: str,
    limits: TimeLimits,
    infiniband_dir: str = INFINIBAND_DIR,
) -> str:
    """The one remote command line: the host collector's launcher and this static script, quoted."""
    script = _script_words(token, desired, service, limits, infiniband_dir)
    return shlex.join(["sh", "-c", LAUNCHER, "fabcheck-sm", str(limits.host_s), *script])


def _script_words(
    token: str, desired: DesiredSubnetManager, service: str, limits: TimeLimits, infiniband_dir: str
) -> list[str]:
    return [
        SM_SCRIPT,
        "fabcheck-sm",
        token,
        str(limits.tool_s),
        desired.opensm_conf_path,
        desired.partitions_conf_path,
        infiniband_dir,
        service,
    ]


def remote_command_with_fabric(
    token: str,
    desired: DesiredSubnetManager,
    service: str,
    fabric: DesiredIbFabric,
    limits: TimeLimits,
    infiniband_dir: str = INFINIBAND_DIR,
) -> str:
    """The SM script, then the fabric's, under one launcher: the limits hold the counter window."""
    sm_script, *sm_words = _script_words(token, desired, service, limits, infiniband_dir)
    both = [SM_AND_FABRIC, "fabcheck-sm", str(len(sm_words)), sm_script, *sm_words]
    both += script_words(token, fabric, limits)
    return shlex.join(["sh", "-c", LAUNCHER, "fabcheck-sm", str(limits.host_s), *both])


def collect_sm(
    target: SshTarget, desired: DesiredSubnetManager, service: str, limits: TimeLimits
) -> SmCollection:
    """One round trip to an SM node; never raises for an unreachable node."""
    token = secrets.token_hex(8)
    done = round_trip(target, remote_command(token, desired, service, limits), token, limits)
    if done.error is not None:
        return SmCollection(target.name, {}, False, done.error)
    if done.timed_out:
        return SmCollection(target.name, {}, False, f"no complete answer within {limits.client_s:g} s")
    return _sm_read(target, done, done.parsed.complete)


def _sm_read(target: SshTarget, done: RoundTrip, complete: bool) -> SmCollection:
    sections = {name: section for name, section in done.parsed.sections.items() if name in SM_SECTIONS}
    if complete:
        return SmCollection(target.name, sections, True)
    return SmCollection(target.name, sections, False, ended_early(target.where, done.rc, done.stderr))


def _sm_sections_ended(sections: Mapping[str, Section]) -> bool:
    """The SM script ran to its end: every SM section is there with its end marker (its last one,
    is_active, comes only after the others)."""
    return all(name in sections and sections[name].rc is not None for name in SM_SECTIONS)


def collect_sm_with_fabric(
    target: SshTarget,
    desired: DesiredSubnetManager,
    service: str,
    fabric: DesiredIbFabric,
    limits: TimeLimits,
) -> SmCollection:
    """One round trip to an SM node that is the fabric's reader: its SM sections, and the fabric read
    after them (the limits hold the counter window); never raises for an unreachable node."""
    token = secrets.token_hex(8)
    remote = remote_command_with_fabric(token, desired, service, fabric, limits)
    caps = ib_caps(fabric)  # the fabric's caps, grown with it, and room for the SM sections
    caps = dataclasses.replace(caps, round_trip_bytes=caps.round_trip_bytes + ROUND_TRIP_CAP_BYTES)
    done = round_trip(target, remote, token, limits, caps)
    if done.error is not None or done.timed_out:
        why = done.error or f"no complete answer within {limits.client_s:g} s"
        return SmCollection(target.name, {}, False, why, IbCollection(target.name, {}, False, why))
    fabric_sections = {n: s for n, s in done.parsed.sections.items() if n not in SM_SECTIONS}
    fabric_done = dataclasses.replace(done, parsed=dataclasses.replace(done.parsed, sections=fabric_sections))
    # The SM part is whole when its own sections are, whatever the fabric script did after it (it
    # may have refused its arguments before its first section: fabric_read says so).
    sm = _sm_read(target, done, _sm_sections_ended(done.parsed.sections))
    return dataclasses.replace(sm, fabric=fabric_read(target, fabric_done))
