"""The subnet managers' and IB hosts' desired state: opensm.conf keys per SM node, partitions.conf lines in
OpenSM's syntax, and the IPoIB children a host needs (named and keyed as the kernel's create_child does)."""

from __future__ import annotations

from typing import Any

import pytest

from fabcheck.desired.sm import (
    OPENSM_CONF_PATH,
    PARTITIONS_CONF_PATH,
    desired_ib_host,
    desired_subnet_manager,
)
from fabcheck.intent.model import FabricIntent


def intent(**subnet_manager: Any) -> FabricIntent:
    return FabricIntent.model_validate({"kind": "ib", "roce_tos": 104, "subnet_manager": subnet_manager})


def test_each_sm_node_gets_its_own_priority_and_the_shared_settings() -> None:
    fabric = intent(routing_engine="updn", sm_priorities={"sm01": 15, "sm02": 14}, lmc=2, sweep_interval=30)
    master, standby = desired_subnet_manager(fabric, "sm01"), desired_subnet_manager(fabric, "sm02")
    assert master.conf_pairs == (
        ("sm_priority", "15"),
        ("routing_engine", "updn"),
        ("lmc", "2"),
        ("sweep_interval", "30"),
        ("qos", "FALSE"),
        ("partition_config_file", PARTITIONS_CONF_PATH),
    )
    assert standby.conf == master.conf | {"sm_priority": "14"}
    assert (master.intended_master, standby.intended_master) == ("sm01", "sm01")
    assert (master.opensm_conf_path, master.partitions_conf_path) == (OPENSM_CONF_PATH, PARTITIONS_CONF_PATH)


def test_a_node_the_intent_does_not_list_runs_at_opensm_default_priority() -> None:
    desired = desired_subnet_manager(intent(sm_priorities={"sm01": 15}), "sm09")
    assert desired.sm_priority == 0 and desired.conf["sm_priority"] == "0"
    assert desired_subnet_manager(intent(), "sm01").intended_master is None


def test_qos_settings_are_written_only_where_the_intent_sets_them() -> None:
    sl2vl = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]
    fabric = intent(qos=True, qos_max_vls=8, qos_vlarb_high="0:64, 1:32", qos_sl2vl=sl2vl)
    conf = desired_subnet_manager(fabric, "sm01").conf
    assert conf["qos"] == "TRUE"
    assert conf["qos_max_vls"] == "8"
    assert conf["qos_vlarb_high"] == "0:64,1:32"
    assert conf["qos_sl2vl"] == "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7"
    assert "qos_high_limit" not in conf and "qos_vlarb_low" not in conf
    keys = [key for key, _value in desired_subnet_manager(fabric, "sm01").conf_pairs]
    assert keys[-1] == "partition_config_file"  # qos_* follow qos; the file path closes the list


def test_partition_lines_follow_opensm_syntax() -> None:
    fabric = intent(
        partitions=[
            {"name": "Default", "pkey": "0x7fff", "members": "ALL=full"},
            {"name": "compute", "pkey": "0x1", "members": "ALL=limited, SELF=full", "mtu": 4096, "sl": 0},
            {
                "name": "storage",
                "pkey": 0x0A02,
                "ipoib": False,
                "members": ["0x0002c9030001a2b3", "SELF=full"],
            },
        ]
    )
    assert desired_subnet_manager(fabric, "sm01").partition_lines == (
        "Default=0x7fff, ipoib : ALL=full ;",
        "compute=0x0001, ipoib, mtu=5, sl=0 : ALL=limited, SELF=full ;",
        "storage=0x0a02 : 0x0002c9030001a2b3, SELF=full ;",
    )


def test_without_a_default_rule_the_everyone_full_default_partition_is_kept() -> None:
    # A partitions.conf without a Default rule would demote every port to a limited member.
    lines = desired_subnet_manager(
        intent(partitions=[{"name": "compute", "pkey": "0x8"}]), "sm01"
    ).partition_lines
    assert lines == ("Default=0x7fff, ipoib : ALL=full ;", "compute=0x0008, ipoib : ALL=full ;")
    assert desired_subnet_manager(intent(), "sm01").partition_lines == ("Default=0x7fff, ipoib : ALL=full ;",)


def test_a_stated_default_rule_replaces_the_implicit_one() -> None:
    fabric = intent(partitions=[{"name": "Default", "pkey": "0x7FFF", "members": "ALL=limited, SELF=full"}])
    assert desired_subnet_manager(fabric, "sm01").partition_lines == (
        "Default=0x7fff, ipoib : ALL=limited, SELF=full ;",
    )


def test_ipoib_children_carry_the_full_member_bit_in_name_and_pkey() -> None:
    fabric = intent(
        partitions=[
            {"name": "Default", "pkey": "0x7fff"},
            {"name": "compute", "pkey": "0x0001", "ipoib_parents": ["ib0", "ib1"]},
            {"name": "storage", "pkey": "0x0a02", "ipoib_parents": ["ib0"]},
            {"name": "quiet", "pkey": "0x0003"},
        ]
    )
    host = desired_ib_host(fabric, "gpu01")
    assert [(c.parent, c.name, c.pkey, c.partition) for c in host.ipoib_children] == [
        ("ib0", "ib0.8001", 0x8001, "compute"),
        ("ib1", "ib1.8001", 0x8001, "compute"),
        ("ib0", "ib0.8a02", 0x8A02, "storage"),
    ]
    assert host.to_json()["ipoib_children"][0] == {
        "parent": "ib0",
        "name": "ib0.8001",
        "pkey": "0x8001",
        "partition": "compute",
    }


def test_records_are_json_for_the_roles() -> None:
    desired = desired_subnet_manager(intent(sm_priorities={"sm01": 15, "sm02": 14}), "sm02")
    data = desired.to_json()
    assert data["opensm_conf"][0] == ["sm_priority", "14"]
    assert data["partition_lines"] == list(desired.partition_lines)
    assert data["kind"] == "ib" and data["intended_master"] == "sm01"


@pytest.mark.parametrize("node", ["sm01", "sm02"])
def test_desired_state_is_a_pure_function_of_intent_and_node(node: str) -> None:
    fabric = intent(sm_priorities={"sm01": 15, "sm02": 14})
    assert desired_subnet_manager(fabric, node) == desired_subnet_manager(fabric, node)
    assert hash(desired_subnet_manager(fabric, node)) == hash(desired_subnet_manager(fabric, node))
