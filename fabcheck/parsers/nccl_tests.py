"""Parse nccl-tests output (all_reduce_perf, all_gather_perf, alltoall_perf, ... run alone or under mpirun).

The table is read through its printed column header, so old layouts (no ``root`` column, ``error``
instead of ``#wrong``) and new ones (``#bitdiff``, per-iteration columns, timestamps) map by name.
NCCL INFO lines, MPI banners, shell prompts and wrapper prefixes such as OpenMPI's ``[1,0]<stdout>:``
or SkyPilot's ``(head, rank=0, pid=1) `` may appear anywhere and are skipped or stripped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from fabcheck.desired.collectives import BUSBW_FACTORS
from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.numbers import read_float, read_int, read_number

# Numbers in tool output are ASCII: every pattern is compiled with re.ASCII so [0-9]/\d/\w/\s
# never match other scripts' digits or spaces.
_WRAPPERS = (
    re.compile(r"^\([^()]*\)\s?", re.ASCII),  # SkyPilot: "(head, rank=0, pid=3808) "
    re.compile(r"^\[[0-9]+,[0-9]+\]<std(?:out|err)>:", re.ASCII),  # mpirun --tag-output
    # kubectl logs --timestamps
    re.compile(r"^[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9:.]+(?:Z|[+-][0-9][0-9]:?[0-9][0-9])?\s", re.ASCII),
    re.compile(r"^[0-9]+: ", re.ASCII),  # srun --label
)
# Launchers nest a few prefixes at most (SkyPilot around OpenMPI); more is not a prefix but data.
_MAX_WRAPPER_DEPTH = 8
_COLUMN_HEADER = re.compile(r"#\s*size\s+count\s+type\b", re.ASCII)
_TYPE_CELL = re.compile(r"[A-Za-z_]\w*")
_RANK = re.compile(
    r"^#\s*Rank\s+(?P<rank>[0-9]+)\s+(?:Group\s+[0-9]+\s+)?Pid\s+[0-9]+\s+on\s+(?P<host>\S+)\s+"
    r"device\s+[0-9]+\s+\[[^\]]*\]\s*(?P<gpu>.*)$",
    re.ASCII,
)
_NCCL_VERSION = re.compile(r"NCCL version (?P<version>[0-9]+\.[0-9]+\.[0-9]+\S*)", re.ASCII)
_TESTS_VERSION = "# nccl-tests version "
_LIBRARY_MARK = "nccl-library="
_CODE = re.compile(r"[0-9]+", re.ASCII)
_TEST_STARTING = re.compile(r"# Collective test starting:\s*(?P<name>\S+)", re.ASCII)
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>[0-9]+)", re.ASCII)
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)", re.ASCII)
_PARAMS = re.compile(
    r"(?P<key>nThread|nGpus|minBytes|maxBytes|step:|warmup iters:|agg iters:|iters:|validation:|graph:|"
    r"unalign:)\s*(?P<value>\S+)",
    re.ASCII,
)
_OPS = (
    "all_reduce", "all_gather", "reduce_scatter", "alltoallv", "alltoall", "broadcast", "reduce",
    "sendrecv", "scatter", "gather", "hypercube",
)  # fmt: skip
_BINARY = re.compile(r"\b(?P<op>" + "|".join(_OPS) + r")_perf(?:_mpi)?\b", re.ASCII)
# nccl-tests' CUDACHECK/NCCLCHECK/TESTCHECK print these when the test aborts ('host: Test NCCL failure
# common.cu:959 'internal error'', ' .. host pid 1: Test failure common.cu:844'; before 2.0 'NCCL failure
# all_reduce.cu:95'): a run that printed one did not complete, whatever rows came before.
_FAILURE = re.compile(r"\b(?:Test (?:NCCL |CUDA )?failure|NCCL failure)\s+\S+:[0-9]+", re.ASCII)
# The op named in a file name ('all_reduce-2node.txt', 'allreduce_perf.log', 'all-gather.txt').
_NAME_OPS = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "alltoall": "alltoall", "broadcast": "broadcast", "sendrecv": "sendrecv", "hypercube": "hypercube",
}  # fmt: skip
_NAME_OP = re.compile(
    r"(?<![a-z])(all[_-]?reduce|all[_-]?gather|reduce[_-]?scatter|all[_-]?to[_-]?all|"
    r"broadcast|send[_-]?recv|hyper[_-]?cube)(?![a-z])",
    re.IGNORECASE,
)
_REDUCING_OPS = {"sum", "prod", "min", "max", "avg", "mulsum", "premulsum"}
_TIME_COLUMNS = {"time", "cputime"}
_WRONG_COLUMNS = {"#wrong", "error"}


@dataclass(frozen=True)
class NcclTestsRow:
    """One result line: size and element count, then out-of-place and in-place measurements."""

    bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    oop_time_us: float
    oop_algbw: float
    oop_busbw: float
    oop_wrong: int | None
    ip_time_us: float | None
    ip_algbw: float | None
    ip_busbw: float | None
    ip_wrong: int | None


@dataclass(frozen=True)
class NcclTestsRun:
    """One nccl-tests run: op, ranks, the rows and the footer."""

    op: str | None
    nranks: int | None
    hosts: tuple[str, ...]
    gpus: tuple[str, ...]
    rows: tuple[NcclTestsRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None
    wrong_total: int
    nccl_version: str | None
    params: Mapping[str, str] = field(default_factory=dict)
    failures: tuple[str, ...] = ()  # 'Test NCCL failure ...' lines: the run aborted
    op_basis: str | None = None  # how op was told: banner, command line, busbw/algbw, file name
    rank_hosts: tuple[str, ...] = ()  # rank r ran on rank_hosts[r]; empty unless every '# Rank' line printed

    @property
    def scope(self) -> str | None:
        """'intra-node' when every rank ran on one host (NVLink/PCIe, not the NICs), 'inter-node' for
        more hosts, None when the output has no '# Rank' lines to tell."""
        if not self.hosts:
            return None
        return "intra-node" if len(self.hosts) == 1 else "inter-node"


@dataclass(frozen=True)
class _Layout:
    """Column names from the table header: the leading cells, one side's cells, and the trailer."""

    leading: tuple[str, ...]
    side: tuple[str, ...]
    trailing_tokens: int


@dataclass
class _State:
    source: str
    layout: _Layout | None = None
    table_open: bool = False
    started_op: str | None = None
    binary_op: str | None = None
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)
    rows: list[NcclTestsRow] = field(default_factory=list)
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    nccl_version: str | None = None
    library_code: int | None = None
    params: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def parse_nccl_tests(text: str, source: str = "<text>") -> NcclTestsRun:
    """Parse one nccl-tests run. Raises ParseError when there is no result table or a row is damaged."""
    lines = split_checked_lines(text, source, "nccl-tests")
    prefix = _header_prefix(lines)
    state = _State(source=source)
    for number, raw in enumerate(lines, start=1):
        _consume(state, number, _unwrap(raw, prefix))
    if state.layout is None and not state.failures:
        raise ParseError("no nccl-tests result table (the '#  size  count  type ...' header)", source=source)
    return _freeze(state)


def _strip_wrappers(line: str) -> str:
    """Remove launcher prefixes, repeatedly, since they nest (SkyPilot around OpenMPI)."""
    changed, depth = True, 0
    while changed and depth < _MAX_WRAPPER_DEPTH:
        changed, depth = False, depth + 1
        for wrapper in _WRAPPERS:
            stripped = wrapper.sub("", line, count=1)
            if stripped != line:
                line, changed = stripped, True
    return line


def _header_prefix(lines: list[str]) -> str:
    """Any other constant prefix, learnt from the text in front of the column header line."""
    for line in lines:
        stripped = _strip_wrappers(line)
        match = _COLUMN_HEADER.search(stripped)
        if match is not None:
            return stripped[: match.start()]
    return ""


def _unwrap(raw: str, prefix: str) -> str:
    line = _strip_wrappers(raw.rstrip())
    if prefix and line.startswith(prefix):
        line = line[len(prefix) :]
    return line


def _consume(state: _State, number: int, line: str) -> None:
    if (failure := _FAILURE.search(line)) is not None:
        state.failures.append(line[max(0, failure.start() - 80) :].strip()[:300])
        state.table_open = False
        return
    if state.table_open and _looks_like_row(line):
        state.rows.append(_parse_row(state, number, line))
    elif _COLUMN_HEADER.match(line):
        _start_table(state, number, line)
    elif line.startswith("#"):
        _on_comment(state, number, line)
    elif state.nccl_version is None and (version := _NCCL_VERSION.search(line)) is not None:
        state.nccl_version = version["version"]
    if state.layout is None:
        # The last binary named before the table is the one that printed it.
        for binary in _BINARY.finditer(line):
            state.binary_op = binary["op"]


def _looks_like_row(line: str) -> bool:
    """'size count type ...'. Digits are any Python knows ('٦', '²'): such a row is then refused by the
    ASCII number reader, never skipped as noise (a skipped row could hide '#wrong' errors)."""
    cells = line.split(None, 3)
    return (
        len(cells) >= 3 and cells[0].isdigit() and cells[1].isdigit() and bool(_TYPE_CELL.fullmatch(cells[2]))
    )


def _on_comment(state: _State, number: int, line: str) -> None:
    if (started := _TEST_STARTING.search(line)) is not None and state.layout is None:
        state.started_op = _op_from_binary(started["name"])
    elif (rank := _RANK.match(line)) is not None:
        rank_number = read_int(rank["rank"], what="rank", source=state.source, line=number)
        state.ranks[rank_number] = (rank["host"], rank["gpu"].strip())
    elif (bounds := _OUT_OF_BOUNDS.match(line)) is not None:
        state.out_of_bounds = read_int(
            bounds["count"], what="out-of-bounds count", source=state.source, line=number
        )
        state.table_open = False
    elif (avg := _AVG_BUSBW.match(line)) is not None:
        state.avg_busbw = _float_or_none(avg["value"])
        state.table_open = False
    elif (code := _library_code(line)) is not None:
        state.library_code = read_int(
            code, what="nccl-library code", max_digits=9, source=state.source, line=number
        )
    elif line.startswith("# nThread"):
        state.params = {m["key"].rstrip(":"): m["value"] for m in _PARAMS.finditer(line)}


def _op_from_binary(name: str) -> str | None:
    match = _BINARY.search(name)
    return match["op"] if match else None


def _library_code(line: str) -> str | None:
    """'# nccl-tests version 2.13.8 nccl-headers=... nccl-library=21903' -> '21903' (None if absent)."""
    if not line.startswith(_TESTS_VERSION) or line[len(_TESTS_VERSION) : len(_TESTS_VERSION) + 1].isspace():
        return None
    mark = line.find(_LIBRARY_MARK, len(_TESTS_VERSION) + 1)
    code = _CODE.match(line, mark + len(_LIBRARY_MARK)) if mark >= 0 else None
    return code[0] if code else None


def _float_or_none(token: str) -> float | None:
    """The footer's average: informative only (no check uses it), so an unreadable one is None."""
    try:
        return read_float(token)
    except ParseError:
        return None


def _start_table(state: _State, number: int, line: str) -> None:
    if state.rows:
        raise ParseError(
            "a second nccl-tests result table starts here; give one run per text",
            source=state.source,
            line=number,
        )
    state.layout = _parse_layout(line, state.source, number)
    state.table_open = True


def _parse_layout(line: str, source: str, number: int) -> _Layout:
    names = line.lstrip("#").split()
    starts = [i for i, name in enumerate(names) if name in _TIME_COLUMNS]
    if len(starts) != 2:
        raise ParseError(
            f"unrecognised nccl-tests column header: {line.strip()!r}", source=source, line=number
        )
    leading = tuple(names[: starts[0]])
    side = tuple(names[starts[0] : starts[1]])
    second = tuple(names[starts[1] : starts[1] + len(side)])
    trailing = names[starts[1] + len(side) :]
    if second != side or side[1:3] != ("algbw", "busbw") or leading[:3] != ("size", "count", "type"):
        raise ParseError(
            f"unrecognised nccl-tests column header: {line.strip()!r}", source=source, line=number
        )
    # A timestamp column holds 'YYYY-mm-dd HH:MM:SS', two whitespace-separated tokens.
    trailing_tokens = 2 * trailing.count("timestamp") + sum(1 for t in trailing if t != "timestamp")
    return _Layout(leading=leading, side=side, trailing_tokens=trailing_tokens)


def _parse_row(state: _State, number: int, line: str) -> NcclTestsRow:
    layout = state.layout
    assert layout is not None  # rows are only read while a table is open
    tokens = line.split()
    measured = 2 * len(layout.side)
    leading_count = len(tokens) - measured - layout.trailing_tokens
    leading_names = list(layout.leading)
    if leading_count == len(leading_names) - 1 and "redop" in leading_names:
        leading_names.remove("redop")  # alltoall/hypercube in some versions print an empty redop cell
    if leading_count != len(leading_names):
        raise _damaged(state, number, line, f"expected {len(layout.leading) + measured} cells")
    leading = dict(zip(leading_names, tokens[:leading_count], strict=True))
    oop = tokens[leading_count : leading_count + len(layout.side)]
    ip = tokens[leading_count + len(layout.side) : leading_count + measured]
    where = (state.source, number)
    try:
        return _build_row(
            leading, _side_values(layout.side, oop, *where), _side_values(layout.side, ip, *where)
        )
    except ValueError as error:  # only the whole-number checks below raise it
        raise _damaged(state, number, line, str(error)) from None
    except ParseError as error:
        raise _damaged(state, number, line, error.message) from None


def _damaged(state: _State, number: int, line: str, why: str) -> ParseError:
    return ParseError(f"damaged nccl-tests row ({why}): {line.strip()!r}", source=state.source, line=number)


def _side_values(
    names: tuple[str, ...], cells: list[str], source: str, number: int
) -> dict[str, float | int | None]:
    """One side's cells by column name; 'N/A' becomes None, anything else must be a finite number."""
    values: dict[str, float | int | None] = {}
    for name, cell in zip(names, cells, strict=True):
        values[name] = None if cell == "N/A" else read_number(cell, source=source, line=number, what=name)
    return values


def _build_row(
    leading: dict[str, str], oop: dict[str, float | int | None], ip: dict[str, float | int | None]
) -> NcclTestsRow:
    size, count = read_int(leading["size"], what="size"), read_int(leading["count"], what="count")
    root = read_int(leading["root"], what="root", signed=True) if "root" in leading else None
    time_key = "cputime" if "cputime" in oop else "time"
    wrong_key = next((k for k in oop if k in _WRONG_COLUMNS), None)
    oop_time, oop_algbw, oop_busbw = oop[time_key], oop["algbw"], oop["busbw"]
    if oop_time is None or oop_algbw is None or oop_busbw is None:
        raise ValueError("out-of-place time/algbw/busbw must be numbers")
    return NcclTestsRow(
        bytes=size,
        count=count,
        type=leading["type"],
        redop=leading.get("redop"),
        root=root,
        oop_time_us=float(oop_time),
        oop_algbw=float(oop_algbw),
        oop_busbw=float(oop_busbw),
        oop_wrong=_wrong_count(oop.get(wrong_key) if wrong_key else None),
        ip_time_us=_optional_float(ip[time_key]),
        ip_algbw=_optional_float(ip["algbw"]),
        ip_busbw=_optional_float(ip["busbw"]),
        ip_wrong=_wrong_count(ip.get(wrong_key) if wrong_key else None),
    )


def _optional_float(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def _wrong_count(value: float | int | None) -> int | None:
    """Old versions print the error count as '0e+00'; it is still a whole number of elements."""
    if value is None:
        return None
    if not float(value).is_integer():
        raise ValueError(f"#wrong is not a whole number: {value}")
    return int(value)


def _freeze(state: _State) -> NcclTestsRun:
    ranks = [state.ranks[r] for r in sorted(state.ranks)]
    # A cut banner ('# Rank 71 ...' alone) still says there were at least 72 ranks; the host list is
    # only complete when every rank from 0 was printed.
    nranks = max(state.ranks) + 1 if state.ranks else None
    complete = sorted(state.ranks) == list(range(len(state.ranks)))
    rows = tuple(state.rows)
    op, basis = _choose_op(state, rows, nranks)
    return NcclTestsRun(
        op=op,
        op_basis=basis,
        failures=tuple(state.failures),
        nranks=nranks,
        hosts=tuple(dict.fromkeys(host for host, _ in ranks)) if complete else (),
        rank_hosts=tuple(host for host, _ in ranks) if complete else (),
        gpus=tuple(gpu for _, gpu in ranks),
        rows=rows,
        avg_busbw=state.avg_busbw,
        out_of_bounds=state.out_of_bounds,
        wrong_total=sum(w for r in rows for w in (r.oop_wrong, r.ip_wrong) if w is not None),
        nccl_version=state.nccl_version or _version_from_code(state.library_code),
        params=state.params,
    )


def _choose_op(
    state: _State, rows: tuple[NcclTestsRow, ...], nranks: int | None
) -> tuple[str | None, str | None]:
    """The test's own banner first; then a binary name on a command line if the table's busbw/algbw
    ratio agrees; then the ratio alone; then the file name, if the ratio allows it."""
    if state.started_op is not None:
        return state.started_op, "banner"
    if state.binary_op is not None and _ratio_allows(rows, state.binary_op, nranks):
        return state.binary_op, "command line"
    inferred = _infer_op(rows, nranks)
    if inferred is not None:
        return inferred, "busbw/algbw"
    named = _op_from_name(state.source)
    if named is not None and _ratio_allows(rows, named, nranks):
        return named, "file name"
    return None, None


def _op_from_name(source: str) -> str | None:
    match = _NAME_OP.search(source.rsplit("/", 1)[-1])
    return _NAME_OPS[re.sub(r"[_-]", "", match[1].lower())] if match else None


def _ratio_allows(rows: tuple[NcclTestsRow, ...], op: str, nranks: int | None) -> bool:
    """Whether the printed busbw/algbw ratio can belong to `op` (no rows with bandwidth: no objection)."""
    sample = max(rows, key=lambda r: r.oop_algbw, default=None)
    if sample is None or sample.oop_algbw <= 0:
        return True
    ratio = sample.oop_busbw / sample.oop_algbw
    tolerance = 0.01 + 0.01 / sample.oop_algbw  # two printed decimals on both values
    if nranks is not None and nranks >= 1:
        factor = OP_FACTORS.get(op)
        return factor is None or abs(ratio - factor(nranks)) <= tolerance
    if op == "all_reduce":
        return ratio >= 1 - tolerance  # 2(n-1)/n >= 1 for every n >= 2
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return ratio < 1  # (n-1)/n < 1
    if op in ("broadcast", "reduce", "sendrecv"):
        return abs(ratio - 1) <= tolerance
    return True


OP_FACTORS = BUSBW_FACTORS  # busbw / algbw per op (fabcheck.desired.collectives, nccl-tests GetBw)


def _version_from_code(code: int | None) -> str | None:
    """NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before."""
    if code is None:
        return None
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def _infer_op(rows: tuple[NcclTestsRow, ...], nranks: int | None) -> str | None:
    """Name the collective from the table alone, when no binary name was printed.

    Each test reports busbw = algbw x a factor of the rank count n: all_reduce 2(n-1)/n;
    all_gather, reduce_scatter, alltoall, gather and scatter (n-1)/n; broadcast, reduce, sendrecv 1.
    Rooted tests print root >= 0. alltoall and sendrecv do not validate in-place runs, so their in-place
    #wrong is 'N/A' while the out-of-place one is a number. Anything still ambiguous stays None.
    """
    sample = max(rows, key=lambda r: r.oop_algbw, default=None)
    if sample is None or sample.oop_algbw <= 0 or (nranks is not None and nranks < 2):
        return None
    if nranks is None:
        return _infer_op_from_ratio(sample, rows)
    reducing = sample.redop in _REDUCING_OPS
    rooted = sample.root is not None and sample.root >= 0
    factors = _matching_factors(sample, nranks)
    if rooted:
        return ("reduce" if reducing else "broadcast") if "one" in factors else None
    inplace_checked = any(r.ip_wrong is not None for r in rows)
    inplace_unchecked = any(r.oop_wrong is not None and r.ip_wrong is None for r in rows)
    if not inplace_checked and not inplace_unchecked:
        # Validation off (-c 0): every #wrong is N/A, so only the factor and redop tell.
        if reducing and factors == {"all_reduce"}:
            return "all_reduce"
        return None
    candidates = set()
    if inplace_checked and reducing and "all_reduce" in factors:
        candidates.add("all_reduce")
    if inplace_checked and reducing and "n-1/n" in factors:
        candidates.add("reduce_scatter")
    if inplace_checked and not reducing and "n-1/n" in factors:
        candidates.add("all_gather")
    if inplace_unchecked and not reducing and "n-1/n" in factors:
        candidates.add("alltoall")
    if inplace_unchecked and "one" in factors:
        candidates.add("sendrecv")
    return candidates.pop() if len(candidates) == 1 else None


def _infer_op_from_ratio(sample: NcclTestsRow, rows: tuple[NcclTestsRow, ...]) -> str | None:
    """Without '# Rank' lines the rank count is unknown, but the ratio still tells: only all_reduce has a
    factor above 1 (2(n-1)/n for n > 2); below 1 is the (n-1)/n family, split by redop and by which side
    is validated, as in _infer_op. Exactly 1 (all_reduce on 2 ranks, broadcast, reduce, sendrecv) stays
    open unless the root column names a rooted test."""
    ratio = sample.oop_busbw / sample.oop_algbw
    tolerance = 0.01 + 0.01 / sample.oop_algbw
    reducing = sample.redop in _REDUCING_OPS
    if ratio > 1 + tolerance:
        return "all_reduce" if reducing or sample.redop is None else None
    if abs(ratio - 1) <= tolerance:
        if sample.root is not None and sample.root >= 0:
            return "reduce" if reducing else "broadcast"
        return None
    inplace_unchecked = any(r.oop_wrong is not None and r.ip_wrong is None for r in rows)
    if reducing:
        return "reduce_scatter"
    if inplace_unchecked:
        return "alltoall"
    return "all_gather" if any(r.ip_wrong is not None for r in rows) else None


def _matching_factors(row: NcclTestsRow, nranks: int) -> set[str]:
    """Which busbw/algbw factors agree with the printed (2-decimal, rounded) values."""
    factors = {"all_reduce": 2 * (nranks - 1) / nranks, "n-1/n": (nranks - 1) / nranks, "one": 1.0}
    return {
        name
        for name, factor in factors.items()
        if abs(row.oop_busbw - row.oop_algbw * factor) <= 0.005 * (1 + factor) + 1e-9
    }


def nccl_tests_facts(run: NcclTestsRun) -> dict[str, object]:
    """The summary the corpus truth files record: op, row count, last row, average bus bandwidth."""
    last = run.rows[-1] if run.rows else None
    last_row = None
    if last is not None:
        last_row = {
            "bytes": last.bytes,
            "oop_time_us": last.oop_time_us,
            "oop_algbw": last.oop_algbw,
            "oop_busbw": last.oop_busbw,
            "ip_time_us": last.ip_time_us,
            "ip_algbw": last.ip_algbw,
            "ip_busbw": last.ip_busbw,
        }
    return {
        "op": run.op,
        "op_basis": run.op_basis,
        "rows": len(run.rows),
        "last_row": last_row,
        "avg_busbw": run.avg_busbw,
        "scope": run.scope,
        "hosts": len(run.hosts) or None,
        "failures": list(run.failures),
    }


def nccl_tests_rows(run: NcclTestsRun) -> list[dict[str, object]]:
    """Every row as a plain dict for JSON output."""
    return [
        {
            "bytes": r.bytes,
            "oop_time_us": r.oop_time_us,
            "oop_algbw": r.oop_algbw,
            "oop_busbw": r.oop_busbw,
            "oop_wrong": r.oop_wrong,
            "ip_time_us": r.ip_time_us,
            "ip_algbw": r.ip_algbw,
            "ip_busbw": r.ip_busbw,
            "ip_wrong": r.ip_wrong,
        }
        for r in run.rows
    ]
