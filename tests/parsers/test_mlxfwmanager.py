"""fabcheck.parsers.mlxfwmanager replays a real device block (mlxup prints mlxfwmanager --query's
layout; tests/data/real/host/INDEX.tsv) and the multi-device output laid out as mstflint's
printDeviceInfoQuery prints it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.mlxfwmanager import FwManagerDevice, parse_mlxfwmanager

REAL = (Path(__file__).resolve().parents[1] / "data/real/host/mlxup-query-connectx5-no-image.txt").read_text()


def test_a_real_device_block() -> None:
    assert parse_mlxfwmanager(REAL, "real") == (
        FwManagerDevice(
            4,
            "ConnectX5",
            "MNV303212A-ADL_Ax",
            "MT_0000000158",
            "pci0:6:0:0",
            "16.24.4020",
            "N/A",
            "No matching image found",
        ),
    )


def test_several_devices_and_rom_lines() -> None:
    second = REAL.replace("Device #4:", "Device #5:").replace("16.24.4020", "16.35.4030")
    second = second.replace(
        "     FW             16.35.4030     N/A           \n",
        "     FW             16.35.4030     N/A           \n     PXE            3.6.0502       N/A\n",
    )
    shown = parse_mlxfwmanager("Querying Mellanox devices firmware ...\n\n" + REAL + "\n" + second, "two")
    assert [(d.index, d.fw_current) for d in shown] == [(4, "16.24.4020"), (5, "16.35.4030")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-E- the tool's error line\n", "mlxfwmanager failed: the tool's error line"),
        ("Querying Mellanox devices firmware ...\n", "no `Device #N:` block"),
        ("Device #1:\n----------\n  PSID:             MT_1\n", "Device #1: no FW version line"),
    ],
)
def test_what_is_not_a_query_is_refused(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_mlxfwmanager(text, "bad")
