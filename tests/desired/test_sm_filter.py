"""The filter plugin the opensm and ib_host roles read their desired state through, and the role
templates: they print the records and derive nothing (same text as fabcheck.desired.sm builds)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from ansible.errors import AnsibleFilterError
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from fabcheck.desired.sm import desired_ib_host, desired_subnet_manager
from fabcheck.intent.model import FabricIntent

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "filter" / "fabcheck_sm.py"
INTENT = {
    "kind": "ib",
    "roce_tos": 104,
    "subnet_manager": {
        "sm_priorities": {"sm01": 15, "sm02": 14},
        "qos": True,
        "qos_max_vls": 8,
        "partitions": [{"name": "compute", "pkey": "0x0001", "mtu": 4096, "ipoib_parents": ["ib0"]}],
    },
}


def load_plugin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fabcheck_sm_filter", PLUGIN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render(template: str, variables: dict[str, object]) -> str:
    # Ansible's template module renders with trim_blocks on.
    environment = Environment(
        loader=FileSystemLoader(REPO / "roles/opensm/templates"), trim_blocks=True, undefined=StrictUndefined
    )
    return environment.get_template(template).render(variables)


def test_filters_return_the_desired_records() -> None:
    filters = load_plugin().FilterModule().filters()
    intent = FabricIntent.model_validate(INTENT)
    assert (
        filters["fabcheck_subnet_manager"](INTENT, "sm02") == desired_subnet_manager(intent, "sm02").to_json()
    )
    assert filters["fabcheck_ib_host"](INTENT, "gpu01") == desired_ib_host(intent, "gpu01").to_json()


def test_templates_print_exactly_the_records() -> None:
    desired = load_plugin().fabcheck_subnet_manager(INTENT, "sm01")
    conf = render("opensm.conf.j2", {"opensm_conf": desired["opensm_conf"]})
    partitions = render("partitions.conf.j2", {"opensm_partition_lines": desired["partition_lines"]})
    assert [line for line in conf.splitlines() if not line.startswith("#")] == [
        "sm_priority 15",
        "routing_engine ftree",
        "lmc 0",
        "sweep_interval 10",
        "qos TRUE",
        "qos_max_vls 8",
        "partition_config_file /etc/opensm/partitions.conf",
    ]
    assert [line for line in partitions.splitlines() if not line.startswith("#")] == [
        "Default=0x7fff, ipoib : ALL=full ;",
        "compute=0x0001, ipoib, mtu=5 : ALL=full ;",
    ]
    assert conf.endswith("\n") and partitions.endswith("\n")


def test_an_invalid_intent_is_one_clear_filter_error() -> None:
    bad = INTENT | {"subnet_manager": {"sm_priorities": {"sm01": 15, "sm02": 15}}}
    with pytest.raises(
        AnsibleFilterError, match=r"sm01: fabric_intent: .*share the top priority 15.*intent check"
    ):
        load_plugin().fabcheck_subnet_manager(bad, "sm01")
    with pytest.raises(
        AnsibleFilterError, match=r"gpu01: fabric_intent\.subnet_manager\.partitions\.0\.pkey: "
    ):
        load_plugin().fabcheck_ib_host(
            INTENT | {"subnet_manager": {"partitions": [{"name": "a", "pkey": 0}]}}, "gpu01"
        )
