"""The roce_nic module's one `settings` argument, validated by Ansible's own argument-spec validator.

The desired record passes as it is; a missing key, an unknown key (a typo in an override) and a value
of the wrong type are each refused with a message naming the key; ranges are the applier's check.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from roce_host_code import ROLE, apply_code, module_code

from fabcheck.desired import desired_host
from fabcheck.desired.nic import ECN_DIR, ECN_FILES, ROCE_NIC_SETTINGS
from fabcheck.intent.model import FabricIntent


@pytest.fixture(scope="module")
def module() -> ModuleType:
    return module_code()


def record() -> dict[str, Any]:
    return desired_host(FabricIntent(rails={0: "mlx5_0", 1: "mlx5_1"}), "gpu01").roce_nic_args()


def validate(module: ModuleType, settings: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result = ArgumentSpecValidator(module.ARGUMENT_SPEC).validate({"settings": settings})
    return result.validated_parameters, " ".join(str(error) for error in result.errors)


def test_the_desired_record_passes_unchanged(module: ModuleType) -> None:
    params, errors = validate(module, record())
    assert errors == ""
    assert params["settings"] == record()
    assert module.module_params(params)["pfc_bitmap"] == [0, 0, 0, 1, 0, 0, 0, 0]


def test_a_missing_key_is_named(module: ModuleType) -> None:
    settings = record()
    del settings["pfc_bitmap"]
    _params, errors = validate(module, settings)
    assert re.search(r"missing required arguments: pfc_bitmap found in settings", errors), errors


def test_an_unknown_key_is_named(module: ModuleType) -> None:
    _params, errors = validate(module, record() | {"mtuu": 4200})
    assert "settings.mtuu" in errors, errors


def test_a_wrong_type_is_named(module: ModuleType) -> None:
    _params, errors = validate(module, record() | {"ecn_priority": "three"})
    assert "ecn_priority" in errors and "int" in errors, errors


def test_a_nullable_setting_may_be_null(module: ModuleType) -> None:
    params, errors = validate(module, record() | {"pfc_storm_prevention_ms": None})
    assert errors == "" and params["settings"]["pfc_storm_prevention_ms"] is None


def test_an_override_is_applied_as_given_and_its_range_checked_by_the_applier(module: ModuleType) -> None:
    from roce_host_code import apply_code

    params, errors = validate(module, record() | {"mtu": 4200})
    assert errors == "" and params["settings"]["mtu"] == 4200
    code = apply_code()
    code.check_params(module.module_params(params))
    with pytest.raises(code.NicError, match=re.escape("mtu=40: out of range, allowed 68..65535")):
        code.check_params(module.module_params(validate(module, record() | {"mtu": 40})[0]))


def test_the_record_s_keys_are_the_module_s_settings(module: ModuleType) -> None:
    """The desired state declares the record's keys once (ROCE_NIC_SETTINGS); the module's own declaration
    (SETTINGS, stdlib only on the host) holds the same keys in the same order."""
    assert ["devices", *ROCE_NIC_SETTINGS] == list(module.SETTINGS)
    assert list(record()) == list(module.SETTINGS)


def test_the_module_writes_the_dcqcn_files_the_desired_state_names() -> None:
    """The module keys and writes each DCQCN file at the path fabcheck.desired.nic.ECN_FILES names, the
    one the gate reads back and the hints print."""
    apply = apply_code()
    settings = record() | {"rp_params": {"rpg_gd": 11}}
    written = apply.sysfs_keys(apply.Nic("mlx5_0", "ens1np0", ["1"]), settings)
    ecn = ECN_DIR.format(netdev="ens1np0")
    on_ecn = {key: path for key, path in written.items() if path.startswith(ecn + "/")}
    named = [value for value in ECN_FILES if value != "rp_params"]
    expected = {ECN_FILES[value].format(priority=settings["ecn_priority"]) for value in named}
    assert set(on_ecn) == expected | {ECN_FILES["rp_params"] + "/rpg_gd"}
    assert all(path == f"{ecn}/{key}" for key, path in on_ecn.items())


def test_the_role_readme_lists_the_record_s_keys(module: ModuleType) -> None:
    text = (ROLE / "README.md").read_text()
    listed = text.split("`settings` holds every value already derived in `fabcheck/desired/nic.py`:")[1]
    listed = listed.split(". fabcheck declares")[0]
    assert re.findall(r"`(\w+)`", listed) == list(module.SETTINGS)
