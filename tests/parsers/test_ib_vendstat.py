"""`vendstat -N <lid>` (tests/data/real/ib, rendered from rdma-core vendstat.c: unverified): firmware
version without zero padding, device id, revision, PSID; damage refused naming the line."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.ib_records import IbSwitchFirmware
from fabcheck.parsers.vendstat import parse_vendstat_general

IB = Path(__file__).resolve().parents[1] / "data" / "real" / "ib"
QUANTUM2 = IB / "vendstat-N-quantum2-rendered.txt"
TEXT = QUANTUM2.read_text()


def test_the_quantum2_general_information() -> None:
    assert parse_vendstat_general(TEXT, QUANTUM2.name, 7) == IbSwitchFirmware(
        lid=7, fw_version="31.2012.1024", device_id=0xD2F2, hw_revision=0xA0, psid="MT_0000000681"
    )


def test_an_old_zero_padded_version_and_an_empty_psid() -> None:
    old = TEXT.replace("31.2012.1024\nfw_build_id", "07.02.00\nfw_build_id").replace("'MT_0000000681'", "''")
    firmware = parse_vendstat_general(old, "sw", 3)
    assert (firmware.fw_version, firmware.psid) == ("7.2.0", None)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "no hw_dev_rev, hw_dev_id, fw_version, fw_psid", None),
        ("vendstat: iberror: failed: generalinfo query\n", "not a vendstat -N", 1),
        (TEXT.replace("fw_version:  31.2012.1024", "fw_version:  31.2012"), "is not major.minor.subminor", 4),
        (TEXT.replace("'MT_0000000681'", "MT_0000000681"), "is not a quoted PSID", 7),
        (TEXT.replace("hw_dev_id:   0xd2f2", "hw_dev_id:   d2f2"), "is not 0x-prefixed hex", 2),
        (TEXT.replace("hw_dev_id:   0xd2f2", "hw_dev_id:   0x٣"), "hw_dev_id", 2),
        (TEXT + "fw_psid:     'X'\n", "fw_psid shown twice", 10),
        (TEXT.replace("fw_date:", "fw_when:"), "not a vendstat -N", 6),
    ],
)
def test_damage_is_a_parse_error_naming_source_and_line(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_vendstat_general(text, "reader: vendstat -N 7", 7)
    assert (raised.value.source, raised.value.line) == ("reader: vendstat -N 7", line)


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(partial(parse_vendstat_general, lid=7), [TEXT])
)
