"""The desired switch state follows the intent and the cabling map, never a constant of a platform."""

from __future__ import annotations

from typing import Any

from fabcheck.desired import desired_switch
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent

SECRET = "{{ lookup('ansible.builtin.env', 'P') }}"


def fabric(platform: str = "nvue", **switch_vars: Any) -> Any:
    ports = {"nvue": ["swp1", "swp2"], "eos": ["Ethernet1", "Ethernet2"], "sonic": ["Ethernet0", "Ethernet4"]}
    leaf = InventoryNode(
        "leaf01",
        (f"switches_{platform}",),
        {
            "switch_address": "a",
            "switch_username": "u",
            "switch_password": SECRET,
            "switch_ports": ports[platform],
        }
        | switch_vars,
        {},
    )
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"leaf01:{ports[platform][0]}"}}, {0: "mlx5_0"}
    )
    return read_fabric([leaf, gpu], lambda _v: "")


def test_default_recipe() -> None:
    switch = desired_switch(FabricIntent(), fabric(), "leaf01")
    assert (switch.platform, switch.device_type, switch.trust) == ("nvue", "cumulus_linux", "dscp")
    assert switch.dscp_to_switch_priority == {26: 3, 48: 6}
    assert switch.switch_priority_to_traffic_class == (0, 0, 0, 3, 0, 0, 6, 0)
    assert switch.dscp_to_traffic_class == {26: 3, 48: 6}
    assert switch.pfc_priorities == (3,)
    roce, cnp, default = switch.queue(3), switch.queue(6), switch.queue(0)
    assert roce is not None and cnp is not None and default is not None
    assert (roce.scheduler, roce.weight_percent, roce.lossless) == ("dwrr", 50, True)
    assert (roce.ecn, roce.ecn_min_bytes, roce.ecn_max_bytes, roce.ecn_probability) == (
        True,
        150000,
        1500000,
        100,
    )
    assert (cnp.scheduler, cnp.ecn, default.weight_percent) == ("strict", False, 50)
    assert (switch.watchdog.enabled, switch.watchdog.detection_ms, switch.mtu) == (True, 200, 9216)
    swp1, swp2 = switch.ports
    assert (swp1.port, swp1.peer, swp1.speed_gbps, swp1.pfc_priorities, swp1.pfc_watchdog) == (
        "swp1",
        "gpu01:mlx5_0",
        400,
        (3,),
        True,
    )
    assert swp2.peer is None  # a host port with nothing cabled is still configured


def test_non_default_intent_changes_every_derived_value() -> None:
    intent = FabricIntent.model_validate(
        {
            "lossless": {"dscp": [24], "priority": 4},
            "cnp": {"dscp": 46, "priority": 5},
            "roce_tos": 98,
            "congestion_control": "pfc_only",
            "ecn": {"enabled": False},
            "mtu": {"switch": 9100},
            "link": {"speed_gbps": 200},
        }
    )
    switch = desired_switch(intent, fabric("sonic", switch_port_speeds={"Ethernet4": 100}), "leaf01")
    assert switch.dscp_to_traffic_class == {24: 4, 46: 5}
    assert switch.switch_priority_to_traffic_class == (0, 0, 0, 0, 4, 5, 0, 0)
    assert switch.pfc_priorities == (4,)
    roce = switch.queue(4)
    assert roce is not None and (roce.ecn, roce.ecn_min_bytes) == (False, None)
    assert switch.queue(3) is None
    assert switch.mtu == 9100
    assert [p.speed_gbps for p in switch.ports] == [200, 100]


def test_lossy_roce_has_no_pfc_and_no_watchdog() -> None:
    intent = FabricIntent.model_validate({"congestion_control": "ecn_only", "lossless": {"pfc": False}})
    switch = desired_switch(intent, fabric("eos", switch_uplinks=["Ethernet49"]), "leaf01")
    assert switch.pfc_priorities == () and switch.watchdog.enabled is False
    roce = switch.queue(3)
    assert roce is not None and (roce.lossless, roce.ecn) == (False, True)
    assert switch.port("Ethernet49").role == "uplink" and switch.port("Ethernet49").speed_gbps is None
    assert switch.mtu == 9214  # EOS caps the intent's 9216


def test_json_is_plain_data() -> None:
    import json

    data = desired_switch(FabricIntent(), fabric(), "leaf01").to_json()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["dscp_to_switch_priority"] == {"26": 3, "48": 6}


def test_the_wire_limits_and_the_counter_window_are_judged_never_written() -> None:
    custom = FabricIntent.model_validate({"link_health": {"max_crc_errors": 2}})
    switch = desired_switch(custom, fabric(), "leaf01", counter_window_s=0)
    assert (switch.link_health.max_crc_errors, switch.counter_window_s) == (2, 0)
    assert "link_health" not in switch.to_json() and "counter_window_s" not in switch.to_json()
