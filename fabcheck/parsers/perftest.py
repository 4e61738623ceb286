"""Parse perftest output (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw and the *_lat tests).

Client or server side, pasted with shell prompts, warnings and failure lines. The result table is read
through its own header line, so extra columns (``BW min``, per-port, CPU_Util, QoS ``#sl``) and the
latency layouts are handled without guessing column positions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from fabcheck.errors import ParseError
from fabcheck.parsers._text import parse_number, strip_ansi

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
_SETTING = re.compile(r"([^\s:][^:\t]*?)\s*:\s*(\S+(?: \S+)*)")
_ADDRESS = re.compile(r"^\s*(?P<side>local|remote) address:\s*(?P<rest>.*)$")
_GID = re.compile(r"^\s*GID:\s*(?P<gid>\S+)\s*$")
_SERVER_BANNER = re.compile(r"Waiting for client to connect")
_TABLE_HEADER = re.compile(r"^\s*#bytes\b")
_COLUMN = re.compile(r"#\w+|tps average|[^\s\[\]#][^\[\]#]*?\[[^\]]*\]")
_ROW_START = re.compile(r"^\s*\d")

_COMPLETION_ERROR = re.compile(r"Completion with error at (?P<role>client|server)")
_FAILED_STATUS = re.compile(r"Failed status (?P<status>\d+):.*?syndr?ome? (?P<syndrome>0x[0-9a-fA-F]+)")
_FAILURE = re.compile(
    r"^(?:\w+:\s*)?(?:Completion with error|Failed\b|Couldn't|Could not|Unable to|Cannot|Can't|"
    r"Error\b|ERROR\b|No IB devices|Did not detect|IB device \S+ not found|scnt=\d+)"
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
        if len(parts) != 16 or not all(p.isdigit() for p in parts):
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
    warnings: list[str] = field(default_factory=list)
    in_header: bool = False
    in_table: bool = False
    table_closed: bool = False


def parse_perftest(text: str, source: str = "<text>") -> PerftestRun:
    """Parse one perftest run. Raises ParseError when the text holds no perftest output at all."""
    state = _State(source=source)
    for number, line in _lines(text):
        _consume(state, number, line)
    if state.test is None and state.columns is None and not state.errors:
        raise ParseError("no perftest header, result table or failure line found", source=source)
    return _freeze(state)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(strip_ansi(text).splitlines(), start=1):
        yield number, line.rstrip()


def _consume(state: _State, number: int, line: str) -> None:
    if _DASHED.match(line):
        _on_dashed(state)
    elif state.in_table and _ROW_START.match(line):
        state.rows.append(_parse_row(state, number, line))
    elif _TABLE_HEADER.match(line):
        _start_table(state, number, line)
    elif (title := _TITLE.match(line)) is not None:
        _on_title(state, number, title)
    elif (address := _ADDRESS.match(line)) is not None:
        state.addresses.append(_parse_address(address))
    elif (gid := _GID.match(line)) is not None and state.addresses:
        state.addresses[-1] = _with_gid(state.addresses[-1], gid["gid"])
    elif _FAILURE.match(line.strip()):
        _on_failure(state, number, line.strip())
    elif (state.in_header and ":" in line) or _looks_like_setting(line):
        state.settings.update(_parse_settings(line))
    else:
        _on_message(state, number, line)


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
    expanded = line.expandtabs(8)
    return len(expanded) > 18 and expanded[0] == " " and expanded[1] != " " and expanded[17] == ":"


def _parse_settings(line: str) -> dict[str, str]:
    """' Dual-port       : OFF          Device         : mlx4_0' -> {'dual-port': 'OFF', 'device': ...}."""
    return {m[1].strip().lower(): m[2] for m in _SETTING.finditer(line)}


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
    columns = [c.strip() for c in _COLUMN.findall(line)]
    if columns[:1] != ["#bytes"] or len(columns) < 2:
        raise ParseError(
            f"unrecognised perftest table header: {line.strip()!r}", source=state.source, line=number
        )
    state.columns = columns
    state.in_header = False
    state.in_table = True


def _parse_row(state: _State, number: int, line: str) -> PerftestRow:
    columns = state.columns or []
    cells = line.split()
    if len(cells) != len(columns):
        raise ParseError(
            f"result row has {len(cells)} cells, the table header names {len(columns)}: {line.strip()!r}",
            source=state.source,
            line=number,
        )
    try:
        values = [parse_number(cell) for cell in cells]
        for value in values:
            float(value)  # an integer too large for a float is damage too
    except (ValueError, OverflowError):
        raise ParseError(
            f"result row holds a cell that is not a number: {line.strip()!r}",
            source=state.source,
            line=number,
        ) from None
    return _row_from_cells(dict(zip(columns, values, strict=True)), state.source, number)


def _row_from_cells(cells: dict[str, float | int], source: str, number: int) -> PerftestRow:
    size = cells["#bytes"]
    iterations = cells.get("#iterations")
    if not isinstance(size, int) or (iterations is not None and not isinstance(iterations, int)):
        raise ParseError("#bytes and #iterations must be whole numbers", source=source, line=number)
    named: dict[str, float] = {}
    percentiles: dict[str, float] = {}
    for name, value in cells.items():
        key = _field_for_column(name)
        if key is not None:
            named[key] = float(value)
        elif (pct := re.match(r"([\d.]+)% percentile\[", name)) is not None:
            percentiles[pct[1]] = float(value)
    return PerftestRow(bytes=size, iterations=iterations, percentiles=percentiles, **named)


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
    state.errors.append(_parse_error(number, text))
    if (role := _COMPLETION_ERROR.search(text)) is not None:
        state.error_role = role["role"]


def _is_perftest_message(line: str) -> bool:
    """perftest indents its own notices by one space; prompts and pasted commands start in column 0."""
    return len(line) > 1 and line[0] == " " and line[1].isalpha()


def _parse_error(number: int, text: str) -> PerftestError:
    status = _FAILED_STATUS.search(text)
    if status is None:
        return PerftestError(line=number, message=text)
    return PerftestError(line=number, message=text, status=int(status["status"]), syndrome=status["syndrome"])


def _freeze(state: _State) -> PerftestRun:
    settings = state.settings
    return PerftestRun(
        test=_test_name(state),
        role=_role(state),
        connection=settings.get("connection type"),
        qps=_int_setting(settings, "number of qps"),
        link_layer=settings.get("link type"),
        mtu=_int_setting(settings, "mtu"),
        gid_index=_int_setting(settings, "gid index"),
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


def _int_setting(settings: Mapping[str, str], key: str) -> int | None:
    match = re.match(r"\d+", settings.get(key, ""))
    return int(match[0]) if match else None


def _column_unit(columns: list[str] | None, names: tuple[str, ...]) -> str | None:
    for column in columns or []:
        base, _, rest = column.partition("[")
        if base in names and rest.endswith("]"):
            return rest[:-1]
    return None


def perftest_facts(run: PerftestRun) -> dict:
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


def _last_row_facts(run: PerftestRun) -> dict | None:
    if not run.rows:
        return None
    row = run.rows[-1]
    if _is_latency(run):
        return {"bytes": row.bytes, "t_min": row.t_min, "t_max": row.t_max,
                "t_typical": row.t_typical, "t_avg": row.t_avg}  # fmt: skip
    return {"bytes": row.bytes, "bw_peak": row.bw_peak, "bw_avg": row.bw_avg, "msg_rate": row.msg_rate}


def perftest_rows(run: PerftestRun) -> list[dict]:
    """Every row as a plain dict for JSON output; latency rows carry 'p99'/'p99.9' when printed."""
    if not _is_latency(run):
        return [
            {"bytes": r.bytes, "bw_peak": r.bw_peak, "bw_avg": r.bw_avg, "msg_rate": r.msg_rate}
            for r in run.rows
        ]
    rows = []
    for r in run.rows:
        row = {
            "bytes": r.bytes,
            "t_min": r.t_min,
            "t_typical": r.t_typical,
            "t_avg": r.t_avg,
            "t_max": r.t_max,
        }
        row.update({f"p{name}": value for name, value in r.percentiles.items()})
        rows.append(row)
    return rows
