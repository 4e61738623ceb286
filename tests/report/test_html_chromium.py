"""The HTML report as a person sees it, in headless Chromium.

On the recorded lab run (tests/data/report-lab: PFC off on gpu02 mlx5_0, PFC moved on leaf01 swp1,
gpu03 down): the screenshot is a real picture, and its pixels show gpu02's mlx5_0 NIC red, gpu01's
mlx5_0 cabled to a red port, gpu03's cables orange; the DOM the browser built holds exactly one NIC
with a failing NIC verdict, gpu02 mlx5_0. The GPU-NIC affinity picture is checked alone: GPU1's rail
cell red, the other rails green, in the right rows and column.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import dump_dom, screenshot, screenshot_png
from labrun import lab_run
from pngpixels import Image, decode, rgb
from reportdata import fabric_run

from fabcheck.checks.model import Finding, Status, failed
from fabcheck.report import affinity_svg, fabric_svg, html
from fabcheck.report.model import NodeKind, Run, Subject
from fabcheck.report.palette import PAPER, SOLID, TINT, UNJUDGED

__all__ = ["bands", "screenshot", "x_runs"]  # tests/perf reuses these

BAND_PIXELS = 40  # a row belongs to a coloured band when it has this many pixels of the colour
LAB_WIDTH, LAB_HEIGHT = 1100, 1300


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


# ------------------------------------------------------------------------------ the lab report


@pytest.fixture(scope="module")
def lab_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("lab-report") / "report.html"
    page.write_text(html.render(lab_run()), encoding="utf-8")
    return page


@pytest.fixture(scope="module")
def lab_png(lab_page: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_png(lab_page, tmp_path_factory.mktemp("lab-shot"), LAB_WIDTH, LAB_HEIGHT)


@pytest.fixture(scope="module")
def lab_image(lab_png: Path) -> Image:
    return decode(lab_png.read_bytes())


def test_the_screenshot_is_a_picture_not_a_blank_page(lab_image: Image) -> None:
    assert (lab_image.width, lab_image.height) == (LAB_WIDTH, LAB_HEIGHT)
    colours = {pixel for row in lab_image.rows for pixel in row[::3]}
    assert len(colours) > 50  # text antialiasing, the verdict colours, table rules
    painted = sum(pixel != rgb(PAPER) for row in lab_image.rows for pixel in row)
    assert painted > LAB_WIDTH * LAB_HEIGHT // 20
    for colour in (SOLID[Status.FAIL], SOLID[Status.PASS], SOLID[Status.ERROR], TINT[Status.FAIL]):
        assert bands(lab_image, colour), colour


class Picture:
    """Pixels of the fabric picture, found from the top of gpu01's red row label."""

    def __init__(self, image: Image) -> None:
        self.image = image
        top, bottom, _ = bands(image, SOLID[Status.FAIL])[0]  # gpu01's label is the highest red thing
        middle = image.rows[(top + bottom) // 2]  # below the rounded corners
        label_h = fabric_svg.BOX_H * 2 + 10
        self.left = middle.index(rgb(SOLID[Status.FAIL])) - fabric_svg.PAD
        self.row0 = top - (fabric_svg.ROW_H - label_h) / 2

    def at(self, x: float, y: float) -> tuple[int, int, int]:
        return self.image.rows[round(y)][round(x)]

    def box(self, row: int, column: int, part: str) -> tuple[int, int, int]:
        """A pixel inside a NIC or port box, left of its centred text."""
        x = self.left + fabric_svg.PAD + fabric_svg.LABEL_W + column * fabric_svg.CELL_W
        x += (fabric_svg.CELL_W - fabric_svg.BOX_W) / 2 + 4
        y = self.row0 + row * fabric_svg.ROW_H
        y += 6 + fabric_svg.BOX_H / 2 if part == "nic" else fabric_svg.ROW_H - 6 - fabric_svg.BOX_H / 2
        return self.at(x, y)

    def cable(self, row: int, column: int) -> tuple[int, int, int]:
        x = self.left + fabric_svg.PAD + fabric_svg.LABEL_W + column * fabric_svg.CELL_W
        return self.at(x + fabric_svg.CELL_W / 2, self.row0 + row * fabric_svg.ROW_H + fabric_svg.ROW_H / 2)


def test_the_fabric_picture_colours_nic_cable_and_port(lab_image: Image) -> None:
    picture = Picture(lab_image)
    red, green, orange = rgb(SOLID[Status.FAIL]), rgb(SOLID[Status.PASS]), rgb(SOLID[Status.ERROR])
    # gpu01: its mlx5_0 passes, the cable and leaf01 swp1 fail (PFC moved on the switch port)
    assert picture.box(0, 0, "nic") == green
    assert picture.cable(0, 0) == red
    assert picture.box(0, 0, "port") == red
    assert picture.box(0, 1, "nic") == green and picture.box(0, 1, "port") == green
    # gpu02: mlx5_0 itself fails (PFC off), and so does its cable; the port passes
    assert picture.box(1, 0, "nic") == red
    assert picture.cable(1, 0) == red
    assert picture.box(1, 0, "port") == green
    assert picture.box(1, 7, "nic") == green
    # gpu03 did not answer: NICs not judged, both cables errors, nothing in columns it has no NIC for
    assert picture.box(2, 0, "nic") == rgb(UNJUDGED)
    assert picture.cable(2, 0) == orange and picture.cable(2, 1) == orange
    assert picture.box(2, 2, "nic") == rgb(PAPER)


class DataElements(HTMLParser):
    """Every element carrying fabric data attributes, and every element name seen."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict[str, str]] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        found = {name: value or "" for name, value in attrs}
        if "data-nic" in found and "data-host" in found:
            self.cells.append(found)


def parsed_dom(page: Path, tmp_path: Path) -> DataElements:
    parser = DataElements()
    parser.feed(dump_dom(page, tmp_path))
    return parser


def test_the_failing_nic_is_found_in_the_dom(lab_page: Path, tmp_path: Path) -> None:
    dom = parsed_dom(lab_page, tmp_path)
    assert "svg" in dom.tags and "details" in dom.tags
    failing = [(c["data-host"], c["data-nic"]) for c in dom.cells if c.get("data-nic-status") == "fail"]
    assert failing == [("gpu02", "mlx5_0")]
    gpu01 = next(c for c in dom.cells if (c["data-host"], c["data-nic"]) == ("gpu01", "mlx5_0"))
    assert (gpu01["data-port"], gpu01["data-port-status"], gpu01["data-cable-status"]) == (
        "leaf01:swp1",
        "fail",
        "fail",
    )
    assert len(dom.cells) == 8 + 8 + 2


def test_a_hostile_host_name_stays_text_in_the_browser(tmp_path: Path) -> None:
    evil = "<script>document.title='owned'</script>"
    bad: Finding = failed("host.pfc", "mlx5_0/1", "pfc 3", "none", "fix it")
    run = Run("validate", (Subject(evil, NodeKind.HOST, (bad,)),))
    page = tmp_path / "evil.html"
    page.write_text(html.render(run), encoding="utf-8")
    dom = parsed_dom(page, tmp_path)
    assert "script" not in dom.tags
    assert [(c["data-host"], c["data-nic-status"]) for c in dom.cells] == [(evil, "fail")]


# ------------------------------------------------------------------ the GPU-NIC picture alone


@pytest.fixture(scope="module")
def affinity_image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    tmp_path = tmp_path_factory.mktemp("chromium")
    gpu02 = next(s for s in fabric_run().subjects if s.name == "gpu02")
    assert gpu02.affinity is not None
    svg = affinity_svg.render(gpu02.name, gpu02.affinity, gpu02.findings)
    page = tmp_path / "affinity.html"
    page.write_text(f'<!DOCTYPE html><html lang="en"><body>{svg}</body></html>', encoding="utf-8")
    return screenshot(page, tmp_path)


def test_affinity_picture_marks_gpu1_rail_red_and_the_others_green(affinity_image: Image) -> None:
    [(top, bottom, xs)] = bands(affinity_image, SOLID[Status.FAIL])  # one red row: GPU1
    assert affinity_svg.CELL_H - 6 <= bottom - top + 1 <= affinity_svg.CELL_H
    # red in two places of that row: the GPU1 label, and the second NIC column (mlx5_1, its rail)
    [label, cell] = x_runs(xs)
    assert abs((cell[0] - label[0]) - (affinity_svg.LABEL_W + affinity_svg.CELL_W)) <= 3
    green = bands(affinity_image, SOLID[Status.PASS])
    above = [b for b in green if b[1] < top]
    below = [b for b in green if b[0] > bottom]
    assert len(above) == 1 and len(below) == 2  # GPU0 above; GPU2 and GPU3 below
    gpu0_label, gpu0_cell = x_runs(above[0][2])
    assert gpu0_label[0] == label[0] and abs(gpu0_cell[0] - (label[0] + affinity_svg.LABEL_W)) <= 3
    for _, _, row_xs in below:
        assert x_runs(row_xs)[0][0] == label[0]
