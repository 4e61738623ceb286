"""The lab's InfiniBand fabric model and its renderers (fabcheck_lab.ib_fabric): the lab shape, the
faults, the formats (rdma-core infiniband-diags@691953d format strings) and the 2,048-host render time."""

from __future__ import annotations

import json
import re
import time

import pytest

from fabcheck.parsers.iblinkinfo import parse_iblinkinfo_lines
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from fabcheck.parsers.ibqueryerrors import parse_ibqueryerrors
from fabcheck.parsers.perfquery import parse_perfquery_counters
from fabcheck.parsers.saquery import parse_saquery_nodes
from fabcheck.parsers.vendstat import parse_vendstat_general
from fabcheck_lab import ib_fabric as ib


def lab_fabric(hosts: int = 4) -> ib.Fabric:
    names = [(f"gpu{i + 1:02d}", "ib", i) for i in range(hosts)]
    sms = [("sm01", "sm", hosts), ("sm02", "sm", hosts + 1)]
    return ib.two_tier(ib.profile_hcas(names + sms), leaves=2, spines=2)


def test_lab_shape_hosts_spread_over_leaves_with_as_many_uplinks_split_over_spines() -> None:
    fabric = lab_fabric()
    assert [s.name for s in fabric.switches] == ["leaf01", "leaf02", "spine01", "spine02"]
    assert len(fabric.hcas) == 34  # 4 x 8 HCAs + the 2 SM nodes' HCA
    host_cables = [c for c in fabric.cables if "/" in c.a.node]
    uplinks = [c for c in fabric.cables if c.a.node.startswith("leaf")]
    assert len(host_cables) == len(uplinks) == 34
    assert host_cables[0].a == ib.End("gpu01/mlx5_0", 1) and host_cables[0].b == ib.End("leaf01", 1)
    for leaf in ("leaf01", "leaf02"):
        mine = [c for c in uplinks if c.a.node == leaf]
        assert len(mine) == 17 and {c.b.node for c in mine} == {"spine01", "spine02"}
        assert [c.a.port for c in mine] == list(range(33, 50))
    ends = [(e.node, e.port) for c in fabric.cables for e in (c.a, c.b)]
    assert len(ends) == len(set(ends))  # no port cabled twice
    lids = [s.lid for s in fabric.switches] + [h.lid for h in fabric.hcas]
    assert len(lids) == len(set(lids)) and 0 not in lids
    # The HCAs are the mock hosts' own (mockhost/profiles.py): GUID, LID, rdma-ndd's "%h %d".
    gpu01 = fabric.hcas[0]
    assert (gpu01.description, gpu01.lid, f"{gpu01.port_guid:016x}") == (
        "gpu01 mlx5_0",
        1,
        "a088c20300000000",
    )


def test_ibnetdiscover_ports_prints_each_cable_from_both_ends_in_the_format_string() -> None:
    text = ib.render_ibnetdiscover_ports(lab_fabric())
    lines = text.splitlines()
    up = "SW    42 33 0xfc6a1c0301000000 4x NDR - SW    44  1 0xfc6a1c0302000000 ( 'leaf01' - 'spine01' )"
    down = "SW    44  1 0xfc6a1c0302000000 4x NDR - SW    42 33 0xfc6a1c0301000000 ( 'spine01' - 'leaf01' )"
    assert up in lines and down in lines
    host = (
        "CA     1  1 0xa088c20300000000 4x NDR - SW    42  1 0xfc6a1c0301000000 ( 'gpu01 mlx5_0' - 'leaf01' )"
    )
    assert host in lines
    # A port with nothing behind it: `%36s'%s'` after width and speed (ibnetdiscover.c dump_ports_report).
    assert "SW    42 64 0xfc6a1c0301000000 4x SDR" + " " * 36 + "'leaf01'" in lines
    assert sum(" - " in line for line in lines) == 2 * 68


def test_faults_change_exactly_their_link() -> None:
    fabric = lab_fabric()
    now = time.time()

    def changed(fault: str, switch: str = "leaf01") -> set[ib.Cable]:
        return set(fabric.cables) ^ set(ib.with_fault(fabric, fault, switch, now).cables)

    (width,) = changed("ib-link-width") - set(fabric.cables)
    assert (width.a, width.width, width.speed) == (ib.End("leaf01", 33), "1x", "NDR")
    (speed,) = changed("ib-link-speed") - set(fabric.cables)
    assert (speed.a, speed.width, speed.speed) == (ib.End("leaf01", 34), "4x", "HDR")
    (gone,) = changed("ib-link-missing")
    assert gone.a == ib.End("leaf01", 49) and gone in fabric.cables
    swapped = changed("ib-miswire") - set(fabric.cables)
    assert {(c.a, c.b) for c in swapped} == {
        (ib.End("leaf01", 33), ib.End("spine01", 10)),
        (ib.End("leaf02", 33), ib.End("spine01", 1)),
    }
    counting = ib.with_fault(fabric, "ib-symbol-errors", "leaf02", now - 2)
    assert counting.cables == fabric.cables
    assert ib.counters_at(counting, now) == {("leaf02", 35): {"SymbolErrorCounter": 100}}
    duplicated = ib.with_fault(fabric, "ib-dup-guid", "leaf01", now)
    assert duplicated.sa_port_guids == {"gpu01/mlx5_0": fabric.hcas[1].port_guid}
    with pytest.raises(ValueError, match="no uplink"):
        ib.with_fault(fabric, "ib-link-width", "spine01", now)


def test_ibqueryerrors_prints_the_counting_port_its_switch_aggregate_and_the_summary() -> None:
    fabric = lab_fabric()
    clean, status = ib.render_ibqueryerrors(fabric, time.time())
    assert status == 0
    assert clean == (
        "\n## Summary: 38 nodes checked, 0 bad nodes found\n"
        "##          290 ports checked, 0 ports have errors beyond threshold\n"
        "## Thresholds: \n## Suppressed:\n"
    )
    now = time.time()
    counting = ib.with_fault(fabric, "ib-symbol-errors", "leaf02", now - 1)
    text, status = ib.render_ibqueryerrors(counting, now)
    assert status == 1
    assert text.splitlines()[:3] == [
        'Errors for 0xfc6a1c0301000001 "leaf02"',
        "   GUID 0xfc6a1c0301000001 port ALL: [SymbolErrorCounter == 50]",
        "   GUID 0xfc6a1c0301000001 port 35: [SymbolErrorCounter == 50]",
    ]
    assert "## Summary: 38 nodes checked, 1 bad nodes found" in text
    assert (
        "##          291 ports checked, 1 ports have errors beyond threshold" in text
    )  # 3 x 64 + 65 (ports 0..64) + 34


def test_saquery_vendstat_perfquery_and_iblinkinfo_formats() -> None:
    fabric = ib.with_fault(lab_fabric(), "ib-link-width", "leaf01", time.time())
    records = ib.render_saquery_nodes(fabric).split("NodeRecord dump:\n")[1:]
    assert len(records) == 4 + 34
    assert "\t\tnode_type...............Switch\n" in records[0]
    assert "\t\tdevice_id...............0xD2F2\n" in records[0]
    assert "\t\tNodeDescription.........gpu01 mlx5_0\n" in records[4]
    general = ib.render_vendstat_general(fabric.switch("leaf01"))
    assert "fw_version:  31.2012.1024\n" in general and "hw_dev_id:   0xd2f2\n" in general
    assert "fw_psid:     'MT_0000000681'\n" in general
    perf = ib.render_perfquery_extended(fabric, 42, 33, time.time(), 1.0)
    assert perf is not None and perf.startswith("# Port extended counters: Lid 42 port 33 (CapMask: 0x5300")
    assert "SymbolErrorCounter:..............0\n" in perf
    assert ib.render_perfquery_extended(fabric, 9999, 1, time.time(), 1.0) is None
    line = next(
        x
        for x in ib.render_iblinkinfo_line(fabric).splitlines()
        if x.startswith("0xfc6a1c0301000000") and "   33[" in x
    )
    assert line == (
        '0xfc6a1c0301000000 "                        leaf01"     42   33[  ] ==( 1X        106.25 Gbps '
        'Active/  LinkUp)==>  0xfc6a1c0302000000     44    1[  ] "spine01" (Could be 4X )'
    )


def test_json_round_trip() -> None:
    fabric = ib.with_fault(lab_fabric(), "ib-symbol-errors", "leaf01", 5.0)
    assert ib.from_json(json.loads(json.dumps(ib.to_json(fabric)))) == fabric


def test_a_2048_host_three_tier_fabric_renders_in_seconds() -> None:
    began = time.perf_counter()
    fabric = ib.fat_tree(ib.modelled_hcas(2048))
    ports = ib.render_ibnetdiscover_ports(fabric)
    errors, _ = ib.render_ibqueryerrors(fabric, time.time())
    nodes = ib.render_saquery_nodes(fabric)
    took = time.perf_counter() - began
    tiers = [s.tier for s in fabric.switches]
    assert (tiers.count("leaf"), tiers.count("spine"), tiers.count("core")) == (512, 512, 256)
    assert len(fabric.cables) == 3 * 16384
    lids = [s.lid for s in fabric.switches] + [h.lid for h in fabric.hcas]
    guids = [s.guid for s in fabric.switches] + [h.port_guid for h in fabric.hcas]
    assert len(set(lids)) == len(set(guids)) == 1280 + 16384  # every switch and HCA its own LID and GUID
    assert ports.count("\n") == 2 * len(fabric.cables)  # every port of every switch and HCA is cabled
    assert re.search(r"## Summary: 17664 nodes checked, 0 bad nodes found", errors)
    assert nodes.count("NodeRecord dump:") == 1280 + 16384
    assert took < 30, took


def test_a_counter_stops_at_its_bit_width() -> None:
    now = time.time()
    counting = ib.with_fault(lab_fabric(), "ib-symbol-errors", "leaf02", now - 2000)  # 100,000 counted
    text, _ = ib.render_ibqueryerrors(counting, now)
    assert "   GUID 0xfc6a1c0301000001 port 35: [SymbolErrorCounter == 65535]" in text.splitlines()


def test_every_rendering_parses_with_the_ib_parsers_into_the_same_fabric() -> None:
    """fabcheck.parsers read what the renderers print: iblinkinfo --line and ibnetdiscover -p give the
    same links (a 1x link included), saquery one record per switch and CA, vendstat the firmware,
    perfquery -x the counters of the port asked, ibqueryerrors a complete sweep."""
    fabric = ib.with_fault(lab_fabric(), "ib-link-width", "leaf01", 0.0)
    links = parse_ibnetdiscover_ports(ib.render_ibnetdiscover_ports(fabric)).links()
    assert parse_iblinkinfo_lines(ib.render_iblinkinfo_line(fabric)).links() == links
    narrow = [x for x in links if x.width_a != "4x"]
    assert [(x.a.description, x.a.port, x.b.description, x.b.port, x.width_a, x.width_b) for x in narrow] == [
        ("leaf01", 33, "spine01", 1, "1x", "1x")
    ]
    records = parse_saquery_nodes(ib.render_saquery_nodes(fabric))
    assert len(records) == 38 and records[0].node_type == "Switch" and records[0].device_id == 0xD2F2
    assert {r.description for r in records if r.node_type == "Channel Adapter"} == {
        h.description for h in fabric.hcas
    }
    firmware = parse_vendstat_general(ib.render_vendstat_general(fabric.switch("spine01")), lid=44)
    assert (firmware.fw_version, firmware.device_id, firmware.psid) == (
        "31.2012.1024",
        0xD2F2,
        "MT_0000000681",
    )
    perf = ib.render_perfquery_extended(fabric, 42, 35, 0.0, 1.0)
    assert perf is not None
    (port,) = parse_perfquery_counters(perf)
    assert port.port == 35 and port.counts["SymbolErrorCounter"] == 0 and port.counts["PortXmitData"] == 1000
    sweep = parse_ibqueryerrors(ib.render_ibqueryerrors(fabric, 0.0)[0])
    assert sweep.complete and (sweep.nodes_checked, sweep.ports_checked) == (38, 290)
