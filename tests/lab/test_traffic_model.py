"""The lab's traffic model through the switches (lab/src/fabcheck_lab/mockhost/tools/traffic.py): which NIC
and switch port counters one flow moves, exactly, for a healthy path and for each fault that breaks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabcheck_lab.mockhost.tools import traffic
from fabcheck_lab.mockhost.tools.common import Node
from fabcheck_lab.mockhost.tools.netdev import load_counters

TOS = 106  # DSCP 26, the lab's RoCE traffic
MTU = 4096
PACKETS = 10_000  # 5 pauses (1 in 2000), 2 drops (1 in 5000), 10 marks (1 in 1000)
NBYTES = PACKETS * MTU


def nic(pfc: tuple[int, ...] = (3,), dcqcn: tuple[int, ...] = (3,), wire: Any = None) -> dict[str, Any]:
    """A NIC profile as nic_profile builds it: trust dscp, the default DSCP map (26 -> priority 3)."""
    return {
        "mtu": MTU,
        "trust": "dscp",
        "dscp2prio": [d >> 3 for d in range(64)],
        "pfc": [int(p in pfc) for p in range(8)],
        "np": [int(p in dcqcn) for p in range(8)],
        "rp": [int(p in dcqcn) for p in range(8)],
        "wire": wire,
    }


def wire(port: str, pfc: tuple[int, ...] = (3,), ecn: tuple[int, ...] = (3,)) -> dict[str, Any]:
    return {
        "switch": "leaf01",
        "port": port,
        "platform": "nvue",
        "roce_dscp": 26,
        "roce_priority": 3,
        "roce_queue": 3,
        "pfc_priorities": list(pfc),
        "ecn_queues": list(ecn),
        "mtu": 9216,
        "trust": "l3",
    }


def healthy() -> tuple[dict[str, Any], dict[str, Any]]:
    return nic(wire=wire("swp1")), nic(wire=wire("swp2"))


# (what breaks, change to the sender, change to the receiver) -> the outcome's counts
CASES = {
    "healthy": ({}, {}, dict(sender_pauses=5, receiver_pauses=5, switch_drops=0, nic_drops=0, marked=10)),
    "receiver NIC pfc-off": ({}, {"pfc": [0] * 8}, dict(sender_pauses=5, receiver_pauses=0, nic_drops=2)),
    "sender NIC pfc-off": ({"pfc": [0] * 8}, {}, dict(sender_pauses=0, switch_drops=2, nic_drops=0)),
    "switch PFC on 4 at the sender's port": (
        {"wire": wire("swp1", pfc=(4,))},
        {},
        dict(sender_pauses=0, receiver_pauses=5, switch_drops=2, nic_drops=0),
    ),
    "switch PFC on 4 at the receiver's port": (
        {},
        {"wire": wire("swp2", pfc=(4,))},
        dict(sender_pauses=0, receiver_pauses=5, switch_drops=2, nic_drops=2),
    ),
    "switch ECN off": ({}, {"wire": wire("swp2", ecn=())}, dict(marked=0, cnp_sent=0, cnp_handled=0)),
    "receiver NP off": ({}, {"np": [0] * 8}, dict(marked=10, cnp_sent=0, cnp_handled=0)),
    "sender RP off": ({"rp": [0] * 8}, {}, dict(marked=10, cnp_sent=10, cnp_handled=0)),
}


@pytest.mark.parametrize("case", CASES)
def test_switched_flow_outcome(case: str) -> None:
    to_sender, to_receiver, expected = CASES[case]
    sender, receiver = healthy()
    outcome = traffic.flow_outcome(sender | to_sender, receiver | to_receiver, NBYTES, TOS)
    assert {k: outcome[k] for k in expected} == expected
    assert (outcome["ingress"]["port"], outcome["egress"]["port"]) == ("swp1", "swp2")


def test_healthy_flow_moves_exact_nic_and_switch_counters(tmp_path: Path) -> None:
    sender_node, receiver_node = (Node(tmp_path / n, tmp_path / n, tmp_path / n) for n in ("a", "b"))
    outcome = traffic.flow_outcome(*healthy(), NBYTES, TOS)
    traffic.count_flow(sender_node, "ens1np0", outcome, sending=True)
    traffic.count_flow(receiver_node, "ens1np0", outcome, sending=False)
    sent, received = (load_counters(n, "ens1np0") for n in (sender_node, receiver_node))
    assert {k: v for k, v in sent.items() if v} == {
        "tx_packets": PACKETS,
        "tx_bytes": NBYTES,
        "tx_vport_rdma_unicast_packets": PACKETS,
        "tx_vport_rdma_unicast_bytes": NBYTES,
        "tx_prio3_packets": PACKETS,
        "tx_prio3_bytes": NBYTES,
        "rx_prio3_pause": 5,
        "rx_prio3_pause_duration": 10,
        "rp_cnp_handled": 10,
    }
    assert {k: v for k, v in received.items() if v} == {
        "rx_packets": PACKETS,
        "rx_bytes": NBYTES,
        "rx_vport_rdma_unicast_packets": PACKETS,
        "rx_vport_rdma_unicast_bytes": NBYTES,
        "rx_prio3_packets": PACKETS,
        "rx_prio3_bytes": NBYTES,
        "tx_prio3_pause": 5,
        "tx_prio3_pause_duration": 10,
        "np_ecn_marked_roce_packets": 10,
        "np_cnp_sent": 10,
    }
    assert spooled(tmp_path / "a") == [
        {
            "switch": "leaf01",
            "port": "swp1",
            "add": {"rx_packets": {"3": PACKETS}, "rx_bytes": {"3": NBYTES}, "pfc_tx": {"3": 5}},
        }
    ]
    assert spooled(tmp_path / "b") == [
        {
            "switch": "leaf01",
            "port": "swp2",
            "add": {
                "tx_packets": {"3": PACKETS},
                "tx_bytes": {"3": NBYTES},
                "ecn_marked": {"3": 10},
                "pfc_rx": {"3": 5},
            },
        }
    ]


def test_switch_drops_land_on_the_receivers_port_and_both_nics(tmp_path: Path) -> None:
    sender_node, receiver_node = (Node(tmp_path / n, tmp_path / n, tmp_path / n) for n in ("a", "b"))
    sender, receiver = nic(pfc=(), wire=wire("swp1")), nic(wire=wire("swp2"))
    outcome = traffic.flow_outcome(sender, receiver, NBYTES, TOS)
    traffic.count_flow(sender_node, "ens1np0", outcome, sending=True)
    traffic.count_flow(receiver_node, "ens1np0", outcome, sending=False)
    sent, received = (load_counters(n, "ens1np0") for n in (sender_node, receiver_node))
    assert (sent["roce_adp_retrans"], sent["rx_prio3_pause"]) == (2, 0)
    assert (received["out_of_sequence"], received["rx_discards_phy"]) == (2, 0)
    (ingress,) = spooled(tmp_path / "a")
    assert "pfc_tx" not in ingress["add"]  # the switch could not pause the sender
    assert spooled(tmp_path / "b")[0]["add"]["drops"] == {"3": 2}


def test_without_a_switch_the_host_only_model_is_unchanged() -> None:
    sender, receiver = nic(), nic(pfc=())
    outcome = traffic.flow_outcome(sender, receiver, NBYTES, TOS)
    assert (outcome["sender_pauses"], outcome["nic_drops"], outcome["marked"]) == (0, 2, 10)
    assert outcome["ingress"] is None and outcome["egress"] is None
    lossless = traffic.flow_outcome(nic(), nic(), NBYTES, TOS)
    assert (lossless["sender_pauses"], lossless["receiver_pauses"], lossless["nic_drops"]) == (5, 5, 0)


def test_a_dscp_other_than_roce_uses_the_default_switch_map() -> None:
    sender, receiver = healthy()
    outcome = traffic.flow_outcome(sender, receiver, NBYTES, 0)  # DSCP 0: priority 0, no PFC there
    assert (outcome["prio"], outcome["switch_drops"], outcome["nic_drops"], outcome["marked"]) == (0, 2, 2, 0)
    assert outcome["egress"]["add"]["drops"] == {"0": 2}


def spooled(state: Path) -> list[dict[str, Any]]:
    spool = state / traffic.SPOOL_DIR
    return [json.loads(p.read_text()) for p in sorted(spool.glob("*.json"))] if spool.is_dir() else []
