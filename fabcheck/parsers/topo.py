"""Parser for ``nvidia-smi topo -m`` (alias ``topo --matrix``): how GPUs and NICs are connected.

Every layout generation seen in the wild is read: tab- or space-separated cells, NIC columns named
``NICn`` (with or without the "NIC Legend:" block) or named ``mlx5_*`` directly (older drivers),
legacy ``SOC`` (today's ``SYS``), ANSI underline around the header, preamble lines before the header,
optional CPU Affinity / NUMA Affinity / GPU NUMA ID columns and NIC rows without affinity cells.
A damaged matrix raises ParseError naming the bad row's line: a wrong topology would give a wrong
GPU-to-NIC verdict, so nothing is guessed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.intent.model import GPU_NIC_LINK_CLASSES
from fabcheck.parsers._text import check_line_lengths, strip_ansi

LINK_CLASSES: tuple[str, ...] = ("X", "NV", *GPU_NIC_LINK_CLASSES)
"""Link classes from best (self) to worst (across the SMP interconnect): self, NVLink, then the
GPU-to-NIC classes of the intent."""

CPU_AFFINITY = "CPU Affinity"
NUMA_AFFINITY = "NUMA Affinity"
GPU_NUMA_ID = "GPU NUMA ID"

_LEGACY_SYS = "SOC"  # drivers before ~384 printed SOC for what is now SYS
_CLASS_OF_PLAIN_TOKEN: dict[str, str] = {
    "X": "X",
    **{name: name for name in GPU_NIC_LINK_CLASSES},
    _LEGACY_SYS: "SYS",
}
_NVLINK_TOKEN = re.compile(r"NV[0-9]+")
_FUSED_TOKENS = re.compile(r"(?:X|NV[0-9]+|" + "|".join(GPU_NIC_LINK_CLASSES) + "|" + _LEGACY_SYS + "){2,}")
_GPU_LABEL = re.compile(r"GPU[0-9]+")
# NICn in current drivers; older drivers print the RDMA device name (mlx5_0, mlx5_bond_0, rocep65s0f0).
_NIC_LABEL = re.compile(r"NIC[0-9]+|[a-z][a-z0-9_-]*[0-9]")
_AFFINITY_HEADER = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID")
# CPU list or NUMA node list ("0-63,128-191", "0"), or N/A; GPU NUMA ID is a single node number.
# Colour codes whose ESC byte a paste dropped: '[4m' ... '[0m' literally around header labels.
_LOST_ESC_SGR = re.compile(r"\[(?:[0-9]{1,3}(?:;[0-9]{1,3})*)?m", re.ASCII)
_AFFINITY_VALUE = re.compile(r"N/A|[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*")
_NIC_LEGEND_TITLE = re.compile(r"NIC\s+Legend\s*:")
_NIC_LEGEND_ENTRY = re.compile(r"(NIC[0-9]+)\s*:\s*(\S+)")


def link_class(link: str) -> str:
    """The class in LINK_CLASSES of a printed token (``NV12`` -> ``NV``, ``SOC`` -> ``SYS``)."""
    if link in _CLASS_OF_PLAIN_TOKEN:
        return _CLASS_OF_PLAIN_TOKEN[link]
    if link == "NV" or _NVLINK_TOKEN.fullmatch(link):
        return "NV"
    raise ValueError(f"unknown nvidia-smi topo link token {link!r}")


def link_rank(link: str) -> int:
    """Comparable rank of a token or class: lower is closer. Raises ValueError on unknown tokens."""
    return LINK_CLASSES.index(link_class(link))


def _is_cell_token(token: str) -> bool:
    return token in _CLASS_OF_PLAIN_TOKEN or _NVLINK_TOKEN.fullmatch(token) is not None


@dataclass(frozen=True)
class TopoMatrix:
    """One parsed matrix. Labels are as printed; ``nics`` are the NIC names in column order.

    ``nic_labels`` are the NIC column labels as printed (``NIC0`` or ``mlx5_0``); when omitted they
    equal ``nics``. ``links`` is keyed by (row label, column label).
    """

    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    links: Mapping[tuple[str, str], str]
    cpu_affinity: Mapping[str, str | None]
    numa_affinity: Mapping[str, str | None]
    gpu_numa_id: Mapping[str, str | None]
    nic_labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.nic_labels:
            object.__setattr__(self, "nic_labels", self.nics)
        if len(self.nic_labels) != len(self.nics):
            raise ValueError("nic_labels and nics must have the same length")

    def label_of(self, device: str) -> str:
        """The printed label of a GPU label, NIC label or NIC name. Raises KeyError when unknown."""
        if device in self.gpus or device in self.nic_labels:
            return device
        if device in self.nics:
            return self.nic_labels[self.nics.index(device)]
        raise KeyError(f"no device {device!r} in the topology matrix")

    def link(self, a: str, b: str) -> str:
        """The token printed for the path between two devices (labels or NIC names)."""
        return self.links[(self.label_of(a), self.label_of(b))]

    def nearest_nics(self, gpu: str) -> tuple[tuple[str, ...], str | None]:
        """All NICs at this GPU's best link class, in column order, and that class as printed."""
        if gpu not in self.gpus:
            raise KeyError(f"no GPU {gpu!r} in the topology matrix")
        tokens = [self.links[(gpu, label)] for label in self.nic_labels]
        if not tokens:
            return (), None
        best = min(link_rank(token) for token in tokens)
        nearest = [(name, tok) for name, tok in zip(self.nics, tokens, strict=True) if link_rank(tok) == best]
        printed = nearest[0][1]
        return tuple(name for name, _ in nearest), ("SYS" if printed == "SOC" else printed)


def topo_facts(matrix: TopoMatrix) -> dict[str, object]:
    """The facts a human reads from the matrix: each GPU's nearest NICs and link class, all NICs."""
    gpus = []
    for gpu in matrix.gpus:
        nics, link = matrix.nearest_nics(gpu)
        gpus.append({"name": gpu, "nearest_nics": list(nics), "link": link})
    return {"gpus": gpus, "nics": list(matrix.nics)}


@dataclass(frozen=True)
class _Header:
    index: int  # 0-based line index
    gpus: tuple[str, ...]
    nic_labels: tuple[str, ...]
    affinity_columns: tuple[str, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return self.gpus + self.nic_labels


@dataclass(frozen=True)
class _Row:
    label: str
    links: tuple[str, ...]
    affinity: tuple[str, ...]


def parse_topo(text: str, source: str = "<text>") -> TopoMatrix:
    """Parse the output of ``nvidia-smi topo -m``. Raises ParseError on a damaged or missing matrix."""
    lines = [_LOST_ESC_SGR.sub("", strip_ansi(line)).rstrip("\r") for line in text.split("\n")]
    check_line_lengths(lines, source, "nvidia-smi topo")
    header = _find_header(lines, source)
    rows, end = _read_rows(lines, header, source)
    legend = _read_nic_legend(lines, end, source)
    names = _nic_names(header, legend, source)
    return _build_matrix(header, rows, names)


def _find_header(lines: list[str], source: str) -> _Header:
    for index, line in enumerate(lines):
        header = _header_at(line, index, source)
        if header is not None:
            return header
    for number, line in enumerate(lines, start=1):
        if _looks_like_row(line):
            raise ParseError("matrix row without the header line above it", source=source, line=number)
    raise ParseError("no nvidia-smi topo matrix found (no header line starting with GPU0)", source=source)


def _header_at(line: str, index: int, source: str) -> _Header | None:
    """The header parsed from this line, or None when the line is not a matrix header."""
    first_affinity = _AFFINITY_HEADER.search(line)
    split_at = first_affinity.start() if first_affinity else len(line)
    labels = line[:split_at].split()
    if not labels or not _GPU_LABEL.fullmatch(labels[0]):
        return None
    if not all(_GPU_LABEL.fullmatch(label) or _NIC_LABEL.fullmatch(label) for label in labels):
        return None
    columns = _affinity_columns(line[split_at:])
    if columns is None:
        return None
    return _validated_header(labels, columns, index, source)


def _affinity_columns(tail: str) -> tuple[str, ...] | None:
    """Canonical affinity column names in order, or None when the tail holds anything else."""
    columns: list[str] = []
    position = 0
    for match in _AFFINITY_HEADER.finditer(tail):
        if tail[position : match.start()].strip():
            return None
        columns.append(" ".join(match.group().split()))
        position = match.end()
    if tail[position:].strip():
        return None
    return tuple(columns)


def _repeated(items: list[str] | tuple[str, ...]) -> list[str]:
    """The items that occur more than once, sorted (one pass: headers can be long)."""
    return sorted(item for item, count in Counter(items).items() if count > 1)


def _validated_header(labels: list[str], columns: tuple[str, ...], index: int, source: str) -> _Header:
    def fail(message: str) -> ParseError:
        return ParseError(message, source=source, line=index + 1)

    gpus = [label for label in labels if _GPU_LABEL.fullmatch(label)]
    if labels[: len(gpus)] != gpus:
        raise fail("header has a GPU column after a NIC column")
    duplicates = _repeated(labels)
    if duplicates:
        raise fail(f"header repeats column {duplicates[0]}")
    repeated = _repeated(columns)
    if repeated:
        raise fail(f"header repeats column {repeated[0]!r}")
    return _Header(index, tuple(gpus), tuple(labels[len(gpus) :]), columns)


def _looks_like_row(line: str) -> bool:
    tokens = line.split()
    return len(tokens) >= 2 and _GPU_LABEL.fullmatch(tokens[0]) is not None and _is_cell_token(tokens[1])


@dataclass(frozen=True)
class _Where:
    """Where a row came from, for error messages."""

    source: str
    line: int

    def error(self, message: str) -> ParseError:
        return ParseError(message, source=self.source, line=self.line)


def _read_rows(lines: list[str], header: _Header, source: str) -> tuple[list[_Row], int]:
    """One row per header label, in header order; returns the rows and the index after the last."""
    rows: list[_Row] = []
    index = header.index + 1
    for label in header.labels:
        index = _skip_blank(lines, index)
        if index >= len(lines):
            raise ParseError(f"text ends before the {label} row", source=source, line=len(lines))
        row = _parse_row(lines[index], label, header, _Where(source, index + 1))
        _check_against_earlier_rows(row, rows, header, _Where(source, index + 1))
        rows.append(row)
        index += 1
    _reject_extra_row(lines, index, header, source)
    return rows, index


def _skip_blank(lines: list[str], index: int) -> int:
    while index < len(lines) and not lines[index].strip():
        index += 1
    return index


def _row_cells(line: str) -> list[str]:
    """Cells of a row: tab-separated when the row has tabs (cells may then be empty), else words."""
    if "\t" in line:
        return [cell.strip() for cell in line.strip().split("\t")]
    return line.split()


def _parse_row(line: str, label: str, header: _Header, where: _Where) -> _Row:
    cells = _row_cells(line)
    if cells[0] != label:
        raise where.error(f"expected the {label} row, found {cells[0]!r}")
    columns = header.labels
    link_cells = cells[1 : 1 + len(columns)]
    for column, cell in zip(columns, link_cells, strict=False):
        _check_link_cell(cell, label, column, where)
    if len(link_cells) < len(columns):
        raise where.error(
            f"{label} row has {len(link_cells)} link cells, the header has {len(columns)} columns"
        )
    tail = cells[1 + len(columns) :]
    extra = [word for cell in tail for word in cell.split()]
    extra = _with_empty_affinity(extra, tail, "\t" in line, label, header)
    _check_affinity_cells(extra, label, header, where)
    _check_self_cells(label, link_cells, columns, where)
    return _Row(label, tuple(link_cells), tuple(extra))


def _check_link_cell(cell: str, label: str, column: str, where: _Where) -> None:
    if _is_cell_token(cell):
        return
    at = f"{label} row, {column} column"
    if not cell:
        raise where.error(f"{at}: empty cell")
    if len(cell.split()) > 1 or _FUSED_TOKENS.fullmatch(cell):
        raise where.error(f"{at}: cells run together in {cell!r} (a separator is missing)")
    raise where.error(f"{at}: unknown link token {cell!r}")


def _with_empty_affinity(
    words: list[str], tail: list[str], tabbed: bool, label: str, header: _Header
) -> list[str]:
    """A GPU row whose affinity cells are partly empty (a cgroup-limited job: nvidia-smi leaves CPU or
    NUMA affinity blank) gets "" in their place, so the rest still lands in its own column.

    Tabbed rows keep their empty cells: nvidia-smi prints one structural empty cell before GPU NUMA ID
    (".. 0-61\t0\t\tN/A"), which is dropped; any other empty cell is a blank value. A row whose tabs a
    paste turned into spaces cannot show which cell is blank, so it stays refused as damaged."""
    expected = len(header.affinity_columns)
    if label in header.nic_labels or not words or len(words) >= expected:
        return words
    if tabbed:
        cells = list(tail)
        if GPU_NUMA_ID in header.affinity_columns and len(cells) == expected + 1:
            structural = header.affinity_columns.index(GPU_NUMA_ID)
            if not cells[structural]:
                del cells[structural]
        if len(cells) == expected and all(len(cell.split()) <= 1 for cell in cells):
            return [cell.strip() for cell in cells]
    return words


def _check_affinity_cells(extra: list[str], label: str, header: _Header, where: _Where) -> None:
    expected = len(header.affinity_columns)
    if extra and _is_cell_token(extra[0]):
        raise where.error(f"{label} row has more link cells than the header's {len(header.labels)} columns")
    nic_row_without_affinity = label in header.nic_labels and not extra
    if len(extra) != expected and not nic_row_without_affinity:
        named = ", ".join(header.affinity_columns) or "none"
        raise where.error(f"{label} row has {len(extra)} affinity cells, header has {expected} ({named})")
    for column, value in zip(header.affinity_columns, extra, strict=False):
        if value and not _AFFINITY_VALUE.fullmatch(value):
            raise where.error(f"{label} row, {column} column: {value!r} is not a CPU/NUMA list or N/A")


def _check_self_cells(label: str, link_cells: list[str], columns: tuple[str, ...], where: _Where) -> None:
    for column, cell in zip(columns, link_cells, strict=True):
        if column == label and cell != "X":
            raise where.error(f"{label} row, {column} column: self cell should be 'X', found {cell!r}")
        if column != label and cell == "X":
            raise where.error(
                f"{label} row, {column} column: self cell 'X' off the diagonal (shifted cells?)"
            )


def _check_against_earlier_rows(row: _Row, earlier: list[_Row], header: _Header, where: _Where) -> None:
    """The matrix is symmetric; a mismatch means cells shifted or were mistyped."""
    positions = {label: index for index, label in enumerate(header.labels)}  # labels are unique here
    position = positions[row.label]
    for other in earlier:
        other_position = positions[other.label]
        if row.links[other_position] != other.links[position]:
            raise where.error(
                f"{row.label} row gives {row.links[other_position]} to {other.label} but the "
                f"{other.label} row gives {other.links[position]} to {row.label}"
            )


def _reject_extra_row(lines: list[str], index: int, header: _Header, source: str) -> None:
    """A row after the last expected one means the header lost columns: refuse to guess."""
    index = _skip_blank(lines, index)
    if index >= len(lines):
        return
    cells = _row_cells(lines[index])
    is_label = _GPU_LABEL.fullmatch(cells[0]) or _NIC_LABEL.fullmatch(cells[0])
    if is_label and len(cells) >= 2 and _is_cell_token(cells[1]):
        raise ParseError(f"row {cells[0]} has no column in the header", source=source, line=index + 1)


@dataclass(frozen=True)
class _NicLegend:
    title_line: int  # 1-based line of "NIC Legend:"
    names: dict[str, str]  # NICn -> device name


def _read_nic_legend(lines: list[str], start: int, source: str) -> _NicLegend | None:
    """The "NIC Legend:" block after the matrix; None when there is none."""
    for index in range(start, len(lines)):
        if _header_at(lines[index], index, source) is not None:
            return None  # a second matrix begins; its legend is not ours
        if _NIC_LEGEND_TITLE.fullmatch(lines[index].strip()):
            return _NicLegend(index + 1, _legend_entries(lines, index + 1, source))
    return None


def _legend_entries(lines: list[str], start: int, source: str) -> dict[str, str]:
    entries: dict[str, str] = {}
    index = _skip_blank(lines, start)
    while index < len(lines):
        match = _NIC_LEGEND_ENTRY.fullmatch(lines[index].strip())
        if match is None:
            break
        label, name = match.groups()
        if label in entries:
            raise ParseError(f"NIC Legend names {label} twice", source=source, line=index + 1)
        entries[label] = name
        index += 1
    return entries


def _nic_names(header: _Header, legend: _NicLegend | None, source: str) -> tuple[str, ...]:
    """Legend names for NICn columns, the printed label otherwise (no legend, or mlx5_* columns)."""
    if legend is None:
        return header.nic_labels

    def fail(message: str) -> ParseError:
        return ParseError(message, source=source, line=legend.title_line)

    stray = [label for label in legend.names if label not in header.nic_labels]
    if stray:
        raise fail(f"NIC Legend names {stray[0]}, which is not a matrix column")
    missing = [label for label in header.nic_labels if _is_numbered_nic(label) and label not in legend.names]
    if missing:
        raise fail(f"NIC Legend does not name {missing[0]} (legend cut short?)")
    names = tuple(legend.names.get(label, label) for label in header.nic_labels)
    repeated = _repeated(names)
    if repeated:
        raise fail(f"NIC name {repeated[0]} is given to two columns")
    return names


def _is_numbered_nic(label: str) -> bool:
    return re.fullmatch(r"NIC[0-9]+", label) is not None


def _build_matrix(header: _Header, rows: list[_Row], names: tuple[str, ...]) -> TopoMatrix:
    links = {
        (row.label, column): cell
        for row in rows
        for column, cell in zip(header.labels, row.links, strict=True)
    }
    affinity = {
        row.label: dict(zip(header.affinity_columns, row.affinity, strict=True))
        for row in rows[: len(header.gpus)]
    }

    def column(name: str) -> Mapping[str, str | None]:
        values = {gpu: affinity[gpu].get(name) for gpu in header.gpus}
        return MappingProxyType(
            {gpu: None if value in (None, "", "N/A") else value for gpu, value in values.items()}
        )

    return TopoMatrix(
        gpus=header.gpus,
        nics=names,
        links=MappingProxyType(links),
        cpu_affinity=column(CPU_AFFINITY),
        numa_affinity=column(NUMA_AFFINITY),
        gpu_numa_id=column(GPU_NUMA_ID),
        nic_labels=header.nic_labels,
    )
