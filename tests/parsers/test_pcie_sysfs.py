"""AER counters (`grep -H "" .../aer_dev_*`), the IOMMU group type and /proc/cmdline, replayed on the
kernel ABI's samples (tests/data/real/host/INDEX.tsv: grep-aer-dev-abi-sample-rendered.txt;
torvalds/linux:Documentation/ABI/testing/sysfs-kernel-iommu_groups@50501936288d6a29d7ef78f25d00e33240fad45f)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.pcie_sysfs import aer_answer, parse_aer, parse_cmdline, parse_iommu_group_type

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
ABI = REAL / "grep-aer-dev-abi-sample-rendered.txt"
GLOB = "/sys/bus/pci/devices/*/aer_dev_correctable"


def test_the_abi_samples_give_counts_and_totals_per_severity() -> None:
    counts = parse_aer(ABI.read_text(), ABI.name)
    assert list(counts) == ["0000:00:1c.0"]
    aer = counts["0000:00:1c.0"]
    assert aer.counts["correctable"]["Receiver Error"] == 2
    assert aer.counts["correctable"]["RELAY_NUM Rollover"] == 0
    assert aer.counts["fatal"]["Surprise Down Error"] == 0
    assert (aer.total("correctable"), aer.total("nonfatal"), aer.total("fatal")) == (2, 0, 0)
    assert "TOTAL_ERR_COR" not in aer.counts["correctable"]


def test_newer_kernel_names_and_a_total_that_differs_from_the_sum() -> None:
    text = (
        "/sys/bus/pci/devices/0000:1a:00.0/aer_dev_correctable:RxErr 3\n"
        "/sys/bus/pci/devices/0000:1a:00.0/aer_dev_correctable:BadTLP 2\n"
        "/sys/bus/pci/devices/0000:1a:00.0/aer_dev_correctable:TOTAL_ERR_COR 4\n"
        "/sys/bus/pci/devices/0000:18:00.0/aer_dev_fatal:DLP 1\n"
    )
    counts = parse_aer(text)
    assert counts["0000:1a:00.0"].total("correctable") == 4  # one message may carry several errors
    assert counts["0000:18:00.0"].total("fatal") == 1  # no TOTAL line: the sum
    assert counts["0000:18:00.0"].total("nonfatal") is None  # not shown


def test_no_aer_file_is_an_empty_answer_and_a_failure_is_not() -> None:
    missing = f"grep: {GLOB}: No such file or directory\n"
    assert aer_answer(2, "", missing, "grep") == {}
    assert aer_answer(1, "", "", "grep") == {}
    with pytest.raises(ParseError, match="Permission denied"):
        aer_answer(2, "", f"grep: {GLOB}: Permission denied\n", "grep")


@pytest.mark.parametrize(
    "line",
    [
        "Receiver Error 2",
        "/sys/bus/pci/devices/0000:1a:00.0/aer_dev_correctable:Receiver Error two",
        "/sys/bus/pci/devices/0000:1a:00.0/aer_dev_correctable:TOTAL_ERR_FATAL 1",
        "/sys/bus/pci/devices/nota-bdf/aer_dev_correctable:RxErr 1",
    ],
)
def test_what_is_not_an_aer_line_is_a_parse_error(line: str) -> None:
    with pytest.raises(ParseError):
        parse_aer(line + "\n")


@pytest.mark.parametrize("word", ["identity", "DMA", "DMA-FQ", "blocked", "unmanaged"])
def test_iommu_group_types_of_the_abi(word: str) -> None:
    assert parse_iommu_group_type(word + "\n") == word


def test_an_unknown_group_type_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_iommu_group_type("translated\n")


@pytest.mark.parametrize(
    ("line", "passthrough"),
    [
        ("BOOT_IMAGE=/vmlinuz ro iommu=pt", True),
        ("ro intel_iommu=on iommu=pt", True),
        ("ro iommu.passthrough=1", True),
        ("ro iommu=pt iommu.passthrough=0", False),
        ("ro iommu=nopt", False),
        ("ro quiet", None),
    ],
)
def test_the_command_line_says_passthrough_or_not(line: str, passthrough: bool | None) -> None:
    cmdline = parse_cmdline(line + "\n")
    assert cmdline.passthrough is passthrough
    assert cmdline.value("ro") is None or cmdline.value("ro") == ""


def test_the_command_line_is_one_line() -> None:
    with pytest.raises(ParseError):
        parse_cmdline("a\nb\n")
    assert parse_cmdline("ro intel_iommu=on iommu=pt quiet\n").iommu_words == ("intel_iommu=on", "iommu=pt")
