"""The Ansible filter the roles read the desired state through."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from ansible.errors import AnsibleFilterError

from fabcheck.desired import desired_host
from fabcheck.intent.model import FabricIntent

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "filter" / "fabcheck_desired.py"


def load_plugin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fabcheck_desired_filter", PLUGIN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_filter_returns_the_desired_record_with_module_arguments() -> None:
    desired = load_plugin().FilterModule().filters()["fabcheck_desired_host"]
    intent = {"lossless": {"priority": 4, "dscp": [24]}, "roce_tos": 98}
    result = desired(intent, "gpu03", {0: "mlx5_0"})
    expected = desired_host(FabricIntent.model_validate({**intent, "rails": {0: "mlx5_0"}}), "gpu03")
    assert result["roce_nic_args"] == expected.roce_nic_args()
    assert result["nics"] == [nic.to_json() for nic in expected.nics]
    assert result["roce_nic_args"]["ecn_priority"] == 4
    assert result["roce_nic_args"]["pfc_bitmap"] == [0, 0, 0, 0, 1, 0, 0, 0]
    assert result["roce_nic_args"]["dscp_to_priority"] == {"24": 4, "48": 6}


def test_filter_host_rails_override_the_intent_rails() -> None:
    desired = load_plugin().fabcheck_desired_host
    assert desired({"rails": {0: "mlx5_0"}}, "h", {0: "mlx5_7"})["roce_nic_args"]["devices"] == ["mlx5_7"]
    assert desired({"rails": {0: "mlx5_0"}}, "h")["roce_nic_args"]["devices"] == ["mlx5_0"]
    assert desired(None, "h")["roce_nic_args"]["devices"] == []


def test_invalid_intent_is_one_clear_filter_error() -> None:
    with pytest.raises(AnsibleFilterError, match=r"gpu01: fabric_intent\.lossless\.priority: .*intent check"):
        load_plugin().fabcheck_desired_host({"lossless": {"priority": 9}}, "gpu01")
