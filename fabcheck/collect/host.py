"""Collect a GPU host's evidence in ONE ssh round trip: a static POSIX sh script prints marked sections.

The script is fixed text. Its only inputs are positional arguments it validates itself: a random hex
token (so tool output can never forge a marker) and the lossless priority (an int from the validated
intent). Interface and device names are discovered on the host from `rdma link`, never sent to it.
`split_sections` (pure) turns the output back into {section: Section}.
"""

from __future__ import annotations

import re
import secrets
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Section names: fixed ones, and per netdev / per RDMA device ones as "<kind>:<name>".
TOPO = "topo"
RDMA_LINK = "rdma_link"
IBV_DEVINFO = "ibv_devinfo"
LSMOD = "lsmod"
MLNX_QOS = "mlnx_qos"
NETDEV_MTU = "mtu"
ECN_NP_ENABLE = "ecn_np_enable"
ECN_RP_ENABLE = "ecn_rp_enable"
CNP_DSCP = "cnp_dscp"
CNP_PRIO = "cnp_802p_prio"
TRAFFIC_CLASS = "traffic_class"

# The command each section ran, as a user would type it (for error messages and hints).
SECTION_COMMANDS: Mapping[str, str] = {
    TOPO: "nvidia-smi topo -m",
    RDMA_LINK: "rdma link",
    IBV_DEVINFO: "ibv_devinfo -v",
    LSMOD: "lsmod",
    MLNX_QOS: "mlnx_qos -i {name}",
    NETDEV_MTU: "cat /sys/class/net/{name}/mtu",
    ECN_NP_ENABLE: "cat /sys/class/net/{name}/ecn/roce_np/enable/{priority}",
    ECN_RP_ENABLE: "cat /sys/class/net/{name}/ecn/roce_rp/enable/{priority}",
    CNP_DSCP: "cat /sys/class/net/{name}/ecn/roce_np/cnp_dscp",
    CNP_PRIO: "cat /sys/class/net/{name}/ecn/roce_np/cnp_802p_prio",
    TRAFFIC_CLASS: "cat /sys/class/infiniband/{name}/tc/{port}/traffic_class",
}

MARK = "<<<fabcheck"
COMPLETE = "complete"

# $1 = token (hex), $2 = lossless priority (0..7). Names from `rdma link` are used only when they are
# plain interface names, and only inside double quotes.
COLLECT_SCRIPT = r"""
set -f
token=$1 prio=$2
case $token in ''|*[!0-9a-f]*) echo "fabcheck: bad token" >&2; exit 2;; esac
case $prio in [0-7]) ;; *) echo "fabcheck: bad priority" >&2; exit 2;; esac
err=$(mktemp 2>/dev/null) || err=/dev/null
section() {
    name=$1; shift
    printf '%s %s begin %s>>>\n' '<<<fabcheck' "$token" "$name"
    "$@" 2>"$err" </dev/null
    rc=$?
    printf '\n%s %s stderr %s>>>\n' '<<<fabcheck' "$token" "$name"
    [ "$err" = /dev/null ] || cat "$err"
    printf '\n%s %s end %s rc=%s>>>\n' '<<<fabcheck' "$token" "$name" "$rc"
}
replay() {
    [ -z "$2" ] || printf '%s\n' "$2"
    [ -z "$3" ] || printf '%s\n' "$3" >&2
    return "$1"
}
plain_name() {
    case $1 in ''|*[!A-Za-z0-9_.@-]*) return 1;; esac
}
section topo nvidia-smi topo -m
section lsmod lsmod
section ibv_devinfo ibv_devinfo -v
# Captured once: the section shows exactly the listing the per-NIC sections were read from.
links=$(rdma link 2>"$err")
links_rc=$? links_err=
[ "$err" = /dev/null ] || links_err=$(cat "$err")
section rdma_link replay "$links_rc" "$links" "$links_err"
printf '%s\n' "$links" | while IFS= read -r line; do
    set -- $line
    [ "$1" = link ] || continue
    dev=${2%/*} port=${2#*/}
    netdev=
    while [ $# -gt 1 ]; do
        [ "$1" = netdev ] && netdev=$2
        shift
    done
    plain_name "$dev" && plain_name "$port" || continue
    section "traffic_class:$dev/$port" cat "/sys/class/infiniband/$dev/tc/$port/traffic_class"
    plain_name "$netdev" || continue
    section "mlnx_qos:$netdev" mlnx_qos -i "$netdev"
    section "mtu:$netdev" cat "/sys/class/net/$netdev/mtu"
    section "ecn_np_enable:$netdev" cat "/sys/class/net/$netdev/ecn/roce_np/enable/$prio"
    section "ecn_rp_enable:$netdev" cat "/sys/class/net/$netdev/ecn/roce_rp/enable/$prio"
    section "cnp_dscp:$netdev" cat "/sys/class/net/$netdev/ecn/roce_np/cnp_dscp"
    section "cnp_802p_prio:$netdev" cat "/sys/class/net/$netdev/ecn/roce_np/cnp_802p_prio"
done
[ "$err" = /dev/null ] || rm -f "$err"
printf '%s %s complete>>>\n' '<<<fabcheck' "$token"
"""

_MARKER = re.compile(r"<<<fabcheck ([0-9a-f]+) (begin|stderr|end|complete)(?: (\S+?))?(?: rc=(\d+))?>>>")


@dataclass(frozen=True)
class Section:
    """One command's output. ``rc`` is None when the output stops before the section's end marker."""

    rc: int | None
    stdout: str
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0


@dataclass(frozen=True)
class Sections:
    """Every section the script printed, and whether it ran to the end."""

    sections: Mapping[str, Section] = field(default_factory=dict)
    complete: bool = False


def split_sections(text: str, token: str) -> Sections:
    """Split the script's output into sections. Pure; lines that are not this run's markers are data.

    A section whose end marker never came (truncated output) is kept with ``rc=None``.
    """
    sections: dict[str, Section] = {}
    current: str | None = None
    part = "stdout"
    buffers: dict[str, list[str]] = {"stdout": [], "stderr": []}
    complete = False
    for line in text.splitlines(keepends=True):
        marker = _MARKER.fullmatch(line.rstrip("\n"))
        if marker is None or marker.group(1) != token:
            if current is not None:
                buffers[part].append(line)
            continue
        kind, name, rc = marker.group(2), marker.group(3), marker.group(4)
        if kind == COMPLETE:
            complete = current is None
            continue
        if kind == "begin" and name:
            if current is not None:
                sections[current] = _truncated(buffers)
            current, part, buffers = name, "stdout", {"stdout": [], "stderr": []}
        elif kind == "stderr" and name == current:
            part = "stderr"
        elif kind == "end" and name == current and rc is not None:
            sections[current] = Section(int(rc), _joined(buffers["stdout"]), _joined(buffers["stderr"]))
            current = None
    if current is not None:
        sections[current] = _truncated(buffers)
    return Sections(sections, complete)


def _joined(lines: list[str]) -> str:
    # The script prints one newline before each marker so a last line without one stays whole.
    text = "".join(lines)
    return text[:-1] if text.endswith("\n") else text


def _truncated(buffers: dict[str, list[str]]) -> Section:
    return Section(None, "".join(buffers["stdout"]), "".join(buffers["stderr"]))


@dataclass(frozen=True)
class SshTarget:
    """How to reach one inventory host, from the connection variables Ansible uses."""

    name: str
    address: str
    port: int | None = None
    user: str | None = None
    private_key: str | None = None
    extra_options: tuple[str, ...] = ()

    @classmethod
    def from_host_vars(cls, name: str, variables: Mapping[str, Any]) -> SshTarget:
        port = variables.get("ansible_port") or variables.get("ansible_ssh_port")
        user = variables.get("ansible_user") or variables.get("ansible_ssh_user")
        key = variables.get("ansible_ssh_private_key_file") or variables.get("ansible_private_key_file")
        options: list[str] = []
        for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
            if variables.get(var):
                options += shlex.split(str(variables[var]))
        return cls(
            name=name,
            address=str(variables.get("ansible_host") or name),
            port=int(port) if port else None,
            user=str(user) if user else None,
            private_key=str(key) if key else None,
            extra_options=tuple(options),
        )

    def argv(self, remote_command: str, connect_timeout_s: int) -> list[str]:
        """ssh argv; host-key checking stays as configured (ssh_config / the inventory's options)."""
        argv = ["ssh", "-o", "BatchMode=yes"]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.user:
            argv += ["-l", self.user]
        if self.private_key:
            argv += ["-i", self.private_key]
        # ssh keeps the first value of an option: the inventory's own options win over this default.
        argv += [*self.extra_options, "-o", f"ConnectTimeout={connect_timeout_s}"]
        return [*argv, "--", self.address, remote_command]


@dataclass(frozen=True)
class HostCollection:
    """What one round trip brought back. ``error`` says why nothing (or not everything) came back."""

    host: str
    sections: Mapping[str, Section]
    complete: bool
    error: str | None = None
    priority: int = 3


def remote_command(token: str, priority: int) -> str:
    """The one remote command line: the static script as a single quoted argument."""
    if not 0 <= priority <= 7:
        raise ValueError(f"lossless priority {priority} is not 0..7")
    return shlex.join(["sh", "-c", COLLECT_SCRIPT, "fabcheck-collect", token, str(priority)])


def collect_host(target: SshTarget, priority: int, timeout_s: float) -> HostCollection:
    """Run the collection script on one host over ssh; never raises for an unreachable host."""
    token = secrets.token_hex(8)
    argv = target.argv(remote_command(token, priority), max(1, min(int(timeout_s), 30)))
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, errors="replace", timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as expired:
        partial = _text(expired.stdout)
        parsed = split_sections(partial, token)
        return HostCollection(
            target.name, parsed.sections, False, f"no answer within {timeout_s:g} s", priority
        )
    except OSError as err:
        return HostCollection(target.name, {}, False, f"cannot run ssh: {err.strerror or err}", priority)
    parsed = split_sections(done.stdout, token)
    error = None if parsed.complete else _failure(done.returncode, done.stderr, target)
    return HostCollection(target.name, parsed.sections, parsed.complete, error, priority)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def _failure(rc: int, stderr: str, target: SshTarget) -> str:
    last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    where = f"{target.address}:{target.port}" if target.port else target.address
    if rc == 255:
        return f"ssh to {where} failed: {last or 'exit 255'}"
    return f"collection on {where} ended early (exit {rc}){': ' + last if last else ''}"


def section_command(section: str, priority: int) -> str:
    """The command a section ran, e.g. 'mlnx_qos -i ens1np0' for 'mlnx_qos:ens1np0'."""
    kind, _, name = section.partition(":")
    dev, _, port = name.partition("/")
    template = SECTION_COMMANDS.get(kind, section)
    return template.format(name=dev if kind == TRAFFIC_CLASS else name, port=port, priority=priority)


def collect_many(
    targets: Sequence[SshTarget], priority: int, timeout_s: float, workers: int = 16
) -> list[HostCollection]:
    """Collect every host in parallel (threads: each one waits on its own ssh process)."""
    from concurrent.futures import ThreadPoolExecutor

    if not targets:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(targets)))) as pool:
        return list(pool.map(lambda t: collect_host(t, priority, timeout_s), targets))
