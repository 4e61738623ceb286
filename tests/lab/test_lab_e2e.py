"""One RoCE lab (4 hosts: 3 rail8 + 1 pcie; 3 switches: nvue, sonic, eos) driven by the real clients:
ansible, testinfra, netmiko, ssh. Every fault changes what the tools report and heals back exactly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import testinfra
from labsupport import requires_lab, running_lab
from netmiko import ConnectHandler

from fabcheck.cli import main
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.perftest import parse_perftest
from fabcheck.parsers.topo import parse_topo
from fabcheck_lab import faults
from fabcheck_lab.mockhost import HOST_FAULTS
from fabcheck_lab.mockswitch import SWITCH_FAULTS, SWITCH_PLATFORMS, state_path
from fabcheck_lab.mockswitch.device import CABLE_FAULTS, WIRE_FAULTS
from fabcheck_lab.state import LabPaths, LabState

pytestmark = [pytest.mark.lab, requires_lab]

FAULTED_HOST = "gpu01"
NIC, NETDEV = "mlx5_0", "ens1np0"  # the NIC host faults hit on a rail8 host


@dataclass(frozen=True)
class Lab:
    paths: LabPaths
    state: LabState

    def ssh(self, node: str, command: str, *options: str) -> subprocess.CompletedProcess[str]:
        argv = ["ssh", "-F", str(self.paths.ssh_config), *options, node, command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    def out(self, node: str, command: str) -> str:
        result = self.ssh(node, command)
        assert result.returncode == 0, f"{node}: {command}: {result.stderr}"
        return result.stdout

    @contextlib.contextmanager
    def switch(self, name: str, **extra: Any) -> Iterator[Any]:
        node = self.state.node(name)
        password = self.paths.switch_password.read_text().strip()
        connection = ConnectHandler(
            device_type=SWITCH_PLATFORMS[node.profile],
            host=node.address,
            port=node.port,
            username=node.username,
            password=password,
            ssh_strict=True,  # host-key checking against the lab's own known_hosts
            system_host_keys=False,
            alt_host_keys=True,
            alt_key_file=str(self.paths.known_hosts),
            allow_agent=False,
            use_keys=False,
            **extra,
        )
        try:
            yield connection
        finally:
            connection.disconnect()

    def running_config(self, switch: str) -> Any:
        return json.loads(state_path(self.paths.run_dir, switch).read_text())["running"]


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with running_lab(profile="roce", hosts=4, switches=3) as (paths, state):
        yield Lab(paths, state)


def _fresh(seconds: int) -> tuple[str, ...]:
    return ("-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", f"ConnectTimeout={seconds}")


# ---- reachability with the real clients --------------------------------------------------------


@pytest.fixture
def cli_on_lab(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> Lab:
    """`fabcheck lab ...` commands act on the test lab's scratch checkout."""
    monkeypatch.setattr("fabcheck_lab.cli.project_root", lambda: lab.paths.project)
    return lab


def test_status_json_reports_every_node_answering(
    cli_on_lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = cli_on_lab
    assert main(["lab", "status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["up"] and report["supervisor_alive"] and report["faults"] == []
    assert [(n["name"], n["answers"]) for n in report["nodes"]] == [(n.name, True) for n in lab.state.nodes]


def test_ansible_ping_reaches_every_host_with_host_key_checking(lab: Lab) -> None:
    ansible = Path(sys.executable).parent / "ansible"
    env = os.environ | {"ANSIBLE_DEPRECATION_WARNINGS": "False", "ANSIBLE_HOST_KEY_CHECKING": "True"}
    command = [str(ansible), "all", "-i", "inventory/lab", "-m", "ansible.builtin.ping", "-o"]
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=lab.paths.project, env=env, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for node in lab.state.nodes:
        assert any(line.startswith(f"{node.name} | SUCCESS") and '"pong"' in line for line in lines), (
            node.name
        )


def test_testinfra_sees_each_hosts_own_topology(lab: Lab) -> None:
    for node in lab.state.host_nodes():
        host = testinfra.get_host(f"ssh://{node.name}", ssh_config=str(lab.paths.ssh_config))
        assert host.check_output("hostname") == node.name
        assert host.file("/usr/local/bin/nvidia-smi").exists
        matrix = parse_topo(host.run("nvidia-smi topo -m").stdout)
        assert len(matrix.gpus) == 8
        pix = [(g, n) for g in matrix.gpus for n in matrix.nics if matrix.link(g, n) == "PIX"]
        if node.profile == "rail8":
            assert matrix.link("GPU0", "mlx5_0") == "PIX" and len(pix) == 8
        else:
            assert node.profile == "pcie" and pix == []


def test_netmiko_drives_every_switch_with_its_real_device_type(lab: Lab) -> None:
    shows = {"nvue": "nv show qos roce", "sonic": "show pfc priority", "eos": "show running-config"}
    for node in lab.state.switch_nodes():
        with lab.switch(node.name) as conn:
            assert node.name in conn.base_prompt
            if node.profile == "eos":
                conn.enable()
            output = conn.send_command(shows[node.profile])
            assert output and "Invalid" not in output and "Error" not in output, output


# ---- host faults ---------------------------------------------------------------------------------

# fault -> (probe command on the faulted host, predicate that holds only while the fault is active)
HOST_PROBES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "pfc-off": (f"mlnx_qos -i {NETDEV}", lambda out: parse_mlnx_qos(out).pfc_enabled == ()),
    "pfc-storm-off": (
        f"ethtool --get-tunable {NETDEV} pfc-prevention-tout",
        lambda out: out == "pfc-prevention-tout: 0\n",
    ),
    "trust-pcp": (f"mlnx_qos -i {NETDEV}", lambda out: parse_mlnx_qos(out).trust == "pcp"),
    "dscp-map": (f"mlnx_qos -i {NETDEV}", lambda out: parse_mlnx_qos(out).dscp2prio[26] != 3),
    "ecn-off": (
        f"cat /sys/class/net/{NETDEV}/ecn/roce_np/enable/3 /sys/class/net/{NETDEV}/ecn/roce_rp/enable/3",
        lambda out: out.split() == ["0", "0"],
    ),
    "tos": (f"cma_roce_tos -d {NIC}", lambda out: out.strip() != "106"),
    "mtu": (f"ibv_devinfo -d {NIC}", lambda out: parse_ibv_devinfo(out)[0].ports[0].active_mtu == 1024),
    "affinity": ("nvidia-smi topo -m", lambda out: parse_topo(out).link("GPU0", NIC) == "SYS"),
    "no-rdma": ("ibv_devinfo 2>&1", lambda out: out == "No IB devices found\n"),
}
SNAPSHOT = "; ".join(sorted({f"echo '== {probe}'; {probe} 2>&1" for probe, _ in HOST_PROBES.values()}))


@pytest.fixture(scope="module")
def configured_host(lab: Lab) -> str:
    """Configure the faulted host as the host role would, so every fault has something to break."""
    lab.out(
        FAULTED_HOST,
        f"mlnx_qos -i {NETDEV} --trust dscp && mlnx_qos -i {NETDEV} --pfc 0,0,0,1,0,0,0,0 && "
        f"echo 106 > /sys/class/infiniband/{NIC}/tc/1/traffic_class && cma_roce_tos -d {NIC} -t 106 && "
        f"ip link set dev {NETDEV} mtu 9000",
    )
    return FAULTED_HOST


def test_every_host_fault_has_a_probe() -> None:
    from test_mockhost_faults import TESTED_ELSEWHERE  # need a converged host or an SM node, not this lab

    assert set(HOST_PROBES) | set(TESTED_ELSEWHERE) == set(HOST_FAULTS)


@pytest.mark.parametrize("fault", list(HOST_PROBES))
def test_host_fault_shows_in_the_tools_and_heals_exactly(lab: Lab, configured_host: str, fault: str) -> None:
    probe, active = HOST_PROBES[fault]
    before = lab.out(configured_host, SNAPSHOT)
    assert not active(lab.ssh(configured_host, probe).stdout)
    assert faults.inject(lab.paths, fault, configured_host)
    assert active(lab.ssh(configured_host, probe).stdout), f"{fault} is not visible through `{probe}`"
    healed = faults.heal(lab.paths, configured_host, fault)
    assert [(f.fault, f.node) for f in healed] == [(fault, configured_host)]
    assert lab.out(configured_host, SNAPSHOT) == before


@pytest.mark.parametrize("stack", [("trust-pcp", "dscp-map"), ("tos", "no-rdma"), ("ecn-off", "tos", "mtu")])
def test_stacked_host_faults_heal_back_to_the_state_before_the_first(
    lab: Lab, configured_host: str, stack: tuple[str, ...]
) -> None:
    before = lab.out(configured_host, SNAPSHOT)
    for fault in stack:
        assert faults.inject(lab.paths, fault, configured_host)
    healed = faults.heal(lab.paths, configured_host)
    assert [f.fault for f in healed] == list(reversed(stack))
    assert lab.out(configured_host, SNAPSHOT) == before
    assert faults.heal(lab.paths, configured_host) == []


# ---- switch faults -------------------------------------------------------------------------------

SWITCH_SETUP = {
    "nvue": ["nv set qos roce", "nv config apply -y"],
    "sonic": [],  # factory CONFIG_DB already runs PFC 3,4 and ECN on queue 3
    "eos": [
        "qos profile ROCE",
        "priority-flow-control on",
        "priority-flow-control priority 3 no-drop",
        "uc-tx-queue 3",
        "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes",
        "interface Ethernet1/1",
        "service-profile ROCE",
        "interface Ethernet2/1",
        "service-profile ROCE",
    ],
}
# (platform, fault) -> (show command, regex matching only while the fault is active)
SWITCH_PROBES = {
    ("nvue", "switch-pfc-prio"): ("nv show interface swp1 qos roce status", r"^  pfc-priority +4\b"),
    ("sonic", "switch-pfc-prio"): ("show pfc priority", r"^Ethernet0 +4$"),
    ("eos", "switch-pfc-prio"): ("show priority-flow-control interfaces Et1/1", r"^Et1/1 +E A +4 "),
    ("nvue", "switch-ecn-off"): ("nv show qos roce", r"^  enabled-tc +0\b(?!,)"),
    ("sonic", "switch-ecn-off"): ("ecnconfig -q 3", r"^queue 3: off$"),
    # the hand-made uc-tx-queue 3 above sets no `no priority`, so EOS schedules it strict (SP)
    ("eos", "switch-ecn-off"): ("show qos interfaces Et2/1", r"^ +3 +- +SP +Disabled"),
}


@pytest.fixture(scope="module")
def configured_switches(lab: Lab) -> dict[str, str]:
    """platform -> switch name, each configured for lossless RoCE the way the switch role would."""
    chosen = {}
    for node in lab.state.switch_nodes():
        with lab.switch(node.name) as conn:
            conn.enable()
            if SWITCH_SETUP[node.profile]:
                conn.send_config_set(SWITCH_SETUP[node.profile], error_pattern=r"^% |^Error:")
        chosen[node.profile] = node.name
    return chosen


# Cabling faults: what LLDP hears changes, the configuration does not.
LLDP_SHOW = {"nvue": "nv show interface lldp", "sonic": "show lldp table", "eos": "show lldp neighbors"}


def test_every_switch_fault_has_a_probe_on_every_platform() -> None:
    # Wire faults change no setting a show command prints: they make one port's counters and module
    # diagnostics move, proven per platform through the gate (tests/switch/test_*_wire.py in process,
    # tests/lab/test_fabric_gate_lab.py on the lab).
    assert {fault for _platform, fault in SWITCH_PROBES} | CABLE_FAULTS | WIRE_FAULTS == set(SWITCH_FAULTS)
    assert {platform for platform, _fault in SWITCH_PROBES} == set(SWITCH_PLATFORMS)


@pytest.mark.parametrize(("platform", "fault"), list(SWITCH_PROBES))
def test_switch_fault_shows_on_the_cli_and_heals_exactly(
    lab: Lab, configured_switches: dict[str, str], platform: str, fault: str
) -> None:
    name = configured_switches[platform]
    show, faulted = SWITCH_PROBES[(platform, fault)]
    running = lab.running_config(name)
    with lab.switch(name) as conn:
        conn.enable()
        before = conn.send_command(show)
        assert not re.search(faulted, before, re.M), before
        assert faults.inject(lab.paths, fault, name)
        assert re.search(faulted, conn.send_command(show), re.M)
        assert lab.running_config(name) != running
        faults.heal(lab.paths, name, fault)
        assert conn.send_command(show) == before
    assert lab.running_config(name) == running


@pytest.mark.parametrize("platform", sorted(LLDP_SHOW))
def test_a_miswired_switch_swaps_what_lldp_hears_and_heals_exactly(
    lab: Lab, configured_switches: dict[str, str], platform: str
) -> None:
    name = configured_switches[platform]
    running = lab.running_config(name)
    with lab.switch(name) as conn:
        conn.enable()
        before = conn.send_command(LLDP_SHOW[platform])
        assert re.search(r"\bgpu01\b", before) and re.search(r"\bgpu02\b", before), before
        assert faults.inject(lab.paths, "switch-miswired", name)
        swapped = conn.send_command(LLDP_SHOW[platform])
        assert swapped != before and sorted(swapped.split()) == sorted(before.split())
        assert lab.running_config(name) == running
        faults.heal(lab.paths, name, "switch-miswired")
        assert conn.send_command(LLDP_SHOW[platform]) == before


# ---- lab faults: slow-link, down ---------------------------------------------------------------


def _write_bw(lab: Lab, client: str, server: str) -> float:
    """Average Gb/s of one mock ib_write_bw run from client to server (real TCP between the nodes)."""
    address = lab.state.node(server).address
    lab.out(server, f"nohup ib_write_bw -d {NIC} --report_gbits > /tmp/ib_write_bw.server 2>&1 < /dev/null &")
    run = parse_perftest(lab.out(client, f"ib_write_bw -d {NIC} --report_gbits {address}"))
    assert run.completed and run.bw_unit == "Gb/sec", run
    return run.rows[-1].bw_avg or 0.0


def test_slow_link_lowers_measured_rdma_bandwidth_until_healed(lab: Lab) -> None:
    baseline = _write_bw(lab, "gpu03", "gpu02")
    assert baseline > 300, f"unshaped lab link reads only {baseline} Gb/s"
    faults.inject(lab.paths, "slow-link", "gpu02")
    try:
        slowed = _write_bw(lab, "gpu03", "gpu02")
    finally:
        faults.heal(lab.paths, "gpu02", "slow-link")
    assert slowed < baseline / 2, f"slow-link: {slowed} Gb/s vs {baseline} Gb/s"
    assert _write_bw(lab, "gpu03", "gpu02") > 300
    # The client's own traffic leaves from its lab address, so slowing the client's link counts too.
    faults.inject(lab.paths, "slow-link", "gpu03")
    try:
        slowed_client = _write_bw(lab, "gpu03", "gpu02")
    finally:
        faults.heal(lab.paths, "gpu03", "slow-link")
    assert slowed_client < baseline / 2, f"slow-link on the client: {slowed_client} Gb/s vs {baseline} Gb/s"


def test_down_host_stops_answering_ssh_until_healed(lab: Lab) -> None:
    assert lab.out("gpu04", "hostname").strip() == "gpu04"
    faults.inject(lab.paths, "down", "gpu04")
    try:
        failed = lab.ssh("gpu04", "true", *_fresh(2))
        assert failed.returncode == 255 and "timed out" in failed.stderr, failed.stderr
    finally:
        faults.heal(lab.paths, "gpu04", "down")
    assert lab.ssh("gpu04", "hostname", *_fresh(5)).stdout.strip() == "gpu04"


def test_down_switch_refuses_netmiko_until_healed(lab: Lab) -> None:
    name = lab.state.switch_nodes()[0].name
    faults.inject(lab.paths, "down", name)
    try:
        with (
            pytest.raises(Exception, match="TCP connection to device failed"),
            lab.switch(name, conn_timeout=2),
        ):
            pass
    finally:
        faults.heal(lab.paths, name, "down")
    with lab.switch(name) as conn:
        assert name in conn.base_prompt


def test_heal_without_arguments_heals_everything(cli_on_lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab = cli_on_lab
    faults.inject(lab.paths, "slow-link", "gpu03")
    faults.inject(lab.paths, "switch-ecn-off", lab.state.switch_nodes()[1].name)
    assert main(["lab", "status"]) == 0
    status = capsys.readouterr().out
    assert "slow-link" in status and "switch-ecn-off" in status
    assert main(["lab", "heal"]) == 0
    healed = capsys.readouterr().out.splitlines()
    assert sorted(healed) == sorted(
        ["healed slow-link on gpu03", f"healed switch-ecn-off on {lab.state.switch_nodes()[1].name}"]
    )
    assert main(["lab", "heal"]) == 0
    assert capsys.readouterr().out.strip() == "no matching active fault"
