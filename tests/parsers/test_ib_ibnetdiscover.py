"""`ibnetdiscover -p` port lines (tests/data/real/ib, INDEX.tsv): ports, peers, links paired from both
ends, unknown width/speed, stray spaces in descriptions, and damage refused naming the line."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers._text import MAX_LINE_CHARS
from fabcheck.parsers.ib_records import IbLink, IbPortEnd, IbPortSeen
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports

IB = Path(__file__).resolve().parents[1] / "data" / "real" / "ib"
EDR = IB / "ibnetdiscover-p-edr-two-leaves.txt"
HDR = IB / "ibnetdiscover-p-hdr-stray-spaces.txt"
UNQUOTED = IB / "ibnetdiscover-p-unquoted-description.txt"

LEAF = "0x7cfe9003009ce5b0"
LINE = (
    "SW  1719 10 0x7cfe9003009ce5b0 4x EDR - CA   134  1 0x7cfe9003003b4bde ( 'ib-i1l1s01' - 'o0001 HCA-1' )"
)


def test_the_edr_sample_every_port_line_and_its_peer() -> None:
    topology = parse_ibnetdiscover_ports(EDR.read_text(), EDR.name)
    assert topology.source == EDR.name
    assert len(topology.ports) == 9
    first = topology.ports[0]
    assert first == IbPortSeen(
        IbPortEnd("CA", 134, 1, "0x7cfe9003003b4bde", "o0001 HCA-1"),
        "4x",
        "EDR",
        IbPortEnd("SW", 1719, 10, LEAF, "ib-i1l1s01"),
    )
    unconnected = [port for port in topology.ports if port.peer is None]
    assert [(p.local.description, p.local.port, p.width, p.speed) for p in unconnected] == [
        ("ib-i4l1s01", 37, "4x", None),  # `???`: not known, never a default
        ("ib-i7l2s01", 80, "4x", "SDR"),
    ]


def test_the_edr_sample_pairs_each_cable_from_its_two_lines() -> None:
    links = parse_ibnetdiscover_ports(EDR.read_text()).links()
    assert [(link.a.description, link.a.port, link.b.description, link.b.port) for link in links] == [
        ("ib-i4l1s01", 35, "p0001 HCA-1", 1),
        ("o0002 HCA-1", 1, "ib-i1l1s01", 11),
        ("o0001 HCA-1", 1, "ib-i1l1s01", 10),
        ("ib-i1l1s01", 1, "ib-i1l2s01", 1),
    ]
    both_ends = links[2]
    assert both_ends == IbLink(
        IbPortEnd("CA", 134, 1, "0x7cfe9003003b4bde", "o0001 HCA-1"),
        IbPortEnd("SW", 1719, 10, LEAF, "ib-i1l1s01"),
        "4x",
        "EDR",
        "4x",
        "EDR",
    )
    # the leaf-to-leaf cable shows only from ib-i1l1s01 in this capture: the other end's rate is unknown
    one_end = links[3]
    assert (one_end.width_a, one_end.speed_a, one_end.width_b, one_end.speed_b) == ("4x", "EDR", None, None)


def test_every_switch_port_shows_the_switch_port0_guid_and_lid() -> None:
    topology = parse_ibnetdiscover_ports(EDR.read_text())
    leaf_ports = [end for end in topology.ends() if end.description == "ib-i1l1s01"]
    assert {(end.guid, end.lid) for end in leaf_ports} == {(LEAF, 1719)}
    assert sorted(end.port for end in leaf_ports) == [1, 10, 11]


def test_the_hdr_sample_strips_stray_spaces_and_reads_fields_by_white_space() -> None:
    topology = parse_ibnetdiscover_ports(HDR.read_text(), HDR.name)
    descriptions = {end.description for end in topology.ends()}
    assert {"5FB0405-leaf-IB01", "5FB0406-spine-IB02", "5FB0406-spine-IB03"} <= descriptions
    assert "Mellanox Technologies Aggregation Node" in descriptions
    spine = topology.ports[2]  # "SW    24 1 0x..." one space fewer than %2d prints
    assert (spine.local.lid, spine.local.port, spine.speed, spine.peer) == (24, 1, "SDR", None)
    assert topology.ports[-1].speed == "QDR"


def test_an_unquoted_description_no_rdma_core_prints_is_refused_naming_the_line() -> None:
    with pytest.raises(ParseError, match="quoted description") as raised:
        parse_ibnetdiscover_ports(UNQUOTED.read_text(), UNQUOTED.name)
    assert (raised.value.source, raised.value.line) == (UNQUOTED.name, 1)


def test_every_width_and_speed_name_and_the_unknown_codes() -> None:
    for width in ("1x", "2x", "4x", "8x", "12x"):
        for speed in ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"):
            port = parse_ibnetdiscover_ports(LINE.replace("4x EDR", f"{width} {speed}")).ports[0]
            assert (port.width, port.speed) == (width, speed)
    unknown = parse_ibnetdiscover_ports(LINE.replace("4x EDR", "?? ???")).ports[0]
    assert (unknown.width, unknown.speed) == (None, None)


def test_descriptions_keep_inner_quotes_and_may_be_empty() -> None:
    port = parse_ibnetdiscover_ports(LINE.replace("'ib-i1l1s01'", "'MF0;leaf01:MQM9700/U1'")).ports[0]
    assert port.local.description == "MF0;leaf01:MQM9700/U1"
    empty = parse_ibnetdiscover_ports(LINE.replace("'o0001 HCA-1'", "''")).ports[0]
    assert empty.peer is not None and empty.peer.description == ""
    odd = parse_ibnetdiscover_ports(LINE.replace("o0001 HCA-1", "gpu01's mlx5_0")).ports[0]
    assert odd.peer is not None and odd.peer.description == "gpu01's mlx5_0"


def test_blank_lines_are_skipped_and_no_port_line_is_an_error() -> None:
    assert len(parse_ibnetdiscover_ports("\n" + LINE + "\n\n").ports) == 1
    with pytest.raises(ParseError, match="no port line"):
        parse_ibnetdiscover_ports("\n  \n", "reader: ibnetdiscover -p")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ibwarn: [1234] _do_madrpc: recv failed", "not an ibnetdiscover -p port line"),
        (LINE.replace("4x EDR", "5x EDR"), "width '5x'"),
        (LINE.replace("4x EDR", "4x GDR"), "speed 'GDR'"),
        (LINE.replace("SW  1719", "XX  1719"), "node type 'XX'"),
        (LINE.replace("1719", "65536"), "LID 65536 is over 65535"),
        (LINE.replace(" 10 0x", " 256 0x"), "port 256 is over 255"),
        (LINE.replace("0x7cfe9003003b4bde", "0x7cfe9003003b4b"), "the peer after ' - '"),
        (LINE.replace("( '", "'"), "the descriptions are not"),
        (LINE.replace("o0001 HCA-1", "a' - 'b"), "cannot tell the two descriptions apart"),
        (LINE.replace(" 4x EDR", " 4x EDRX"), "speed 'EDRX'"),
        ("SW  1719 10 0x7cfe9003009ce5b0 4x ???", "must end with its quoted description"),
    ],
)
def test_damage_is_a_parse_error_naming_source_and_line(line: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_ibnetdiscover_ports(LINE + "\n" + line + "\n", "reader: ibnetdiscover -p")
    assert (raised.value.source, raised.value.line) == ("reader: ibnetdiscover -p", 2)


def test_a_64_kib_line_is_answered_in_milliseconds() -> None:
    """Linear matching: the longest line the cap lets through, in every shape a regex could stall on."""
    for filler in (" ", "9", "'", "x", " - "):
        text = LINE[:30] + (filler * MAX_LINE_CHARS)[: MAX_LINE_CHARS - 40] + "'"
        started = time.perf_counter()
        with contextlib.suppress(ParseError):
            parse_ibnetdiscover_ports(text)
        assert time.perf_counter() - started < 0.05, filler


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_ibnetdiscover_ports, [EDR.read_text(), HDR.read_text()])
)


def test_links_do_not_depend_on_the_order_of_the_lines() -> None:
    text = EDR.read_text()
    forward = parse_ibnetdiscover_ports(text).links()
    backward = parse_ibnetdiscover_ports("\n".join(reversed(text.splitlines()))).links()
    assert forward == backward
    assert all(link.a.key <= link.b.key for link in forward)
