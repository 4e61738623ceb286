"""Role roce_host's module nic_fw_config: the intent's mlxconfig parameters for the NIC's part, set for the
next boot and reported as pending a firmware reset, never burned.

The module's logic runs against the real mlxconfig outputs of tests/data/real/host (INDEX.tsv) and, end
to end in process, against the lab's mock mlxconfig on a prepared tmp_path node (its sysfs board_id and
fw_ver, `mlxconfig -e q` and `-y set` as mstflint prints them; the node's boot makes Next Boot current).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from roce_host_code import MODULE_UTILS, MODULES, REPO, UTILS_PACKAGE, _load

from fabcheck.desired import desired_host
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers import mlxconfig as product
from fabcheck_lab.mockhost import heal, inject
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import prepare_node
from fabcheck_lab.mockhost.tools.common import Node, ToolError
from fabcheck_lab.mockhost.tools.dispatch import state_tools
from fabcheck_lab.mockhost.tools.nic_firmware import OTHER_FIRMWARE, boot
from tests.checks.host.hostdata import FIRMWARE_PIN

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
PIN = FIRMWARE_PIN.model_dump() | {
    "image": "fw-ConnectX7-rel-28_39_1002-MCX75310AAS-NEA_Ax-UEFI-14.32.17-FlexBoot-3.7.300.signed.bin"
}


# Loaded once, as Ansible bundles them: the module imports its module_utils under the collection's name.
UTILS = _load(f"{UTILS_PACKAGE}.nic_fw_config", MODULE_UTILS / "nic_fw_config.py")
CODE = _load("nic_fw_config", MODULES / "nic_fw_config.py")


def utils() -> ModuleType:
    return UTILS


def module_code() -> ModuleType:
    return CODE


# ---- the pure part, on real outputs -------------------------------------------------------------


def test_the_real_e_query_is_read_as_the_products_parser_reads_it() -> None:
    text = (REAL / "mlxconfig-e-q-connectx4-star-rows.txt").read_text()
    shown = utils().parse_query(text)
    reference = product.parse_mlxconfig(text, "real")
    assert set(shown) == set(reference.params)
    for name, cells in shown.items():
        param = reference.params[name]
        assert cells.next_boot == param.next_boot.text, name
        assert cells.current == (param.current.text if param.current else None), name
        assert cells.default == (param.default.text if param.default else None), name


@pytest.mark.parametrize(
    ("want", "cell"),
    [
        ("ETH", "ETH(2)"), ("eth", "ETH(2)"), ("IB", "ETH(2)"), (2, "ETH(2)"), ("2", "ETH(2)"),
        (False, "False(0)"), (True, "False(0)"), (True, "True(1)"), (255, "255"), (48, "4"),
        ("per_mkey", "per_mkey(0)"), ("per_mkey", "N/A"), (0, "Array[0..7]"),
    ],
)  # fmt: skip
def test_value_rules_are_the_products(want: str | int | bool, cell: str) -> None:
    assert utils().matches(want, cell) is product.matches(want, product.MlxconfigValue.read(cell))
    assert utils().spelled(want) == product.spelled(want)


def test_the_set_output_of_a_real_nic_says_reboot() -> None:
    text = (REAL / "mlxconfig-set-connectx6-next-boot-new.txt").read_text()
    assert utils().REBOOT_LINE in text
    shown = utils().parse_query(text)  # the set table: Next Boot and New columns
    assert shown and all(cells.current is None for cells in shown.values())


def test_an_error_or_no_table_is_refused() -> None:
    with pytest.raises(utils().FirmwareError, match="Unknown Parameter"):
        utils().parse_query("-E- Unknown Parameter FOO\n")
    with pytest.raises(utils().FirmwareError, match="no Configurations"):
        utils().parse_query("Device #1:\n")


def test_the_module_documents_its_arguments() -> None:
    code = module_code()
    documented = yaml.safe_load(code.DOCUMENTATION)["options"]
    assert set(documented) == set(code.ARGUMENT_SPEC)
    for name, spec in code.ARGUMENT_SPEC.items():
        assert documented[name]["type"] == spec["type"] and documented[name].get("default") == spec.get(
            "default"
        )


def test_the_role_task_passes_the_desired_firmware() -> None:
    tasks = yaml.safe_load((REPO / "roles/roce_host/tasks/main.yml").read_text())
    task = next(t for t in tasks if "fabcheck.fabric.nic_fw_config" in t)
    assert set(task["fabcheck.fabric.nic_fw_config"]) == set(module_code().ARGUMENT_SPEC)
    assert task["fabcheck.fabric.nic_fw_config"]["firmware"] == "{{ roce_host_desired.nic_firmware }}"
    assert "firmware" in task["tags"]
    intent = FabricIntent(rails={0: "mlx5_0"}, nic_firmware=[PIN])
    assert desired_host(intent, "gpu01").to_json()["nic_firmware"] == [PIN]


# ---- end to end, in process, on the lab's mock mlxconfig ------------------------------------------


class FakeModule:
    """What the module uses of AnsibleModule: check_mode and run_command, here the lab's mock tools."""

    def __init__(self, node: Node, check_mode: bool) -> None:
        self.node, self.check_mode, self.commands = node, check_mode, []  # type: list[list[str]]

    def run_command(self, argv: list[str]) -> tuple[int, str, str]:
        self.commands.append(argv)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                rc = state_tools()[argv[0]](self.node, argv[1:])
            except ToolError as exc:
                return exc.code, out.getvalue() + (exc.message if exc.stdout else ""), exc.message
        return rc, out.getvalue(), ""


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[MockNodePaths, Node, ModuleType]:
    paths = MockNodePaths.under(tmp_path / "gpu01")
    prepare_node(paths, name="gpu01", profile="rail8", index=0, address="10.0.0.1", peers={})
    code = module_code()
    monkeypatch.setattr(code, "SYS_IB", str(paths.sys_class / "infiniband"))
    return paths, Node(paths.state, paths.sys_class, paths.etc), code


def configure(code: ModuleType, node: Node, check_mode: bool, pin: dict[str, Any] = PIN) -> Any:
    module = FakeModule(node, check_mode)
    report, diff = code.configure(module, "mlx5_0", [pin])
    return report, diff, module.commands


def test_the_pinned_factory_nic_needs_nothing(node: tuple[MockNodePaths, Node, ModuleType]) -> None:
    _paths, state, code = node
    report, diff, commands = configure(code, state, check_mode=False)
    assert report["set"] == {} and report["pending"] == [] and report["version_mismatch"] is None
    assert diff is None and commands == [["mlxconfig", "-d", "mlx5_0", "-e", "q"]]


def test_drift_is_set_for_the_next_boot_and_pending_until_it(
    node: tuple[MockNodePaths, Node, ModuleType],
) -> None:
    paths, state, code = node
    inject(paths, "fw-config-drift")  # ATS_ENABLED True in Current and Next Boot
    report, diff, commands = configure(code, state, check_mode=True)
    assert report["set"] == {"ATS_ENABLED": "0"} and report["pending"] == ["ATS_ENABLED"]
    assert "mlx5_0 ATS_ENABLED: True(1)\n" in diff["before"] and diff["before"].count("\n") == 7
    assert (
        "mlx5_0 ATS_ENABLED: 0\n" in diff["after"]
        and diff["before_header"] == "mlxconfig -d mlx5_0 (Next Boot)"
    )
    assert all("set" not in argv for argv in commands)  # check mode sets nothing
    report, _diff, commands = configure(code, state, check_mode=False)
    assert ["mlxconfig", "-d", "mlx5_0", "-y", "set", "ATS_ENABLED=0"] in commands
    assert report["pending"] == ["ATS_ENABLED"]  # Current still True: never reported as in effect
    again, diff, _ = configure(code, state, check_mode=False)
    assert again["set"] == {} and again["pending"] == ["ATS_ENABLED"] and diff is None  # no second set
    boot(state)  # the firmware reset / reboot
    after, _, _ = configure(code, state, check_mode=False)
    assert after["set"] == {} and after["pending"] == []
    heal(paths, "fw-config-drift")


def test_a_version_other_than_the_pin_is_named_never_burned(
    node: tuple[MockNodePaths, Node, ModuleType],
) -> None:
    paths, state, code = node
    inject(paths, "fw-mismatch")
    report, _, commands = configure(code, state, check_mode=False)
    mismatch = report["version_mismatch"]
    assert (mismatch["running"], mismatch["pinned"]) == (OTHER_FIRMWARE, "28.39.1002")
    assert PIN["image"] in mismatch["msg"] and "never burns" in mismatch["msg"]
    assert all(argv[0] == "mlxconfig" and "set" not in argv for argv in commands)


def test_a_part_without_a_pin_is_left_alone(node: tuple[MockNodePaths, Node, ModuleType]) -> None:
    _paths, state, code = node
    report, diff, commands = configure(code, state, check_mode=False, pin=PIN | {"psid": "MT_0000000999"})
    assert report == {"device": "mlx5_0", "psid": "MT_0000000838", "pinned": False}
    assert diff is None and commands == []


def test_a_parameter_the_firmware_does_not_show_fails_with_the_reason(
    node: tuple[MockNodePaths, Node, ModuleType],
) -> None:
    _paths, state, code = node
    pin = PIN | {"config": {"MAX_ACC_OUT_READ": 44}}
    with pytest.raises(code.FirmwareError, match="does not show MAX_ACC_OUT_READ"):
        configure(code, state, check_mode=False, pin=pin)


def test_a_value_the_firmware_refuses_fails_the_set(node: tuple[MockNodePaths, Node, ModuleType]) -> None:
    _paths, state, code = node
    pin = PIN | {"config": {"CNP_802P_PRIO_P1": 9}}  # 3 bits: mlxconfig refuses 9
    with pytest.raises(code.FirmwareError, match="is not valid"):
        configure(code, state, check_mode=False, pin=pin)


class Exited(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


class FakeAnsibleModule(FakeModule):
    """The module's whole run: its params, warnings and the result it exits with."""

    def __init__(self, node: Node, check_mode: bool, params: dict[str, Any]) -> None:
        super().__init__(node, check_mode)
        self.params, self.warnings = params, []  # type: dict[str, Any], list[str]

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def exit_json(self, **result: Any) -> None:
        raise Exited(result)

    def fail_json(self, **result: Any) -> None:
        raise Exited(result | {"failed": True})


def run_main(code: ModuleType, node: Node, check_mode: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = FakeAnsibleModule(node, check_mode, {"devices": ["mlx5_0", "mlx5_1"], "firmware": [PIN]})
    monkeypatch.setattr(code, "AnsibleModule", lambda **_spec: fake)
    with pytest.raises(Exited) as exited:
        code.main()
    return exited.value.result, fake


def test_the_result_names_the_pending_reset_and_the_image(
    node: tuple[MockNodePaths, Node, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, state, code = node
    inject(paths, "fw-config-drift")
    inject(paths, "fw-mismatch")
    result, fake = run_main(code, state, True, monkeypatch)
    assert result["changed"] and result["pending_reset"] == [{"device": "mlx5_0", "params": ["ATS_ENABLED"]}]
    assert result["msg"] == (
        "would be set for the next boot, takes effect after a firmware reset (mlxfwreset) or reboot: "
        "mlx5_0 ATS_ENABLED"
    )
    assert [entry["device"] for entry in result["firmware_mismatch"]] == ["mlx5_0"]
    assert len(fake.warnings) == 1 and PIN["image"] in fake.warnings[0]
    assert [d["before_header"] for d in result["diff"]] == ["mlxconfig -d mlx5_0 (Next Boot)"]
    result, _ = run_main(code, state, False, monkeypatch)
    assert result["changed"] and result["msg"].startswith("set for the next boot, takes effect after")
    result, _ = run_main(code, state, False, monkeypatch)
    assert not result["changed"] and result["pending_reset"] == [
        {"device": "mlx5_0", "params": ["ATS_ENABLED"]}
    ]
    assert result["msg"].startswith("already set for the next boot, not in effect yet, takes effect after")
    boot(state)
    result, _ = run_main(code, state, False, monkeypatch)
    assert not result["changed"] and result["pending_reset"] == [] and "diff" not in result
    assert result["msg"] == "firmware parameters as pinned and in effect"
    assert result["firmware_mismatch"]  # a reboot does not burn the pinned image either
