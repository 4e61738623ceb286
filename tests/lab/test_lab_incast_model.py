"""The lab's traffic model follows host AND switch state (issue 11), on a real lab: 3 hosts cabled to 1
NVUE switch, hosts and switch configured for lossless RoCE by hand (no playbook: seconds, not minutes).

A mock perftest flow gpu02 -> gpu01 moves the switch's counters on exactly the two ports its NICs are
cabled to; switch-ecn-off leaves no ECN marks and no CNPs; switch-pfc-prio on gpu01's port gives switch
drops on that port; host pfc-off on gpu01 gives rx_discards_phy on gpu01's NIC."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from labsupport import requires_lab, running_lab
from test_switch_play_lab import login

from fabcheck.switch.connect import connect
from fabcheck_lab import faults
from fabcheck_lab.cabling import lab_links, lldp_neighbors
from fabcheck_lab.mockswitch.control import switch_counters
from fabcheck_lab.state import LabPaths, LabState

pytestmark = [pytest.mark.lab, requires_lab]

NIC = "mlx5_0"
RECEIVER, SENDER = "gpu01", "gpu02"
SWITCH = "leaf01"
PORT = 18600


@dataclass
class Lab:
    paths: LabPaths
    state: LabState
    ports: dict[str, str]  # host -> switch port its mlx5_0 is cabled to
    netdevs: dict[str, str]  # host -> netdev of its mlx5_0

    def out(self, node: str, command: str) -> str:
        argv = ["ssh", "-F", str(self.paths.ssh_config), node, command]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, f"{node}: {command}: {done.stderr}"
        return done.stdout

    def nic_counters(self, host: str) -> dict[str, int]:
        lines = self.out(host, f"ethtool -S {self.netdevs[host]}").splitlines()[1:]
        return {name.strip(): int(value) for name, value in (line.split(":") for line in lines)}

    def flow(self) -> tuple[dict[str, int], dict[str, int]]:
        """One ib_write_bw SENDER -> RECEIVER; return the receiver's and the sender's counter deltas."""
        before = {h: self.nic_counters(h) for h in (RECEIVER, SENDER)}
        server = f"ib_write_bw -d {NIC} -p {PORT} > /tmp/bw.server 2>&1; echo $? > /tmp/bw.done"
        self.out(RECEIVER, f"rm -f /tmp/bw.done; nohup sh -c '{server}' > /dev/null 2>&1 < /dev/null &")
        self.out(SENDER, f"ib_write_bw -d {NIC} -p {PORT} {self.state.node(RECEIVER).address}")
        # The server counts its side after the client is done: wait for it to exit (10 s at most).
        wait = "for i in $(seq 200); do [ -s /tmp/bw.done ] && break; sleep 0.05; done; cat /tmp/bw.done"
        assert self.out(RECEIVER, wait).strip() == "0", self.out(RECEIVER, "cat /tmp/bw.server")
        after = {h: self.nic_counters(h) for h in (RECEIVER, SENDER)}
        return tuple(  # type: ignore[return-value]
            {k: after[h][k] - before[h][k] for k in after[h] if after[h][k] != before[h][k]}
            for h in (RECEIVER, SENDER)
        )

    @contextlib.contextmanager
    def faulted(self, fault: str, node: str) -> Iterator[None]:
        faults.inject(self.paths, fault, node)
        try:
            yield
        finally:
            faults.heal(self.paths, node, fault)

    def switch_delta(self, flow: Any) -> tuple[dict[str, dict[str, list[int]]], Any]:
        """Switch counter changes (port -> kind -> 8 deltas, moved ports only) across flow()."""
        before = switch_counters(self.paths.run_dir, SWITCH)["ports"]
        result = flow()
        after = switch_counters(self.paths.run_dir, SWITCH)["ports"]
        moved = {}
        for port, kinds in after.items():
            delta = {k: [a - b for a, b in zip(v, before[port][k], strict=True)] for k, v in kinds.items()}
            if any(any(d) for d in delta.values()):
                moved[port] = {k: d for k, d in delta.items() if any(d)}
        return moved, result


def configure(lab: Lab) -> None:
    """What the roles would do, by hand: NVUE `nv set qos roce`; each host's mlx5_0 trust dscp, PFC on 3,
    ToS 106, DCQCN on 3."""
    conn = connect(login(lab.paths, lab.state.node(SWITCH)))
    try:
        conn.send_config_set(["nv set qos roce", "nv config apply -y"], error_pattern=r"^Error:")
        shown = json.loads(
            conn.send_command(f"nv show interface {lab.ports[RECEIVER]} qos roce counters -o json")
        )
        assert shown["tx-stats"]["tx-roce-stats"]["roce-packets"] == 0  # nothing moves before traffic
    finally:
        conn.disconnect()
    for host in (RECEIVER, SENDER):
        netdev = lab.netdevs[host]
        ecn = f"/sys/class/net/{netdev}/ecn"
        lab.out(
            host,
            f"mlnx_qos -i {netdev} --trust dscp && mlnx_qos -i {netdev} --pfc 0,0,0,1,0,0,0,0 && "
            f"echo 106 > /sys/class/infiniband/{NIC}/tc/1/traffic_class && "
            f"echo 1 > {ecn}/roce_np/enable/3 && echo 1 > {ecn}/roce_rp/enable/3",
        )


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with running_lab(profile="roce", hosts=3, switches=1) as (paths, state):
        heard = lldp_neighbors(state, lab_links(state))[SWITCH]
        cabled = lab_links(state)
        ports = {host: cabled[host][NIC].split(":", 1)[1] for host in (RECEIVER, SENDER)}
        netdevs = {host: next(n for p, h, n in heard if h == host and p == ports[host]) for host in ports}
        lab = Lab(paths, state, ports, netdevs)
        configure(lab)
        yield lab


def test_a_flow_moves_switch_counters_on_exactly_its_two_ports(lab: Lab) -> None:
    moved, (received, sent) = lab.switch_delta(lab.flow)
    ingress, egress = lab.ports[SENDER], lab.ports[RECEIVER]
    assert set(moved) == {ingress, egress}
    assert moved[egress]["tx_packets"][3] == received["rx_prio3_packets"] > 0
    marks = moved[egress]["ecn_marked"][3]
    assert marks == received["np_ecn_marked_roce_packets"] == received["np_cnp_sent"] > 0
    assert sent["rp_cnp_handled"] == marks
    assert moved[egress]["pfc_rx"][3] == received["tx_prio3_pause"] > 0
    assert moved[ingress]["pfc_tx"][3] == sent["rx_prio3_pause"] > 0
    assert "drops" not in moved[egress] and "rx_discards_phy" not in received


def test_switch_ecn_off_gives_no_marks_and_no_cnps(lab: Lab) -> None:
    with lab.faulted("switch-ecn-off", SWITCH):
        moved, (received, sent) = lab.switch_delta(lab.flow)
    assert "ecn_marked" not in moved[lab.ports[RECEIVER]] and moved[lab.ports[RECEIVER]]["tx_packets"][3] > 0
    assert {"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled"}.isdisjoint({**received, **sent})


def test_switch_pfc_on_the_wrong_priority_drops_on_that_port(lab: Lab) -> None:
    assert lab.state.node(SWITCH).ports[0] == lab.ports[RECEIVER]  # the fault hits the first port
    with lab.faulted("switch-pfc-prio", SWITCH):
        moved, (received, sent) = lab.switch_delta(lab.flow)
    switch_drops = moved[lab.ports[RECEIVER]]["drops"][3]
    assert switch_drops > 0 and "pfc_tx" not in moved[lab.ports[SENDER]]
    assert (
        received["out_of_sequence"] >= switch_drops
        and sent["roce_adp_retrans"] == received["out_of_sequence"]
    )


def test_host_pfc_off_drops_on_that_hosts_nic(lab: Lab) -> None:
    with lab.faulted("pfc-off", RECEIVER):
        moved, (received, _sent) = lab.switch_delta(lab.flow)
    assert received["rx_discards_phy"] > 0 and "tx_prio3_pause" not in received
    assert "drops" not in moved[lab.ports[RECEIVER]] and "pfc_rx" not in moved[lab.ports[RECEIVER]]
