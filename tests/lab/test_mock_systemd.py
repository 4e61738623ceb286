"""The mock systemd and udev of lab nodes, run like in a node (no namespaces): generic oneshot units,
enablement through [Install] symlinks, loading and daemon-reload, the boot, and udev add events."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes

UNIT = "probe.service"


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def node(tmp_path: Path, bin_dir: Path) -> MockNode:
    return make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])[0]


def write_unit(node: MockNode, marker: Path, word: str, name: str = UNIT, extra: str = "") -> None:
    path = node.paths.upper / "etc/systemd/system" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"[Unit]\nDescription=probe\n{extra}\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/bin/sh -c 'echo {word} >> {marker}'\n\n[Install]\nWantedBy=multi-user.target\n"
    )


def test_enable_links_the_unit_and_a_boot_starts_only_the_nodes_enabled_units(
    node: MockNode, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    write_unit(node, marker, "probe")
    write_unit(node, marker, "other", name="other.service")
    link = node.paths.upper / "etc/systemd/system/multi-user.target.wants/other.service"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("/etc/systemd/system/other.service")  # linked, but not enabled on this node
    assert node.run("systemctl", "is-enabled", UNIT, rc=1).stdout == "disabled\n"
    enabled = node.run("systemctl", "enable", UNIT)
    assert "Created symlink /etc/systemd/system/multi-user.target.wants/probe.service" in enabled.stderr
    assert node.run("systemctl", "is-enabled", UNIT).stdout == "enabled\n"
    boot = node.run("fabcheck-mock", "fabcheck-mock-boot")
    assert boot.stdout == "started probe.service: active (exited)\n"
    assert marker.read_text() == "probe\n"
    assert node.run("systemctl", "is-active", UNIT).stdout == "active\n"
    node.run("systemctl", "disable", UNIT)
    assert node.run("systemctl", "is-enabled", UNIT, rc=1).stdout == "disabled\n"


def test_a_changed_unit_runs_its_old_definition_until_daemon_reload(node: MockNode, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_unit(node, marker, "first")
    node.run("systemctl", "start", UNIT)
    write_unit(node, marker, "second")
    restarted = node.run("systemctl", "restart", UNIT)
    assert "Run 'systemctl daemon-reload'" in restarted.stderr
    node.run("systemctl", "daemon-reload")
    node.run("systemctl", "restart", UNIT)
    assert marker.read_text().split() == ["first", "first", "second"]


def test_a_failing_oneshot_fails_start_and_shows_in_status(node: MockNode, tmp_path: Path) -> None:
    path = node.paths.upper / "etc/systemd/system" / UNIT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo broken; exit 3'\n")
    failed = node.run("systemctl", "start", UNIT, rc=1)
    assert f"Job for {UNIT} failed" in failed.stderr
    status = node.run("systemctl", "status", UNIT, rc=3).stdout
    assert "Active: failed" in status and "broken" in status and "status=3/FAILURE" in status
    assert node.run("systemctl", "start", "missing.service", rc=5).stderr.endswith("not found.\n")


def test_a_udev_add_event_runs_the_matching_rules_for_that_device(node: MockNode, tmp_path: Path) -> None:
    marker = tmp_path / "udev"
    rules = node.paths.upper / "etc/udev/rules.d/70-probe.rules"
    rules.parent.mkdir(parents=True, exist_ok=True)
    rules.write_text(
        "# comment\n"
        f'ACTION=="add", SUBSYSTEM=="infiniband", RUN+="/bin/sh -c \'echo %k >> {marker}\'"\n'
        f'ACTION=="add", SUBSYSTEM=="net", RUN+="/bin/sh -c \'echo net-%k >> {marker}\'"\n'
    )
    trigger = ["udevadm", "trigger", "--action=add", "--subsystem-match=infiniband"]
    node.run("fabcheck-mock", *trigger, "--sysname-match=mlx5_2")
    node.run("fabcheck-mock", *trigger[:2], "--action=change", *trigger[3:], "--sysname-match=mlx5_1")
    assert marker.read_text() == "mlx5_2\n"
    node.run("fabcheck-mock", *trigger, "--sysname-match=mlx5_9", rc=1)
    assert node.run("systemctl", "reload", "systemd-udevd.service").returncode == 0


def test_opensm_units_still_answer_as_subnet_manager_says(node: MockNode) -> None:
    missing = node.run("systemctl", "is-enabled", "opensm", rc=1)
    assert missing.stderr == "Failed to get unit file state for opensm.service: No such file or directory\n"
