"""Which inventory plugin reads what: YAML hosts files by `yaml` before `auto` (parsed once), plugin
configurations still by `auto`, and a user's own plugin list as given."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible import constants

from fabcheck.intent import ansible_session
from fabcheck.intent.loader import load_inventory

INTENT = "fabric_intent: {}\n"
HOSTS = "all:\n  children:\n    gpu_hosts:\n      hosts:\n        h1: {}\n        h2: {}\n"


def test_yaml_reads_before_auto_when_the_user_set_no_plugins() -> None:
    ansible_session.yaml_inventory_first()
    enabled = list(constants.INVENTORY_ENABLED)
    assert enabled.index("yaml") < enabled.index("auto")
    assert sorted(enabled) == sorted(["host_list", "script", "auto", "yaml", "ini", "toml"])


def test_the_users_own_plugin_list_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANSIBLE_INVENTORY_ENABLED", "auto,yaml")
    monkeypatch.setattr(constants, "INVENTORY_ENABLED", ["auto", "yaml"])
    ansible_session.yaml_inventory_first()
    assert constants.INVENTORY_ENABLED == ["auto", "yaml"]


def test_a_plugin_configuration_beside_the_hosts_file_still_applies(tmp_path: Path) -> None:
    # `yaml` refuses a file with a `plugin:` key before adding anything; `auto` then runs that plugin.
    root = tmp_path / "inv"
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "group_vars" / "all" / "fabric.yml").write_text(INTENT)
    (root / "hosts.yml").write_text(HOSTS)
    (root / "zz_constructed.yml").write_text(
        "plugin: ansible.builtin.constructed\nstrict: true\ngroups:\n  grouped_by_plugin: true\n"
    )
    inventory = load_inventory(root)
    assert [entry.name for entry in inventory.hosts] == ["h1", "h2"]
    assert all("grouped_by_plugin" in entry.groups for entry in inventory.hosts)
