"""ibv_devinfo parser/renderer: the -vv corpus sample, the plain layout, enum codes, truncation."""

from __future__ import annotations

import pytest
from conftest import CORPUS

from fabcheck.errors import ParseError
from fabcheck.parsers.ibv_devinfo import IbvDevice, IbvGid, IbvPort, parse_ibv_devinfo
from tests.parsers.renderers import render_ibv_devinfo

SAMPLE = CORPUS / "nic-state" / "ibv_devinfo-vv-cx6dx-bond-roce-2x50g-gids.txt"

# Plain `ibv_devinfo` of a two-port ConnectX-6 (IB on port 1, down Ethernet port 2) and a CX-7.
PLAIN = (
    "$ ibv_devinfo\n"
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t20.31.1014\n"
    "\tnode_guid:\t\t\t0c42:a103:0012:3456\n"
    "\tsys_image_guid:\t\t\t0c42:a103:0012:3456\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4123\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tboard_id:\t\t\tMT_0000000223\n"
    "\tphys_port_cnt:\t\t\t2\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t1\n"
    "\t\t\tport_lid:\t\t7\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\n"
    "\t\tport:\t2\n"
    "\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t1024 (3)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\n"
    "hca_id:\tmlx5_1\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tnode_guid:\t\t\tb83f:d203:00a1:2b3c\n"
    "\tsys_image_guid:\t\t\tb83f:d203:00a1:2b3c\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\n"
    "$ echo done\n"
)


def _line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if fragment in line)


def test_vv_sample_facts() -> None:
    (device,) = parse_ibv_devinfo(SAMPLE.read_text(), source=SAMPLE.name)
    assert device.hca_id == "mlx5_bond_0"
    assert device.transport == "InfiniBand"
    assert device.fw_ver == "22.36.1010"
    assert device.node_guid == device.sys_image_guid == "08c0:eb03:00f0:28b2"
    assert (device.vendor_id, device.vendor_part_id) == (0x02C9, 4125)
    assert device.board_id == "MT_0000000359"
    assert device.phys_port_cnt == 1
    (port,) = device.ports
    assert port.number == 1
    assert port.state == "PORT_ACTIVE"
    assert (port.max_mtu, port.active_mtu) == (4096, 4096)
    assert (port.sm_lid, port.port_lid, port.port_lmc) == (0, 0, 0)
    assert port.link_layer == "Ethernet"
    assert port.gid_tbl_len == 255
    assert (port.active_width, port.active_speed) == ("2X", "50.0 Gbps")
    assert port.link_rate_gbps == 100.0
    assert port.phys_state == "LINK_UP"
    assert dict(port.gids) == {
        0: IbvGid("fe80:0000:0000:0000:0ac0:ebff:fef0:28b2", "RoCE v1"),
        1: IbvGid("fe80::ac0:ebff:fef0:28b2", "RoCE v2"),
        2: IbvGid("0000:0000:0000:0000:0000:ffff:1b69:b303", "RoCE v1"),
        3: IbvGid("::ffff:27.105.179.3", "RoCE v2"),
    }
    assert port.gids[0].address == port.gids[1].address  # same GID, full vs compressed form
    assert [g.ipv4 for g in port.gids.values()] == [None, None, "27.105.179.3", "27.105.179.3"]
    roce_v2_ipv4 = [n for n, g in port.gids.items() if g.kind == "RoCE v2" and g.ipv4]
    assert roce_v2_ipv4 == [3]


def test_plain_layout_with_two_devices() -> None:
    first, second = parse_ibv_devinfo(PLAIN)
    assert [p.number for p in first.ports] == [1, 2]
    assert first.ports[0].link_layer == "InfiniBand" and first.ports[0].port_lid == 7
    assert first.ports[1].state == "PORT_DOWN" and first.ports[1].active_mtu == 1024
    assert first.ports[0].active_width is None and dict(first.ports[0].gids) == {}
    assert first.ports[0].link_rate_gbps is None
    assert second.fw_ver is None and second.board_id is None  # lines the tool skips when empty
    assert second.vendor_part_id == 4129


def test_render_matches_the_plain_layout_exactly() -> None:
    devices = parse_ibv_devinfo(PLAIN)
    body = PLAIN.split("\n", 1)[1].rsplit("$ echo done\n", 1)[0]
    assert render_ibv_devinfo(devices) == body


@pytest.mark.parametrize("text", [PLAIN, SAMPLE.read_text()], ids=["plain", "vv-sample"])
def test_round_trip(text: str) -> None:
    devices = parse_ibv_devinfo(text)
    assert parse_ibv_devinfo(render_ibv_devinfo(devices)) == devices


def test_round_trip_of_built_records() -> None:
    port = IbvPort(
        number=1,
        state="PORT_ARMED",
        max_mtu=4096,
        active_mtu=2048,
        sm_lid=1,
        port_lid=300,
        port_lmc=2,
        link_layer="InfiniBand",
        gid_tbl_len=128,
        active_width="4X",
        active_speed="100.0 Gbps",
        phys_state="LINK_UP",
        gids={0: IbvGid("fe80::b83f:d203:a1:2b3c")},
    )
    device = IbvDevice("mlx5_2", "InfiniBand", "28.39.1002", "b83f:d203:00a1:2b3c", "b83f:d203:00a1:2b3c",
                       0x15B3, 4129, "0x0", None, 1, (port,))  # fmt: skip
    text = render_ibv_devinfo([device])
    assert "\t\t\tactive_speed:\t\t100.0 Gbps (128)\n" in text
    assert "\t\t\tGID[  0]:\t\tfe80::b83f:d203:a1:2b3c\n" in text
    assert "\tvendor_id:\t\t\t0x15b3\n" in text
    assert parse_ibv_devinfo(text) == (device,)
    assert parse_ibv_devinfo(text)[0].ports[0].link_rate_gbps == 400.0


def test_no_devices_is_an_empty_reading() -> None:
    assert parse_ibv_devinfo("$ ibv_devinfo\nNo IB devices found\n") == ()
    assert render_ibv_devinfo([]) == "No IB devices found\n"


def test_old_tool_naming_an_unknown_speed_is_read_from_the_code() -> None:
    text = PLAIN.replace("\t\t\tlink_layer:\t\tInfiniBand\n", "\t\t\tlink_layer:\t\tInfiniBand\n"
                         "\t\t\tmax_msg_sz:\t\t0x40000000\n"
                         "\t\t\tactive_width:\t\t4X (2)\n"
                         "\t\t\tactive_speed:\t\tinvalid speed (128)\n"
                         "\t\t\tphys_state:\t\tLINK_UP (5)\n", 1)  # fmt: skip
    port = parse_ibv_devinfo(text)[0].ports[0]
    assert port.active_speed == "100.0 Gbps" and port.link_rate_gbps == 400.0


def test_fdr10_speed_code_is_accepted() -> None:
    text = PLAIN.replace("\t\t\tlink_layer:\t\tInfiniBand\n", "\t\t\tlink_layer:\t\tInfiniBand\n"
                         "\t\t\tactive_width:\t\t4X (2)\n"
                         "\t\t\tactive_speed:\t\t10.0 Gbps (8)\n", 1)  # fmt: skip
    assert parse_ibv_devinfo(text)[0].ports[0].active_speed == "10.0 Gbps"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("PORT_ACTIVE (4)", "PORT_ACTIVE (3)", "disagree"),
        ("PORT_ACTIVE (4)", "PORT_SLEEPY (9)", "disagree"),
        ("\t\t\tmax_mtu:\t\t4096 (5)", "\t\t\tmax_mtu:\t\t4000 (5)", "max_mtu"),
        ("\t\t\tactive_mtu:\t\t4096 (5)", "\t\t\tactive_mtu:\t\t4096 (4)", "disagree"),
        ("\t\t\tsm_lid:\t\t\t1", "\t\t\tsm_lid:\t\t\tone", "sm_lid"),
        ("\t\t\tport_lmc:\t\t0x00", "\t\t\tport_lmc:\t\t00", "port_lmc"),
        ("\t\t\tport_lid:\t\t7", "\t\t\tport_lid:\t\t7\n\t\t\tport_lid:\t\t8", "twice"),
        ("\t\t\tport_lid:\t\t7", "\t\t\tthis line is no key value pair", "unexpected"),
        ("\t\t\tport_lid:\t\t7", "\t\t\tport_lid:\t\t7\n\tfw_ver:\t\t\t\t1.2.3", "inside a port block"),
    ],
)
def test_bad_port_value_names_its_line(old: str, new: str, message: str) -> None:
    text = PLAIN.replace(old, new, 1)
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(text, source="devinfo.txt")
    bad_line = new.split("\n")[-1].strip()
    assert caught.value.line == _line_of(text, bad_line)
    assert message in caught.value.message and caught.value.source == "devinfo.txt"


def test_bad_device_values() -> None:
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(PLAIN.replace("0c42:a103:0012:3456\n", "0c42:a103:12:3456\n", 1))
    assert caught.value.line == 5 and "node_guid" in caught.value.message
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(PLAIN.replace("InfiniBand (0)", "InfiniBand (1)", 1))
    assert caught.value.line == 3


def test_truncated_port_block_is_an_error() -> None:
    cut = PLAIN[: PLAIN.index("\t\t\tlink_layer:\t\tEthernet")]  # port 2 of mlx5_0 loses its last line
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(cut)
    assert "link_layer" in caught.value.message
    assert caught.value.line == len(cut.splitlines())


def test_device_cut_before_its_ports_is_an_error() -> None:
    cut = PLAIN[: PLAIN.index("\t\tport:\t1")]
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(cut)
    assert "before its first port" in caught.value.message and caught.value.line == 11


def test_verbose_port_without_width_is_truncated() -> None:
    text = SAMPLE.read_text()
    cut = text[: text.index("\t\t\tactive_width:")]
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(cut)
    assert "active_width" in caught.value.message


def test_port_number_beyond_phys_port_cnt_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(PLAIN.replace("\t\tport:\t2\n", "\t\tport:\t3\n", 1))
    assert "phys_port_cnt" in caught.value.message


def test_bad_gid_is_an_error() -> None:
    text = SAMPLE.read_text().replace("::ffff:27.105.179.3", "::ffff:27.105.179.300")
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(text)
    assert caught.value.line == _line_of(text, "GID[  3]")


def test_text_without_devinfo_output_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo("$ ibv_devinfo\nbash: ibv_devinfo: command not found\n")
    assert caught.value.line is None
