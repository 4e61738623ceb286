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
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fabcheck.desired.nic import MAX_COUNTER_WINDOW_S

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
    # A counter (error, FEC, flap) view: read at the start and at the end of the counter window, the
    # first reading in the section `<name>.before:<subject>` (`earlier`), the second in the usual one.
    counter: bool = False
    # A tool that need not be installed (mlxlink): its exit 127, "command not found", is the answer None.
    optional: bool = False
    # Words holding `*` are file name patterns the shell expands on the host (the script otherwise runs
    # under `set -f`): emitted unquoted, with globbing on for this one command. A pattern that matches
    # nothing stays as written (POSIX), so the tool says "No such file or directory": its parser's answer.
    glob: bool = False

    @property
    def command(self) -> str:
        """The command as a user would type it, with its placeholders."""
        return " ".join(word or "''" for word in self.argv)

    def section(self, subject: str = "", *, first: bool = False) -> str:
        """The section of this probe for `subject` (`first`: a counter probe's first reading)."""
        name = self.earlier if first else self.name
        return f"{name}:{subject}" if subject else name

    @property
    def earlier(self) -> str:
        """The name of a counter probe's first reading (its section and its record)."""
        return earlier(self.name)

    @property
    def reads_one_file(self) -> bool:
        """`cat FILE`: the script may read it together with its scope's other files (read_files).
        A ':' in FILE would make grep's "FILE:" line prefixes ambiguous, so such a file is not."""
        return len(self.argv) == 2 and self.argv[0] == "cat" and ":" not in self.argv[1]


EARLIER = ".before"  # a counter probe's first reading: "<probe>.before:<subject>"
# The section the script prints between the two counter readings, once the window has passed: the
# seconds it waited (0: one reading only). A round trip stopped inside the window has none.
COUNTER_WINDOW = "counter_window"


def earlier(name: str) -> str:
    return name + EARLIER


MARK = "<<<fabcheck"
COMPLETE = "complete"

# $1 = token (hex), $2 = lossless priority (0..7), $3 = seconds each tool may run, $4 = the counter
# window in whole seconds (0..@MAX_WINDOW@; 0: the counters are read once). Names from
# `rdma link` are used only when they are plain interface names, and only inside double quotes.
_HOST_ARGUMENTS = r"""
set -f
token=$1 prio=$2 limit=$3 window=$4
case $token in ''|*[!0-9a-f]*) echo "fabcheck: bad token" >&2; exit 2;; esac
case $prio in [0-7]) ;; *) echo "fabcheck: bad priority" >&2; exit 2;; esac
case $limit in ''|*[!0-9]*|0*) echo "fabcheck: bad time limit" >&2; exit 2;; esac
case $window in ''|*[!0-9]*|0?*|????*) echo "fabcheck: bad counter window" >&2; exit 2;; esac
[ "$window" -le @MAX_WINDOW@ ] || { echo "fabcheck: bad counter window" >&2; exit 2; }
"""
# The functions every round trip's script runs its tools with (the host collection, the ib stage's
# fabric read: fabcheck.collect.ib), once its own arguments are checked into $token, $limit and
# $window: marked sections, each tool bounded, the counter window's pause. Each tool runs under
# `timeout` in the background so that a TERM from outside (the launcher's overall limit) can be passed
# on to it: nothing the script started outlives the script.
SCRIPT_RUNTIME = r"""err=/dev/null running=
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
paused=0 pause_err=
pause() {  # the counter window: a sleep a TERM stops at once, as it stops a bounded tool
    sleep "$1" </dev/null >/dev/null 2>&1 &
    running=$!
    wait "$running"
    paused=$?
    running=
    [ "$paused" -eq 0 ] || pause_err="fabcheck: sleep $1 failed (exit $paused): the window was not waited"
}
window_left() {  # seconds of the window still to wait: `date +%s` counts whole seconds, so the time
    # spent is taken 1 s short (never waits less than the window); no usable date: the whole window
    now=$(date +%s 2>/dev/null)
    case $started$now in ''|*[!0-9]*) echo "$window"; return;; esac
    spent=$((now - started - 1))
    [ "$spent" -gt 0 ] || spent=0
    [ "$spent" -lt "$window" ] || spent=$window
    echo $((window - spent))
}
if [ -n "$bounded" ]; then
    recorded time_limit 0 "$(command -v timeout)" ""
else
    recorded time_limit 127 "" "timeout: not found"
fi
"""
_PROLOGUE = _HOST_ARGUMENTS + SCRIPT_RUNTIME

# Captured once: the section shows exactly the listing the per-port and per-netdev sections were read
# from. Subshells reset traps: each one sets it again so a TERM still reaches its running tool.
_LINKS = r"""links=$(trap stop TERM INT HUP PIPE; bound rdma link 2>"$err" </dev/null)
links_rc=$? links_err=
[ ! -s "$err" ] || links_err=$(cat "$err")
recorded rdma_link "$links_rc" "$links" "$links_err"
"""
# One pass over the listing's ports (the same for the probes read once and each counter reading);
# @OVER@ is what the pass does at the port cap.
_EACH_PORT = r"""ports=0
printf '%s\n' "$links" | while trap stop TERM INT HUP PIPE && IFS= read -r line; do
    set -- $line
    [ "$1" = link ] || continue
    ports=$((ports + 1))
    if [ "$ports" -gt @MAX_PORTS@ ]; then
@OVER@
        break
    fi
    dev=${2%/*} port=${2#*/}
    netdev=
    while [ $# -gt 1 ]; do
        [ "$1" = netdev ] && netdev=$2
        shift
    done
    plain_name "$dev" && plain_name "$port" || continue
"""
_PORT_LIMIT = (
    '        recorded port_limit 1 "" "fabcheck: more than @MAX_PORTS@ ports listed; the rest are not read"'
)

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


def _section_line(probe: HostProbe, indent: str = "", reading: str = "") -> str:
    """`section LABEL COMMAND...`; `reading` names a counter probe's first reading (EARLIER). A glob
    probe's pattern words are left unquoted and expanded with globbing on for that line only."""
    name = probe.name + reading
    label = {"host": name, "port": name + ":{dev}/{port}", "netdev": name + ":{netdev}"}
    words = [_shell_word(label[probe.scope])]
    words += [_glob_word(word) if probe.glob and "*" in word else _shell_word(word) for word in probe.argv]
    line = f"{indent}section {' '.join(words)}\n"
    return f"{indent}set +f\n{line}{indent}set -f\n" if probe.glob else line


# A pattern word: literal text and `*` only (no placeholder, quote, `?`, `[` or anything else a shell reads).
_GLOB = re.compile(r"[A-Za-z0-9_./:,=+@*-]+")


def _glob_word(word: str) -> str:
    if not _GLOB.fullmatch(word):
        raise ValueError(f"probe pattern {word!r} holds characters other than literal text and `*`")
    return word


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
    and, when the port has a plain netdev name, that netdev's probes. The counter probes are read first
    (right after `rdma link`, which lists their ports), the probes read once run inside the window, only
    what is left of it is waited (`pause`), and the counters are read again (once only when the window
    is 0): every node waits the window once, inside its own round trip, overlapped with its own work."""
    probes = tuple(probes)
    once = [p for p in probes if not p.builtin and not p.counter]
    by_scope = {scope: [p for p in once if p.scope == scope] for scope in _SCOPES}
    each_port = _EACH_PORT.replace("@MAX_PORTS@", str(MAX_PORTS))
    script = _PROLOGUE.replace("@MAX_WINDOW@", str(MAX_COUNTER_WINDOW_S))
    counters = [p for p in probes if p.counter and not p.builtin]
    script += _LINKS
    if counters:
        script += 'if [ "$window" -gt 0 ]; then\n'
        script += "started=$(date +%s 2>/dev/null)\n"
        script += _counter_reading(counters, each_port, EARLIER)
        script += "fi\n"
    script += "".join(_section_line(p) for p in by_scope["host"])
    script += each_port.replace("@OVER@", _PORT_LIMIT.replace("@MAX_PORTS@", str(MAX_PORTS)))
    script += _batch_lines(by_scope["port"], by_scope["netdev"], "    ")
    script += "".join(_section_line(p, "    ") for p in by_scope["port"])
    script += '    plain_name "$netdev" || continue\n'
    script += "".join(_section_line(p, "    ") for p in by_scope["netdev"])
    script += "done\n"
    if counters:
        script += 'if [ "$window" -gt 0 ]; then\n    pause "$(window_left)"\nfi\n'
        script += f'recorded {COUNTER_WINDOW} "$paused" "$window" "$pause_err"\n'
        script += _counter_reading(counters, each_port, "")
    return script + _EPILOGUE


def _counter_reading(counters: list[HostProbe], each_port: str, reading: str) -> str:
    """One reading of every counter probe (host ones, then per port and netdev as above)."""
    lines = "".join(_section_line(p, "", reading) for p in counters if p.scope == "host")
    per_port = "".join(_section_line(p, "    ", reading) for p in counters if p.scope == "port")
    per_netdev = "".join(_section_line(p, "    ", reading) for p in counters if p.scope == "netdev")
    if not per_port and not per_netdev:
        return lines
    lines += each_port.replace("@OVER@\n", "") + per_port
    if per_netdev:
        lines += '    plain_name "$netdev" || continue\n' + per_netdev
    return lines + "done\n"


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

# Around a launcher line ($1) when the client holds ssh's stdin open (fabcheck.collect.ssh.round_trip
# with watch_stdin): stdin closing means the client is gone (killed, even with -9), so the collection is
# stopped at once instead of at the host's own limit. `exec` keeps one process, the launcher's
# `timeout`, which passes the TERM on to the script, and the script to its running tool.
STDIN_WATCHER = r"""
exec 3<&0 </dev/null
sh -c "exec $1" &
child=$!
{ cat <&3 >/dev/null 2>&1; kill -TERM "$child" 2>/dev/null; } >/dev/null 2>&1 &
watcher=$!
exec 3<&-
wait "$child"
rc=$?
kill "$watcher" 2>/dev/null
exit "$rc"
"""


def watched(launcher_line: str) -> str:
    """The remote command line `launcher_line` under STDIN_WATCHER."""
    return shlex.join(["sh", "-c", STDIN_WATCHER, "fabcheck-watch", launcher_line])


_MARKER = re.compile(r"<<<fabcheck ([0-9a-f]+) (begin|stderr|end|complete)(?: (\S+?))?(?: rc=(\d+))?>>>")

# ---- bounds on what one node may send back --------------------------------------------------------

MIB = 2**20
# One section's stdout and stderr together: real sections are far smaller (`ibv_devinfo -v` of 16 NICs
# is about 100 KiB, `rdma link` of 256 ports about 30 KiB).
SECTION_CAP_BYTES = 4 * MIB
# Everything one round trip sends, kept or not: a tool that prints without end is cut here, not at its
# time limit. Real round trips of 16 NICs are under 1 MiB.
ROUND_TRIP_CAP_BYTES = 16 * MIB
# `rdma link` ports read per host (each has at most one netdev): beyond it the host is an error and
# only the first MAX_PORTS ports are read and judged.
MAX_PORTS = 256
PORT_LIMIT = "port_limit"  # the section the script prints when `rdma link` lists more than MAX_PORTS
# How each cap names itself in a node's error (the gate's hint keys on them).
CAP_NAMES = ("(the section cap)", "(the round trip cap)", "(the port cap)")
_LINKS_SECTION = "rdma_link"
_MARKER_LINE_MAX = 200  # a marker line is about 60 bytes; a longer line is data


@dataclass(frozen=True)
class OutputCaps:
    """How much of one node's output the controller keeps (per section) and reads (per round trip)."""

    section_bytes: int = SECTION_CAP_BYTES
    round_trip_bytes: int = ROUND_TRIP_CAP_BYTES
    max_ports: int = MAX_PORTS

    def __post_init__(self) -> None:
        if min(self.section_bytes, self.round_trip_bytes, self.max_ports) < 1:
            raise ValueError(f"output caps must be positive: {self}")


def size_text(count: int) -> str:
    """Bytes as people say them: 4 MiB, 512 KiB, 300 bytes."""
    for unit, size in (("MiB", MIB), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


@dataclass(frozen=True)
class Section:
    """One command's output. ``rc`` is None when the output stops before the section's end marker, or
    when it went over the section cap (then nothing of it is kept: a cut output is never parsed)."""

    rc: int | None
    stdout: str
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0


@dataclass(frozen=True)
class Sections:
    """Every section the script printed, whether it ran to the end, and each cap it hit (a sentence
    naming the cap and the section: the node's error says it)."""

    sections: Mapping[str, Section] = field(default_factory=dict)
    complete: bool = False
    over_caps: tuple[str, ...] = ()
    round_trip_cut: bool = False  # the round trip cap ended the reading


class SectionReader:
    """The script's output read incrementally: `feed` chunks as they arrive, then `finish`.

    Each section's bytes are kept up to the section cap and decoded once, at its end marker; bytes
    outside sections and beyond a cap are counted and dropped, so nothing is held twice and no more
    than the caps is held at all. `feed` says False once the round trip cap is reached: stop reading.
    """

    def __init__(self, token: str, caps: OutputCaps | None = None) -> None:
        self.token = token
        self.caps = caps or OutputCaps()
        self._prefix = f"<<<fabcheck {token} ".encode()
        self._pending = bytearray()
        self._line_start = True  # the next pending byte starts a line
        self._received = 0
        self._current: str | None = None
        self._part = 0  # 0 stdout, 1 stderr
        self._parts = (bytearray(), bytearray())
        self._over = False  # the current section went over the section cap
        self._sections: dict[str, Section] = {}
        self._over_caps: list[str] = []
        self._complete = False
        self._cut = False
        self._last: str | None = None  # the last section begun (where a cut round trip stopped)

    @property
    def received(self) -> int:
        return self._received

    def feed(self, data: bytes) -> bool:
        if self._cut:
            return False
        room = self.caps.round_trip_bytes - self._received
        self._received += len(data)
        if len(data) > room:
            data = data[: max(0, room)]
            self._cut = True
        self._pending += data
        self._scan(final=False)
        return not self._cut

    def finish(self) -> Sections:
        self._scan(final=True)
        if self._current is not None:
            self._close(None)
        if self._cut:
            where = f"in section {self._last}" if self._last else "before any section"
            self._over_caps.append(
                f"the round trip sent more than {size_text(self.caps.round_trip_bytes)} "
                f"(the round trip cap); reading stopped {where}"
            )
        sections = self._capped_ports(self._sections)
        return Sections(sections, self._complete and not self._cut, tuple(self._over_caps), self._cut)

    # -- scanning ------------------------------------------------------------------------------------
    def _scan(self, final: bool) -> None:
        """Hand the pending bytes on: data to the current section, marker lines to `_marker`. A marker
        is a line of its own that starts with this run's prefix; a line cut at the chunk's end waits."""
        pending = self._pending
        start = 0
        while start < len(pending):
            at = self._marker_start(start)
            if at < 0:
                # A tail that may be the start of a marker split across chunks waits for the next one.
                keep = 0 if final else min(len(pending) - start, len(self._prefix) - 1)
                self._data(start, len(pending) - keep)
                start = len(pending) - keep
                break
            self._data(start, at)
            end = pending.find(b"\n", at)
            if end < 0:
                if not final and len(pending) - at <= _MARKER_LINE_MAX:
                    start = at  # the rest of the marker line is still to come
                    break
                stop = len(pending) if final else at + _MARKER_LINE_MAX
                self._data(at, stop)  # too long for a marker line: data
                start = stop
                continue
            if self._marker(bytes(pending[at:end])):
                self._line_start = True
            else:
                self._data(at, end + 1)
            start = end + 1
        del pending[:start]

    def _marker_start(self, start: int) -> int:
        pending = self._pending
        at = pending.find(self._prefix, start)
        while at >= 0:
            if self._line_start if at == start else pending[at - 1] == 0x0A:
                return at
            at = pending.find(self._prefix, at + 1)
        return -1

    def _data(self, start: int, end: int) -> None:
        pending = self._pending
        if end <= start:
            return
        self._line_start = pending[end - 1] == 0x0A
        if self._current is None or self._over:
            return
        kept = len(self._parts[0]) + len(self._parts[1])
        if kept + (end - start) > self.caps.section_bytes:
            self._over = True
            self._parts[0].clear()
            self._parts[1].clear()
            self._over_caps.append(
                f"section {self._current} printed more than {size_text(self.caps.section_bytes)} "
                "(the section cap); it was not read"
            )
            return
        self._parts[self._part].extend(memoryview(pending)[start:end])

    def _marker(self, line: bytes) -> bool:
        try:
            marker = _MARKER.fullmatch(line.decode("ascii"))
        except UnicodeDecodeError:
            return False
        if marker is None or marker.group(1) != self.token:
            return False  # another run's marker, or none: data
        kind, name, rc = marker.group(2), marker.group(3), marker.group(4)
        if kind == COMPLETE:
            self._complete = self._current is None
            return True
        if kind == "begin" and name:
            # Complete is the last script's word: one round trip may run two (the SM node's script,
            # then the fabric's, fabcheck.collect.sm), each ending in its complete line.
            self._complete = False
            if self._current is not None:
                self._close(None)
            self._current, self._part, self._over, self._last = name, 0, False, name
        elif kind == "stderr" and name == self._current:
            self._part = 1
        elif kind == "end" and name == self._current and rc is not None:
            self._close(int(rc))
        return True  # this run's marker, even one out of place, is never data

    def _close(self, rc: int | None) -> None:
        assert self._current is not None
        stdout, stderr = self._parts
        if self._over:
            section = Section(None, "", "")
        elif rc is None:
            section = Section(None, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))
        else:
            section = Section(rc, _decoded(stdout), _decoded(stderr))
        self._sections[self._current] = section
        self._current, self._parts, self._over = None, (bytearray(), bytearray()), False

    def _capped_ports(self, sections: dict[str, Section]) -> dict[str, Section]:
        """The `rdma link` listing cut to its first `max_ports` ports when it lists more, with the node's
        error saying so: the rest are never read (the script stops there too, section PORT_LIMIT)."""
        links = sections.get(_LINKS_SECTION)
        limit = self.caps.max_ports
        if links is None:
            return sections
        listed = sum(1 for line in links.stdout.splitlines() if line.startswith("link "))
        if listed <= limit and PORT_LIMIT not in sections:
            return sections
        kept: list[str] = []
        seen = 0
        for line in links.stdout.splitlines(keepends=True):
            seen += line.startswith("link ")
            if not (line.startswith("link ") and seen > limit):
                kept.append(line)
        self._over_caps.append(
            f"`rdma link` lists {listed} ports, more than {limit} (the port cap); only the first {limit} "
            "ports and their netdevs were read"
        )
        return sections | {_LINKS_SECTION: Section(links.rc, "".join(kept).rstrip("\n"), links.stderr)}


def _decoded(data: bytearray) -> str:
    # The script prints one newline before each marker so a last line without one stays whole.
    text = data.decode("utf-8", "replace")
    return text[:-1] if text.endswith("\n") else text


def split_sections(text: str, token: str, caps: OutputCaps | None = None) -> Sections:
    """Split the script's whole output into sections (pure), under the same caps as a streamed read.

    Lines that are not this run's markers are data. A section whose end marker never came (truncated
    output) is kept with ``rc=None``.
    """
    reader = SectionReader(token, caps)
    data = text.encode("utf-8", "surrogatepass")
    step = 1 << 20
    for offset in range(0, len(data), step):
        if not reader.feed(data[offset : offset + step]):
            break
    return reader.finish()
