"""Parsers for NVIDIA IMEX: the node list ``/etc/nvidia-imex/nodes_config.cfg`` and ``nvidia-imex-ctl``.

``nodes_config.cfg`` holds one member address (IP or host name) per line; the daemon reads it only at
start-up (docs.nvidia.com/multi-node-nvlink-systems/imex-guide/config.html). ``#`` comment lines and
blank lines are skipped.

``nvidia-imex-ctl -N`` prints the connectivity legend, a timestamp, then (real samples:
tests/data/real/nvlink/INDEX.tsv)::

    Nodes:
    Node #0   - 10.136.206.47   - READY
    Node #1   - 10.136.206.48   - READY                - Version: 570.172     (newer daemons)

     Nodes From\\To  0  1
           0        C  C
           1        C  C
    Domain State: UP

A node row's fields are separated by `` - `` (a host name may hold ``-``, never a space). A matrix cell is
one legend token: C connected, N never connected, D disconnected, R recovering, A authenticating,
I invalid, ``!V!`` version mismatch, ``!M!`` node map mismatch. ``nvidia-imex-ctl -q`` prints one word,
``READY`` when the local daemon is ready (the DRA driver's probe treats exactly that as healthy).
"""

from __future__ import annotations

import re
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.nvlink_records import ImexNode, ImexStatus

NODES_HEADER = "Nodes:"
MATRIX_HEADER = "Nodes From\\To"
DOMAIN_STATE = "Domain State:"
READY = "READY"
_NODE = re.compile(r"Node #(?P<index>[0-9]{1,4})\s+-\s+(?P<rest>\S.*)")
_FIELD_SEPARATOR = re.compile(r"\s+-\s+")
_INDEX = re.compile(r"[0-9]{1,4}")
_CELL = re.compile(r"[A-Z]|![A-Z]!")
_WORD = re.compile(r"[A-Za-z_]{1,40}")


def parse_imex_nodes_config(text: str, source: str = "<text>") -> tuple[str, ...]:
    """The addresses of nodes_config.cfg in file order. A line holding white space inside an address
    raises ParseError (the daemon takes one address per line)."""
    addresses: list[str] = []
    for number, raw in enumerate(split_checked_lines(text, source, "nodes_config.cfg"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if len(line.split()) != 1 or "\x00" in line:
            raise ParseError(f"not one address per line: {line!r}", source=source, line=number)
        addresses.append(line)
    return tuple(addresses)


def parse_imex_status(text: str, source: str = "<text>") -> ImexStatus:
    """The node table, the connection matrix and the domain state of ``nvidia-imex-ctl -N``.

    An output without the ``Nodes:`` line, a node row or matrix row that does not have its shape, a
    matrix row whose cell count differs from its header's, or a node listed twice raises ParseError.
    Lines before ``Nodes:`` (legend, timestamp) and after ``Domain State:`` are not read."""
    lines = split_checked_lines(text, source, "nvidia-imex-ctl -N")
    start = next((at for at, line in enumerate(lines) if line.strip() == NODES_HEADER), None)
    if start is None:
        raise ParseError(f"no `{NODES_HEADER}` line: not nvidia-imex-ctl -N output", source=source)
    nodes: list[ImexNode] = []
    columns: tuple[int, ...] | None = None
    connections: dict[tuple[int, int], str] = {}
    domain_state: str | None = None
    for number, raw in enumerate(lines[start + 1 :], start=start + 2):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(DOMAIN_STATE):
            domain_state = line[len(DOMAIN_STATE) :].strip() or None
            break
        if line.startswith("Node #"):
            if columns is not None:
                raise ParseError(
                    f"node row after the connection matrix: {line!r}", source=source, line=number
                )
            nodes.append(_node(line, nodes, source, number))
        elif line.startswith(MATRIX_HEADER):
            columns = _header(line[len(MATRIX_HEADER) :].split(), source, number)
        elif columns is not None:
            _matrix_row(line, columns, connections, source, number)
        else:
            raise ParseError(
                f"not a `Node #<i> - <address> - <state>` row: {line!r}", source=source, line=number
            )
    return ImexStatus(tuple(nodes), MappingProxyType(connections), domain_state)


def parse_imex_query(text: str, source: str = "<text>") -> str:
    """The one word ``nvidia-imex-ctl -q`` prints (``READY`` when the local daemon is ready)."""
    words = [line.strip() for line in split_checked_lines(text, source, "nvidia-imex-ctl -q") if line.strip()]
    if len(words) != 1 or not _WORD.fullmatch(words[0]):
        raise ParseError(f"nvidia-imex-ctl -q printed {words[:3]!r}, not one state word", source=source)
    return words[0]


def _node(line: str, nodes: list[ImexNode], source: str, number: int) -> ImexNode:
    found = _NODE.fullmatch(line)
    fields = _FIELD_SEPARATOR.split(found["rest"]) if found else []
    if found is None or len(fields) < 2 or " " in fields[0] or not fields[1]:
        raise ParseError(f"not a `Node #<i> - <address> - <state>` row: {line!r}", source=source, line=number)
    index = int(found["index"])
    if index in {node.index for node in nodes}:
        raise ParseError(f"Node #{index} is listed twice", source=source, line=number)
    return ImexNode(index, fields[0], fields[1])


def _header(cells: list[str], source: str, number: int) -> tuple[int, ...]:
    if not cells or not all(_INDEX.fullmatch(cell) for cell in cells):
        raise ParseError(f"matrix header without node numbers: {cells[:5]!r}", source=source, line=number)
    return tuple(int(cell) for cell in cells)


def _matrix_row(
    line: str, columns: tuple[int, ...], connections: dict[tuple[int, int], str], source: str, number: int
) -> None:
    first, *cells = line.split()
    if (
        not _INDEX.fullmatch(first)
        or len(cells) != len(columns)
        or not all(_CELL.fullmatch(c) for c in cells)
    ):
        raise ParseError(
            f"matrix row is not `<from> <cell x {len(columns)}>` of legend letters: {line[:80]!r}",
            source=source,
            line=number,
        )
    source_node = int(first)
    if (source_node, columns[0]) in connections:
        raise ParseError(f"matrix row {source_node} is listed twice", source=source, line=number)
    for target, cell in zip(columns, cells, strict=True):
        connections[(source_node, target)] = cell
