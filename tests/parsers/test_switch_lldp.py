"""LLDP neighbour tables of NVUE, EOS and SONiC: read by layout, refused when damaged or ambiguous."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_lldp import parse_eos_lldp, parse_nvue_lldp, parse_sonic_lldp
from fabcheck.parsers.switch_records import LldpNeighbor

# As NVIDIA documents `nv show interface lldp` (servers send their MAC as port id).
NVUE = """\
Interface  Speed  Type  Remote Host      Remote Port
---------  -----  ----  ---------------  -----------------
eth0       1G     eth   oob-mgmt-switch  swp10
swp1       1G     swp   server01         48:b0:2d:76:ee:8e
swp2       1G     swp
swp49      1G     swp   leaf02           swp49
"""

SONIC = """\
Capability codes: (R) Router, (B) Bridge, (O) Other
LocalPort    RemoteDevice    RemotePortID     Capability    RemotePortDescr
-----------  --------------  ---------------  ------------  -----------------
Ethernet0    gpu01           ens1np0          O             ens1np0
Ethernet4    spine01         Ethernet1/51     BR            spine01:Ethernet1/51
--------------------------------------------------
Total entries displayed:  2
"""

EOS = {
    "tablesLastChangeTime": 1652231658.94,
    "tablesAgeOuts": 2,
    "tablesInserts": 5,
    "lldpNeighbors": [
        {"ttl": 120, "neighborDevice": "gpu01.dc1", "neighborPort": "ens3np0", "port": "Ethernet4"},
        {"ttl": 120, "neighborDevice": "spine02", "neighborPort": "Ethernet7", "port": "Ethernet7"},
    ],
    "tablesDeletes": 3,
    "tablesDrops": 0,
}


def test_nvue_table_by_header_offsets_silent_ports_left_out() -> None:
    assert parse_nvue_lldp(NVUE, None, "nvue") == [
        ("eth0", LldpNeighbor("oob-mgmt-switch", "swp10")),
        ("swp1", LldpNeighbor("server01", "48:b0:2d:76:ee:8e")),
        ("swp49", LldpNeighbor("leaf02", "swp49")),
    ]


def test_sonic_table_counts_its_rows() -> None:
    assert parse_sonic_lldp(SONIC) == [
        ("Ethernet0", LldpNeighbor("gpu01", "ens1np0")),
        ("Ethernet4", LldpNeighbor("spine01", "Ethernet1/51")),
    ]
    cut = SONIC.rsplit("----", 1)[0]
    with pytest.raises(ParseError, match="cut short"):
        parse_sonic_lldp(cut)
    with pytest.raises(ParseError, match="2 rows but says 3"):
        parse_sonic_lldp(SONIC.replace("displayed:  2", "displayed:  3"))


def test_eos_json() -> None:
    assert parse_eos_lldp(json.dumps(EOS)) == [
        ("Ethernet4", LldpNeighbor("gpu01.dc1", "ens3np0")),
        ("Ethernet7", LldpNeighbor("spine02", "Ethernet7")),
    ]
    assert parse_eos_lldp(json.dumps(EOS | {"lldpNeighbors": []})) == []


@pytest.mark.parametrize(
    ("parse", "text", "words"),
    [
        (parse_nvue_lldp, "nothing here\n", "no `Interface"),
        (parse_nvue_lldp, "Interface  Speed\n---------  -----\nswp1  1G\n", "lacks `Remote Host`"),
        (parse_sonic_lldp, "LocalPort\n", "no `LocalPort  RemoteDevice"),
        (parse_eos_lldp, '{"lldpNeighbors": {}}', "not a list"),
        (
            parse_eos_lldp,
            '{"lldpNeighbors": [{"port": "Ethernet1", "neighborDevice": 7}]}',
            "no 'neighborPort'",
        ),
        (parse_eos_lldp, '{"other": []}', "no 'lldpNeighbors'"),
        (parse_eos_lldp, "% Invalid input", "not JSON"),
    ],
)
def test_damaged_output_is_a_parse_error(parse: Callable[..., object], text: str, words: str) -> None:
    with pytest.raises(ParseError, match=words):
        parse(text, None, "probe")


def test_a_port_with_two_neighbours_is_ambiguous_alone_not_guessed() -> None:
    doubled = dict(EOS)
    doubled["lldpNeighbors"] = [*EOS["lldpNeighbors"], {**EOS["lldpNeighbors"][0], "neighborDevice": "gpu02"}]
    assert parse_eos_lldp(json.dumps(doubled)) == [
        ("Ethernet4", LldpNeighbor("gpu01.dc1", "ens3np0", (("gpu02", "ens3np0"),))),
        ("Ethernet7", LldpNeighbor("spine02", "Ethernet7")),
    ]
    ambiguous = [port for port, heard in parse_eos_lldp(json.dumps(doubled)) if heard.ambiguous]
    assert ambiguous == ["Ethernet4"]


REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "sonic"


def test_sonic_table_read_by_its_columns_an_empty_system_shifts_nothing() -> None:
    """lldpshow's table (tabulate 0.9.0, as sonic-utilities pins it) with a neighbour that sends no
    SysName: its RemoteDevice cell is empty; the MAC stays the port id, `O` stays the capability. eth0,
    the management port, hears two switches: only eth0 is ambiguous."""
    text = (REAL / "show-lldp-table-no-sysname-mgmt-two.txt").read_text()
    assert parse_sonic_lldp(text, None, "real") == [
        ("Ethernet0", LldpNeighbor("gpu01", "ens1np0")),
        ("Ethernet4", LldpNeighbor("", "1c:34:da:5e:00:04")),
        ("Ethernet8", LldpNeighbor("spine01", "Ethernet1/51")),
        ("eth0", LldpNeighbor("mgmt-sw01", "swp10", (("mgmt-sw02", "swp12"),))),
    ]
    # sonic-utilities' own two-MAC test vector: Ethernet0 ambiguous, nothing refused
    two = (REAL / "show-lldp-table-two-macs-one-port.txt").read_text()
    [(port, heard)] = parse_sonic_lldp(two, None, "real")
    assert port == "Ethernet0" and heard.others == (("dummy", "00:00:00:00:00:02"),)


def test_sonic_rows_off_the_header_columns_are_refused() -> None:
    # a cell wider than its column (a table that is not tabulate's) crosses the next column's start
    shifted = SONIC.replace("spine01         Ethernet1/51", "spine01-a-very-long Ethernet1/51")
    with pytest.raises(ParseError, match="does not line up with the header's columns"):
        parse_sonic_lldp(shifted)
    no_rule = SONIC.replace(
        "-----------  --------------  ---------------  ------------  -----------------\n", ""
    )
    with pytest.raises(ParseError, match="dashed rule under the"):
        parse_sonic_lldp(no_rule)
    no_port = SONIC.replace("ens1np0          O", "                 O")
    with pytest.raises(ParseError, match="without a LocalPort or RemotePortID"):
        parse_sonic_lldp(no_port)
