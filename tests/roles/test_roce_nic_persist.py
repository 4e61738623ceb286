"""Boot persistence of role roce_host: the settings file, the applier, the boot files and the concerns.

The settings file holds exactly fabcheck's desired record (roce_nic_args) and reads back to it; the
applier is the module's own apply code (the file the role default installs is the one it imports) and
re-applies a factory NIC, one device for a udev event; the boot files are written once and then
left alone; check mode writes nothing; tags scope the module to their concerns.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from roce_host_code import MODULE_UTILS, ROLE, apply_code, persist_code
from test_roce_nic import NICS, FakeHost

from fabcheck.desired import desired_host
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.nic_persist import CONFIG_FORMAT, parse_boot_settings

INTENT = FabricIntent(rails={0: "mlx5_0", 1: "mlx5_1"}, roce_tos=98, lossless={"priority": 4, "dscp": [24]})


@pytest.fixture(scope="module")
def code() -> ModuleType:
    return apply_code()


@pytest.fixture
def host(code: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    fake = FakeHost(tmp_path, code)
    monkeypatch.setattr(code, "SYS_NET", str(tmp_path / "net"))
    monkeypatch.setattr(code, "SYS_IB", str(tmp_path / "infiniband"))
    monkeypatch.setattr(code, "write_sys", fake.write_sys)
    return fake


def test_the_settings_file_is_the_desired_record_and_reads_back_to_it(code: ModuleType) -> None:
    args = desired_host(INTENT, "gpu01").roce_nic_args()
    assert set(code.SETTINGS) == set(args)
    text = code.config_text({**args, "rollback_on_failure": True, "persist": True})
    assert code.config_text(args) == text  # only the settings are written, in one spelling
    assert code.read_config(text, "boot") == args
    assert code.CONFIG_FORMAT == CONFIG_FORMAT
    assert parse_boot_settings(text, "boot") == args  # what validate reads is what the module wrote


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("{", "not JSON"),
        ('{"format": "other", "settings": {}}', "format must be"),
        ('{"format": "fabcheck-roce-nic/1", "settings": {"mtu": 9000}}', "exactly the keys"),
    ],
)
def test_a_broken_settings_file_is_refused_naming_the_file(code: ModuleType, text: str, named: str) -> None:
    with pytest.raises(code.NicError, match=named) as raised:
        code.read_config(text, "/etc/fabcheck/roce-nic.json")
    assert str(raised.value).startswith("/etc/fabcheck/roce-nic.json: ")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("mtu", "9000"),
        ("np_enable", 1),
        ("ecn_priority", 9),
        ("pfc_bitmap", [0, 0, 0, True, 0, 0, 0, 0]),
        ("dscp_to_priority", {"26": 9}),
        ("pfc_storm_prevention_ms", "100"),
    ],
)
def test_a_wrong_value_in_the_settings_file_names_its_key(code: ModuleType, key: str, value: object) -> None:
    args = desired_host(INTENT, "gpu01").roce_nic_args() | {key: value}
    text = '{"format": "fabcheck-roce-nic/1", "settings": ' + __import__("json").dumps(args) + "}"
    with pytest.raises(code.NicError, match=key):
        code.read_config(text, "boot")


def test_the_applier_is_the_module_code_and_stdlib_only() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert "/../../plugins/module_utils/roce_nic_apply.py'" in defaults["roce_host_applier_source"]
    tree = ast.parse((MODULE_UTILS / "roce_nic_apply.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_applier_brings_a_factory_nic_to_the_settings_and_then_changes_nothing(
    code: ModuleType, host: FakeHost
) -> None:
    settings = {key: host.params[key] for key in code.SETTINGS}
    lines = code.apply_boot_settings(settings, None, host.run_command)
    assert [line.split(":")[0] for line in lines] == sorted(NICS)
    assert all(": set " in line for line in lines), lines
    assert code.apply_boot_settings(settings, None, host.run_command) == [
        f"{dev}: already as configured" for dev in sorted(NICS)
    ]


def test_a_udev_event_applies_only_its_device(code: ModuleType, host: FakeHost) -> None:
    settings = {key: host.params[key] for key in code.SETTINGS}
    first = sorted(NICS)[0]
    assert code.apply_boot_settings(settings, first, host.run_command)[0].startswith(f"{first}: set ")
    assert host.writes and all(NICS[first] in w or first in w for w in host.writes), host.writes
    assert code.apply_boot_settings(settings, "mlx5_9", host.run_command) == [
        "mlx5_9: not a configured RoCE NIC, nothing to do"
    ]
    with pytest.raises(code.NicError, match="invalid RDMA device name"):
        code.apply_boot_settings(settings, "../x", host.run_command)


def test_a_configured_nic_not_present_at_boot_is_left_to_its_udev_event(
    code: ModuleType, host: FakeHost
) -> None:
    settings = {key: host.params[key] for key in code.SETTINGS}
    settings["devices"] = [*sorted(NICS), "mlx5_7"]
    lines = code.apply_boot_settings(settings, None, host.run_command)
    assert "mlx5_7: not present yet; its udev add event applies the settings" in lines


def test_tags_select_concerns_and_the_module_writes_only_those(code: ModuleType, host: FakeHost) -> None:
    assert code.selected_concerns(["all"], []) == code.CONCERNS
    assert code.selected_concerns(["pfc", "persist"], []) == ("pfc", "persist")
    assert code.selected_concerns(["all"], ["persist"]) == code.NIC_CONCERNS
    result = code.converge(host.run_command, host.params, False, ["pfc"])
    # Tag pfc: PFC and its storm prevention, nothing else.
    assert {key for entry in result["nics"].values() for key in entry["changed"]} == {
        "pfc",
        "pfc_storm_prevention",
    }
    assert all(
        (w.startswith("mlnx_qos") and "--pfc" in w) or w.startswith("ethtool --set-tunable")
        for w in host.writes
    ), host.writes


class Systemctl:
    """`systemctl is-enabled` / `enable` of one unit."""

    def __init__(self) -> None:
        self.enabled = False
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv)
        if argv[1] == "enable":
            self.enabled = True
            return 0, "", ""
        return (0, "enabled\n", "") if self.enabled else (1, "disabled\n", "")


def persist_params(tmp_path: Path, args: dict) -> dict:
    paths = {
        "config": str(tmp_path / "etc/fabcheck/roce-nic.json"),
        "applier": str(tmp_path / "usr/local/lib/fabcheck/roce_nic_apply.py"),
        "unit": str(tmp_path / "etc/systemd/system/fabcheck-roce-nic.service"),
        "rule": str(tmp_path / "etc/udev/rules.d/70-fabcheck-roce-nic.rules"),
    }
    return {**args, "persist_paths": paths}


def test_boot_files_are_written_once_enabled_and_then_left_alone(tmp_path: Path) -> None:
    persistence = persist_code()
    params = persist_params(tmp_path, desired_host(INTENT, "gpu01").roce_nic_args())
    systemctl = Systemctl()
    source = (MODULE_UTILS / "roce_nic_apply.py").read_text()
    checked = persistence.persist(systemctl, params, True, source, "/usr/bin/python3")
    assert checked["changed"] == ["config", "applier", "unit", "rule", "enabled"]
    assert not (tmp_path / "etc").exists() and systemctl.calls == [
        ["systemctl", "is-enabled", "fabcheck-roce-nic.service"]
    ]
    first = persistence.persist(systemctl, params, False, source, "/usr/bin/python3")
    assert first["changed"] == checked["changed"] and first["reload_units"] and first["reload_udev"]
    applier_diff = next(d for d in first["diff"] if d["after_header"].endswith("roce_nic_apply.py"))
    assert applier_diff["after"].startswith(f"({len(source.splitlines())} lines, sha256 ")
    assert Path(params["persist_paths"]["applier"]).read_text() == source
    unit = Path(params["persist_paths"]["unit"]).read_text()
    assert "Type=oneshot" in unit and f"--config {params['persist_paths']['config']}" in unit
    rule = Path(params["persist_paths"]["rule"]).read_text()
    assert 'ACTION=="add", SUBSYSTEM=="infiniband"' in rule and "--device %k" in rule
    again = persistence.persist(systemctl, params, False, source, "/usr/bin/python3")
    assert again == {"changed": [], "diff": [], "reload_units": False, "reload_udev": False}
    changed = persistence.persist(systemctl, {**params, "roce_tos": 106}, False, source, "/usr/bin/python3")
    assert changed["changed"] == ["config"] and not changed["reload_units"]
