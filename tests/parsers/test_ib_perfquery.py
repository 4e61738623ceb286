"""`perfquery -x` (tests/data/real/ib, ib_exporter's fixtures): counters by name per port block, hex
fields left out, the -a aggregate left out, damage refused naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.ib_records import ERROR_COUNTERS
from fabcheck.parsers.perfquery import parse_perfquery_counters

IB = Path(__file__).resolve().parents[1] / "data" / "real" / "ib"
ONE = IB / "perfquery-x-switch-edr.txt"
TWO = IB / "perfquery-x-l-switch-edr-ports.txt"
GUID = "0x7cfe9003009ce5b0"


def test_one_port_every_counter_by_name() -> None:
    (port,) = parse_perfquery_counters(ONE.read_text(), ONE.name, "0x506b4b03005c2740", "ib-i4l1s01")
    assert (port.guid, port.port, port.description) == ("0x506b4b03005c2740", 1, "ib-i4l1s01")
    assert port.counts["PortXmitData"] == 178791657177235
    assert {name: port.counts[name] for name in ERROR_COUNTERS} == {
        "SymbolErrorCounter": 0,
        "LinkErrorRecoveryCounter": 0,
        "LinkDownedCounter": 1,
        "PortRcvErrors": 0,
        "PortRcvRemotePhysicalErrors": 0,
        "PortXmitDiscards": 20046,
        "ExcessiveBufferOverrunErrors": 0,
        "LocalLinkIntegrityErrors": 0,
    }
    assert port.counts["PortXmitWait"] == 41864608 and port.counts["PortRcvSwitchRelayErrors"] == 7
    assert not {"PortSelect", "CounterSelect", "CounterSelect2"} & set(port.counts)


def test_two_port_blocks_in_order() -> None:
    ports = parse_perfquery_counters(TWO.read_text(), TWO.name, GUID)
    assert [(p.guid, p.port, p.counts["PortXmitWait"]) for p in ports] == [
        (GUID, 1, 22730501),
        (GUID, 2, 36510964),
    ]


def test_the_basic_header_and_the_all_ports_aggregate() -> None:
    basic = "# Port counters: Lid 1 port 1 (CapMask: 0x5A00)\nSymbolErrorCounter:..............3\n"
    (port,) = parse_perfquery_counters(basic)
    assert dict(port.counts) == {"SymbolErrorCounter": 3}
    aggregate = basic.replace("port 1 ", "port 255 ")
    assert parse_perfquery_counters(basic + aggregate) == (port,)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "no `# Port ... counters:` header", None),
        ("SymbolErrorCounter:..............3\n", "not a perfquery `Name:....value` line", 1),
        ("# PortSamplesControl: Lid 1 port 1\n", "not a perfquery port counters header", 1),
        ("# Port counters: Lid 1 port 1\nSymbolErrorCounter:...x\n", "not a perfquery `Name", 2),
        ("# Port counters: Lid 1 port 1\nA:..1\nA:..2\n", "A shown twice", 3),
        ("# Port counters: Lid 1 port 300\n", "port 300 is over 255", 1),
        ("# Port counters: Lid 1 port 1\nSymbolErrorCounter:....٣\n", "not a perfquery `Name", 2),
    ],
)
def test_damage_is_a_parse_error_naming_source_and_line(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_perfquery_counters(text, "reader: perfquery -x")
    assert (raised.value.source, raised.value.line) == ("reader: perfquery -x", line)


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_perfquery_counters, [ONE.read_text(), TWO.read_text()])
)
