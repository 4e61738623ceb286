"""The subnet-manager round trip: every InfiniBand SM node in one ssh round trip of a static POSIX sh
script that prints marked sections (fabcheck.collect.script's markers and launcher, so a hung tool is
stopped on the node and truncated output is seen as such): `sminfo` (the master the node's port
follows), `sminfo LID` of the node's own first port (its own SM), opensm.conf, partitions.conf and the
service state. Its inputs are positional arguments it validates itself: the token, the per-tool limit,
fabcheck's fixed file paths and the unit name (role variable opensm_service).
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.collect.script import LAUNCHER, Section
from fabcheck.collect.ssh import SshTarget, TimeLimits, round_trip, ssh_said
from fabcheck.desired.sm import DesiredSubnetManager

INFINIBAND_DIR = "/sys/class/infiniband"
# Section names and the command each one ran, as a user would type it.
MASTER_SMINFO, OWN_SMINFO = "sminfo", "sminfo_own"
OPENSM_CONF, PARTITIONS_CONF = "opensm_conf", "partitions_conf"
ENABLED, ACTIVE = "is_enabled", "is_active"

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


@dataclass(frozen=True)
class SmCollection:
    node: str
    sections: Mapping[str, Section]
    complete: bool
    error: str | None = None


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
    script = [
        SM_SCRIPT,
        "fabcheck-sm",
        token,
        str(limits.tool_s),
        desired.opensm_conf_path,
        desired.partitions_conf_path,
        infiniband_dir,
        service,
    ]
    return shlex.join(["sh", "-c", LAUNCHER, "fabcheck-sm", str(limits.host_s), *script])


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
    parsed = done.parsed
    if parsed.complete:
        return SmCollection(target.name, parsed.sections, True)
    said = ssh_said(done.stderr)
    reason = f"ssh to {target.where} ended early (exit {done.rc})" + (f": {said}" if said else "")
    return SmCollection(target.name, parsed.sections, False, reason)
