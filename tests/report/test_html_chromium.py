"""The HTML report as a person sees it: headless Chromium takes a screenshot, and the pixels show the
affinity picture (GPU1's rail cell red, the other rails green, in the right rows and column) and the
tables (verdict-tinted cells above and below the picture)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pngpixels import Image, decode, rgb
from reportdata import LINK_MTU_PASS, fabric_run

from fabcheck.checks.model import Status
from fabcheck.report import affinity_svg, html
from fabcheck.report.model import NodeKind, Run, Subject
from fabcheck.report.palette import SOLID, TINT

WIDTH, HEIGHT = 1000, 1100
BAND_PIXELS = 40  # a row belongs to a coloured band when it has this many pixels of the colour


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "headless Chromium is missing: scripts/setup installs Debian's `chromium` (run it as root)"
        )
    return found


def screenshot(page: Path, tmp_path: Path) -> Image:
    png = tmp_path / "report.png"
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-color-profile=srgb",  # colours in the PNG exactly as written in the CSS and SVG
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={png}",
        f"--window-size={WIDTH},{HEIGHT}",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return decode(png.read_bytes())


def bands(image: Image, colour: str) -> list[tuple[int, int, list[int]]]:
    """Runs of consecutive rows rich in `colour`: (first row, last row, x of its pixels in the first)."""
    want = rgb(colour)
    out: list[tuple[int, int, list[int]]] = []
    for y, row in enumerate(image.rows):
        xs = [x for x, pixel in enumerate(row) if pixel == want]
        if len(xs) < BAND_PIXELS:
            continue
        if out and out[-1][1] == y - 1:
            out[-1] = (out[-1][0], y, out[-1][2])
        else:
            out.append((y, y, xs))
    return out


def x_runs(xs: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for x in xs:
        if runs and runs[-1][1] == x - 1:
            runs[-1] = (runs[-1][0], x)
        else:
            runs.append((x, x))
    return runs


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    tmp_path = tmp_path_factory.mktemp("chromium")
    full = fabric_run()
    gpu02 = next(s for s in full.subjects if s.name == "gpu02")
    leaf01 = Subject("leaf01", NodeKind.SWITCH, (LINK_MTU_PASS,))  # the passing link, filed by the switch
    page = tmp_path / "report.html"
    page.write_text(html.render(Run("validate", (gpu02, leaf01), full.links)), encoding="utf-8")
    return screenshot(page, tmp_path)


def test_affinity_picture_marks_gpu1_rail_red_and_the_others_green(image: Image) -> None:
    [(top, bottom, xs)] = bands(image, SOLID[Status.FAIL])  # one red row: GPU1
    assert affinity_svg.CELL_H - 6 <= bottom - top + 1 <= affinity_svg.CELL_H
    # red in two places of that row: the GPU1 label, and the second NIC column (mlx5_1, its rail)
    [label, cell] = x_runs(xs)
    assert abs((cell[0] - label[0]) - (affinity_svg.LABEL_W + affinity_svg.CELL_W)) <= 3
    green = bands(image, SOLID[Status.PASS])
    above = [b for b in green if b[1] < top]
    below = [b for b in green if b[0] > bottom]
    assert len(above) == 1 and len(below) == 2  # GPU0 above; GPU2 and GPU3 below
    gpu0_label, gpu0_cell = x_runs(above[0][2])
    assert gpu0_label[0] == label[0] and abs(gpu0_cell[0] - (label[0] + affinity_svg.LABEL_W)) <= 3
    for _, _, row_xs in below:
        assert x_runs(row_xs)[0][0] == label[0]


def test_tables_show_verdict_cells_around_the_picture(image: Image) -> None:
    [(svg_top, _, _)] = bands(image, SOLID[Status.FAIL])
    green_top = min(b[0] for b in bands(image, SOLID[Status.PASS]))
    picture_top = min(svg_top, green_top)
    red_tints = bands(image, TINT[Status.FAIL])
    # above the picture: the title's FAIL, the node table's gpu02 row, the link table's gpu02 row,
    # and the gpu02 heading; below it: the failing rows of the findings table
    assert len([b for b in red_tints if b[1] < picture_top]) >= 3
    assert [b for b in red_tints if b[0] > picture_top]
    orange = bands(image, TINT[Status.ERROR])  # the link with no finding
    light_green = bands(image, TINT[Status.PASS])
    assert orange and orange[0][1] < picture_top
    assert light_green and light_green[0][1] < picture_top  # the passing link gpu01
