"""`saquery` NodeRecords (tests/data/real/ib, INDEX.tsv): the linux-rdma sample, the two leading tabs the
tool prints, several records, old hex LIDs, and damage refused naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.ib_records import IbNodeRecord
from fabcheck.parsers.saquery import parse_saquery_nodes

IB = Path(__file__).resolve().parents[1] / "data" / "real" / "ib"
CX5 = IB / "saquery-nr-connectx5-default-description.txt"

SWITCH = (
    "NodeRecord dump:\n"
    "\t\tlid.....................7\n"
    "\t\treserved................0x0\n"
    "\t\tbase_version............0x1\n"
    "\t\tclass_version...........0x1\n"
    "\t\tnode_type...............Switch\n"
    "\t\tnum_ports...............65\n"
    "\t\tsys_guid................0x2c5eab0300b87b40\n"
    "\t\tnode_guid...............0x2c5eab0300b87b40\n"
    "\t\tport_guid...............0x2c5eab0300b87b40\n"
    "\t\tpartition_cap...........0x20\n"
    "\t\tdevice_id...............0xD2F2\n"
    "\t\trevision................0xA0\n"
    "\t\tport_num................0\n"
    "\t\tvendor_id...............0x2C9\n"
    "\t\tNodeDescription.........MF0;leaf01:MQM9700/U1\n"
)


def tabbed(text: str) -> str:
    """The sample as saquery prints it: the mail it was pasted in dropped the two tabs of each field."""
    return "".join(line if line.startswith("NodeRecord") else "\t\t" + line for line in text.splitlines(True))


def test_the_connectx5_record() -> None:
    (record,) = parse_saquery_nodes(CX5.read_text(), CX5.name)
    assert record == IbNodeRecord(
        lid=134,
        node_type="Channel Adapter",
        num_ports=1,
        node_guid="0x98039b03006c7913",
        port_guid="0x98039b03006c7913",
        port_num=1,
        vendor_id=0x2C9,
        device_id=0x1017,
        system_image_guid="0x98039b03006c7912",
        description="MT4119 ConnectX5   Mellanox Technologies",
    )


def test_records_in_order_with_the_tabs_saquery_prints() -> None:
    records = parse_saquery_nodes(tabbed(CX5.read_text()) + SWITCH)
    assert [(r.lid, r.node_type, r.port_num, r.description) for r in records] == [
        (134, "Channel Adapter", 1, "MT4119 ConnectX5   Mellanox Technologies"),
        (7, "Switch", 0, "MF0;leaf01:MQM9700/U1"),
    ]
    assert records[1].device_id == 0xD2F2 and records[1].num_ports == 65


def test_old_saquery_hex_lids_and_a_zero_system_guid() -> None:
    old = SWITCH.replace("lid.....................7", "lid.....................0x7").replace(
        "sys_guid................0x2c5eab0300b87b40", "sys_guid................0x0000000000000000"
    )
    (record,) = parse_saquery_nodes(old)
    assert (record.lid, record.system_image_guid) == (7, None)


def test_a_description_with_dots_and_an_empty_one() -> None:
    dotted = SWITCH.replace("MF0;leaf01:MQM9700/U1", "...leaf01.")
    assert parse_saquery_nodes(dotted)[0].description == "...leaf01."
    empty = SWITCH.replace("MF0;leaf01:MQM9700/U1", "")
    assert parse_saquery_nodes(empty)[0].description == ""


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "no `NodeRecord dump:`", None),
        ("lid.....................7\n", "not a NodeRecord", 1),
        (SWITCH.replace("\t\tport_num................0\n", ""), "NodeRecord without port_num", 1),
        (
            SWITCH.replace("node_type...............Switch", "node_type...............Hub"),
            "node_type 'Hub'",
            6,
        ),
        (SWITCH.replace("lid.....................7", "lid....................7"), "not a NodeRecord", 2),
        (
            SWITCH.replace("lid.....................7", "lid.....................70000"),
            "lid 70000 is over",
            2,
        ),
        (SWITCH.replace("0x2C9", "2C9"), "is not 0x-prefixed hex", 15),
        (SWITCH.replace("port_guid...............0x", "port_guid...............zz"), "port_guid 'zz", 10),
        (SWITCH + "\t\tlid.....................8\n", "lid shown twice", 17),
        (SWITCH.replace("lid.....................7", "lid.....................٣"), "NodeRecord field", 2),
    ],
)
def test_damage_is_a_parse_error_naming_source_and_line(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_saquery_nodes(text, "reader: saquery")
    assert (raised.value.source, raised.value.line) == ("reader: saquery", line)


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_saquery_nodes, [CX5.read_text(), tabbed(CX5.read_text()) + SWITCH])
)
