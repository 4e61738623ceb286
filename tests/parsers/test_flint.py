"""fabcheck.parsers.flint replays a real `flint -d mlx5_0 q` (tests/data/real/host/INDEX.tsv) and the
`FW Version(Running)` line mstflint prints only while a burned image waits for a reset (the cited rule:
Mellanox/mstflint flint/subcommands.cpp QuerySubCommand::printInfo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.flint import parse_flint

REAL = (Path(__file__).resolve().parents[1] / "data/real/host/flint-q-bluefield-dpu.txt").read_text()


def test_a_real_query_gives_the_image_and_the_psid() -> None:
    shown = parse_flint(REAL, "real")
    assert (shown.fw_version, shown.psid, shown.image_type) == ("24.33.1048", "MT_0000000723", "FS4")
    assert shown.running == "24.33.1048" and not shown.reset_pending and shown.running_version is None
    assert shown.product_version == "24.33.1048"  # Rom Info's indented lines are skipped


def test_a_burned_image_waiting_for_a_reset_is_seen() -> None:
    # printInfo: "FW Version(Running):   %s" right after FW Version, when the two differ
    waiting = REAL.replace(
        "FW Version:            24.33.1048\n",
        "FW Version:            24.35.1012\nFW Version(Running):   24.33.1048\n",
    )
    shown = parse_flint(waiting, "waiting")
    assert (shown.fw_version, shown.running, shown.reset_pending) == ("24.35.1012", "24.33.1048", True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-E- Failed to open device: mlx5_9\n", "flint failed: Failed to open device: mlx5_9"),
        ("Image type:            FS4\nPSID:                  MT_1\n", "no FW Version"),
        (REAL.replace("PSID:                  MT_0000000723\n", ""), "no PSID"),
        (REAL + "PSID:                  MT_2\n", "PSID shown twice"),
    ],
)
def test_what_is_not_a_query_is_refused(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_flint(text, "bad")
