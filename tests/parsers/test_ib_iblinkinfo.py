"""`iblinkinfo --line` port lines: a saved real test input (tests/data/real/ib, INDEX.tsv: edited, read
once its `== (` is put back to `==(`) and lines rendered here from rdma-core iblinkinfo.c print_port's
format strings (@691953d): widths and per-lane rates, down ports, an up port with no peer, switch vs CA
told by how many ports show a GUID, damage refused naming the line."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers._text import MAX_LINE_CHARS
from fabcheck.parsers.ib_records import IbPortEnd
from fabcheck.parsers.iblinkinfo import parse_iblinkinfo_lines

SX6036 = Path(__file__).resolve().parents[1] / "data" / "real" / "ib" / "iblinkinfo-line-fdr-sx6036-hca.txt"
LEAF, SPINE, HCA = 0x2C5EAB0300B87B40, 0x2C5EAB0300C26280, 0xE09D7303007A4BD8


def local(guid: int, desc: str, lid: int, port: int) -> str:
    """The local part in line mode: `0x%016x "%30s" %6d %4d[%2s]`."""
    return f'0x{guid:016x} "{desc:>30}" {lid:6d} {port:4d}[  ]'


def link(width: str, speed: str, state: str = "Active", physical: str = "LinkUp") -> str:
    """`(%3s %18s %6s/%8s)` of an up port."""
    return f"==({width:>3} {speed:>18} {state:>6}/{physical:>8})==>"


def up(
    guid: int, desc: str, lid: int, port: int, width: str, speed: str, peer: tuple[int, int, int, str]
) -> str:
    """An up port with a peer: the peer's GUID, LID, port, description and (empty) max messages."""
    pguid, plid, pport, pdesc = peer
    remote = f'0x{pguid:016x} {plid:6d} {pport:4d}[  ] "{pdesc}" ( )'
    return f"{local(guid, desc, lid, port)} {link(width, speed)}  {remote}"


DOWN = (
    f'{local(LEAF, "leaf01", 7, 18)} ==(              {"Down":>6}/{"Polling":>8})==>             [  ] "" ( )'
)
NOT_AVAILABLE = f'{local(LEAF, "leaf01", 7, 19)} {link("4X", "106.25 Gbps")}      "Port not available"'
FABRIC = "\n".join(
    (
        up(LEAF, "leaf01", 7, 1, "4X", "106.25 Gbps", (HCA, 647, 1, "gpu01 mlx5_0")),
        up(LEAF, "leaf01", 7, 33, "1X", "53.125 Gbps", (SPINE, 9, 1, "spine01")),
        DOWN,
        NOT_AVAILABLE,
        up(HCA, "gpu01 mlx5_0", 647, 1, "4X", "106.25 Gbps", (LEAF, 7, 1, "leaf01")),
        up(SPINE, "spine01", 9, 1, "1X", "53.125 Gbps", (LEAF, 7, 33, "leaf01")),
        up(SPINE, "spine01", 9, 2, "4X", FDR10 := "10.0 Gbps (FDR10)", (LEAF, 7, 34, "leaf01")),
    )
)


def test_ports_widths_per_lane_rates_and_peers() -> None:
    topology = parse_iblinkinfo_lines(FABRIC, "reader: iblinkinfo --line")
    first = topology.ports[0]
    assert first.local == IbPortEnd("SW", 7, 1, f"0x{LEAF:016x}", "leaf01")
    assert (first.width, first.speed) == ("4x", "NDR")
    assert first.peer == IbPortEnd("CA", 647, 1, f"0x{HCA:016x}", "gpu01 mlx5_0")
    assert [(p.local.port, p.width, p.speed) for p in topology.ports[1:4]] == [
        (33, "1x", "HDR"),
        (18, None, None),  # down: iblinkinfo shows neither
        (19, "4x", "NDR"),
    ]
    assert topology.ports[2].peer is None and topology.ports[3].peer is None
    assert topology.ports[6].speed == "FDR10"


def test_links_pair_like_ibnetdiscover() -> None:
    links = parse_iblinkinfo_lines(FABRIC).links()
    described = {(link.a.description, link.a.port, link.b.description, link.b.port) for link in links}
    assert ("leaf01", 33, "spine01", 1) in described
    uplink = next(link for link in links if {link.a.port, link.b.port} == {33, 1})
    assert (uplink.width_a, uplink.speed_a, uplink.width_b, uplink.speed_b) == ("1x", "HDR", "1x", "HDR")


@pytest.mark.parametrize(
    ("speed", "expected"),
    [
        ("2.5 Gbps", "SDR"),
        ("14.0625 Gbps", "FDR"),
        ("25.78125 Gbps", "EDR"),
        ("212.5 Gbps", "XDR"),
        ("undefined (16)", None),
        ("2.5 Gbps or 5.0 Gbps", None),
    ],
)
def test_every_rate_name(speed: str, expected: str | None) -> None:
    line = up(LEAF, "leaf01", 7, 1, "4X", speed, (HCA, 647, 1, "gpu01 mlx5_0"))
    assert parse_iblinkinfo_lines(line).ports[0].speed == expected


def test_an_undefined_width_and_a_long_description() -> None:
    line = up(
        LEAF,
        "MF0;leaf01-with-a-very-long-name:MQM9700/U1",
        7,
        1,
        "undefined (3)",
        "106.25 Gbps",
        (HCA, 1, 1, ""),
    )
    port = parse_iblinkinfo_lines(line).ports[0]
    assert (port.local.description, port.width, port.speed) == (
        "MF0;leaf01-with-a-very-long-name:MQM9700/U1",
        None,
        "NDR",
    )
    assert port.peer is not None and port.peer.description == ""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("Switch: 0x2c5eab0300b87b40 leaf01:", "no ==\\( ... \\)==>"),
        (DOWN.replace('"', "", 2), "before the link"),
        (DOWN.replace("Down/ Polling", "Down Polling"), "<state>/<physical state>"),
        (up(LEAF, "x", 7, 1, "5X", "106.25 Gbps", (HCA, 1, 1, "y")), "width '5X'"),
        (up(LEAF, "x", 7, 1, "4X", "99.0 Gbps", (HCA, 1, 1, "y")), "speed '99.0 Gbps'"),
        (
            up(LEAF, "x", 7, 1, "4X", "106.25 Gbps", (HCA, 1, 1, "y")).replace('"y" ( )', '"y"'),
            "the peer is not",
        ),
        (up(LEAF, "x", 70000, 1, "4X", "106.25 Gbps", (HCA, 1, 1, "y")), "LID 70000 is over"),
        (up(LEAF, "x", 7, 1, "4X", "106.25 Gbps", (HCA, 1, 300, "y")), "port 300 is over"),
    ],
)
def test_damage_is_a_parse_error_naming_source_and_line(line: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_iblinkinfo_lines(DOWN + "\n" + line + "\n", "reader: iblinkinfo --line")
    assert (raised.value.source, raised.value.line) == ("reader: iblinkinfo --line", 2)
    with pytest.raises(ParseError, match="no port line"):
        parse_iblinkinfo_lines("\n", "reader")


def test_a_64_kib_line_is_answered_in_milliseconds() -> None:
    for filler in ('" (', " ", '"', "==(", "0x" + "a" * 16 + " 1 1[  ] "):
        body = (filler * MAX_LINE_CHARS)[: MAX_LINE_CHARS - 200]
        for text in (DOWN.replace("leaf01", body), DOWN.replace('[  ] "" ( )', body), body + ")==>"):
            started = time.perf_counter()
            with contextlib.suppress(ParseError):
                parse_iblinkinfo_lines(text)
            assert time.perf_counter() - started < 0.05, filler


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_iblinkinfo_lines, [FABRIC])
)


def test_the_saved_fdr_lines_once_the_edit_is_undone() -> None:
    saved = SX6036.read_text()
    with pytest.raises(ParseError, match=r"no ==\( \.\.\. \)==>") as raised:
        parse_iblinkinfo_lines(saved, SX6036.name)
    assert raised.value.line == 1  # `== (`: no iblinkinfo prints that
    topology = parse_iblinkinfo_lines(saved.replace("== (", "==("), SX6036.name)
    first = topology.ports[0]
    assert first.local == IbPortEnd("CA", 37, 1, "0xf452140300f55051", "ib-test-7 mlx4_0")
    assert (first.width, first.speed) == ("4x", "FDR")
    # the switch's GUID shows on two ports (16 and 18): a switch, though the line names no node type
    assert first.peer == IbPortEnd("SW", 5, 16, "0xf45214030067c630", "MF0;switch-e1be74:SX6036/U1")
    assert [(p.peer.port if p.peer else None) for p in topology.ports] == [16, 17, 18]
