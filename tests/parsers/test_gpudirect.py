"""fabcheck.parsers.gpudirect: `uname -r` and `modinfo -F license nvidia` replayed from the real outputs
of tests/data/real/host (INDEX.tsv), and what is not one of them refused with the source named."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.gpudirect import NvidiaModule, parse_kernel_release, parse_module_license

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "host"


def real(name: str) -> str:
    return (REAL / name).read_text()


def test_kernel_releases() -> None:
    new = parse_kernel_release(real("uname-r-ubuntu-22.04.txt"), "uname -r")
    assert (new.text, new.major, new.minor, new.can_dmabuf) == ("5.15.0-102-generic", 5, 15, True)
    old = parse_kernel_release(real("uname-r-centos-7.txt"), "uname -r")
    assert (old.major, old.minor, old.can_dmabuf) == (3, 10, False)
    assert parse_kernel_release("5.12\n", "x").can_dmabuf
    assert not parse_kernel_release("5.11.22-arch1\n", "x").can_dmabuf
    assert parse_kernel_release("6.8.0-mock\n", "x").can_dmabuf


@pytest.mark.parametrize("text", ["", "linux\n", "5\n", "5.15.0 extra\n", "5.15\n6.1\n", "99999.1\n"])
def test_what_is_not_a_release_is_refused(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_kernel_release(text, "uname -r")
    assert caught.value.source == "uname -r"


def test_module_licenses() -> None:
    open_module = parse_module_license(0, real("modinfo-F-license-nvidia-open.txt"), "", "modinfo")
    assert open_module == NvidiaModule("Dual MIT/GPL") and open_module.is_open
    proprietary = parse_module_license(0, real("modinfo-F-license-nvidia-proprietary.txt"), "", "modinfo")
    assert not proprietary.is_open and proprietary.flavour == "proprietary GPU kernel module (license NVIDIA)"
    absent = parse_module_license(1, "", real("modinfo-F-license-nvidia-not-found.stderr.txt"), "modinfo")
    assert not absent.installed and absent.flavour == "no nvidia kernel module installed"


@pytest.mark.parametrize(
    ("rc", "out", "err"),
    [
        (1, "", "modinfo: ERROR: could not get modinfo from 'nvidia': Exec format error\n"),
        (0, "", ""),  # a module that declares no license
        (0, "GPL\nNVIDIA\n", ""),
        (0, "x" * 500 + "\n", ""),
        (127, "", "sh: 1: modinfo: not found\n"),
    ],
)
def test_a_failed_or_odd_modinfo_is_refused(rc: int, out: str, err: str) -> None:
    with pytest.raises(ParseError):
        parse_module_license(rc, out, err, "modinfo -F license nvidia")
