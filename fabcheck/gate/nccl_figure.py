"""The nccl stage's picture for the HTML report: all_reduce busbw against message size (log-x), the
out-of-place and in-place columns, and the intent's floor from the size it applies at.

Drawn by matplotlib's Figure (no pyplot state, Agg family) as self-contained SVG."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabcheck.parsers.nccl_tests import NcclTestsRun

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # typing only: matplotlib is imported when a report draws

_RC: dict[RcKeyType, object] = {"svg.fonttype": "none", "svg.hashsalt": "fabcheck", "font.size": 8}
FLOOR_COLOUR = "#c0392b"


@dataclass(frozen=True)
class BusbwFigure:
    sizes: tuple[int, ...]
    out_of_place: tuple[float, ...]
    in_place: tuple[float | None, ...]
    floor_gbytes: float
    floor_from_bytes: int
    title: str = "nccl: all_reduce busbw vs size (GB/s), with the intent's floor"

    def svg(self) -> str:
        # Imported only when a report draws the figure: matplotlib costs about 0.4 s per CLI start.
        import matplotlib
        from matplotlib.figure import Figure

        with matplotlib.rc_context(_RC):
            figure = Figure(figsize=(7.0, 3.2), dpi=96)
            axes = figure.add_subplot()
            axes.plot(self.sizes, self.out_of_place, marker="o", label="out-of-place")
            shown = [(s, v) for s, v in zip(self.sizes, self.in_place, strict=True) if v is not None]
            if shown:
                axes.plot(*zip(*shown, strict=True), marker=".", linestyle="--", label="in-place")
            axes.hlines(
                self.floor_gbytes, self.floor_from_bytes, max(self.sizes), colors=FLOOR_COLOUR, label="floor"
            )
            axes.set_xscale("log", base=2)
            axes.set_xlabel("message size (B)")
            axes.set_ylabel("busbw (GB/s)")
            axes.legend(loc="lower right")
            figure.subplots_adjust(left=0.09, right=0.98, top=0.95, bottom=0.15)
            out = io.StringIO()
            figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "fabcheck"})
        text = out.getvalue()
        return text[text.index("<svg") :]  # the page inlines it: no XML prolog or DOCTYPE


def busbw_figure(run: NcclTestsRun, floor_gbytes: float, floor_from_bytes: int) -> BusbwFigure | None:
    """None when the run printed no rows (nothing to draw)."""
    if not run.rows:
        return None
    rows = sorted(run.rows, key=lambda row: row.bytes)
    return BusbwFigure(
        sizes=tuple(max(1, r.bytes) for r in rows),
        out_of_place=tuple(r.oop_busbw for r in rows),
        in_place=tuple(r.ip_busbw for r in rows),
        floor_gbytes=floor_gbytes,
        floor_from_bytes=floor_from_bytes,
    )
