"""Parse perftest output (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw and the *_lat tests).

Client or server side, pasted with shell prompts, warnings and failure lines. The result table is read
through its own header line, so extra columns (``BW min``, per-port, CPU_Util, QoS ``#sl``) and the
latency layouts are handled without guessing column positions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import is_int_token, read_int, read_number

# perftest's own MB is 2**20 bytes (format_factor 0x100000 in its report code), not 10**6.
_BYTES_PER_PERFTEST_MB = 1 << 20

_DASHED = re.compile(r"^\s*-{20,}\s*$")
_TITLE = re.compile(
    r"^\s*(?P<verb>Send|RDMA_Write_imm|RDMA_Write|RDMA_Read|Atomic)\s+"
    r"(?:(?:FETCH_AND_ADD|CMP_AND_SWAP)\s+)?"
    r"(?P<bidir>Bidirectional\s+)?(?:Post List\s+)?"
    r"(?P<kind>BW|Latency)\s+(?:forwarding\s+)?(?:Multicast\s+)?Test\s*$"
)
_VERB_NAMES = {"Send": "send", "RDMA_Write": "write", "RDMA_Write_imm": "write", "RDMA_Read": "read"}
_SETTING_VALUE = re.compile(r"\S+(?: \S+)*")
_ADDRESS = re.compile(r"^\s*(?P<side>local|remote) address:\s*(?P<rest>.*)$")
_GID = re.compile(r"^\s*GID:\s*(?P<gid>\S+)\s*$")
_SERVER_BANNER = re.compile(r"Waiting for client to connect")
_TABLE_HEADER = re.compile(r"^\s*#bytes\b")
# Header tokens: '#name', a bracketed unit, a word, or one other character. Every alternative
# consumes its text and none can rescan it, so tokenising is linear in the line length.
_TPS = "tps average"
_HEADER_TOKEN = re.compile(r"#\w+|\[[^\[\]]*\]|[^\s\[\]#]+|\s+|.", re.DOTALL)

_COMPLETION_ERROR = re.compile(r"Completion with error at (?P<role>client|server)")
_FAILED_STATUS = re.compile(r"Failed status (?P<status>[0-9]+):", re.ASCII)
_SYNDROME = re.compile(r"syndr?ome? (?P<syndrome>0x[0-9a-fA-F]+)", re.ASCII)
# 'WARNING: Could not determine NUMA node of the device' is advice printed by passing runs: a line
# with a warning or notice label is a warning, wherever it appears (even inside the settings block).
_NOTICE_LABEL = r"(?:WARN(?:ING)?|[Ww]arn(?:ing)?|NOTE|[Nn]ote|INFO|[Ii]nfo)\b"
_NOTICE = re.compile(r"\s*" + _NOTICE_LABEL + r"\s*:", re.ASCII)
# An optional 'function_name:' prefix of a failure line, never a notice label.
_FAILURE_PREFIX = r"^(?:(?!" + _NOTICE_LABEL + r")\w+:\s*)?"
# Failure lines only perftest prints: on their own they make a text a (failed) perftest run.
_PERFTEST_FAILURE = re.compile(
    _FAILURE_PREFIX + r"(?:Completion with error|Failed status|Failed to|Couldn't|Unable to|"
    r"No IB devices|IB device \S+ not found|scnt=[0-9]+)",
    re.ASCII,
)
# Generic failure wording: a failure inside a perftest run, but no evidence that a text is one.
_FAILURE = re.compile(
    _FAILURE_PREFIX + r"(?:Completion with error|Failed\b|Couldn't|Could not|Unable to|Cannot|Can't|"
    r"Error\b|ERROR\b|No IB devices|Did not detect|IB device \S+ not found|scnt=[0-9]+)",
    re.ASCII,
)
_WARNING = re.compile(
    r"WARNING|[Ww]arning:|Conflicting CPU frequency|CPU Frequency is not max|Max msg size|"
    r"Changing to|Requested mtu|won't be|not supported"
)


@dataclass(frozen=True)
class PerftestRow:
    """One line of the result table; fields the table does not print are None."""

    bytes: int
    iterations: int | None = None
    bw_peak: float | None = None
    bw_avg: float | None = None
    msg_rate: float | None = None
    t_min: float | None = None
    t_max: float | None = None
    t_typical: float | None = None
    t_avg: float | None = None
    t_stdev: float | None = None
    percentiles: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PerftestError:
    """A failure line as printed; status and syndrome come from 'Failed status N: ... syndrom 0xNN'."""

    line: int
    message: str
    status: int | None = None
    syndrome: str | None = None


@dataclass(frozen=True)
class PerftestAddress:
    """A 'local address:' or 'remote address:' line, with the GID line that follows it."""

    side: str
    fields: Mapping[str, str]
    gid: str | None = None

    def ipv4(self) -> str | None:
        """The IPv4 address inside an IPv4-mapped GID (perftest prints GID bytes in decimal)."""
        parts = (self.gid or "").split(":")
        if len(parts) != 16 or not all(is_int_token(p, max_digits=3) for p in parts):
            return None
        octets = [int(p) for p in parts]
        if octets[:10] != [0] * 10 or octets[10:12] != [255, 255] or max(octets[12:]) > 255:
            return None
        return ".".join(str(o) for o in octets[12:])


@dataclass(frozen=True)
class PerftestRun:
    """Everything one perftest run printed."""

    test: str | None
    role: str | None
    connection: str | None
    qps: int | None
    link_layer: str | None
    mtu: int | None
    gid_index: int | None
    device: str | None
    bw_unit: str | None
    lat_unit: str | None
    rows: tuple[PerftestRow, ...]
    errors: tuple[PerftestError, ...]
    warnings: tuple[str, ...]
    completed: bool
    bidirectional: bool = False
    settings: Mapping[str, str] = field(default_factory=dict)
    addresses: tuple[PerftestAddress, ...] = ()

    def bw_gbps(self, row: PerftestRow) -> float | None:
        """The row's average bandwidth in Gb/s (10**9 bit/s), whatever unit the table used."""
        if row.bw_avg is None:
            return None
        if self.bw_unit == "Gb/sec":
            return row.bw_avg
        if self.bw_unit == "MB/sec":
            return row.bw_avg * _BYTES_PER_PERFTEST_MB * 8 / 1e9
        return None


@dataclass
class _State:
    """Mutable scratch space while walking the lines; frozen into a PerftestRun at the end."""

    source: str
    test: str | None = None
    bidirectional: bool = False
    banner_role: str | None = None
    error_role: str | None = None
    settings: dict[str, str] = field(default_factory=dict)
    addresses: list[PerftestAddress] = field(default_factory=list)
    columns: list[str] | None = None
    rows: list[PerftestRow] = field(default_factory=list)
    errors: list[PerftestError] = field(default_factory=list)
    perftest_failures: int = 0  # failure lines of a shape only perftest prints
    warnings: list[str] = field(default_factory=list)
    in_header: bool = False
    in_table: bool = False
    table_closed: bool = False


def parse_perftest(text: str, source: str = "<text>") -> PerftestRun:
    """Parse one perftest run. Raises ParseError when the text holds no perftest output at all."""
    state = _State(source=source)
    for number, line in enumerate(split_checked_lines(text, source, "perftest"), start=1):
        _consume(state, number, line.rstrip())
    if state.test is None and state.columns is None and not state.perftest_failures:
        # Generic 'Error ...' lines (MPI, CUDA, shell) alone do not make a text a perftest run.
        raise ParseError("no perftest header, result table or failure line found", source=source)
    return _freeze(state)


def _consume(state: _State, number: int, line: str) -> None:
    if _DASHED.match(line):
        _on_dashed(state)
    elif state.in_table and _starts_with_digit(line):
        state.rows.append(_parse_row(state, number, line))
    elif _TABLE_HEADER.match(line):
        _start_table(state, number, line)
    elif (title := _TITLE.match(line)) is not None:
        _on_title(state, number, title)
    elif (address := _ADDRESS.match(line)) is not None:
        state.addresses.append(_parse_address(address))
    elif (gid := _GID.match(line)) is not None and state.addresses:
        state.addresses[-1] = _with_gid(state.addresses[-1], gid["gid"])
    elif _NOTICE.match(line):
        state.warnings.append(line.strip())
    elif _FAILURE.match(line.strip()):
        _on_failure(state, number, line.strip())
    elif (state.in_header and ":" in line) or _looks_like_setting(line):
        state.settings.update(_parse_settings(line))
    else:
        _on_message(state, number, line)


def _starts_with_digit(line: str) -> bool:
    """Any digit Python knows ('٦', '²' too): such a row is then refused by the ASCII number reader,
    never skipped as noise (a skipped row could hide the evidence of a failure)."""
    stripped = line.lstrip()
    return bool(stripped) and stripped[0].isdigit()


def _on_dashed(state: _State) -> None:
    """Dashed lines close the settings block and the result table."""
    if state.in_table:
        state.in_table = False
        state.table_closed = True
    state.in_header = False


def _on_title(state: _State, number: int, title: re.Match[str]) -> None:
    if state.test is not None or state.columns is not None:
        raise ParseError(
            "a second perftest run starts here; give one run per text", source=state.source, line=number
        )
    verb = _VERB_NAMES.get(title["verb"], title["verb"].lower())
    kind = "bw" if title["kind"] == "BW" else "lat"
    state.test = f"ib_{verb}_{kind}"
    state.bidirectional = title["bidir"] is not None
    state.in_header = True


def _looks_like_setting(line: str) -> bool:
    """perftest pads setting names so the colon sits in column 18, even when the title was cut off."""
    expanded = line[:19].expandtabs(8)  # only columns 0..18 matter; a tab widens, never narrows
    return len(expanded) > 18 and expanded[0] == " " and expanded[1] != " " and expanded[17] == ":"


def _parse_settings(line: str) -> dict[str, str]:
    """' Dual-port       : OFF          Device         : mlx4_0' -> {'dual-port': 'OFF', 'device': ...}.

    A name starts at a character that is neither blank nor ':' and runs to the next ':' (with no tab
    inside it); the value is words separated by single spaces. One left-to-right scan, so a long line
    costs linear time (a regex doing the same retries every start position).
    """
    settings: dict[str, str] = {}
    position, end = 0, len(line)
    while position < end:
        start = _next_name_start(line, position)
        colon = line.find(":", start)
        if start < 0 or colon < 0:
            break
        name = line[start:colon]
        tab = name.find("\t")
        if tab >= 0 and name[tab:].strip():
            position = start + tab + 1  # a name cannot hold a tab: look again after it
            continue
        value = _SETTING_VALUE.match(line, _skip_blanks(line, colon + 1))
        if value is None:
            position = colon + 1  # nothing after the colon: no setting with this colon
            continue
        settings[name.strip().lower()] = value[0]
        position = value.end()
    return settings


def _next_name_start(line: str, position: int) -> int:
    for index in range(position, len(line)):
        char = line[index]
        if char != ":" and not char.isspace():
            return index
    return -1


def _skip_blanks(line: str, position: int) -> int:
    while position < len(line) and line[position].isspace():
        position += 1
    return position


def _parse_address(match: re.Match[str]) -> PerftestAddress:
    tokens = match["rest"].split()
    fields = dict(zip(tokens[0::2], tokens[1::2], strict=False))  # an odd last token is dropped
    return PerftestAddress(side=match["side"], fields=fields)


def _with_gid(address: PerftestAddress, gid: str) -> PerftestAddress:
    return PerftestAddress(side=address.side, fields=address.fields, gid=gid)


def _start_table(state: _State, number: int, line: str) -> None:
    if state.columns is not None:
        raise ParseError(
            "a second perftest result table starts here; give one run per text",
            source=state.source,
            line=number,
        )
    columns = _table_columns(line)
    if columns[:1] != ["#bytes"] or len(columns) < 2:
        raise ParseError(
            f"unrecognised perftest table header: {line.strip()!r}", source=state.source, line=number
        )
    state.columns = columns
    state.in_header = False
    state.in_table = True


def _table_columns(line: str) -> list[str]:
    """'#bytes #iterations  BW peak[Gb/sec] ...' -> ['#bytes', '#iterations', 'BW peak[Gb/sec]', ...].

    A column is '#name', 'tps average', or words (single or multiple spaces apart) followed by a
    bracketed unit; other words are not columns.
    """
    columns: list[str] = []
    words_start: int | None = None  # where the current run of words began
    position = skip_until = 0
    for token in _HEADER_TOKEN.finditer(line):
        text = token[0]
        if token.start() < skip_until:
            continue
        if text.startswith("#") and len(text) > 1:
            _close_words(line, words_start, token.start(), columns)
            columns.append(text)
            words_start = None
        elif text.startswith("[") and text.endswith("]") and len(text) > 1:
            if words_start is not None:
                columns.append(line[words_start : token.end()].strip())
            words_start = None
        elif text.isspace():
            pass
        elif text in ("[", "]", "#"):
            _close_words(line, words_start, token.start(), columns)
            words_start = None
        elif words_start is None and line.startswith(_TPS, token.start()):
            columns.append(_TPS)  # a column name without a unit, where a run of words starts
            skip_until = token.start() + len(_TPS)
        elif words_start is None:
            words_start = token.start()
        position = token.end()
    _close_words(line, words_start, position, columns)
    return columns


def _close_words(line: str, start: int | None, end: int, columns: list[str]) -> None:
    """Words with no unit after them are no column, except perftest's 'tps average'."""
    if start is not None and _TPS in line[start:end]:
        columns.append(_TPS)


def _parse_row(state: _State, number: int, line: str) -> PerftestRow:
    columns = state.columns or []
    cells = line.split()
    if len(cells) != len(columns):
        raise ParseError(
            f"result row has {len(cells)} cells, the table header names {len(columns)}: {line.strip()!r}",
            source=state.source,
            line=number,
        )
    values = [
        read_number(cell, source=state.source, line=number, what=f"result cell {column!r}")
        for column, cell in zip(columns, cells, strict=True)
    ]
    return _row_from_cells(dict(zip(columns, values, strict=True)), state.source, number)


def _row_from_cells(cells: dict[str, float | int], source: str, number: int) -> PerftestRow:
    size = cells["#bytes"]
    iterations = cells.get("#iterations")
    whole_iterations = iterations if isinstance(iterations, int) else None
    bad_iterations = iterations is not None and (whole_iterations is None or whole_iterations < 0)
    if not isinstance(size, int) or size < 0 or bad_iterations:
        raise ParseError("#bytes and #iterations must be whole numbers", source=source, line=number)
    named: dict[str, float] = {}
    percentiles: dict[str, float] = {}
    for name, value in cells.items():
        key = _field_for_column(name)
        if key is not None:
            named[key] = float(value)
        elif (pct := re.match(r"([0-9.]{1,20})% percentile\[", name)) is not None:
            percentiles[pct[1]] = float(value)
    return PerftestRow(bytes=size, iterations=whole_iterations, percentiles=percentiles, **named)


_BW_COLUMNS = {"BW peak": "bw_peak", "BW average": "bw_avg", "MsgRate": "msg_rate"}
_LAT_COLUMNS = {"t_min", "t_max", "t_typical", "t_avg", "t_stdev"}


def _field_for_column(name: str) -> str | None:
    """Map a printed column name ('BW average[Gb/sec]', 't_avg[usec]') to a PerftestRow field."""
    base = name.split("[", 1)[0]
    if base in _BW_COLUMNS:
        return _BW_COLUMNS[base]
    return base if base in _LAT_COLUMNS else None


def _on_message(state: _State, number: int, line: str) -> None:
    """Anything else: the server banner, a warning, or noise such as shell prompts."""
    text = line.strip()
    if not text:
        return
    if _SERVER_BANNER.search(text):
        state.banner_role = "server"
    elif _WARNING.search(text) or _is_perftest_message(line):
        state.warnings.append(text)


def _on_failure(state: _State, number: int, text: str) -> None:
    state.errors.append(_parse_error(state.source, number, text))
    state.perftest_failures += _PERFTEST_FAILURE.match(text) is not None
    if (role := _COMPLETION_ERROR.search(text)) is not None:
        state.error_role = role["role"]


def _is_perftest_message(line: str) -> bool:
    """perftest indents its own notices by one space; prompts and pasted commands start in column 0."""
    return len(line) > 1 and line[0] == " " and line[1].isalpha()


def _parse_error(source: str, number: int, text: str) -> PerftestError:
    status = _FAILED_STATUS.search(text)
    if status is None:
        return PerftestError(line=number, message=text)
    # The first syndrome after the status; searched once, so repeated 'Failed status' stays linear.
    syndrome = _SYNDROME.search(text, status.end())
    if syndrome is None:
        return PerftestError(line=number, message=text)
    code = read_int(status["status"], source=source, line=number, what="completion status")
    return PerftestError(line=number, message=text, status=code, syndrome=syndrome["syndrome"])


def _freeze(state: _State) -> PerftestRun:
    settings = state.settings
    return PerftestRun(
        test=_test_name(state),
        role=_role(state),
        connection=settings.get("connection type"),
        qps=_int_setting(state, "number of qps"),
        link_layer=settings.get("link type"),
        mtu=_int_setting(state, "mtu"),
        gid_index=_int_setting(state, "gid index"),
        device=settings.get("device"),
        bw_unit=_column_unit(state.columns, ("BW average", "BW peak")),
        lat_unit=_column_unit(state.columns, ("t_avg", "t_typical", "t_min")),
        rows=tuple(state.rows),
        errors=tuple(state.errors),
        warnings=tuple(state.warnings),
        completed=state.table_closed and not state.errors,
        bidirectional=state.bidirectional,
        settings=dict(settings),
        addresses=tuple(state.addresses),
    )


def _test_name(state: _State) -> str | None:
    """raw_ethernet_* tests print the same 'Send BW Test' title; their connection type tells them apart."""
    if state.test is None:
        return None
    if state.settings.get("connection type") == "RawEth":
        return state.test.replace("ib_send", "raw_ethernet")
    return state.test


def _role(state: _State) -> str | None:
    """Server banner, then 'Completion with error at <role>', then the depth lines perftest prints.

    perftest prints 'TX depth' only on the client or in bidirectional runs, and 'RX depth' for send
    tests only on the server or in bidirectional runs; in a bidirectional run neither tells the side.
    """
    if state.banner_role is not None:
        return state.banner_role
    if state.error_role is not None:
        return state.error_role
    if state.bidirectional:
        return None
    has_tx = "tx depth" in state.settings
    has_rx = "rx depth" in state.settings
    if has_tx:
        return "client"
    if has_rx and state.test is not None and state.test.startswith("ib_send"):
        return "server"
    return None


def _int_setting(state: _State, key: str) -> int | None:
    """The leading number of a setting ('4096[B]' -> 4096); the settings block has no line numbers."""
    value = state.settings.get(key, "")
    end = 0
    while end < len(value) and value[end].isdigit():  # any digit, so '٤٠٩٦' is refused, not ignored
        end += 1
    if end == 0:
        return None
    return read_int(value[:end], source=state.source, what=f"setting {key!r}")


def _column_unit(columns: list[str] | None, names: tuple[str, ...]) -> str | None:
    for column in columns or []:
        base, _, rest = column.partition("[")
        if base in names and rest.endswith("]"):
            return rest[:-1]
    return None


def perftest_facts(run: PerftestRun) -> dict[str, object]:
    """The summary the corpus truth files record: test, role, link, MTU, unit, last row, counts."""
    return {
        "test": run.test,
        "role": run.role,
        "link_layer": run.link_layer,
        "mtu": run.mtu,
        "bw_unit": run.bw_unit,
        "last_row": _last_row_facts(run),
        "rows": len(run.rows),
        "errors": bool(run.errors),
    }


def _is_latency(run: PerftestRun) -> bool:
    return run.bw_unit is None and run.lat_unit is not None


def _last_row_facts(run: PerftestRun) -> dict[str, object] | None:
    if not run.rows:
        return None
    row = run.rows[-1]
    if _is_latency(run):
        return {"bytes": row.bytes, "t_min": row.t_min, "t_max": row.t_max,
                "t_typical": row.t_typical, "t_avg": row.t_avg}  # fmt: skip
    return {"bytes": row.bytes, "bw_peak": row.bw_peak, "bw_avg": row.bw_avg, "msg_rate": row.msg_rate}


def perftest_rows(run: PerftestRun) -> list[dict[str, object]]:
    """Every row as a plain dict for JSON output; latency rows carry 'p99'/'p99.9' when printed."""
    if not _is_latency(run):
        return [
            {"bytes": r.bytes, "bw_peak": r.bw_peak, "bw_avg": r.bw_avg, "msg_rate": r.msg_rate}
            for r in run.rows
        ]
    rows: list[dict[str, object]] = []
    for r in run.rows:
        row: dict[str, object] = {
            "bytes": r.bytes,
            "t_min": r.t_min,
            "t_typical": r.t_typical,
            "t_avg": r.t_avg,
            "t_max": r.t_max,
        }
        row.update({f"p{name}": value for name, value in r.percentiles.items()})
        rows.append(row)
    return rows
