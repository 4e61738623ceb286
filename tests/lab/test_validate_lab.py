"""`fabcheck validate` against a 2-host RoCE lab over real ssh: a factory host fails exactly the settings
the roles would change, a host configured to the intent by hand passes every check, each host fault
fails exactly its check (and heals), and a host that stops answering is an ERROR, never a pass."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import hostgate
import pytest
from labsupport import requires_lab, run_playbook, running_lab

from fabcheck.checks import host as checks
from fabcheck.checks.host.gpu_health import GPU_HEALTH
from fabcheck.cli import main
from fabcheck.collect.ssh import TimeLimits
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.loader import load_inventory
from fabcheck.parsers.rdma_link import parse_rdma_link
from fabcheck_lab import faults
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

CONFIGURED, FACTORY = "gpu01", "gpu02"
FAULTED_NIC, FAULTED_PORT = "mlx5_0", "mlx5_0/1"  # host faults hit the first RoCE NIC


@dataclass(frozen=True)
class Lab:
    paths: LabPaths

    def ssh(self, node: str, command: str) -> str:
        argv = ["ssh", "-F", str(self.paths.ssh_config), node, command]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, f"{node}: {command}: {done.stderr}"
        return done.stdout

    def validate(
        self, capsys: pytest.CaptureFixture[str], *args: str, inventory: Path | None = None
    ) -> tuple[int, list[dict]]:
        """`validate --json` with limits no healthy host can miss on a loaded machine (a round trip takes
        about a second); a test that wants a host to fail makes it fail by construction, not by a timer."""
        capsys.readouterr()
        inventory = inventory or self.paths.inventory.parent
        rc = main(["validate", "-i", str(inventory), "--json", *GENEROUS, *args])
        lines = capsys.readouterr().out.splitlines()
        return rc, [json.loads(line) for line in lines]

    def processes(self, node: str) -> list[str]:
        """Every command line running on the node (its own PID namespace), read from /proc."""
        out = self.ssh(node, "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done 2>/dev/null")
        return [line.strip() for line in out.splitlines() if line.strip()]


GENEROUS = ("--timeout", "120", "--connect-timeout", "60")


def configure_to_intent(lab: Lab, node: str) -> None:
    """What the roce_host / gpu_rdma roles do, typed by hand with the (mock) vendor tools."""
    commands = []
    for link in parse_rdma_link(lab.ssh(node, "rdma link")):
        netdev = link.netdev
        commands += [
            f"mlnx_qos -i {netdev} --trust dscp >/dev/null",
            f"mlnx_qos -i {netdev} --pfc 0,0,0,1,0,0,0,0 >/dev/null",
            f"echo 106 > /sys/class/infiniband/{link.dev}/tc/{link.port}/traffic_class",
            f"cma_roce_tos -d {link.dev} -p {link.port} -t 106 >/dev/null",
            f"ip link set dev {netdev} mtu 9000",
            f"ethtool --set-tunable {netdev} pfc-prevention-tout 100",
        ]
    commands.append("modprobe nvidia_peermem")
    # Role nvlink on an HGX board (fabric_intent.nvlink.fabric_manager): the fabric manager running.
    commands.append("systemctl enable nvidia-fabricmanager && systemctl start nvidia-fabricmanager")
    lab.ssh(node, " && ".join(commands))
    # The boot files (settings file, applier, unit, udev rule) the role installs: by the role itself, its
    # persist part only, so the running settings above stay typed by hand.
    persisted = run_playbook(lab.paths, "--limit", node, "--tags", "persist")
    assert persisted.rc == 0, persisted.output[-3000:]


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        lab = Lab(paths)
        configure_to_intent(lab, CONFIGURED)
        yield lab


def failing(result: dict) -> set[tuple[str, str]]:
    return {(f["check"], f["subject"]) for f in result["findings"] if f["status"] in ("fail", "error")}


def test_factory_host_fails_the_settings_the_roles_change(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, results = lab.validate(capsys, "--limit", FACTORY)
    assert rc == 1
    [result] = results
    assert result["host"] == FACTORY and result["verdict"] == "fail"
    nics = [f"mlx5_{i}" for i in range(8)]
    per_nic = (checks.TRUST, checks.PFC, checks.NETDEV_MTU, checks.PFC_STORM_PREVENTION)
    expected = {(check, nic) for check in per_nic for nic in nics}
    per_port = (checks.ROCE_TOS, checks.CMA_ROCE_TOS, checks.RDMA_MTU)
    expected |= {(check, f"{nic}/1") for check in per_port for nic in nics}
    expected.add((checks.GPUDIRECT, "host"))
    expected.add(("host.fabric_manager", "nvidia-fabricmanager"))  # installed, not started at the factory
    # No boot files on a factory host: the settings file, the unit and the applier/udev rule each fail.
    persistence = {
        (f["check"], f["subject"]) for f in result["findings"] if f["check"] == checks.NIC_PERSISTENCE
    }
    assert len(persistence) == 3
    assert failing(result) == expected | persistence
    by_check = {(f["check"], f["subject"]): f for f in result["findings"]}
    assert by_check[(checks.TRUST, "mlx5_0")]["actual"] == "trust pcp"
    assert "`mlnx_qos -i ens1np0 --trust dscp`" in by_check[(checks.TRUST, "mlx5_0")]["hint"]
    assert by_check[(checks.ROCE_TOS, "mlx5_0/1")]["actual"] == "traffic_class 0"
    assert by_check[(checks.RDMA_MTU, "mlx5_0/1")]["actual"].startswith("active_mtu 1024")
    assert by_check[(checks.DSCP2PRIO, "mlx5_0")]["status"] == "skip"  # trust pcp: the map is not in use


def test_host_configured_to_the_intent_passes_every_check(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, [result] = lab.validate(capsys, "--limit", CONFIGURED)
    assert rc == 0, failing(result)
    assert result["verdict"] == "pass"
    # Skipped only with a reason: the lab intent sets no rp_params, one host has no fleet to compare, and
    # an HGX board runs no IMEX (a lone server: no multi-node NVLink domain).
    skips = {f["check"]: f["actual"] for f in result["findings"] if f["status"] == "skip"}
    assert skips.keys() == {checks.RP_PARAMS, checks.VERSIONS, "host.imex"}, skips
    assert {f["status"] for f in result["findings"]} == {"pass", "skip"}
    assert {f["check"] for f in result["findings"]} == {*checks.HOST_CHECKS, *checks.FLEET_CHECKS}


def test_text_report_groups_by_host_and_names_what_was_not_checked(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "-i", str(lab.paths.inventory.parent)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"FAIL  {FACTORY}")  # failures first
    assert f"PASS  {CONFIGURED}" in lines
    assert out.rstrip().endswith("FAIL: 2 host(s): 1 pass, 1 fail, 0 could not be checked")


NO_RDMA = ((checks.RDMA_DEVICE, "mlx5_"), (checks.AFFINITY, "GPU"))
HOST_FAULT_CHECKS = {
    "pfc-off": {(checks.PFC, FAULTED_NIC)},
    "trust-pcp": {(checks.TRUST, FAULTED_NIC)},
    "dscp-map": {(checks.DSCP2PRIO, FAULTED_NIC)},
    "ecn-off": {(checks.ECN_ENABLE, FAULTED_NIC)},
    "tos": {(checks.ROCE_TOS, FAULTED_PORT), (checks.CMA_ROCE_TOS, FAULTED_PORT)},
    "mtu": {(checks.NETDEV_MTU, FAULTED_NIC), (checks.RDMA_MTU, FAULTED_PORT)},
    "affinity": {(checks.AFFINITY, "GPU0")},
    # Every rail NIC is gone, and nvidia-smi shows no NIC column for any GPU either.
    "no-rdma": {(check, f"{prefix}{i}") for check, prefix in NO_RDMA for i in range(8)},
}


@pytest.mark.parametrize("fault", sorted(HOST_FAULT_CHECKS))
def test_each_host_fault_fails_exactly_its_check(
    lab: Lab, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    assert faults.inject(lab.paths, fault, CONFIGURED)
    try:
        rc, [result] = lab.validate(capsys, "--limit", CONFIGURED)
    finally:
        faults.heal(lab.paths, CONFIGURED, fault)
    assert rc == 1
    assert failing(result) == HOST_FAULT_CHECKS[fault]
    rc, [healed] = lab.validate(capsys, "--limit", CONFIGURED)
    assert rc == 0, failing(healed)


def test_down_host_is_an_error_never_a_pass(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """A stopped node never answers, however fast or slow this machine is: short limits are safe here."""
    faults.inject(lab.paths, "down", FACTORY)
    try:
        rc, [result] = lab.validate(capsys, "--limit", FACTORY, "--timeout", "3", "--connect-timeout", "3")
    finally:
        faults.heal(lab.paths, FACTORY, "down")
    assert rc == 3
    assert result["verdict"] == "error"
    [finding] = result["findings"]
    assert (finding["check"], finding["status"]) == ("host.collection", "error")
    assert "timeout" in finding["actual"] or "not responding" in finding["actual"], finding["actual"]


def refusing_inventory(lab: Lab, tmp_path: Path, host: str) -> Path:
    """The lab inventory with `host` moved to a port where nothing listens: refused at once."""
    source = lab.paths.inventory.parent
    for item in source.iterdir():
        if item.name != "host_vars":
            (tmp_path / item.name).symlink_to(item)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / f"{host}.yml").write_text("ansible_port: 1\n")  # host_vars win over hosts.yml
    return tmp_path


def test_unreachable_host_is_an_error_and_the_healthy_one_still_passes(
    lab: Lab, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    inventory = refusing_inventory(lab, tmp_path, FACTORY)
    rc, results = lab.validate(capsys, inventory=inventory)
    assert rc == 3  # nothing failed, but one host could not be checked: not a pass
    assert [(r["host"], r["verdict"]) for r in results] == [(CONFIGURED, "pass"), (FACTORY, "error")]
    [finding] = results[1]["findings"]
    assert finding["actual"].endswith("port 1: Connection refused")  # ssh's own words


def test_bad_port_in_the_inventory_is_an_error_for_that_host_only(
    lab: Lab, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    inventory = refusing_inventory(lab, tmp_path, FACTORY)
    (inventory / "host_vars" / f"{FACTORY}.yml").write_text("ansible_port: '22;reboot'\n")
    rc, results = lab.validate(capsys, inventory=inventory)
    assert rc == 3
    assert [(r["host"], r["verdict"]) for r in results] == [(CONFIGURED, "pass"), (FACTORY, "error")]
    [finding] = results[1]["findings"]
    assert finding["check"] == "host.inventory"
    assert f"{FACTORY}.yml:1: ansible_port = '22;reboot': " in finding["actual"]


HUNG_MARK = "1717"  # `sleep 1717`: how the hung tool shows in the node's process list


def test_hung_tool_is_stopped_on_the_node_and_nothing_is_left_running(lab: Lab) -> None:
    tool = lab.ssh(CONFIGURED, "command -v nvidia-smi").strip()
    # The node's tool directory is read-only and its tools may share one program: a copy of the
    # directory, with only nvidia-smi replaced by a hung one, is bind-mounted over it in the node's
    # own mount namespace, and unmounted afterwards.
    bin_dir, copy = os.path.dirname(tool), f"/root/hung-{HUNG_MARK}"
    lab.ssh(
        CONFIGURED,
        f"mkdir {copy} && cp -a {bin_dir}/. {copy}/ && rm {copy}/nvidia-smi "
        f"&& printf '#!/bin/sh\\nexec sleep {HUNG_MARK}\\n' > {copy}/nvidia-smi "
        f"&& chmod +x {copy}/nvidia-smi && mount --bind {copy} {bin_dir}",
    )
    # 15 s for each tool (a healthy mock answers in milliseconds), 300 s for the host: the hung tool is
    # stopped there first, however loaded this machine is, and the ~60 other sections have time enough.
    limits = TimeLimits(connect_s=60, command_s=300, per_tool_s=15)
    hosts = plan_gate(load_inventory(lab.paths.inventory.parent), CONFIGURED, ("host",)).hosts
    try:
        [result] = hostgate.validate(hosts, limits)
        left = lab.processes(CONFIGURED)
    finally:
        lab.ssh(CONFIGURED, f"umount {bin_dir} && rm -rf {copy}")
    errors = [f for f in result.findings if f.status.value in ("fail", "error")]
    # nvidia-smi is read twice (topo -m, -q): both sections were stopped, each an error naming why.
    assert [(f.check, f.subject) for f in errors] == [
        (checks.AFFINITY, "topology"),
        (GPU_HEALTH, "GPUs"),
    ], errors
    assert all("stopped after 15 s" in f.actual for f in errors), errors
    assert not [line for line in left if f"sleep {HUNG_MARK}" in line or "fabcheck-collect" in line], left


def test_each_new_setting_fails_exactly_its_check_on_exactly_that_device(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the roles write beyond QoS and MTU (CNP pacing, the RDMA-CM ToS and mode) and the GID NCCL
    uses, each set wrong on its own NIC by hand: exactly that check on exactly that device fails."""
    netdev = {link.dev: link.netdev for link in parse_rdma_link(lab.ssh(CONFIGURED, "rdma link"))}
    pacing = f"/sys/class/net/{netdev['mlx5_1']}/ecn/roce_np/min_time_between_cnps"
    gid_type = "/sys/class/infiniband/mlx5_4/ports/1/gid_attrs/types/3"
    wrong = [
        f"echo 8 > {pacing}",
        "cma_roce_mode -d mlx5_2 -p 1 -m 1 >/dev/null",
        "cma_roce_tos -d mlx5_3 -p 1 -t 0 >/dev/null",
        f"echo 'IB/RoCE v1' > {gid_type}",
    ]
    right = [
        f"echo 4 > {pacing}",
        "cma_roce_mode -d mlx5_2 -p 1 -m 2 >/dev/null",
        "cma_roce_tos -d mlx5_3 -p 1 -t 106 >/dev/null",
        f"echo 'RoCE v2' > {gid_type}",
    ]
    lab.ssh(CONFIGURED, " && ".join(wrong))
    try:
        rc, [result] = lab.validate(capsys, "--limit", CONFIGURED)
    finally:
        lab.ssh(CONFIGURED, " && ".join(right))
    assert rc == 1
    assert failing(result) == {
        (checks.MIN_TIME_BETWEEN_CNPS, "mlx5_1"),
        (checks.CMA_ROCE_MODE, "mlx5_2/1"),
        (checks.CMA_ROCE_TOS, "mlx5_3/1"),
        (checks.GID_INDEX, "mlx5_4/1"),
    }
    by_check = {f["check"]: f for f in result["findings"] if f["status"] == "fail"}
    assert by_check[checks.CMA_ROCE_MODE]["actual"] == "RDMA-CM default mode IB/RoCE v1"
    assert "`cma_roce_mode -d mlx5_2 -p 1 -m 2`" in by_check[checks.CMA_ROCE_MODE]["hint"]
    assert "role roce_host (tag ecn)" in by_check[checks.MIN_TIME_BETWEEN_CNPS]["hint"]


def test_a_host_with_other_firmware_is_named_by_the_fleet_check(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both hosts run the firmware the lab intent pins: host.nic_firmware passes on every NIC of both; one
    NIC of the factory host on another firmware fails it there alone (issue 36: host.versions judges the
    drivers only)."""
    _rc, results = lab.validate(capsys)
    assert {
        (r["host"], f["status"]) for r in results for f in r["findings"] if f["check"] == checks.NIC_FIRMWARE
    } == {
        (CONFIGURED, "pass"),
        (FACTORY, "pass"),
    }
    topology = MockNodePaths.under(lab.paths.node_root(FACTORY)).state / "topology.json"
    factory = topology.read_text()
    shown = json.loads(factory)
    shown["nics"][0]["fw"] = "28.40.1000"  # the NIC's factory firmware state (flint) follows it
    topology.write_text(json.dumps(shown))
    try:
        _rc, results = lab.validate(capsys)
    finally:
        topology.write_text(factory)
    firmware = {
        (r["host"], f["subject"]): f
        for r in results
        for f in r["findings"]
        if f["check"] == checks.NIC_FIRMWARE
    }
    odd = [key for key, f in firmware.items() if f["status"] == "fail"]
    assert odd == [(FACTORY, "mlx5_0")], firmware
    assert firmware[odd[0]]["actual"].startswith("28.40.1000 running")
    assert {f["subject"] for r in results for f in r["findings"] if f["check"] == checks.VERSIONS} == {
        "driver mlx5_core"
    }
