"""The incast stage's table for the HTML report: per NIC of each incast, what moved on it between the two
`ethtool -S` captures (lossless-priority packets, pause frames, ECN marks, CNPs, drops).

Plain SVG text (no script, nothing fetched), so the page inlines it as it does the other figures."""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from fabcheck.incast.judge import CounterRow

HEADINGS = (
    "incast",
    "role",
    "NIC",
    "netdev",
    "prio pkts",
    "pause",
    "ECN marked",
    "CNP sent",
    "CNP handled",
    "drops",
)
WIDTHS = (130, 60, 130, 100, 90, 70, 90, 80, 90, 60)  # px per column
ROW_PX = 18
FONT = 'font-family="monospace" font-size="11"'
BAD = "#c0392b"  # drops on a lossless NIC


@dataclass(frozen=True)
class CounterTable:
    rows: tuple[CounterRow, ...]
    title: str = "incast: counter deltas per NIC during the incast (ethtool -S after - before)"

    def svg(self) -> str:
        width = sum(WIDTHS) + 10
        height = ROW_PX * (len(self.rows) + 1) + 10
        lines = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">'
        ]
        lines.append(self._line(0, HEADINGS, bold=True))
        for number, row in enumerate(self.rows, start=1):
            cells = (row.incast, row.role, str(row.end), row.netdev, *map(str, row.moved))
            lines.append(self._line(number, cells, colour=BAD if row.moved[-1] else None))
        lines.append("</svg>")
        return "\n".join(lines)

    @staticmethod
    def _line(number: int, cells: tuple[str, ...], *, bold: bool = False, colour: str | None = None) -> str:
        y = ROW_PX * (number + 1)
        weight = ' font-weight="bold"' if bold else ""
        fill = f' fill="{colour}"' if colour else ""
        x, texts = 5, []
        for cell, width in zip(cells, WIDTHS, strict=True):
            texts.append(f'<text x="{x}" y="{y}" {FONT}{weight}{fill}>{escape(cell)}</text>')
            x += width
        return "".join(texts)
