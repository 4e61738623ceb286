"""Collect a GPU host's evidence in ONE ssh round trip: a generated POSIX sh script prints marked sections.

Every host probe is declared once in HOST_PROBES: its name, its scope (the host, each RDMA port, each
RoCE netdev), the command or file it reads and how its output is read into a record. The collection
script is generated from that table: fixed text for a given table, with nothing user-supplied in it.
Its only inputs are positional arguments it validates itself: a random hex token (so tool output can
never forge a marker), the lossless priority (an int from the validated intent) and time limits
(ints). Interface and device names are discovered on the host from `rdma link`, never sent to it.
The host bounds its own run with `timeout` (each tool, and the whole script), so a hung tool never
outlives a round trip the client gave up on. `split_sections` (pure) turns the output back into
{section: Section}; `read_records` (pure) turns the sections into records.
"""

from __future__ import annotations

import math
import re
import secrets
import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fabcheck.desired.nic import PERSIST_PATHS, PERSIST_UNIT
from fabcheck.errors import ParseError
from fabcheck.parsers import host_sysfs
from fabcheck.parsers.ethtool_tunable import TUNABLE, parse_pfc_prevention_tout
from fabcheck.parsers.ibv_devinfo import NO_DEVICES, parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.nic_persist import (
    missing_file,
    parse_boot_settings,
    parse_present_files,
    parse_unit_state,
)
from fabcheck.parsers.numbers import is_int_token
from fabcheck.parsers.show_gids import parse_show_gids
from fabcheck.parsers.topo import parse_topo

# Probe (= section) names: a host probe's section is its name, a port probe's "<name>:<dev>/<port>", a
# netdev probe's "<name>:<netdev>".
TIME_LIMIT = "time_limit"  # whether the host has `timeout` (coreutils) to bound its own run
TOPO = "topo"
RDMA_LINK = "rdma_link"
IBV_DEVINFO = "ibv_devinfo"
LSMOD = "lsmod"
SHOW_GIDS = "show_gids"
MLNX_QOS = "mlnx_qos"
NETDEV_MTU = "mtu"
ECN_NP_ENABLE = "ecn_np_enable"
ECN_RP_ENABLE = "ecn_rp_enable"
CNP_DSCP = "cnp_dscp"
CNP_PRIO = "cnp_802p_prio"
MIN_TIME_BETWEEN_CNPS = "min_time_between_cnps"
ROCE_RP = "roce_rp"
DRIVER = "driver"
PFC_STORM = "pfc_storm"  # ethtool's PFC storm prevention timeout of the netdev (ms)
TRAFFIC_CLASS = "traffic_class"
CMA_ROCE_TOS = "cma_roce_tos"
CMA_ROCE_MODE = "cma_roce_mode"
# What re-applies the NIC settings at boot (role roce_host, tag persist): the settings file, whether the
# boot unit is enabled, and which of the boot files exist.
PERSIST_CONFIG = "persist_config"
PERSIST_UNIT_STATE = "persist_unit"
PERSIST_FILES = "persist_files"
PERSIST_FILE_ORDER = ("config", "applier", "unit", "rule")

Scope = Literal["host", "port", "netdev"]
# How a section becomes a record: "output" parses stdout of a successful run; "answer" hands the exit
# code too to the parser (a disabled unit, a missing file are answers); "file" reads a file whose
# absence is the answer None.
Reading = Literal["output", "answer", "file"]


@dataclass(frozen=True)
class HostProbe:
    """One thing the collection reads on a host: declared once, the script and the reader follow."""

    name: str
    scope: Scope
    argv: tuple[str, ...]  # words; "{dev}", "{port}", "{netdev}", "{priority}" are filled on the host
    parse: Callable[..., Any]  # (stdout, source) -> record; (rc, stdout, stderr, source) for "answer"
    reading: Reading = "output"
    empty_when: str | None = None  # the tool's own "nothing here" stderr with a failing exit: empty
    builtin: bool = False  # the script itself prints this section (not one command run by `section`)

    @property
    def command(self) -> str:
        """The command as a user would type it, with its placeholders."""
        return " ".join(word or "''" for word in self.argv)

    def section(self, subject: str = "") -> str:
        return f"{self.name}:{subject}" if subject else self.name

    @property
    def reads_one_file(self) -> bool:
        """`cat FILE`: the script may read it together with its scope's other files (read_files).
        A ':' in FILE would make grep's "FILE:" line prefixes ambiguous, so such a file is not."""
        return len(self.argv) == 2 and self.argv[0] == "cat" and ":" not in self.argv[1]


def _listed(folder: str) -> Callable[[str, str], dict[str, int]]:
    def parse(text: str, source: str) -> dict[str, int]:
        return host_sysfs.sysfs_listing(text, source, folder)

    return parse


def _present(rc: int, out: str, err: str, source: str) -> frozenset[str]:
    wanted = [PERSIST_PATHS[key] for key in PERSIST_FILE_ORDER]
    return parse_present_files(rc, out, err, wanted, source)


NET = "/sys/class/net/{netdev}"
ECN = NET + "/ecn"
HOST_PROBES: tuple[HostProbe, ...] = (
    HostProbe(TIME_LIMIT, "host", ("command", "-v", "timeout"), str, builtin=True),
    HostProbe(TOPO, "host", ("nvidia-smi", "topo", "-m"), parse_topo),
    HostProbe(LSMOD, "host", ("lsmod",), host_sysfs.loaded_modules),
    HostProbe(IBV_DEVINFO, "host", ("ibv_devinfo", "-v"), parse_ibv_devinfo, empty_when=NO_DEVICES),
    HostProbe(SHOW_GIDS, "host", ("show_gids",), parse_show_gids),
    HostProbe(RDMA_LINK, "host", ("rdma", "link"), host_sysfs.rdma_links, builtin=True),
    HostProbe(
        TRAFFIC_CLASS,
        "port",
        ("cat", "/sys/class/infiniband/{dev}/tc/{port}/traffic_class"),
        host_sysfs.traffic_class,
    ),
    # The RDMA-CM defaults as role roce_host reads them: the tools read configfs
    # (/sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_tos, default_roce_mode), mounting it and
    # creating the device's group with the kernel defaults when absent; without -t/-m they set nothing.
    HostProbe(CMA_ROCE_TOS, "port", ("cma_roce_tos", "-d", "{dev}", "-p", "{port}"), host_sysfs.rdma_cm_tos),
    HostProbe(
        CMA_ROCE_MODE, "port", ("cma_roce_mode", "-d", "{dev}", "-p", "{port}"), host_sysfs.rdma_cm_mode
    ),
    HostProbe(MLNX_QOS, "netdev", ("mlnx_qos", "-i", "{netdev}"), parse_mlnx_qos),
    HostProbe(NETDEV_MTU, "netdev", ("cat", NET + "/mtu"), host_sysfs.sysfs_int),
    HostProbe(ECN_NP_ENABLE, "netdev", ("cat", ECN + "/roce_np/enable/{priority}"), host_sysfs.sysfs_int),
    HostProbe(ECN_RP_ENABLE, "netdev", ("cat", ECN + "/roce_rp/enable/{priority}"), host_sysfs.sysfs_int),
    HostProbe(CNP_DSCP, "netdev", ("cat", ECN + "/roce_np/cnp_dscp"), host_sysfs.sysfs_int),
    HostProbe(CNP_PRIO, "netdev", ("cat", ECN + "/roce_np/cnp_802p_prio"), host_sysfs.sysfs_int),
    HostProbe(
        MIN_TIME_BETWEEN_CNPS, "netdev", ("cat", ECN + "/roce_np/min_time_between_cnps"), host_sysfs.sysfs_int
    ),
    # Every DCQCN reaction-point parameter at once, as path:value lines (the intent picks which to judge).
    HostProbe(ROCE_RP, "netdev", ("grep", "-r", "-H", "", ECN + "/roce_rp"), _listed("roce_rp")),
    HostProbe(DRIVER, "netdev", ("ethtool", "-i", "{netdev}"), host_sysfs.ethtool_driver),
    HostProbe(
        PFC_STORM, "netdev", ("ethtool", "--get-tunable", "{netdev}", TUNABLE), parse_pfc_prevention_tout
    ),
    HostProbe(PERSIST_CONFIG, "host", ("cat", PERSIST_PATHS["config"]), parse_boot_settings, "file"),
    HostProbe(
        PERSIST_UNIT_STATE, "host", ("systemctl", "is-enabled", PERSIST_UNIT), parse_unit_state, "answer"
    ),
    HostProbe(
        PERSIST_FILES,
        "host",
        ("ls", "-1d", "--", *(PERSIST_PATHS[key] for key in PERSIST_FILE_ORDER)),
        _present,
        "answer",
    ),
)
PROBES_BY_NAME: Mapping[str, HostProbe] = {probe.name: probe for probe in HOST_PROBES}
# The command each section ran, as a user would type it (for error messages and hints).
SECTION_COMMANDS: Mapping[str, str] = {probe.name: probe.command for probe in HOST_PROBES}

MARK = "<<<fabcheck"
COMPLETE = "complete"

# $1 = token (hex), $2 = lossless priority (0..7), $3 = seconds each tool may run. Names from
# `rdma link` are used only when they are plain interface names, and only inside double quotes.
# Each tool runs under `timeout` in the background so that a TERM from outside (the launcher's overall
# limit) can be passed on to it: nothing the script started outlives the script.
_PROLOGUE = r"""
set -f
token=$1 prio=$2 limit=$3
case $token in ''|*[!0-9a-f]*) echo "fabcheck: bad token" >&2; exit 2;; esac
case $prio in [0-7]) ;; *) echo "fabcheck: bad priority" >&2; exit 2;; esac
case $limit in ''|*[!0-9]*|0*) echo "fabcheck: bad time limit" >&2; exit 2;; esac
err=/dev/null running=
stop() {  # stopped from outside: take the running tool down first (a foreground job is waited for)
    trap '' TERM INT HUP PIPE
    [ -z "$running" ] || { kill -TERM "$running" 2>/dev/null; wait "$running"; }
    [ "$err" = /dev/null ] || rm -f "$err"
    exit 143
}
trap stop TERM INT HUP PIPE
err=$(mktemp 2>/dev/null) || err=/dev/null
bounded=
command -v timeout >/dev/null 2>&1 && bounded=yes
bound() {
    [ -n "$bounded" ] || { "$@"; return; }
    timeout -k 1 "$limit" "$@" &
    running=$!
    wait "$running"
    rc=$?
    running=
    case $rc in 124|137) echo "fabcheck: stopped after $limit s (no result in time)" >&2;; esac
    return "$rc"
}
begin() {
    printf '%s %s begin %s>>>\n' '<<<fabcheck' "$token" "$1"
}
finish() {  # $1 name, $2 rc, stderr in $err (read by `cat` only when there is any: most have none)
    printf '\n%s %s stderr %s>>>\n' '<<<fabcheck' "$token" "$1"
    [ ! -s "$err" ] || cat "$err"
    printf '\n%s %s end %s rc=%s>>>\n' '<<<fabcheck' "$token" "$1" "$2"
}
section() {  # name command...: run one tool, bounded, as a marked section
    name=$1; shift
    if [ "$1" = cat ] && [ $# -eq 2 ] && in_batch "$2"; then
        from_batch "$name" "$2"
        return
    fi
    begin "$name"
    bound "$@" 2>"$err" </dev/null
    finish "$name" "$?"
}
# The sysfs files of one `rdma link` line (its port's and its netdev's) are read by ONE bounded
# `grep -aH '' FILE...` (read_files); each `section NAME cat FILE` then takes FILE's lines from it, and
# FILE's own error line as its stderr (exit 1, as cat's): the text a `cat` per file shows, without 3
# processes per file. No subshell per section: lines are picked by parameter expansion. Without a
# stderr file (no mktemp) a failed file could not be told from an empty one: each file gets its `cat`.
batch_files= batch_out= batch_err= batch_rc=
nl='
'
read_files() {  # file...
    batch_files=
    [ "$err" != /dev/null ] || return 0
    batch_out=$(trap stop TERM INT HUP PIPE; bound grep -a -H '' "$@" 2>"$err" </dev/null)
    batch_rc=$? batch_files=" $* " batch_err=
    [ ! -s "$err" ] || batch_err=$(cat "$err")
}
in_batch() {
    case $batch_files in *" $1 "*) return 0;; esac
    return 1
}
from_batch() {  # name file
    case $batch_rc in 0|1|2) ;; *)  # grep did not run or was stopped: no file was read for sure
        recorded "$1" "$batch_rc" "" "$batch_err"
        return;;
    esac
    picked= failed= rest=$batch_out$nl
    while [ -n "$rest" ]; do  # grep marks each line "FILE:"; an empty file has none, as with cat
        bline=${rest%%"$nl"*} rest=${rest#*"$nl"}
        case $bline in "$2:"*) picked=$picked${bline#"$2:"}$nl;; esac
    done
    rest=$batch_err$nl
    while [ -n "$rest" ]; do  # "grep: FILE: No such file or directory": said as "FILE: ..."
        bline=${rest%%"$nl"*} rest=${rest#*"$nl"}
        case $bline in *": $2: "*) failed=$failed$2:\ ${bline#*"$2: "}$nl;; esac
    done
    begin "$1"
    printf '%s' "$picked"  # every line as grep ended it, so one empty line stays one empty line
    printf '%s' "$failed" >"$err"
    if [ -n "$failed" ]; then finish "$1" 1; else finish "$1" 0; fi
}
recorded() {  # name rc stdout stderr: a marked section of output captured earlier
    begin "$1"
    [ -z "$3" ] || printf '%s\n' "$3"
    printf '%s' "$4" >"$err"
    finish "$1" "$2"
}
plain_name() {
    case $1 in ''|*[!A-Za-z0-9_.@-]*) return 1;; esac
}
if [ -n "$bounded" ]; then
    recorded time_limit 0 "$(command -v timeout)" ""
else
    recorded time_limit 127 "" "timeout: not found"
fi
"""

# Captured once: the section shows exactly the listing the per-port and per-netdev sections were read
# from. Subshells reset traps: each one sets it again so a TERM still reaches its running tool.
_LINKS = r"""links=$(trap stop TERM INT HUP PIPE; bound rdma link 2>"$err" </dev/null)
links_rc=$? links_err=
[ ! -s "$err" ] || links_err=$(cat "$err")
recorded rdma_link "$links_rc" "$links" "$links_err"
printf '%s\n' "$links" | while trap stop TERM INT HUP PIPE && IFS= read -r line; do
    set -- $line
    [ "$1" = link ] || continue
    dev=${2%/*} port=${2#*/}
    netdev=
    while [ $# -gt 1 ]; do
        [ "$1" = netdev ] && netdev=$2
        shift
    done
    plain_name "$dev" && plain_name "$port" || continue
"""

_EPILOGUE = r"""[ "$err" = /dev/null ] || rm -f "$err"
printf '%s %s complete>>>\n' '<<<fabcheck' "$token"
"""

# The script's own variables a probe word may name; each holds a value the script has validated.
_PLACEHOLDERS = {"dev": "$dev", "port": "$port", "netdev": "$netdev", "priority": "$prio"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# Literal text of a probe word: nothing a shell reads inside double quotes ($, `, \, ") or splits on.
_LITERAL = re.compile(r"[A-Za-z0-9_./:,=+@-]*")


def _shell_word(word: str) -> str:
    """A probe word as one double-quoted shell word, its placeholders as the script's variables."""
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(word):
        parts += [_literal(word[last : match.start()]), _variable(match.group(1))]
        last = match.end()
    parts.append(_literal(word[last:]))
    return '"' + "".join(parts) + '"'


def _literal(text: str) -> str:
    if not _LITERAL.fullmatch(text):
        raise ValueError(f"probe word part {text!r} holds characters a shell would read")
    return text


def _variable(name: str) -> str:
    if name not in _PLACEHOLDERS:
        raise ValueError(f"unknown probe placeholder {{{name}}}; known: {', '.join(_PLACEHOLDERS)}")
    return _PLACEHOLDERS[name]


def _section_line(probe: HostProbe, indent: str = "") -> str:
    label = {"host": probe.name, "port": probe.name + ":{dev}/{port}", "netdev": probe.name + ":{netdev}"}
    words = [_shell_word(label[probe.scope]), *(_shell_word(word) for word in probe.argv)]
    return f"{indent}section {' '.join(words)}\n"


def _read_files_line(probes: Iterable[HostProbe]) -> str:
    return "read_files " + " ".join(_shell_word(p.argv[1]) for p in probes if p.reads_one_file)


def _batch_lines(port: list[HostProbe], netdev: list[HostProbe], indent: str) -> str:
    """One `read_files` per `rdma link` line over the files of its port and, when the netdev's name is
    plain (its probes run), of its netdev; nothing when the line reads fewer than two files."""
    port_files = [p for p in port if p.reads_one_file]
    netdev_files = [p for p in netdev if p.reads_one_file]
    if len(port_files) + len(netdev_files) < 2:
        return ""
    both = _read_files_line(port_files + netdev_files)
    if not netdev_files:
        return f"{indent}{both}\n"
    port_only = _read_files_line(port_files) if port_files else "batch_files="
    return (
        f'{indent}if plain_name "$netdev"; then\n{indent}    {both}\n'
        f"{indent}else\n{indent}    {port_only}\n{indent}fi\n"
    )


def collection_script(probes: Iterable[HostProbe] = HOST_PROBES) -> str:
    """The collection script of a probe table: host probes, then per `rdma link` port its port probes
    and, when the port has a plain netdev name, that netdev's probes."""
    probes = tuple(probes)
    by_scope = {scope: [p for p in probes if p.scope == scope and not p.builtin] for scope in _SCOPES}
    script = _PROLOGUE + "".join(_section_line(p) for p in by_scope["host"]) + _LINKS
    script += _batch_lines(by_scope["port"], by_scope["netdev"], "    ")
    script += "".join(_section_line(p, "    ") for p in by_scope["port"])
    script += '    plain_name "$netdev" || continue\n'
    script += "".join(_section_line(p, "    ") for p in by_scope["netdev"])
    return script + "done\n" + _EPILOGUE


_SCOPES: tuple[Scope, ...] = ("host", "port", "netdev")
COLLECT_SCRIPT = collection_script()

# The remote command: $1 = seconds the whole collection may take on the host, then the script and its
# arguments. Under `timeout` the script and everything it started are stopped at that limit even when
# the client is gone (a killed ssh client does not stop a remote command that has no terminal).
LAUNCHER = r"""
total=$1
shift
case $total in ''|*[!0-9]*|0*) echo "fabcheck: bad time limit" >&2; exit 2;; esac
command -v timeout >/dev/null 2>&1 && exec timeout -k 3 "$total" sh -c "$@"
exec sh -c "$@"
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


class ConnectionVarError(ValueError):
    """An inventory connection variable fabcheck cannot use: names the variable, its value and its origin."""

    def __init__(self, variable: str, value: object, allowed: str, where: str = "") -> None:
        self.variable = variable
        self.value = value
        self.allowed = allowed
        self.where = where  # "file:line: " when the inventory tags the value with its origin
        super().__init__(str(self))

    def __str__(self) -> str:
        # ansible's tagged str/int subclasses print like the plain value; a long value is cut.
        plain = str(self.value) if isinstance(self.value, str) else self.value
        shown = repr(plain)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        return f"{self.where}{self.variable} = {shown}: {self.allowed}"


_UNSAFE_WORD = re.compile(r"[\s\x00-\x1f\x7f]")


def _origin(value: object) -> str:
    from fabcheck.intent.loader import where_of  # the loader's origin lookup (ansible's value tags)

    try:
        return where_of(value)
    except Exception:  # an origin is a courtesy; a value without one is still reported
        return ""


def _var(variables: Mapping[str, Any], *names: str) -> tuple[str, Any]:
    """The first of several alias variables that is set (Ansible's own precedence), and its value."""
    for name in names:
        if variables.get(name) is not None:
            return name, variables[name]
    return names[0], None


def _reject(name: str, value: object, allowed: str) -> ConnectionVarError:
    return ConnectionVarError(name, value, allowed, _origin(value))


def _no_template(name: str, value: str) -> None:
    if "{{" in value or "{%" in value:
        raise _reject(name, value, "templated connection variables are not resolved by validate; set a value")


def _port(variables: Mapping[str, Any]) -> int | None:
    name, value = _var(variables, "ansible_port", "ansible_ssh_port")
    if value is None:
        return None
    allowed = "a TCP port, an integer 1..65535"
    if isinstance(value, bool):
        raise _reject(name, value, allowed)
    if isinstance(value, str):
        _no_template(name, value)
        if not is_int_token(value.strip(), max_digits=5):
            raise _reject(name, value, allowed)
        number = int(value.strip())
    elif isinstance(value, int):
        number = value
    else:
        raise _reject(name, value, allowed)
    if not 1 <= number <= 65535:
        raise _reject(name, value, allowed)
    return number


def _word(variables: Mapping[str, Any], allowed: str, *names: str, dash_ok: bool = True) -> str | None:
    """A one-word variable (host, user, key path): a string with no blank or control character."""
    name, value = _var(variables, *names)
    if value is None:
        return None
    if not isinstance(value, str) or not value or _UNSAFE_WORD.search(value):
        raise _reject(name, value, allowed)
    if not dash_ok and value.startswith("-"):
        raise _reject(name, value, allowed)
    _no_template(name, value)
    return str(value)


def _ssh_args(variables: Mapping[str, Any]) -> list[str]:
    options: list[str] = []
    for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        value = variables.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str) or "\x00" in value:
            raise _reject(name, value, "ssh options as one string, e.g. '-o ProxyJump=bastion'")
        _no_template(name, value)
        try:
            options += shlex.split(str(value))
        except ValueError as err:
            raise _reject(name, value, f"cannot be split like a shell command line ({err})") from None
    return options


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
        """Raises ConnectionVarError naming the variable and its value when one cannot be used."""
        address = _word(variables, "a host name or address (no blanks)", "ansible_host", "ansible_ssh_host")
        user = _word(
            variables,
            "a user name (no blanks, no leading '-')",
            "ansible_user",
            "ansible_ssh_user",
            dash_ok=False,
        )
        key = _word(
            variables,
            "a key file path (no blanks)",
            "ansible_ssh_private_key_file",
            "ansible_private_key_file",
        )
        return cls(
            name=name,
            address=address or name,
            port=_port(variables),
            user=user,
            private_key=key,
            extra_options=tuple(_ssh_args(variables)),
        )

    def argv(self, remote_command: str, connect_timeout_s: int) -> list[str]:
        """ssh argv; host-key checking stays as configured (ssh_config / the inventory's options)."""
        argv = ["ssh", "-n", "-o", "BatchMode=yes"]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.user:
            argv += ["-l", self.user]
        if self.private_key:
            argv += ["-i", self.private_key]
        # ssh keeps the first value of an option. First ours: no ControlMaster outlives its round trip
        # (a master the inventory's options open would stay for ControlPersist and hold a connection
        # beyond --concurrency; one already open, e.g. Ansible's, is still used). Then the inventory's
        # options, which win over the connect timeout default.
        argv += ["-o", "ControlPersist=no", *self.extra_options, "-o", f"ConnectTimeout={connect_timeout_s}"]
        return [*argv, "--", self.address, remote_command]

    @property
    def where(self) -> str:
        return f"{self.address}:{self.port}" if self.port else self.address


# The host's own limit fires first; this leaves its partial output and exit code time to arrive.
GRACE_S = 5.0
CONNECT = "connect"
COMMAND = "command"


@dataclass(frozen=True)
class TimeLimits:
    """How long one host's round trip may take, in parts that each say what expired.

    connect_s: ssh ConnectTimeout (TCP connect and the banner exchange). command_s: the collection on
    the host, enforced there by `timeout` and by the client with a grace period; each tool on the host
    gets ``per_tool_s`` of it. cap_s: the run's deadline leaves this host no more than this.
    """

    connect_s: float = 10.0
    command_s: float = 30.0
    cap_s: float | None = None
    per_tool_s: float | None = None  # default: a third of the host's limit

    def __post_init__(self) -> None:
        for value in (self.connect_s, self.command_s, self.cap_s, self.per_tool_s):
            if value is not None and not (0 < value < math.inf):
                raise ValueError(f"time limits must be positive and finite, not {value}")

    @property
    def ssh_connect_timeout(self) -> int:
        return max(1, math.ceil(self.connect_s))

    @property
    def host_s(self) -> int:
        return max(1, math.ceil(self.command_s))

    @property
    def tool_s(self) -> int:
        # A third: one hung tool leaves time for the others, so the host is still mostly judged.
        wanted = self.host_s / 3 if self.per_tool_s is None else self.per_tool_s
        return max(1, min(self.host_s, math.ceil(wanted)))

    @property
    def client_s(self) -> float:
        total = self.ssh_connect_timeout + self.host_s + GRACE_S
        return total if self.cap_s is None else min(total, self.cap_s)

    def within(self, left_s: float) -> TimeLimits:
        """These limits, shortened so that the whole round trip ends within ``left_s``."""
        if left_s >= self.client_s:
            return self
        return TimeLimits(min(self.connect_s, left_s), min(self.command_s, left_s), left_s, self.per_tool_s)


@dataclass(frozen=True)
class HostCollection:
    """What one round trip brought back. ``error`` says why nothing (or not everything) came back;
    ``expired`` is CONNECT or COMMAND when a time limit ended it."""

    host: str
    sections: Mapping[str, Section]
    complete: bool
    error: str | None = None
    priority: int = 3
    expired: str | None = None


def remote_command(token: str, priority: int, limits: TimeLimits | None = None) -> str:
    """The one remote command line: the launcher and the static script as single quoted arguments."""
    if not 0 <= priority <= 7:
        raise ValueError(f"lossless priority {priority} is not 0..7")
    limits = limits or TimeLimits()
    script = [COLLECT_SCRIPT, "fabcheck-collect", token, str(priority), str(limits.tool_s)]
    return shlex.join(["sh", "-c", LAUNCHER, "fabcheck-collect", str(limits.host_s), *script])


def collect_host(target: SshTarget, priority: int, limits: TimeLimits | None = None) -> HostCollection:
    """Run the collection script on one host over ssh; never raises for an unreachable host."""
    limits = limits or TimeLimits()
    token = secrets.token_hex(8)
    argv = target.argv(remote_command(token, priority, limits), limits.ssh_connect_timeout)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=limits.client_s,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        parsed = split_sections(_text(expired.stdout), token)
        error = _gave_up(parsed, _text(expired.stderr), limits)
        return HostCollection(target.name, parsed.sections, False, error, priority, COMMAND)
    except OSError as err:
        return HostCollection(target.name, {}, False, f"cannot run ssh: {err.strerror or err}", priority)
    parsed = split_sections(done.stdout, token)
    if parsed.complete:
        return HostCollection(target.name, parsed.sections, True, None, priority)
    error, expired_part = _failure(done.returncode, done.stderr, parsed, target, limits)
    return HostCollection(target.name, parsed.sections, False, error, priority, expired_part)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def ssh_said(stderr: str) -> str:
    """What ssh (or the remote shell) printed on stderr, in a few lines: the reason a user needs."""
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines()]
    lines = [line for line in lines if line and not line.startswith("Warning: Permanently added")]
    said = "; ".join(dict.fromkeys(lines[-3:]))
    return said if len(said) <= 300 else said[:300] + "..."


def _stopped_in(parsed: Sections) -> str:
    unfinished = [name for name, section in parsed.sections.items() if section.rc is None]
    if unfinished:
        return f"output stopped in section {unfinished[-1]} (`{section_command(unfinished[-1], 3)}`)"
    return "output stopped between sections" if parsed.sections else "nothing was printed"


def _gave_up(parsed: Sections, stderr: str, limits: TimeLimits) -> str:
    said = ssh_said(stderr)
    return (
        f"command timeout: no complete answer within {limits.client_s:g} s (host limit {limits.host_s} s, "
        f"ssh ConnectTimeout {limits.ssh_connect_timeout} s); {_stopped_in(parsed)}"
        + (f"; ssh said: {said}" if said else "")
    )


def _failure(
    rc: int, stderr: str, parsed: Sections, target: SshTarget, limits: TimeLimits
) -> tuple[str, str | None]:
    said = ssh_said(stderr)
    if rc == 255 and not parsed.sections:
        if "timed out" in said.lower():
            return (
                f"connect timeout (ssh ConnectTimeout {limits.ssh_connect_timeout} s) to {target.where}: "
                f"{said}",
                CONNECT,
            )
        return f"ssh to {target.where} failed: {said or 'exit 255'}", None
    if rc in (124, 137):  # the host's own `timeout` stopped the collection
        return (
            f"command timeout on the host: the collection did not finish within {limits.host_s} s and "
            f"was stopped there; {_stopped_in(parsed)}",
            COMMAND,
        )
    return f"collection on {target.where} ended early (exit {rc}); {_stopped_in(parsed)}" + (
        f": {said}" if said else ""
    ), None


def section_command(section: str, priority: int) -> str:
    """The command a section ran, shell-quoted, e.g. 'mlnx_qos -i ens1np0' for 'mlnx_qos:ens1np0'."""
    kind, _, subject = section.partition(":")
    probe = PROBES_BY_NAME.get(kind)
    if probe is None:
        return shlex.quote(section)
    dev, _, port = subject.partition("/")
    values = {"dev": dev, "port": port, "netdev": subject, "priority": priority}
    return shlex.join(word.format(**values) for word in probe.argv)


# ---- sections -> records ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unreadable:
    """A record that could not be read: the command, and why (exit code, stderr, parse error)."""

    command: str
    reason: str


Records = Mapping[tuple[str, str], Any]  # (probe, subject) -> record or Unreadable; subject "" = host
REASON_CHARS = 300  # a hostile host's 5000-digit value is quoted, never echoed whole


def read_records(
    sections: Mapping[str, Section], priority: int, probes: Iterable[HostProbe] | None = None
) -> dict[tuple[str, str], Any]:
    """Pure: every probe's record for every subject the host showed (ports and netdevs from `rdma link`).

    A section that is missing, cut off, failed or unparsable is an Unreadable record, never a guess."""
    probes = HOST_PROBES if probes is None else tuple(probes)
    records: dict[tuple[str, str], Any] = {}
    links = read_section(PROBES_BY_NAME[RDMA_LINK], sections, "", priority)
    records[(RDMA_LINK, "")] = links
    ports = [] if isinstance(links, Unreadable) else [link.name for link in links]
    netdevs = [] if isinstance(links, Unreadable) else sorted({lk.netdev for lk in links if lk.netdev})
    subjects = {"host": [""], "port": ports, "netdev": netdevs}
    for probe in probes:
        if probe.name in (RDMA_LINK, TIME_LIMIT):
            continue  # the listing is read above; the time limit is judged from its section
        for subject in subjects[probe.scope]:
            records[(probe.name, subject)] = read_section(probe, sections, subject, priority)
    return records


def read_section(probe: HostProbe, sections: Mapping[str, Section], subject: str, priority: int) -> Any:
    """One probe's record for one subject, or Unreadable saying why."""
    name = probe.section(subject)
    command = section_command(name, priority)
    section = sections.get(name)
    if section is None:
        return Unreadable(command, "not in the collected output")
    if section.rc is None:
        return Unreadable(command, "output truncated (no end marker)")
    try:
        return _parsed(probe, section, command)
    except ParseError as err:
        where = "" if err.line is None else f"line {err.line}: "
        return Unreadable(command, _short(where + err.message))
    except Exception as err:  # any output a parser did not foresee is unreadable, never a crash of the run
        return Unreadable(command, f"unreadable output ({_short(f'{type(err).__name__}: {err}')})")


def _parsed(probe: HostProbe, section: Section, command: str) -> Any:
    assert section.rc is not None
    if probe.reading == "answer":
        return probe.parse(section.rc, section.stdout, section.stderr, command)
    if probe.reading == "file" and missing_file(section.rc, section.stderr):
        return None
    empty = probe.empty_when
    if empty is not None and section.rc != 0 and section.stderr.strip() == empty:
        return probe.parse(empty, command)
    if section.rc != 0:
        detail = last_line(section.stderr) or last_line(section.stdout)
        return Unreadable(command, _short(f"exit {section.rc}" + (f": {detail}" if detail else "")))
    return probe.parse(section.stdout, command)


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else f"{text[:REASON_CHARS]}... ({len(text)} characters)"


def last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
