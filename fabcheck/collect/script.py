"""The section protocol of a round trip: a generated POSIX sh script prints marked sections, the launcher
bounds it on the node, and `split_sections` (pure) reads the output back.

A `HostProbe` declares one thing a round trip reads (its name, scope, command, how its output becomes a
record); the script is generated from a table of them (fabcheck.collect.host.HOST_PROBES): fixed text
for a given table, with nothing user-supplied in it. Its only inputs are positional arguments it
validates itself: a random hex token (so tool output can never forge a marker), the lossless priority
and time limits. Interface and device names are discovered on the node, never sent to it. The node
bounds its own run with `timeout` (each tool, and the whole script), so a hung tool never outlives a
round trip the client gave up on. The subnet-manager stage's script speaks the same protocol.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# Probe (= section) names: a host probe's section is its name, a port probe's "<name>:<dev>/<port>", a
# netdev probe's "<name>:<netdev>".

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


def collection_script(probes: Iterable[HostProbe]) -> str:
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
