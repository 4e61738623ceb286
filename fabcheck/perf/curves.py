"""A run directory of nccl-tests outputs read into curves: one curve per output file, BusBW by size.

Op, rank count and node count come from the output itself (the test banner or table, the
`# Rank N ... on HOST` lines), never from the file name. A file that is not nccl-tests output is kept
as a skipped file with the reason; a truncated one is used for the sizes it has and flagged.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from fabcheck.errors import ParseError, UsageError
from fabcheck.parsers.nccl_tests import NcclTestsRun, parse_nccl_tests

# Bigger than any nccl-tests output (a full 8 B..16 GiB sweep with NCCL_DEBUG=INFO is a few MiB).
MAX_FILE_BYTES = 64 * 1024 * 1024
BINARY_SNIFF_BYTES = 4096
BENCH_SUMMARY = "fabcheck-bench.json"  # written by `fabcheck bench nccl` beside its raw outputs
PARTIAL_SUFFIX = ".partial"  # a file still being written (or cut by a kill) before its rename


@dataclass(frozen=True)
class Point:
    """One size of a sweep: BusBW out-of-place (the value reported) and in-place, and #wrong."""

    bytes: int
    busbw: float
    ip_busbw: float | None
    time_us: float
    wrong: int  # out-of-place and in-place together


@dataclass(frozen=True)
class SeriesKey:
    """What makes two sweeps comparable: the op, the node count and the rank count."""

    op: str
    nodes: int
    ranks: int

    @property
    def label(self) -> str:
        nodes = "1 node" if self.nodes == 1 else f"{self.nodes} nodes"
        return f"{nodes}, {self.ranks} ranks"

    @property
    def ranks_per_node(self) -> int:
        return self.ranks // self.nodes


@dataclass(frozen=True)
class Curve:
    """One nccl-tests output as a BusBW curve. `source`: its path inside the run directory;
    `truncated`: why sizes may be missing (empty: none)."""

    key: SeriesKey
    source: str
    points: tuple[Point, ...]
    hosts: tuple[str, ...]
    nccl_version: str | None
    out_of_bounds: int
    truncated: tuple[str, ...] = ()
    series: str = ""  # the curve's name in tables and legends; the key's label unless two share a key

    def __post_init__(self) -> None:
        if not self.series:
            object.__setattr__(self, "series", self.key.label)

    def busbw_at(self, size: int) -> float | None:
        return next((p.busbw for p in self.points if p.bytes == size), None)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(p.bytes for p in self.points)


@dataclass(frozen=True)
class SkippedFile:
    source: str
    reason: str


@dataclass(frozen=True)
class RunData:
    """A run directory read: its curves in file order and the files left out, with why."""

    directory: str
    curves: tuple[Curve, ...]
    skipped: tuple[SkippedFile, ...]
    # From a `fabcheck bench nccl` summary in the directory: output path -> its transport proof
    # (network, rdma, gdr, hcas, findings as JSON); empty for directories the bench did not write.
    transport: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def load_run_dir(directory: str | Path) -> RunData:
    """Read every file under `directory` (recursively, sorted by path). UsageError if it is no directory
    or holds no usable nccl-tests output at all."""
    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"{directory}: not a directory; expected a directory of nccl-tests outputs")
    curves: list[Curve] = []
    skipped: list[SkippedFile] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        outcome = _read_one(path, str(path.relative_to(root)))
        if isinstance(outcome, SkippedFile):
            skipped.append(outcome)
        else:
            curves.append(outcome)
    if not curves:
        why = "; ".join(f"{s.source}: {s.reason}" for s in skipped[:5]) or "it is empty"
        raise UsageError(f"{directory}: no nccl-tests output in it ({why})")
    transport, unreadable = bench_transport(root / BENCH_SUMMARY)
    if unreadable:
        skipped = [
            SkippedFile(BENCH_SUMMARY, unreadable) if s.source == BENCH_SUMMARY else s for s in skipped
        ]
    return RunData(str(directory), _told_apart(curves), tuple(skipped), transport)


def bench_transport(path: Path) -> tuple[dict[str, Mapping[str, Any]], str | None]:
    """The transport proof per raw output of a bench summary, or why the summary could not be read."""
    if not path.is_file():
        return {}, None
    try:
        points = json.loads(path.read_text(encoding="utf-8"))["points"]
        proof = {p["raw"]: p["transport"] for p in points.values() if "raw" in p and "transport" in p}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        return (
            {},
            f"a fabcheck bench summary that cannot be read ({type(err).__name__}: {err}): no transport proof",
        )
    return proof, None


def _told_apart(curves: list[Curve]) -> tuple[Curve, ...]:
    """Two outputs of one op, node and rank count (a mixed corpus, a rerun) keep both curves: their
    series names gain the file's path inside the run directory."""
    counts = Counter(c.key for c in curves)
    return tuple(replace(c, series=f"{c.key.label} [{c.source}]") if counts[c.key] > 1 else c for c in curves)


def _read_one(path: Path, name: str) -> Curve | SkippedFile:
    if path.name == BENCH_SUMMARY:
        return SkippedFile(name, "the summary of `fabcheck bench nccl` (hosts, versions, transport proof)")
    if path.name.endswith(PARTIAL_SUFFIX):
        return SkippedFile(name, "a partial file: the run stopped while writing it")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return SkippedFile(name, f"larger than {MAX_FILE_BYTES >> 20} MiB: not an nccl-tests output")
        data = path.read_bytes()
    except OSError as err:
        return SkippedFile(name, f"cannot read it: {err.strerror or err}")
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return SkippedFile(name, "binary data, not an nccl-tests output")
    try:
        run = parse_nccl_tests(data.decode("utf-8", errors="replace"), source=name)
    except ParseError as err:
        return SkippedFile(name, f"not nccl-tests output: {err.message}")
    return curve_from_run(run, name)


def curve_from_run(run: NcclTestsRun, source: str) -> Curve | SkippedFile:
    """The curve of one parsed output, or why it cannot be one (no op, no rank lines, no sizes)."""
    if run.op is None:
        return SkippedFile(source, "the output names no collective (no test banner or binary name)")
    if run.nranks is None or not run.hosts:
        return SkippedFile(source, "no '# Rank N ... on HOST' lines: rank and node count unknown")
    points = _points(run)
    if not points:
        return SkippedFile(source, "no result row with a size above 0 B")
    return Curve(
        key=SeriesKey(run.op, len(run.hosts), run.nranks),
        source=source,
        points=points,
        hosts=run.hosts,
        nccl_version=run.nccl_version,
        out_of_bounds=run.out_of_bounds or 0,
        truncated=_truncation(run, points),
    )


def _points(run: NcclTestsRun) -> tuple[Point, ...]:
    by_size: dict[int, Point] = {}
    asked_min = _param_int(run, "minBytes") if _doubling(run) else None
    for row in run.rows:
        # Size 0 rows (8 B split over more ranks than elements) carry no bandwidth and no log-x place.
        size = nominal_size(row.bytes, asked_min)
        if row.bytes <= 0 or size in by_size:
            continue
        wrong = (row.oop_wrong or 0) + (row.ip_wrong or 0)
        by_size[size] = Point(size, row.oop_busbw, row.ip_busbw, row.oop_time_us, wrong)
    return tuple(by_size[size] for size in sorted(by_size))


def nominal_size(measured: int, asked_min: int | None) -> int:
    """The sweep step a row belongs to. nccl-tests rounds each size down to whole elements per rank
    (4 MiB over 3 ranks is 4194288 B): on a doubling sweep from `asked_min` the row is filed under the
    nearest step, so runs of different rank counts line up size by size. Elsewhere it is the size."""
    if asked_min is None or asked_min <= 0 or measured <= 0:
        return measured
    steps = math.ceil(math.log2(measured / asked_min))  # the step at or above: rounding only goes down
    nominal = asked_min << steps if steps >= 0 else measured
    # nccl-tests only rounds down, by less than one element per rank: at small sizes over many ranks
    # that is a large share (1 KiB over 24 ranks of float is 960 B), never a quarter of the step.
    return nominal if 0 <= nominal - measured < nominal // 4 else measured


def _truncation(run: NcclTestsRun, points: tuple[Point, ...]) -> tuple[str, ...]:
    reasons = []
    if run.avg_busbw is None and run.out_of_bounds is None:
        reasons.append(
            f"no footer ('# Out of bounds', '# Avg bus bandwidth'): output stops at {points[-1].bytes} B"
        )
    asked_min, asked_max = _param_int(run, "minBytes"), _param_int(run, "maxBytes")
    # Few elements per rank round tiny sizes down to 0 B rows: those still show the sweep's start.
    first_row = run.rows[0].bytes
    if asked_min is not None and first_row > 2 * max(asked_min, 1) and _doubling(run):
        reasons.append(f"sizes start at {points[0].bytes} B; the run asked from {asked_min} B")
    if asked_max is not None and points[-1].bytes < asked_max and _doubling(run):
        reasons.append(f"sizes stop at {points[-1].bytes} B; the run asked up to {asked_max} B")
    gaps = [(a.bytes, b.bytes) for a, b in pairwise(points) if _doubling(run) and b.bytes > 2 * a.bytes]
    if gaps:
        first, last = gaps[0]
        reasons.append(
            f"sizes missing between {first} B and {last} B"
            + (f" (+{len(gaps) - 1} gap(s))" if len(gaps) > 1 else "")
        )
    return tuple(reasons)


def _param_int(run: NcclTestsRun, key: str) -> int | None:
    value = run.params.get(key, "")
    return int(value) if value.isascii() and value.isdigit() else None


def _doubling(run: NcclTestsRun) -> bool:
    """Sweeps with `-f 2` ('step: 2(factor)') must hold every power-of-two step between min and max."""
    return run.params.get("step", "").startswith("2(factor)")
