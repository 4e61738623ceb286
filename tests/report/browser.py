"""Headless Chromium for the report tests: a screenshot of a page (decoded to pixels) and the DOM the
browser built from it (`--dump-dom`). Debian's `chromium` is installed by scripts/setup."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pngpixels import Image, decode

WIDTH, HEIGHT = 1000, 1100
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--force-color-profile=srgb",  # colours in the PNG exactly as written in the CSS and SVG
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "headless Chromium is missing: scripts/setup installs Debian's `chromium` (run it as root)"
        )
    return found


def _run(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def screenshot(page: Path, tmp_path: Path, width: int = WIDTH, height: int = HEIGHT) -> Image:
    return decode(screenshot_png(page, tmp_path, width, height).read_bytes())


def screenshot_png(page: Path, tmp_path: Path, width: int = WIDTH, height: int = HEIGHT) -> Path:
    png = tmp_path / f"{page.stem}.png"
    done = _run(page, tmp_path / "profile", f"--screenshot={png}", f"--window-size={width},{height}")
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return png


def dump_dom(page: Path, tmp_path: Path) -> str:
    """The page as the browser parsed it (serialised DOM), to find elements the way it sees them."""
    done = _run(page, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout
