"""BusBW vs message size (log-x), one picture per op and one line per curve, drawn by matplotlib as
self-contained SVG markup (no script, no font or image fetched).

matplotlib.figure.Figure is used directly, without pyplot: no global figure state and no display
backend (the Agg family), so the report draws the same on a headless machine.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from fabcheck.perf.analysis import AnomalyKind
from fabcheck.perf.report import OpReport, format_size

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # typing only: the rc keys its stubs name

# Solid line colours, in curve order (tests look for these exact pixels in a screenshot).
SERIES_COLOURS = ("#1f5fbf", "#e07b00", "#2a9d3a", "#8e44ad", "#c0392b", "#16a5a5", "#7f6000", "#d63384")
ANOMALY_COLOUR = "#e0001b"
LINE_WIDTH = 2.5
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_RC: dict[RcKeyType, object] = {
    "svg.fonttype": "none",  # text stays text: smaller files, drawn in the page's own font
    "svg.hashsalt": "fabcheck",  # stable element ids: the same report twice is the same file
    "font.size": 9,
}


def colour_of(index: int) -> str:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def busbw_svg(op: OpReport) -> str:
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(7.5, 3.6), dpi=96)
        axes = figure.add_subplot()
        for index, report in enumerate(op.curves):
            points = report.curve.points
            xs, ys = [p.bytes for p in points], [p.busbw for p in points]
            axes.plot(xs, ys, color=colour_of(index), linewidth=LINE_WIDTH, label=report.curve.series)
            flagged = {
                size
                for a in report.anomalies
                if a.kind is not AnomalyKind.INPLACE
                for size in xs
                if a.first <= size <= a.last
            }
            if flagged:
                marks = [(x, y) for x, y in zip(xs, ys, strict=True) if x in flagged]
                axes.plot(*zip(*marks, strict=True), "x", color=ANOMALY_COLOUR, markersize=7, mew=2)
        _axes_style(axes, op)
        # Fixed margins rather than tight_layout(): that one draws the figure twice (half the time).
        figure.subplots_adjust(left=0.09, right=0.98, top=0.96, bottom=0.15)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "fabcheck"})
    return _inline(out.getvalue())


def _axes_style(axes: Axes, op: OpReport) -> None:
    axes.set_xscale("log", base=2)
    sizes = sorted({p.bytes for r in op.curves for p in r.curve.points})
    ticks = sizes[:: -(-len(sizes) // 8)]  # at most 8 labels: more overlap at this width
    axes.set_xticks(ticks, [format_size(s) for s in ticks])
    axes.xaxis.set_minor_locator(NullLocator())  # log-2 minor ticks: many labels laid out for nothing
    axes.set_xlabel("message size")
    axes.set_ylabel("BusBW (GB/s)")
    axes.grid(True, which="major", color="#dddddd", linewidth=0.6)
    axes.set_ylim(bottom=0)
    axes.legend(loc="upper left", fontsize=8, frameon=False)


def _inline(svg: str) -> str:
    """The <svg> element alone: the XML declaration and DOCTYPE belong to files, not to HTML bodies,
    and the RDF metadata block (links to purl.org vocabularies) says nothing a reader needs."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    return _METADATA.sub("", svg, count=1)
