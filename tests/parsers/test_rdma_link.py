"""rdma link parser/renderers: the GKE corpus sample, IB and -d fields, old layout, JSON, bad lines."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS

from fabcheck.errors import ParseError
from fabcheck.parsers.rdma_link import RdmaLink, parse_rdma_link
from tests.parsers.renderers import render_rdma_link, render_rdma_link_json

SAMPLE = CORPUS / "nic-state" / "rdma-link-gke-8xmlx5-one-netdev.txt"

IB_DETAILS = (
    "$ rdma link show -d\n"
    "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 13 sm_lid 1 lmc 0 state ACTIVE "
    "physical_state LINK_UP netdev ib0 netdev_index 5 \n"
    "    caps: <SM, CM, DEVICE_MGMT>\n"
    "link mlx5_1/1 state DOWN physical_state DISABLED netdev ens2f1np1 netdev_index 7 \n"
    "    caps: <CM>\n"
)


def test_gke_sample_eight_active_links_one_netdev() -> None:
    links = parse_rdma_link(SAMPLE.read_text(), source=SAMPLE.name)
    assert [link.name for link in links] == [f"mlx5_{n}/1" for n in range(8)]
    assert {(link.state, link.physical_state) for link in links} == {("ACTIVE", "LINK_UP")}
    assert {link.name: link.netdev for link in links if link.netdev} == {"mlx5_3/1": "gpu3rdma0"}
    assert all(link.lid is None and link.subnet_prefix is None for link in links)


def test_render_reproduces_the_sample() -> None:
    links = parse_rdma_link(SAMPLE.read_text())
    rendered = render_rdma_link(links)
    assert all(line.endswith(" ") for line in rendered.splitlines())  # iproute2 ends fields with a space
    assert [line.rstrip() for line in rendered.splitlines()] == SAMPLE.read_text().splitlines()


def test_infiniband_and_detail_fields() -> None:
    ib, eth = parse_rdma_link(IB_DETAILS)
    assert ib == RdmaLink(
        dev="mlx5_0", port=1, state="ACTIVE", physical_state="LINK_UP", netdev="ib0", netdev_index=5,
        subnet_prefix="fe80:0000:0000:0000", lid=13, sm_lid=1, lmc=0, caps=("SM", "CM", "DEVICE_MGMT"),
    )  # fmt: skip
    assert (eth.state, eth.physical_state, eth.netdev_index, eth.caps) == ("DOWN", "DISABLED", 7, ("CM",))
    assert render_rdma_link([ib, eth]) == IB_DETAILS.split("\n", 1)[1]


def test_pre_4_19_layout_keeps_the_device_index() -> None:
    text = "1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0 \n"
    (link,) = parse_rdma_link(text)
    assert (link.ifindex, link.dev, link.port, link.netdev) == (1, "mlx5_0", 1, "ens1f0")
    assert render_rdma_link([link]) == text


def test_json_forms() -> None:
    compact = (
        '[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP",'
        '"netdev":"ens1f0np0","netdev_index":4},'
        '{"ifindex":1,"ifname":"mlx5_1","port":1,"subnet_prefix":"fe80:0000:0000:0000","lid":3,'
        '"sm_lid":1,"lmc":0,"state":"INIT","physical_state":"LINK_UP","caps":["SM","CM"]}]'
    )
    roce, ib = parse_rdma_link("$ rdma -j link\n" + compact + "\n$ \n")
    assert (roce.ifindex, roce.name, roce.netdev, roce.netdev_index) == (0, "mlx5_0/1", "ens1f0np0", 4)
    assert (ib.lid, ib.sm_lid, ib.state, ib.caps) == (3, 1, "INIT", ("SM", "CM"))
    pretty = json.dumps(json.loads(compact), indent=4)
    assert parse_rdma_link("rdma -j -p link\n" + pretty + "\nnext command\n") == (roce, ib)
    old_ifname = '[{"ifindex":0,"ifname":"mlx5_0/1","state":"ACTIVE","physical_state":"LINK_UP"}]'
    assert parse_rdma_link(old_ifname)[0].name == "mlx5_0/1"
    assert parse_rdma_link("[]") == ()


@pytest.mark.parametrize("text", [SAMPLE.read_text(), IB_DETAILS], ids=["gke-sample", "ib-details"])
def test_round_trips_through_text_and_json(text: str) -> None:
    links = parse_rdma_link(text)
    assert parse_rdma_link(render_rdma_link(links)) == links
    assert parse_rdma_link(render_rdma_link_json(links)) == links


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("link mlx5_0/1 state ACTIVE physical_state", "key value"),
        ("link mlx5_0/1 state SLEEPING physical_state LINK_UP", "port state"),
        ("link mlx5_0/1 state ACTIVE physical_state WARM", "physical state"),
        ("link mlx5_0/1 physical_state LINK_UP netdev eth0", "no state"),
        ("link mlx5_0/1 state ACTIVE physical_state LINK_UP lid x1", "lid"),
    ],
)
def test_bad_text_line_is_named(line: str, message: str) -> None:
    text = SAMPLE.read_text().splitlines()
    text[2] = line
    with pytest.raises(ParseError) as caught:
        parse_rdma_link("\n".join(text), source="links.txt")
    assert caught.value.line == 3 and caught.value.source == "links.txt"
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"ifname":"mlx5_0","port":1,"state":"ACTIVE",', "decode"),
        ('[{"ifname":"mlx5_0","port":"1","state":"ACTIVE","physical_state":"LINK_UP"}]', "port"),
        ('[{"port":1,"state":"ACTIVE","physical_state":"LINK_UP"}]', "ifname"),
        ('[{"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","lid":"3"}]', "lid"),
        ('[{"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","caps":"SM"}]', "caps"),
        ('[{"ifname":"mlx5_0/2","port":1,"state":"ACTIVE","physical_state":"LINK_UP"}]', "port"),
        ('[{"ifname": "mlx5_0"}, 2]', "list of objects"),
    ],
)
def test_bad_json_is_an_error(text: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_rdma_link("$ rdma -j link\n" + text + "\n")
    assert caught.value.line == 2 and message in caught.value.message


def test_same_port_twice_is_an_error() -> None:
    with pytest.raises(ParseError):
        parse_rdma_link(SAMPLE.read_text() + SAMPLE.read_text().splitlines()[0] + "\n")


def test_text_without_rdma_link_output_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_rdma_link(
            "$ ip link\n2: eth0: <BROADCAST,MULTICAST,UP> mtu 1500\n    link/ether 00:11:22:33:44:55\n"
        )
    assert caught.value.line is None
