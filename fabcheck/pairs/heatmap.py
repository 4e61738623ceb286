"""The pair-bandwidth heatmap of the HTML report: host x host, each cell the slowest measured pair
between the two hosts (any rail) as a share of that pair's floor; untested pairs stay blank.

Drawn by matplotlib's Figure (no pyplot state, Agg family) as self-contained SVG."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabcheck.pairs.rounds import Pair
from fabcheck.pairs.verdict import Measurement

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # typing only: matplotlib is imported when a report draws

MAX_LABELLED_HOSTS = 64  # more names than this would overlap: the axes then go unlabelled
_RC: dict[RcKeyType, object] = {"svg.fonttype": "none", "svg.hashsalt": "fabcheck", "font.size": 8}
# Red under the floor, yellow at it, green above: the floor is the one line that matters.
_COLOUR_STOPS = [(0.0, "#c0392b"), (0.9, "#f1c40f"), (1.0, "#2a9d3a")]


def share_matrix(
    hosts: Sequence[str], measurements: Sequence[Measurement], floor_of: Callable[[Pair], float]
) -> list[list[float]]:
    """Pure: the slowest share of the floor per host pair (nan where nothing was measured; a failed
    run is 0). Symmetric."""
    index = {host: i for i, host in enumerate(hosts)}
    cells = [[math.nan] * len(hosts) for _ in hosts]
    for m in measurements:
        a, b = index.get(m.pair.server.host), index.get(m.pair.client.host)
        if a is None or b is None:
            continue
        share = 0.0 if m.gbps is None else m.gbps / floor_of(m.pair)
        worst = share if math.isnan(cells[a][b]) else min(cells[a][b], share)
        cells[a][b] = cells[b][a] = worst
    return cells


@dataclass(frozen=True)
class PairHeatmap:
    hosts: tuple[str, ...]
    cells: tuple[tuple[float, ...], ...]
    title: str = "perftest pair bandwidth (slowest pair per host pair, share of its floor)"

    def svg(self) -> str:
        # Imported only when a report draws the heatmap: matplotlib costs about 0.4 s per CLI start.
        import matplotlib
        from matplotlib.colors import LinearSegmentedColormap
        from matplotlib.figure import Figure

        colours = LinearSegmentedColormap.from_list("floor", _COLOUR_STOPS)
        size = min(9.0, 2.5 + 0.12 * len(self.hosts))
        with matplotlib.rc_context(_RC):
            figure = Figure(figsize=(size + 1.2, size), dpi=96)
            axes = figure.add_subplot()
            image = axes.imshow(self.cells, cmap=colours, vmin=0.0, vmax=1.1, interpolation="nearest")
            figure.colorbar(image, ax=axes, label="share of the floor")
            if len(self.hosts) <= MAX_LABELLED_HOSTS:
                ticks = range(len(self.hosts))
                axes.set_xticks(ticks, self.hosts, rotation=90)
                axes.set_yticks(ticks, self.hosts)
            else:
                axes.set_xticks([])
                axes.set_yticks([])
            out = io.StringIO()
            figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "fabcheck"})
        text = out.getvalue()
        return text[text.index("<svg") :]  # the page inlines it: no XML prolog or DOCTYPE


def heatmap(
    hosts: Sequence[str], measurements: Sequence[Measurement], floor_of: Callable[[Pair], float]
) -> PairHeatmap:
    cells = share_matrix(hosts, measurements, floor_of)
    return PairHeatmap(tuple(hosts), tuple(tuple(row) for row in cells))
