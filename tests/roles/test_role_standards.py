"""Every role documents its interface: meta/argument_specs.yml lists exactly its defaults, typed and
described, and the roce_nic module's argument spec, its DOCUMENTATION and the role's task agree."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import yaml
from roce_host_code import module_code

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (REPO / "roles").iterdir() if p.is_dir())


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path}: not a mapping"
    return data


def test_the_roles_are_found() -> None:
    assert {role.name for role in ROLES} >= {"rdma_inventory", "roce_host", "gpu_rdma"}


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_argument_specs_list_exactly_the_defaults_typed_and_described(role: Path) -> None:
    for needed in ("meta/main.yml", "meta/argument_specs.yml", "defaults/main.yml", "tasks/main.yml"):
        assert (role / needed).is_file(), f"{role.name}: {needed} missing"
    options = load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = load(role / "defaults" / "main.yml")
    assert set(options) == set(defaults), f"{role.name}: specs and defaults differ"
    for name, spec in options.items():
        assert name.startswith(f"{role.name}_"), f"{role.name}: {name} lacks the role prefix"
        assert spec.get("type") and spec.get("description"), f"{role.name}: {name} needs type and description"


def roce_nic() -> ModuleType:
    return module_code()  # with its module_utils registered, as Ansible bundles them


def test_roce_nic_spec_documentation_and_task_agree() -> None:
    module = roce_nic()
    documented = yaml.safe_load(module.DOCUMENTATION)["options"]
    assert set(documented) == set(module.ARGUMENT_SPEC)
    for name, spec in module.ARGUMENT_SPEC.items():
        assert documented[name]["type"] == spec["type"], name
        assert documented[name].get("default") == spec.get("default"), name
    settings = documented["settings"]["suboptions"]
    spec = module.ARGUMENT_SPEC["settings"]["options"]
    assert list(settings) == list(spec), "DOCUMENTATION lists the settings of SETTINGS, in its order"
    for name, option in spec.items():
        assert settings[name]["type"] == option["type"], name
        assert settings[name].get("elements") == option.get("elements"), name
        assert settings[name]["required"] is option["required"], name
        assert settings[name]["description"] == module.SETTINGS[name].description, name
    task = yaml.safe_load((REPO / "roles/roce_host/tasks/main.yml").read_text())[0]
    passed = task["fabcheck.fabric.roce_nic"]
    assert set(passed) == set(module.ARGUMENT_SPEC), "the task must pass every option"
    # The desired record is one argument; the other options are the role's non-intent knobs.
    assert passed.pop("settings") == (
        "{{ roce_host_desired.roce_nic_args | combine(roce_host_settings_override) }}"
    )
    assert passed.pop("persist_paths") == "{{ roce_host_desired.persist_paths }}"
    assert all(value == f"{{{{ roce_host_{name} }}}}" for name, value in passed.items())


def test_the_settings_argument_is_the_desired_record() -> None:
    """What the filter hands the role is exactly what the module's `settings` sub-options declare."""
    from fabcheck.desired import desired_host
    from fabcheck.intent.model import FabricIntent

    record = desired_host(FabricIntent(rails={0: "mlx5_0"}), "gpu01").roce_nic_args()
    assert set(record) == set(roce_nic().ARGUMENT_SPEC["settings"]["options"])
