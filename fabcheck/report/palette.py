"""Verdict colours shared by the HTML report and its SVG pictures (tests look for these exact pixels)."""

from __future__ import annotations

from fabcheck.checks.model import Status

# Solid fills in the GPU-NIC picture.
SOLID: dict[Status, str] = {
    Status.PASS: "#1b9e4b",
    Status.FAIL: "#d7191c",
    Status.ERROR: "#f28e00",
    Status.SKIP: "#7b7fc4",
}
UNJUDGED = "#c8c8c8"  # a GPU-NIC pair no check judged
NEUTRAL = "#f2f2f2"  # matrix cells that are not a GPU's rail NIC

# Light backgrounds of verdict cells in the HTML tables.
TINT: dict[Status, str] = {
    Status.PASS: "#c9f0d6",
    Status.FAIL: "#ffc2c2",
    Status.ERROR: "#ffe0b3",
    Status.SKIP: "#e1e2f5",
}

# Ink, paper and hairlines of the fabric picture.
INK = "#222222"
PAPER = "#ffffff"
RULE = "#999999"
