"""The kernel log -> Xid events, replaying real lines: gpud's `dmesg -T` capture of Xid 119 (GSP RPC
timeouts, tests/data/real/host/INDEX.tsv), and the lines quoted below with their sources."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.kernel_log import parse_xid_events

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
GSP_TIMEOUTS = (HOST / "dmesg-T-xid-119-gsp-timeout.txt").read_text()
# stas00/ml-engineering:compute/accelerator/nvidia/debug.md@744d01e18b79512572f64a6bbd8b5f4a725203a7
ROW_REMAP = (
    "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
    "reset gpu to activate."
)
# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150 (journald lines, driver 590)
JOURNAL = (
    "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 "
    "caused by previous Xid 149"
)
# leptonai/gpud:components/accelerator/nvidia/xid/kmsg.go@4a8de33a3f02e207f39e9023d67125592d599731 (older
# drivers: no `PCI:` prefix)
OLD_DRIVER = "[...] NVRM: Xid (0000:03:00): 14, Channel 00000001"


def test_a_dmesg_capture_gives_every_xid_with_its_gpu() -> None:
    events = parse_xid_events(GSP_TIMEOUTS, "dmesg")
    assert [(e.bus_id, e.xid) for e in events] == [("0000:9b:00.0", 119)] * 5
    assert events[0].line == 3
    assert events[0].text.startswith("pid=2024380, name=nvidia-smi, Timeout after 6s")
    # the other NVRM lines of the capture (GPU at PCI:..., RPC history) are no Xid
    assert "NVRM: GPU at PCI:0000:9b:00" in GSP_TIMEOUTS


@pytest.mark.parametrize(
    ("line", "bus", "xid"),
    [(ROW_REMAP, "0000:10:1c.0", 63), (JOURNAL, "0000:dc:00.0", 45), (OLD_DRIVER, "0000:03:00.0", 14)],
)
def test_each_real_line_layout(line: str, bus: str, xid: int) -> None:
    (event,) = parse_xid_events(line, "log")
    assert (event.bus_id, event.xid) == (bus, xid)


def test_a_log_without_xid_is_empty() -> None:
    assert parse_xid_events("[    0.276715] iommu: Default domain type: Passthrough\n", "log") == ()


def test_an_xid_mark_without_its_layout_is_refused() -> None:
    with pytest.raises(ParseError, match="Xid line"):
        parse_xid_events("[ 1.0] NVRM: Xid (GPU0): seventy-nine", "log")


test_mutations_parse_or_refuse, test_hostile_text_parses_or_refuses = parse_or_refuse_tests(
    parse_xid_events, [GSP_TIMEOUTS, "\n".join((ROW_REMAP, JOURNAL, OLD_DRIVER))]
)
