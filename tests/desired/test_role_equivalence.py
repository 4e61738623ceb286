"""The role's arguments from the desired state equal what the role's Jinja defaults derived before.

This pins "no change of behaviour" of the move onto the desired-state layer: for the default recipe and
non-default intents, the roce_nic arguments are the same either way.
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


@pytest.mark.parametrize("raw", INTENTS, ids=lambda raw: ",".join(raw) or "default")
def test_desired_state_gives_the_same_module_arguments(raw: dict[str, Any]) -> None:
    desired = desired_host(FabricIntent.model_validate(raw), "gpu01").roce_nic_args()
    rendered = role_defaults(raw)
    normalised = {
        key: (bool(value) if isinstance(desired[key], bool) else value) for key, value in rendered.items()
    }
    for key in ("lossless_priority", "cnp_dscp", "cnp_priority", "min_time_between_cnps", "roce_tos", "mtu"):
        normalised[key] = int(normalised[key])
    assert normalised == desired


def test_the_role_reads_every_argument_from_the_desired_state() -> None:
    """No value of the intent is derived in the role's Jinja any more."""
    role = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "roles/roce_host/defaults/main.yml").read_text()
    )
    assert "fabcheck_desired_host" in role["roce_host_desired"]
    for arg, var in ROLE_VARS.items():
        assert role[var] == f"{{{{ roce_host_desired.roce_nic_args.{arg} }}}}", var
    assert "fabric_intent" not in "".join(str(v) for k, v in role.items() if k != "roce_host_desired")
