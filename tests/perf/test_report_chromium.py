"""The `fabcheck report` HTML as a person sees it: headless Chromium takes a screenshot; the pixels
show the three BusBW curves in their legend colours, in the right order (more nodes, lower BusBW), the
anomaly marks of the dip, and the tables above and below the plot (their grey header rows)."""

from __future__ import annotations

from pathlib import Path

import pytest
import siblings  # noqa: F401  (puts tests/report and tests/lab on sys.path)
from pngpixels import Image, rgb
from test_html_chromium import bands, screenshot

from fabcheck.perf import plots, render
from fabcheck.perf.curves import load_run_dir
from fabcheck.perf.report import build_report
from fabcheck.perf.synthetic import SyntheticRun, doubling_sizes, render_output, saturating_busbw

SIZES = doubling_sizes(1 << 20, 8 << 30)
PEAKS = {1: 400.0, 2: 360.0, 4: 300.0}  # BusBW plateau per node count
TABLE_HEADER_GREY = "#e6e6e6"
LINE_PIXELS = 150  # a drawn curve of 14 sizes across the plot has far more pixels of its colour


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    tmp = tmp_path_factory.mktemp("perf-chromium")
    run_dir = tmp / "run"
    run_dir.mkdir()
    for nodes, peak in PEAKS.items():
        busbw = saturating_busbw(peak, 32 << 20, SIZES)
        if nodes == 4:
            busbw[256 << 20] *= 0.5  # a dip: two anomaly marks' worth of red
        hosts = [f"gpu{n:02d}" for n in range(1, nodes + 1)]
        (run_dir / f"{nodes}.txt").write_text(render_output(SyntheticRun("all_reduce", hosts, 8, busbw)))
    page = tmp / "report.html"
    page.write_text(render.html(build_report(load_run_dir(run_dir))), encoding="utf-8")
    return screenshot(page, tmp)


def pixels(image: Image, colour: str) -> list[tuple[int, int]]:
    want = rgb(colour)
    return [(x, y) for y, row in enumerate(image.rows) for x, pixel in enumerate(row) if pixel == want]


def test_each_curve_is_drawn_in_its_colour_more_nodes_lower(image: Image) -> None:
    curves = [pixels(image, plots.colour_of(i)) for i in range(len(PEAKS))]  # 1, 2, 4 nodes in order
    assert all(len(found) >= LINE_PIXELS for found in curves), [len(c) for c in curves]
    # at the right end of the plot (the saturated sizes) 1 node is highest on screen, 4 nodes lowest
    right = min(max(x for x, _ in found) for found in curves) - 5
    ys = [min(y for x, y in found if x >= right - 20) for found in curves]
    assert ys[0] < ys[1] < ys[2]


def test_the_dip_is_marked(image: Image) -> None:
    marks = pixels(image, plots.ANOMALY_COLOUR)
    assert len(marks) >= 20
    four_nodes = pixels(image, plots.colour_of(2))
    plot_top = min(y for _, y in four_nodes)
    plot_bottom = max(y for _, y in four_nodes)
    assert all(plot_top - 40 <= y <= plot_bottom + 40 for _, y in marks)


def test_tables_above_and_below_the_plot(image: Image) -> None:
    line = pixels(image, plots.colour_of(0))
    top, bottom = min(y for _, y in line), max(y for _, y in line)
    headers = bands(image, TABLE_HEADER_GREY)
    assert [b for b in headers if b[1] < top], "the files table above the plot"
    assert len([b for b in headers if b[0] > bottom]) >= 2, "representative and scaling tables below it"


def test_the_page_needs_nothing_from_outside(tmp_path: Path) -> None:
    page = render.html(build_report(load_run_dir(Path(__file__).parents[1] / "data" / "perf" / "mixed")))
    assert "<script" not in page and "<link" not in page and "<img" not in page
    assert "@import" not in page and "url(" not in page.replace("url(#", "")
