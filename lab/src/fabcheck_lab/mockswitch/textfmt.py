"""Plain-text table layouts shared by the mock CLIs (tabulate 'simple' style, NVUE tables)."""

from __future__ import annotations

from collections.abc import Sequence

Row = Sequence[object]


def simple_table(
    headers: Sequence[str], rows: Sequence[Row], align: str, *, indent: str = "", header_pad: int = 0
) -> str:
    """Header, dashed rule, rows; two spaces between columns. align holds 'l' or 'r' per column.

    header_pad=2 reproduces python-tabulate (used by sonic-utilities), which widens every column to
    at least its header plus two.
    """
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h) + header_pad] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        cols = zip(values, widths, align, strict=True)
        parts = [v.rjust(w) if a == "r" else v.ljust(w) for v, w, a in cols]
        return (indent + "  ".join(parts)).rstrip()

    out = [line(list(headers)), (indent + "  ".join("-" * w for w in widths)).rstrip()]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def ruled_pairs(rows: Sequence[tuple[str, object]]) -> str:
    """Two columns with no header between dashed rules (tabulate 'simple' without headers)."""
    keys = [k for k, _ in rows]
    values = [str(v) for _, v in rows]
    kw = max(len(k) for k in keys)
    vw = max(len(v) for v in values)
    rule = "-" * kw + "  " + "-" * vw
    body = [(k.ljust(kw) + "  " + v).rstrip() for k, v in zip(keys, values, strict=True)]
    return "\n".join([rule, *body, rule])


def nvue_attributes(columns: Sequence[str], rows: Sequence[Row]) -> str:
    """NVUE attribute table: an unnamed key column, then e.g. operational / applied / description."""
    key_header = "" if rows else "  "  # with no rows NVUE still draws a two-dash key column
    return simple_table([key_header, *columns], rows, "l" * (len(columns) + 1))


def nvue_section(title: str, headers: Sequence[str], rows: Sequence[Row]) -> str:
    """NVUE sub-table: a title underlined with '=', then a table indented by four spaces."""
    underline = "=" * (len(title) + 3)
    return "\n".join([title, underline, simple_table(headers, rows, "l" * len(headers), indent="    ")])


def nvue_bytes(value: int | None) -> str:
    """NVUE's human byte counts: '0 Bytes', '146.48 KB', '1.43 MB' (1024-based); None is 'inf'."""
    if value is None:
        return "inf"
    if value < 1024:
        return f"{value} Bytes"
    if value < 1024 * 1024:
        return f"{value / 1024:.2f} KB"
    return f"{value / (1024 * 1024):.2f} MB"


def comma_list(values: Sequence[int] | set[int]) -> str:
    """Sorted comma list as switches print priority sets; '-' when empty."""
    ordered = sorted(values)
    return ",".join(str(v) for v in ordered) if ordered else "-"
