"""The mock NIC firmware (issue 36), in process (no lab, no subprocess): `mlxconfig -d DEV [-e] q` and
`set` (Next Boot only; the node's boot makes it Current), `flint -d DEV q`, `mlxfwmanager --query`, laid
out as the cited real outputs (tests/data/real/host) and read back with the product's own parsers; the
host faults fw-mismatch and fw-config-drift on the first rail NIC only, healed byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from mocknode import node_files, node_of, prepared

from fabcheck.parsers.flint import parse_flint
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo
from fabcheck.parsers.mlxconfig import MlxconfigQuery, matches, parse_mlxconfig
from fabcheck.parsers.mlxfwmanager import parse_mlxfwmanager
from fabcheck_lab.mockhost import HOST_FAULTS, heal, inject
from fabcheck_lab.mockhost.faults import DRIFT_PARAM, active_faults
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.tools import (
    SERVED_TOOLS,
    TOOL_NAMES,
    flint,
    mlxconfig,
    mlxfwmanager,
    netdev,
    rdma_info,
)
from fabcheck_lab.mockhost.tools.common import ToolError
from fabcheck_lab.mockhost.tools.dispatch import state_tools
from fabcheck_lab.mockhost.tools.nic_firmware import OTHER_FIRMWARE, boot
from tests.checks.host.hostdata import FIRMWARE_PIN

REAL = Path(__file__).resolve().parents[1] / "data/real/host"
# What the lab's intent pins for MT_0000000838 (inventory/lab, examples): the factory state holds it.
PINNED = FIRMWARE_PIN.config
FIRMWARE = FIRMWARE_PIN.version


@pytest.fixture
def paths(tmp_path: Path) -> MockNodePaths:
    return prepared(tmp_path)


def run(tool: object, paths: MockNodePaths, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert tool(node_of(paths), list(args)) == 0  # type: ignore[operator]
    return capsys.readouterr().out


def query(paths: MockNodePaths, capsys: pytest.CaptureFixture[str], dev: str = "mlx5_0") -> MlxconfigQuery:
    return parse_mlxconfig(run(mlxconfig.main, paths, capsys, "-d", dev, "-e", "q"), "mlxconfig -e q")


def refused(paths: MockNodePaths, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(ToolError) as caught:
        mlxconfig.main(node_of(paths), list(args))
    assert caught.value.stdout  # mlxconfig prints its -E- lines on stdout
    return caught.value.code, caught.value.message


def test_the_firmware_tools_are_node_tools_served_from_state() -> None:
    assert {"mlxconfig", "flint", "mlxfwmanager"} <= set(TOOL_NAMES) & set(SERVED_TOOLS)
    assert {"mlxconfig", "flint", "mlxfwmanager"} <= set(state_tools())


def test_factory_query_holds_the_pinned_values_in_effect(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = query(paths, capsys)
    assert shown.columns == ("Default", "Current", "Next Boot") and shown.device_type == "ConnectX7"
    for name, value in PINNED.items():
        param = shown.params[name]
        assert matches(value, param.current) and matches(value, param.next_boot), name
        assert not param.marked
    assert shown.params["LINK_TYPE_P1"].current is not None
    assert shown.params["LINK_TYPE_P1"].current.text == "ETH(2)"


def test_the_table_has_the_real_tools_layout(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows as the real ConnectX-7 query prints them, headers as the real -e and set outputs do."""
    plain = run(mlxconfig.main, paths, capsys, "-d", "mlx5_0", "q").splitlines()
    real_plain = (REAL / "mlxconfig-q-connectx7-next-boot-excerpt.txt").read_text().splitlines()
    assert real_plain[0] in plain  # Configurations: ... Next Boot
    ats = next(line for line in real_plain if "ATS_ENABLED" in line)
    assert ats in plain  # the very line: prefix, name width, value width
    verbose = run(mlxconfig.main, paths, capsys, "-d", "0000:1a:00.0", "-e", "q").splitlines()
    real_verbose = (REAL / "mlxconfig-e-q-connectx6lx-header.txt").read_text().splitlines()
    assert next(line for line in real_verbose if line.startswith("Configurations:")) in verbose
    assert "Device:             0000:1a:00.0        " in verbose  # the -d as given, padded to 20
    assert [line[:20] for line in verbose[1:7]] == [line[:20] for line in real_verbose[1:7]]


def test_set_writes_next_boot_only_and_boot_makes_it_current(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = run(
        mlxconfig.main, paths, capsys, "-d", "mlx5_0", "-y", "set", "ATS_ENABLED=1", "CNP_DSCP_P1=26"
    )
    real_set = (REAL / "mlxconfig-set-connectx6-next-boot-new.txt").read_text().splitlines()
    assert (
        printed.splitlines()[-4:] == real_set[-4:]
    )  # prompt answered by -y, Applying, "-I- Please reboot ..."
    assert next(line for line in real_set if line.startswith("Configurations:")) in printed.splitlines()
    set_table = parse_mlxconfig(printed, "mlxconfig set")
    assert set_table.columns == ("Next Boot", "New")
    assert (
        set_table.params["CNP_DSCP_P1"].new is not None and set_table.params["CNP_DSCP_P1"].new.number == 26
    )
    pending = query(paths, capsys)
    for name, value in (("ATS_ENABLED", True), ("CNP_DSCP_P1", 26)):
        param = pending.params[name]
        assert param.marked and matches(value, param.next_boot) and not matches(value, param.current), name
    assert query(paths, capsys, "mlx5_1").params["ATS_ENABLED"].next_boot.text == "False(0)"  # one NIC only
    assert boot(node_of(paths)) == []  # no firmware image changed
    after = query(paths, capsys)
    assert matches(True, after.params["ATS_ENABLED"].current) and matches(
        26, after.params["CNP_DSCP_P1"].current
    )
    assert after.params["ATS_ENABLED"].marked  # still differs from the Default
    assert run(
        mlxconfig.main, paths, capsys, "-d", "mlx5_0", "-y", "s", "ATS_ENABLED=False", "CNP_DSCP_P1=48"
    )
    boot(node_of(paths))
    assert not any(p.marked for p in query(paths, capsys).params.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set", "NO_SUCH_PARAM=1"), "-E- Unknown Parameter NO_SUCH_PARAM\n"),
        (("set", "LINK_TYPE_P1=VPI"), "-E- Unknown value VPI\n"),
        (("set", "LINK_TYPE_P1=3"), "-E- Unknown value 3\n"),
        (("set", "CNP_DSCP_P1=64"), "-E- The value 64 is not valid,  as its size is 6 bits\n"),
        (("set", "CNP_802P_PRIO_P1=high"), "-E- Cannot parse the value\n"),
        (("set", "CNP_DSCP_P1"), "-E- Invalid Configuration argument CNP_DSCP_P1\n"),
        (("set", "CNP_DSCP_P1=1", "CNP_DSCP_P1=2"), "-E- Duplicate parameter, CNP_DSCP_P1.\n"),
        (("q", "NO_SUCH_PARAM"), "-E- Unknown Parameter NO_SUCH_PARAM\n"),
    ],
)
def test_mlxconfig_refuses_what_the_real_tool_refuses_and_changes_nothing(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    before = node_files(paths)
    assert refused(paths, capsys, "-d", "mlx5_0", "-y", *args) == (3, message)
    assert node_files(paths) == before


def test_set_without_yes_is_aborted_and_an_unknown_device_is_refused(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    before = node_files(paths)
    assert refused(paths, capsys, "-d", "mlx5_0", "set", "ATS_ENABLED=1") == (2, "-E- Aborted by user.\n")
    assert refused(paths, capsys, "-d", "mlx5_9", "q") == (3, "-E- Failed to open the device\n")
    assert node_files(paths) == before


def test_flint_shows_the_burned_image_and_a_pending_one_until_boot(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = parse_flint(run(flint.main, paths, capsys, "-d", "mlx5_0", "q"), "flint q")
    assert (shown.psid, shown.running, shown.reset_pending) == ("MT_0000000838", FIRMWARE, False)
    real = parse_flint((REAL / "flint-q-bluefield-dpu.txt").read_text(), "real")
    assert real.running == real.fw_version and not real.reset_pending
    node = node_of(paths)
    state = node.load("firmware/mlx5_0.json") or {}
    assert state == {}  # factory: no state written until something changes it
    from fabcheck_lab.mockhost.tools.nic_firmware import firmware_state, save_firmware_state

    nic = node.nic_by_name("mlx5_0")
    assert nic is not None
    burned = firmware_state(node, nic) | {"burned": OTHER_FIRMWARE}  # as after `flint -d mlx5_0 -i IMG b`
    save_firmware_state(node, nic, burned)
    pending = parse_flint(run(flint.main, paths, capsys, "-d", "mlx5_0", "q"), "flint q")
    assert (pending.fw_version, pending.running, pending.reset_pending) == (OTHER_FIRMWARE, FIRMWARE, True)
    assert boot(node_of(paths)) == ["mlx5_0"]
    after = parse_flint(run(flint.main, paths, capsys, "-d", "mlx5_0", "q"), "flint q")
    assert (after.running, after.reset_pending) == (OTHER_FIRMWARE, False)
    devices = parse_ibv_devinfo(run(rdma_info.ibv_devinfo, paths, capsys, "-v"), "ibv_devinfo -v")
    assert {d.hca_id: d.fw_ver for d in devices}["mlx5_0"] == OTHER_FIRMWARE
    assert (paths.sys_class / "infiniband/mlx5_0/fw_ver").read_text().strip() == OTHER_FIRMWARE


def test_mlxfwmanager_lists_every_nic_as_the_real_query_does(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    devices = parse_mlxfwmanager(run(mlxfwmanager.main, paths, capsys, "--query"), "mlxfwmanager --query")
    assert [d.pci_device for d in devices][:2] == ["0000:1a:00.0", "0000:2c:00.0"] and len(devices) == 8
    assert {(d.psid, d.fw_current, d.fw_available, d.status) for d in devices} == {
        ("MT_0000000838", FIRMWARE, "N/A", "No matching image found")
    }
    (real,) = parse_mlxfwmanager((REAL / "mlxup-query-connectx5-no-image.txt").read_text(), "real")
    assert (real.psid, real.fw_current, real.fw_available) == ("MT_0000000158", "16.24.4020", "N/A")
    assert real.status == devices[0].status


def test_fw_mismatch_changes_every_view_of_one_nic_and_heals_exactly(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "fw-mismatch" in HOST_FAULTS
    before = node_files(paths)
    inject(paths, "fw-mismatch")
    assert active_faults(paths) == ["fw-mismatch"]
    assert parse_flint(run(flint.main, paths, capsys, "-d", "mlx5_0", "q"), "q").running == OTHER_FIRMWARE
    assert parse_flint(run(flint.main, paths, capsys, "-d", "mlx5_1", "q"), "q").running == FIRMWARE
    devices = parse_ibv_devinfo(run(rdma_info.ibv_devinfo, paths, capsys, "-v"), "ibv_devinfo -v")
    assert {d.hca_id for d in devices if d.fw_ver != FIRMWARE} == {"mlx5_0"}
    assert f"firmware-version: {OTHER_FIRMWARE} (MT_0000000838)" in run(
        netdev.ethtool, paths, capsys, "-i", "ens1np0"
    )
    heal(paths, "fw-mismatch")
    assert node_files(paths) == before


def test_fw_config_drift_changes_current_and_next_boot_of_one_nic_and_heals_exactly(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "fw-config-drift" in HOST_FAULTS
    before = node_files(paths)
    inject(paths, "fw-config-drift")
    drifted = query(paths, capsys).params[DRIFT_PARAM]
    assert not matches(PINNED[DRIFT_PARAM], drifted.current) and not matches(
        PINNED[DRIFT_PARAM], drifted.next_boot
    )
    assert drifted.marked  # differs from the Default
    assert not query(paths, capsys, "mlx5_1").params[DRIFT_PARAM].marked
    boot(node_of(paths))  # a reboot keeps it: it is the NIC's configuration now
    assert not matches(PINNED[DRIFT_PARAM], query(paths, capsys).params[DRIFT_PARAM].current)
    heal(paths, "fw-config-drift")
    assert node_files(paths) == before


def test_the_two_firmware_faults_compose_and_heal_in_either_order(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    before = node_files(paths)
    inject(paths, "fw-config-drift")
    inject(paths, "fw-mismatch")
    heal(paths, "fw-config-drift")  # the older one first
    assert parse_flint(run(flint.main, paths, capsys, "-d", "mlx5_0", "q"), "q").running == OTHER_FIRMWARE
    assert matches(False, query(paths, capsys).params[DRIFT_PARAM].current)
    heal(paths, "fw-mismatch")
    assert node_files(paths) == before
