"""The switch server's side of the lab's cables (lab/src/fabcheck_lab/mockswitch/wire.py): wire views written
into the cabled hosts' state, spooled flow records drained into the right switch port's counters, and the
platform shows reading them. No processes: the server object is driven directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabcheck_lab.mockhost.tools import traffic
from fabcheck_lab.mockhost.tools.common import Node
from fabcheck_lab.mockswitch.server import SwitchServer
from fabcheck_lab.mockswitch.spec import SwitchSpec, write_spec
from fabcheck_lab.mockswitch.wire import host_state

HOSTS = ("gpu01", "gpu02", "gpu03")
PORTS = ("swp1", "swp2", "swp3", "swp4")


@pytest.fixture
def server(tmp_path: Path) -> SwitchServer:
    for host in HOSTS:
        host_state(tmp_path, host).mkdir(parents=True)
    neighbors = tuple((port, host, "ens1np0") for port, host in zip(PORTS, HOSTS, strict=False))
    write_spec(tmp_path, [SwitchSpec("leaf01", "nvue", "127.0.3.1", 2201, "cumulus", "pw", PORTS, neighbors)])
    srv = SwitchServer(tmp_path)
    session = srv.devices["leaf01"].new_session("cumulus")
    for line in ("nv set qos roce", "nv config apply -y"):
        session.handle(line)
    srv.dump("leaf01")
    return srv


def node(srv: SwitchServer, host: str) -> Node:
    state = host_state(srv.run_dir, host)
    return Node(state, state, state)


def profile(srv: SwitchServer, host: str) -> dict:
    """A lossless NIC profile carrying the wire view the server wrote for the host's NIC."""
    return {
        "mtu": 4096,
        "trust": "dscp",
        "dscp2prio": [d >> 3 for d in range(64)],
        "pfc": [int(p == 3) for p in range(8)],
        "np": [int(p == 3) for p in range(8)],
        "rp": [int(p == 3) for p in range(8)],
        "wire": traffic.wire_view(node(srv, host), "ens1np0"),
    }


def flow(srv: SwitchServer, sender: str, receiver: str, packets: int = 10_000) -> None:
    outcome = traffic.flow_outcome(profile(srv, sender), profile(srv, receiver), packets * 4096, 106)
    traffic.count_flow(node(srv, sender), "ens1np0", outcome, sending=True)
    traffic.count_flow(node(srv, receiver), "ens1np0", outcome, sending=False)


def test_wire_views_name_each_hosts_port_and_its_qos(server: SwitchServer) -> None:
    views = {h: traffic.wire_view(node(server, h), "ens1np0") for h in HOSTS}
    assert {h: v["port"] for h, v in views.items()} == {"gpu01": "swp1", "gpu02": "swp2", "gpu03": "swp3"}
    assert views["gpu01"]["pfc_priorities"] == [3] and views["gpu01"]["ecn_queues"] == [0, 3]
    server.devices["leaf01"].inject("switch-pfc-prio")  # the first port: gpu01's
    server.dump("leaf01")
    assert traffic.wire_view(node(server, "gpu01"), "ens1np0")["pfc_priorities"] == [4]
    server.devices["leaf01"].inject("switch-miswired")  # gpu01's and gpu02's cables swap ports
    server.dump("leaf01")
    assert traffic.wire_view(node(server, "gpu01"), "ens1np0")["port"] == "swp2"


def test_an_incast_moves_counters_on_the_cabled_ports_only(server: SwitchServer) -> None:
    flow(server, "gpu02", "gpu01")
    flow(server, "gpu03", "gpu01")
    device = server.devices["leaf01"]
    assert all(not any(any(v) for v in kinds.values()) for kinds in device.counters.ports.values())
    device.refresh_counters()  # what every counters show does first
    ports = device.counters.ports
    assert ports["swp1"]["tx_packets"][3] == 20_000 and ports["swp1"]["pfc_rx"][3] == 10
    assert ports["swp1"]["ecn_marked"][3] == 20 and ports["swp1"]["drops"][3] == 0
    assert (ports["swp2"]["pfc_tx"][3], ports["swp3"]["pfc_tx"][3]) == (5, 5)
    assert (ports["swp2"]["rx_packets"][3], ports["swp3"]["rx_packets"][3]) == (10_000, 10_000)
    assert not any(any(v) for v in ports["swp4"].values())
    assert not list((host_state(server.run_dir, "gpu01") / traffic.SPOOL_DIR).iterdir())  # drained
    saved = json.loads((server.run_dir / "switches" / "leaf01.json").read_text())
    assert saved["counters"]["ports"]["swp1"]["tx_packets"][3] == 20_000
    session = device.new_session("cumulus")
    shown = json.loads(session.handle("nv show interface swp1 qos roce counters -o json"))
    assert shown["tx-stats"]["tx-roce-stats"]["roce-packets"] == 20_000
    assert shown["tx-stats"]["tx-ecn-stats"]["ecn-marked-packets"] == 20


def test_switch_faults_show_as_drops_or_missing_marks_on_the_receivers_port(server: SwitchServer) -> None:
    device = server.devices["leaf01"]
    device.inject("switch-pfc-prio")  # swp1, gpu01's port: its egress queue is no longer lossless
    server.dump("leaf01")
    flow(server, "gpu02", "gpu01")
    device.refresh_counters()
    assert device.counters.ports["swp1"]["drops"][3] == 2 and device.counters.ports["swp2"]["pfc_tx"][3] == 0
    device.heal()
    device.inject("switch-ecn-off")
    server.dump("leaf01")
    device.counters.clear(device.ports)
    flow(server, "gpu03", "gpu01")
    device.refresh_counters()
    swp1 = device.counters.ports["swp1"]
    assert (swp1["ecn_marked"][3], swp1["drops"][3], swp1["tx_packets"][3]) == (0, 0, 10_000)


def test_a_malformed_or_stray_record_is_dropped_and_changes_nothing(server: SwitchServer) -> None:
    spool = host_state(server.run_dir, "gpu01") / traffic.SPOOL_DIR
    spool.mkdir(parents=True)
    (spool / "1-broken.json").write_text("{not json")
    (spool / "2-stray.json").write_text(json.dumps({"switch": "leaf09", "port": "swp1", "add": {}}))
    (spool / "3-badport.json").write_text(json.dumps({"switch": "leaf01", "port": "swp9", "add": {}}))
    (spool / ".tmp-half").write_text("{")  # a record being written: left for the next drain
    device = server.devices["leaf01"]
    device.refresh_counters()
    assert sorted(p.name for p in spool.iterdir()) == [".tmp-half"]
    assert not any(any(v) for kinds in device.counters.ports.values() for v in kinds.values())
