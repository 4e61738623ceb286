"""ibstat and ibstatus parsers/renderers: corpus facts, exact re-rendering, truncated and broken blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS

from fabcheck.errors import ParseError
from fabcheck.parsers.ibstat import IbstatCa, IbstatPort, IbstatusPort, parse_ibstat, parse_ibstatus
from tests.parsers.renderers import render_ibstat, render_ibstatus

NIC = CORPUS / "nic-state"
B300 = NIC / "ibstat-b300-cx8-disabled-cx7-4port-rate100.txt"
MLX4 = NIC / "ibstat-mlx4-2port-one-down-polling.txt"
CX4LX = NIC / "ibdev2netdev-ibstat-cma_roce_mode-cx4lx-25g-rocev1-to-v2.txt"
IBSTAT_SAMPLES = [B300, MLX4, CX4LX]
IBSTATUS_SAMPLE = NIC / "ibstatus-filtered-eth25g-ib400g-ndr.txt"


def test_b300_host_lists_eleven_cas_in_lexicographic_order() -> None:
    cas = parse_ibstat(B300.read_text(), source=B300.name)
    assert [ca.name for ca in cas] == [
        "mlx5_0", "mlx5_1", "mlx5_10", "mlx5_2", "mlx5_3", "mlx5_4",
        "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9",
    ]  # fmt: skip
    cx8 = [ca for ca in cas if ca.ca_type == "MT4131"]
    cx7 = [ca for ca in cas if ca.ca_type == "MT4129"]
    assert [ca.name for ca in cx8] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    assert [ca.name for ca in cx7] == ["mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"]
    for ca in cx8:
        (port,) = ca.ports
        assert ca.fw_version == "40.46.5500" and ca.num_ports == 1
        assert (port.state, port.physical_state, port.rate) == ("Down", "Disabled", 10)
        assert (port.base_lid, port.sm_lid, port.link_layer) == (65535, 0, "InfiniBand")
    for ca, lid in zip(cx7, (1, 4, 5, 6), strict=True):
        (port,) = ca.ports
        assert ca.fw_version == "28.47.2526"
        assert (port.state, port.physical_state, port.rate) == ("Active", "LinkUp", 100)
        assert (port.base_lid, port.sm_lid, port.link_layer) == (lid, 1, "InfiniBand")
        assert ca.sys_image_guid == "0x7425540300353de9"
    assert cas[3].ports[0].capability_mask == 0xA750E84A
    assert cas[0].node_type == "CA" and cas[0].hw_version == "0"


def test_mlx4_two_ports_one_polling() -> None:
    (ca,) = parse_ibstat(MLX4.read_text())
    assert (ca.name, ca.ca_type, ca.num_ports, ca.fw_version) == ("mlx4_0", "MT4099", 2, "2.42.5000")
    down, up = ca.ports
    assert (down.number, down.state, down.physical_state, down.rate) == (1, "Down", "Polling", 10)
    assert (down.base_lid, down.sm_lid, down.link_layer) == (0, 0, "InfiniBand")
    assert (up.number, up.state, up.physical_state, up.rate) == (2, "Active", "LinkUp", 56)
    assert (up.base_lid, up.sm_lid, up.link_layer) == (5, 1, "InfiniBand")
    assert up.port_guid == "0x0002c90300b382a2"


def test_multi_command_capture_finds_the_ibstat_block() -> None:
    (ca,) = parse_ibstat(CX4LX.read_text())
    assert (ca.name, ca.ca_type, ca.num_ports, ca.fw_version) == ("mlx5_0", "MT4117", 1, "14.23.1020")
    (port,) = ca.ports
    assert (port.state, port.physical_state, port.rate) == ("Active", "LinkUp", 25)
    assert (port.base_lid, port.sm_lid, port.capability_mask) == (0, 0, 0x04010000)
    assert port.link_layer == "Ethernet"


@pytest.mark.parametrize("sample", IBSTAT_SAMPLES, ids=lambda p: p.name)
def test_render_reproduces_the_captured_block(sample: Path) -> None:
    text = sample.read_text()
    expected = render_ibstat(parse_ibstat(text)).expandtabs().splitlines()
    captured = text.expandtabs().splitlines()
    assert any(captured[i : i + len(expected)] == expected for i in range(len(captured)))


@pytest.mark.parametrize("sample", IBSTAT_SAMPLES, ids=lambda p: p.name)
def test_ibstat_round_trip(sample: Path) -> None:
    cas = parse_ibstat(sample.read_text())
    assert parse_ibstat(render_ibstat(cas)) == cas


def _port(number: int, **changes: object) -> IbstatPort:
    fields: dict = dict(
        number=number, state="Active", physical_state="LinkUp", rate=200, base_lid=12, lmc=0, sm_lid=1,
        capability_mask=0xA751E848, port_guid="0xb83fd20300a12b3c", link_layer="InfiniBand",
    )  # fmt: skip
    fields.update(changes)
    return IbstatPort(**fields)


def test_round_trip_of_rare_rates_and_a_switch() -> None:
    switch = IbstatCa(
        name="switch-01", ca_type="MT54000", num_ports=2, fw_version="27.2010.3118", hw_version="a1",
        node_guid="0x0002c90300a1b2c3", sys_image_guid="0x0002c90300a1b2c3",
        ports=(_port(0), _port(1, rate=40, fdr10=True), _port(2, rate=2.5, state="Armed")),
        node_type="Switch",
    )  # fmt: skip
    text = render_ibstat([switch])
    assert "\t\tRate: 40 (FDR10)\n" in text and "\t\tRate: 2.5\n" in text
    assert text.startswith("Switch 'switch-01'\n\tSwitch type: MT54000\n")
    assert parse_ibstat(text) == (switch,)


def test_single_port_layout() -> None:
    text = (
        "$ ibstat mlx5_0 1\n"
        "CA: 'mlx5_0'\n"
        "Port 1:\n"
        "State: Active\n"
        "Physical state: LinkUp\n"
        "Rate: 400\n"
        "Base lid: 12\n"
        "LMC: 0\n"
        "SM lid: 1\n"
        "Capability mask: 0xa751e848\n"
        "Port GUID: 0xb83fd20300a12b3c\n"
        "Link layer: InfiniBand\n"
    )
    (ca,) = parse_ibstat(text)
    assert ca.name == "mlx5_0" and ca.ca_type is None and ca.num_ports is None
    assert ca.ports == (_port(1, rate=400, capability_mask=0xA751E848),)
    assert render_ibstat([ca]) == text.split("\n", 1)[1]


def test_short_layout_has_no_ports() -> None:
    text = MLX4.read_text()
    header_only = "\n".join(text.splitlines()[:7]) + "\n"
    (ca,) = parse_ibstat(header_only)
    assert ca.ports == () and ca.num_ports == 2


def test_truncated_port_block_names_the_missing_line() -> None:
    lines = MLX4.read_text().splitlines()
    cut = "\n".join(lines[:21]) + "\n"  # port 2 stops after "Rate: 56"
    with pytest.raises(ParseError) as caught:
        parse_ibstat(cut, source="ibstat.txt")
    assert caught.value.line == 21 and "Base lid" in caught.value.message
    assert caught.value.source == "ibstat.txt"


def test_ca_showing_only_some_ports_is_truncated() -> None:
    lines = MLX4.read_text().splitlines()
    with pytest.raises(ParseError) as caught:
        parse_ibstat("\n".join([*lines[:17], "$ "]) + "\n")
    assert "1 of its 2 ports" in caught.value.message and caught.value.line == 17


@pytest.mark.parametrize(
    ("line", "replacement", "message"),
    [
        (9, "                State: Sleepy", "bad State"),
        (10, "                Physical state: Asleep", "bad Physical state"),
        (11, "                Rate: fast", "bad Rate"),
        (12, "                Base lid: -1", "bad Base lid"),
        (15, "                Capability mask: 0x0259486", "bad Capability mask"),
        (16, "                Port GUID: 0002c90300b382a1", "bad Port GUID"),
        (17, "                Link layer:", "bad Link layer"),
        (13, "                SM lid: 0", "expected 'LMC'"),  # a line out of order
        (6, "        Node GUID: 0x2c90300b382a0", "GUID"),
        (3, "        Number of ports: two", "number of ports"),
        (2, "        HCA type: MT4099", "expected 'CA type'"),
    ],
)
def test_broken_line_is_named(line: int, replacement: str, message: str) -> None:
    lines = MLX4.read_text().splitlines()
    lines[line - 1] = replacement
    with pytest.raises(ParseError) as caught:
        parse_ibstat("\n".join(lines) + "\n")
    assert caught.value.line == line
    assert message in caught.value.message


def test_text_without_ibstat_output_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_ibstat("$ ibstat\nibpanic: [1234] main: can't init UMAD library\n")
    assert caught.value.line is None


# --- ibstatus ---------------------------------------------------------------------------------------

FULL_IBSTATUS = (
    "Infiniband device 'mlx5_0' port 1 status:\n"
    "\tdefault gid:\t fe80:0000:0000:0000:b83f:d203:00a1:2b3c\n"
    "\tbase lid:\t 0xc\n"
    "\tsm lid:\t\t 0x1\n"
    "\tstate:\t\t 4: ACTIVE\n"
    "\tphys state:\t 5: LinkUp\n"
    "\trate:\t\t 400 Gb/sec (4X NDR)\n"
    "\tlink_layer:\t InfiniBand\n"
    "\n"
    "Infiniband device 'mlx5_1' port 1 status:\n"
    "\tdefault gid:\t fe80:0000:0000:0000:0ac0:ebff:fe40:8df2\n"
    "\tbase lid:\t 0x0\n"
    "\tsm lid:\t\t 0x0\n"
    "\tstate:\t\t 1: DOWN\n"
    "\tphys state:\t 3: Disabled\n"
    "\trate:\t\t 40 Gb/sec (4X QDR)\n"
    "\tlink_layer:\t Ethernet\n"
    "\n"
)


def test_filtered_ibstatus_sample() -> None:
    eth, ib = parse_ibstatus(IBSTATUS_SAMPLE.read_text(), source=IBSTATUS_SAMPLE.name)
    assert (eth.device, eth.port, eth.rate_gbps, eth.link_layer) == ("mlx5_eth4", 1, 25.0, "Ethernet")
    assert eth.rate_text == "25 Gb/sec (1X EDR)"
    assert (ib.device, ib.port, ib.rate_gbps, ib.link_layer) == ("mlx5_ib0", 1, 400.0, "InfiniBand")
    assert ib.rate_text == "400 Gb/sec (4X NDR)"
    for port in (eth, ib):  # the author kept only rate and link_layer
        assert port.state is None and port.phys_state is None and port.default_gid is None
        assert port.base_lid is None and port.sm_lid is None


def test_full_ibstatus_layout_and_exact_render() -> None:
    active, down = parse_ibstatus(FULL_IBSTATUS)
    assert active == IbstatusPort(
        device="mlx5_0", port=1, default_gid="fe80:0000:0000:0000:b83f:d203:00a1:2b3c", base_lid=12,
        sm_lid=1, state="ACTIVE", state_code=4, phys_state="LinkUp", phys_state_code=5,
        rate_text="400 Gb/sec (4X NDR)", link_layer="InfiniBand",
    )  # fmt: skip
    assert (down.state, down.phys_state, down.rate_gbps) == ("DOWN", "Disabled", 40.0)
    assert render_ibstatus([active, down]) == FULL_IBSTATUS


def test_ibstatus_round_trip_and_unknown_values() -> None:
    ports = parse_ibstatus(IBSTATUS_SAMPLE.read_text())
    text = render_ibstatus(ports)
    assert "\tstate:\t\t unknown\n" in text
    assert parse_ibstatus(text) == ports
    assert render_ibstatus(ports).expandtabs().count("rate:            ") == 2


@pytest.mark.parametrize(
    ("replacement", "message"),
    [
        ("\tstate:\t\t ACTIVE", "state"),
        ("\tbase lid:\t 12", "base lid"),
        ("\trate:\t\t fast", "rate"),
        ("\tspeed:\t\t 400", "unexpected"),
        ("\tlink_layer:\t InfiniBand", "twice"),
    ],
)
def test_broken_ibstatus_line_is_named(replacement: str, message: str) -> None:
    lines = FULL_IBSTATUS.splitlines()
    lines[4] = replacement  # the state line of mlx5_0 (line 5)
    if message == "twice":
        lines[3] = replacement
    with pytest.raises(ParseError) as caught:
        parse_ibstatus("\n".join(lines))
    assert caught.value.line == 5
    assert message in caught.value.message


def test_text_without_ibstatus_output_is_an_error() -> None:
    with pytest.raises(ParseError):
        parse_ibstatus("Fatal error:  device 'mlx5_9': sys files not found\n")
