"""The record the role hands roce_nic writes what the role's Jinja defaults made it write before.

This pins "no change of behaviour" of the moves onto the desired-state layer (first the role's Jinja,
then the applier's own PFC bitmap and DSCP map): for the default recipe and non-default intents, the
values written are the same either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from fabcheck.desired import desired_host
from fabcheck.intent.model import FabricIntent

# The role's Jinja derivation from before it moved onto the desired state: the reference it must match.
DEFAULTS = Path(__file__).resolve().parent / "data" / "roce_host_defaults_jinja.yml"
ROLE = Path(__file__).resolve().parents[2] / "roles" / "roce_host"
ROLE_VARS = {
    "devices": "roce_host_devices",
    "trust": "roce_host_trust",
    "lossless_priority": "roce_host_lossless_priority",
    "lossless_dscp": "roce_host_lossless_dscp",
    "pfc": "roce_host_pfc",
    "cnp_dscp": "roce_host_cnp_dscp",
    "cnp_priority": "roce_host_cnp_priority",
    "np_enable": "roce_host_np_enable",
    "rp_enable": "roce_host_rp_enable",
    "min_time_between_cnps": "roce_host_min_time_between_cnps",
    "rp_params": "roce_host_rp_params",
    "roce_tos": "roce_host_roce_tos",
    "mtu": "roce_host_mtu",
}

INTENTS: list[dict[str, Any]] = [
    {},
    {"rails": {0: "mlx5_0", 1: "mlx5_1"}},
    {
        "lossless": {"dscp": [24, 25], "priority": 4},
        "cnp": {"dscp": 46, "priority": 5},
        "roce_tos": 98,
        "congestion_control": "pfc_only",
        "mtu": {"netdev": 4200},
        "dcqcn": {"min_time_between_cnps": 8, "rp_params": {"rpg_ai_rate": 10}},
    },
    {"congestion_control": "ecn_only", "lossless": {"pfc": False}, "dcqcn": {"np_enable": False}},
    {"trust": "pcp"},
]


def role_defaults(intent: dict[str, Any]) -> dict[str, Any]:
    """The roce_host defaults rendered by Ansible's own templar, as the role would see them."""
    raw = {
        key: trust_as_template(value) if isinstance(value, str) else value
        for key, value in yaml.safe_load(DEFAULTS.read_text()).items()
    }
    variables = {"fabric_intent": intent, **raw}
    templar = Templar(loader=DataLoader(), variables=variables)
    return {arg: templar.template(raw[var]) for arg, var in ROLE_VARS.items()}


def applied_before(old: dict[str, Any]) -> dict[str, Any]:
    """What the applier wrote from the old role variables: it derived the PFC bitmap and the DSCP map
    itself (the reference of the old roce_nic_apply.py, kept here only to pin the behaviour)."""
    prio = int(old["lossless_priority"])
    dscp_map = {str(d): prio for d in old["lossless_dscp"]} | {str(old["cnp_dscp"]): int(old["cnp_priority"])}
    return {
        "devices": old["devices"],
        "trust": old["trust"],
        "pfc_bitmap": [int(bool(old["pfc"]) and p == prio) for p in range(8)],
        "dscp_to_priority": dscp_map,
        "ecn_priority": prio,
        "cnp_dscp": int(old["cnp_dscp"]),
        "cnp_priority": int(old["cnp_priority"]),
        "np_enable": bool(old["np_enable"]),
        "rp_enable": bool(old["rp_enable"]),
        "min_time_between_cnps": int(old["min_time_between_cnps"]),
        "rp_params": old["rp_params"],
        "roce_tos": int(old["roce_tos"]),
        "mtu": int(old["mtu"]),
    }


@pytest.mark.parametrize("raw", INTENTS, ids=lambda raw: ",".join(raw) or "default")
def test_desired_state_gives_the_same_module_arguments(raw: dict[str, Any]) -> None:
    """The record the role now hands the module writes what the old role's variables wrote."""
    desired = desired_host(FabricIntent.model_validate(raw), "gpu01").roce_nic_args()
    new_only = {"pfc_storm_prevention_ms"}  # a setting the old role did not have
    assert {k: v for k, v in desired.items() if k not in new_only} == applied_before(role_defaults(raw))


def test_the_role_passes_the_desired_record_as_one_argument() -> None:
    """No value of the intent is derived in the role's Jinja; the task hands the record over whole."""
    role = ROLE.joinpath("defaults/main.yml").read_text()
    defaults = yaml.safe_load(role)
    assert "fabcheck_desired_host" in defaults["roce_host_desired"]
    assert "fabric_intent" not in "".join(str(v) for k, v in defaults.items() if k != "roce_host_desired")
    task = yaml.safe_load(ROLE.joinpath("tasks/main.yml").read_text())[0]["fabcheck.fabric.roce_nic"]
    assert task["settings"] == "{{ roce_host_desired.roce_nic_args | combine(roce_host_settings_override) }}"


def test_an_override_replaces_one_field_and_derives_nothing() -> None:
    """The documented override, rendered by Ansible's templar as the role would."""
    task = yaml.safe_load(ROLE.joinpath("tasks/main.yml").read_text())[0]["fabcheck.fabric.roce_nic"]
    raw = task["settings"]
    record = desired_host(FabricIntent(), "gpu01").roce_nic_args()
    variables = {"roce_host_desired": {"roce_nic_args": record}, "roce_host_settings_override": {"mtu": 4200}}
    templar = Templar(loader=DataLoader(), variables=variables)
    assert templar.template(trust_as_template(raw)) == record | {"mtu": 4200}
