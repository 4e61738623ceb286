"""The mock switch server over real SSH: netmiko with the real device types pushes, shows and fails."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from netmiko import ConnectHandler
from netmiko.exceptions import ConfigInvalidException, NetmikoAuthenticationException, ReadTimeout

from fabcheck_lab.mockhost.tools.traffic import SPOOL_DIR
from fabcheck_lab.mockswitch import (
    SWITCH_PLATFORMS,
    MockSwitchError,
    SwitchSpec,
    arm_drop,
    heal_switch_fault,
    inject_switch_fault,
    known_hosts_path,
    ready_path,
    state_path,
    write_spec,
)
from fabcheck_lab.mockswitch.wire import host_state

PASSWORDS = {"nvue": "Cumulus-lab-pw-1", "sonic": "Sonic-lab-pw-2", "eos": "Eos-lab-pw-3"}
USERS = {"nvue": "cumulus", "sonic": "admin", "eos": "admin"}
PORTS = {"nvue": ("swp1", "swp2"), "sonic": ("Ethernet0", "Ethernet8"), "eos": ("Ethernet1", "Ethernet2")}
# One switch per test concern, so tests do not depend on each other's order.
ROLES = ("push", "fault", "drop")
DROPPED = (ReadTimeout, OSError, EOFError)  # how netmiko surfaces a channel cut under it


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, SwitchSpec]]]:
    run_dir = tmp_path_factory.mktemp("mockswitch")
    specs = {}
    for index, (platform, role) in enumerate((p, r) for p in SWITCH_PLATFORMS for r in ROLES):
        address = f"127.0.3.{200 + index}"
        specs[f"{platform}-{role}"] = SwitchSpec(
            f"{platform}-{role}",
            platform,
            address,
            free_port(address),
            USERS[platform],
            PASSWORDS[platform],
            PORTS[platform],
            tuple((port, f"{platform}-{role}-host{i}", "ens1np0") for i, port in enumerate(PORTS[platform])),
        )
        for _, host, _ in specs[f"{platform}-{role}"].neighbors:
            host_state(run_dir, host).mkdir(parents=True)
    write_spec(run_dir, list(specs.values()))
    server = subprocess.Popen(
        [sys.executable, "-m", "fabcheck_lab.mockswitch", "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not ready_path(run_dir).exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"mock switch server did not come up: {server.communicate()[0]}")
        time.sleep(0.05)
    yield run_dir, specs
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=10) == 0
    assert not ready_path(run_dir).exists()


def connect(lab: tuple[Path, dict[str, SwitchSpec]], name: str, **extra: object):
    run_dir, specs = lab
    spec = specs[name]
    return ConnectHandler(
        device_type=SWITCH_PLATFORMS[spec.platform],
        host=spec.address,
        port=spec.port,
        username=spec.username,
        password=spec.password,
        ssh_strict=True,
        system_host_keys=False,
        alt_host_keys=True,
        alt_key_file=str(known_hosts_path(run_dir)),
        allow_agent=False,
        use_keys=False,
        **extra,
    )


def spool(lab: tuple[Path, dict[str, SwitchSpec]], name: str, port_index: int, add: dict) -> None:
    """What a host's mock tool leaves after a flow through that switch port (see tools/traffic.py)."""
    run_dir, specs = lab
    port, host, _ = specs[name].neighbors[port_index]
    folder = host_state(run_dir, host) / SPOOL_DIR
    folder.mkdir(parents=True, exist_ok=True)
    record = {"switch": name, "port": port, "add": add}
    (folder / f"{time.time_ns()}.json").write_text(json.dumps(record))


def state(lab: tuple[Path, dict[str, SwitchSpec]], name: str) -> dict:
    return json.loads(state_path(lab[0], name).read_text())


def test_server_files_known_hosts_and_ready(lab) -> None:
    run_dir, specs = lab
    switches = run_dir / "switches"
    assert (switches / "spec.json").stat().st_mode & 0o777 == 0o600
    known = known_hosts_path(run_dir).read_text().splitlines()
    assert sorted(line.split()[0] for line in known) == sorted(
        f"[{s.address}]:{s.port}" for s in specs.values()
    )
    assert json.loads(ready_path(run_dir).read_text())["switches"] == list(specs)
    for name in specs:
        assert set(state(lab, name)) >= {"running", "pending", "startup", "log", "counters"}


def test_wrong_password_is_refused(lab) -> None:
    run_dir, specs = lab
    spec = specs["eos-push"]
    with pytest.raises(NetmikoAuthenticationException):
        ConnectHandler(
            device_type="arista_eos",
            host=spec.address,
            port=spec.port,
            username=spec.username,
            password="not-the-password",
            ssh_strict=True,
            system_host_keys=False,
            alt_host_keys=True,
            alt_key_file=str(known_hosts_path(run_dir)),
            allow_agent=False,
            use_keys=False,
        )


def test_nvue_push_apply_and_show(lab) -> None:
    with connect(lab, "nvue-push") as conn:
        assert conn.base_prompt == "cumulus@nvue-push:mgmt:~"
        assert "pfc-priority      -" in conn.send_command("nv show qos roce")
        out = conn.send_config_set(
            ["nv set qos roce", "nv set interface swp1 link mtu 9000", "nv config apply -y"],
            error_pattern=r"^Error:",
        )
        assert "applied_and_saved [rev_id: 2]" in out
        assert json.loads(conn.send_command("nv show interface swp1 link -o json"))["mtu"] == 9000
        roce = conn.send_command("nv show qos roce")
        assert "  pfc-priority      3" in roce and "  enabled-tc        0,3" in roce
        assert conn.send_command("nv set qos foo") == "Error: Invalid Command: nv set qos foo"
        with pytest.raises(ConfigInvalidException):
            conn.send_config_set(["nv set interface swp2 link mtu 99999"], error_pattern=r"^Error:")
        question = conn.send_command("nv config apply", expect_string=r"\[y/N\]")
        assert question.rstrip().endswith("Are you sure? [y/N]")
        conn.write_channel("n\n")  # send_command would first send a bare Enter, which also declines
        assert "Declined apply after warnings" in conn.read_until_prompt()
    st = state(lab, "nvue-push")
    assert st["running"]["qos"]["roce"] == {"enable": "on"}
    assert st["startup"] == st["running"]
    assert {q["pfc_priorities"][0] for q in st["operational"].values()} == {3}


def test_eos_session_commit_abort_and_json(lab) -> None:
    with connect(lab, "eos-push") as conn:
        conn.enable()
        assert conn.base_prompt == "eos-push"
        push = [
            "configure session roce",
            "qos map dscp 24 25 26 27 to traffic-class 3",
            "qos profile ROCE",
            "qos trust dscp",
            "priority-flow-control on",
            "priority-flow-control priority 3 no-drop",
            "uc-tx-queue 3",
            "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes",
            "interface Ethernet1-2",
            "mtu 9214",
            "service-profile ROCE",
        ]
        conn.send_config_set(push, error_pattern=r"^% ", exit_config_mode=False)
        diff = conn.send_command("show session-config diffs")
        assert "+qos map dscp 24 25 26 27 to traffic-class 3" in diff
        assert state(lab, "eos-push")["running"]["qos_profiles"] == {}
        conn.send_command("commit", expect_string=r"#")
        assert "Copy completed successfully." in conn.save_config()
        spool(lab, "eos-push", 0, {"pfc_rx": {"3": 4}, "pfc_tx": {"3": 2}})
        spool(lab, "eos-push", 1, {"ecn_marked": {"3": 300}})
        assert state(lab, "eos-push")["counters"]["ports"]["Ethernet1"]["pfc_rx"][3] == 0  # not drained yet
        counters = json.loads(conn.send_command("show priority-flow-control counters | json"))
        assert counters["interfaceCounters"]["Ethernet1"] == {"rxFrames": 4, "txFrames": 2}
        ecn = json.loads(conn.send_command("show qos interfaces ecn counters queue | json"))
        assert ecn["intfQueueCounters"]["Ethernet2"]["queueCounters"]["3"] == "300"
        assert ecn["intfQueueCounters"]["Ethernet2"]["queueCounters"]["4"] == "-"
        conn.send_config_set(
            ["configure session scratch", "no qos profile ROCE", "abort"], exit_config_mode=False
        )
        with pytest.raises(ConfigInvalidException, match="Invalid input"):
            conn.send_config_set(["qos mapp dscp 26 to traffic-class 3"], error_pattern=r"% Invalid")
        assert conn.send_command("show running-config | json") == "% This is an unconverted command"
    st = state(lab, "eos-push")
    assert st["pending"] == {} and "ROCE" in st["running"]["qos_profiles"]
    assert st["startup"]["interfaces"]["Ethernet1"] == {"mtu": 9214, "service_profile": "ROCE"}


def test_sonic_checkpoint_patch_and_heredoc(lab) -> None:
    patch = json.dumps(
        [
            {"op": "replace", "path": "/PORT_QOS_MAP/Ethernet0/pfc_enable", "value": "3"},
            {"op": "add", "path": "/DSCP_TO_TC_MAP/AZURE/26", "value": "3"},
        ]
    )
    with connect(lab, "sonic-push") as conn:
        assert conn.base_prompt == "admin@sonic-push:~"
        out = conn.send_config_set(
            ["config checkpoint before-roce", f"echo '{patch}' > roce.json", "config apply-patch roce.json"],
            error_pattern=r"Failed|Error:",
        )
        assert "Checkpoint created successfully." in out and "Patch applied successfully." in out
        assert "Ethernet0    3\n" in conn.send_command("show pfc priority")
        heredoc = [
            "cat > mtu.json <<'EOF'",
            '[{"op": "replace", "path": "/PORT/Ethernet8/mtu", "value": "9000"}]',
            "EOF",
            "config apply-patch mtu.json",
        ]
        conn.send_config_set(heredoc, cmd_verify=False)
        assert conn.send_command('sonic-db-cli CONFIG_DB hget "PORT|Ethernet8" mtu') == "9000"
        bad = conn.send_config_set(
            ['config apply-patch /dev/stdin <<< \'[{"op": "remove", "path": "/PORT/Ethernet99"}]\'']
        )
        assert "Failed to apply patch due to: can't remove a non-existent object 'Ethernet99'" in bad
        assert conn.send_command("ecnconfig -q 3") == "ECN status:\nqueue 3: on"
        spool(lab, "sonic-push", 0, {"tx_packets": {"3": 1000}})
        counters = conn.send_command("show queue counters Ethernet0")
        assert "Ethernet0    UC3            1000" in counters
        rolled = conn.send_config_set(["config rollback before-roce", "config save -y"])
        assert "Config rolled back successfully." in rolled
    st = state(lab, "sonic-push")
    assert st["running"]["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3,4"
    assert st["startup"] == st["running"] and list(st["checkpoints"]) == ["before-roce"]


@pytest.mark.parametrize(
    ("name", "show", "faulted", "healthy"),
    [
        (
            "nvue-fault",
            "nv show interface swp1 qos roce status",
            "  pfc-priority      4",
            "  pfc-priority      3",
        ),
        ("sonic-fault", "show pfc priority", "Ethernet0    4\n", "Ethernet0    3,4\n"),
        ("eos-fault", "show priority-flow-control interfaces Et1", "Et1   E A W   4", "Et1   E A W   3"),
    ],
)
def test_pfc_priority_fault_shows_and_heals(lab, name: str, show: str, faulted: str, healthy: str) -> None:
    with connect(lab, name) as conn:
        conn.enable()
        if name.startswith("nvue"):
            conn.send_config_set(["nv set qos roce", "nv config apply -y"])
        if name.startswith("eos"):
            conn.send_config_set(
                [
                    "qos profile ROCE",
                    "priority-flow-control on",
                    "priority-flow-control priority 3 no-drop",
                    "priority-flow-control pause watchdog",
                    "interface Ethernet1-2",
                    "service-profile ROCE",
                ]
            )
        before = state(lab, name)["running"]
        assert healthy in conn.send_command(show)
        inject_switch_fault(lab[0], name, "switch-pfc-prio")
        assert faulted in conn.send_command(show)
        assert state(lab, name)["operational"][PORTS[name.split("-")[0]][1]]["pfc_priorities"][0] == 3
        heal_switch_fault(lab[0], name, "switch-pfc-prio")
        assert healthy in conn.send_command(show)
    assert state(lab, name)["running"] == before


@pytest.mark.parametrize(
    ("name", "show", "faulted"),
    [
        ("nvue-fault", "nv show qos roce", "  enabled-tc        0\n"),
        ("sonic-fault", "ecnconfig -q 3", "queue 3: off"),
        # tx-queues are strict priority until `no priority` (the queue below sets none): SP
        ("eos-fault", "show qos interfaces Et2", "   3         -          SP        Disabled"),
    ],
)
def test_ecn_off_fault_shows_and_heals(lab, name: str, show: str, faulted: str) -> None:
    with connect(lab, name) as conn:
        conn.enable()
        # Each switch gets the lossless config this test needs itself, not from the test before it.
        if name.startswith("nvue"):
            conn.send_config_set(["nv set qos roce", "nv config apply -y"])
        if name.startswith("eos"):
            conn.send_config_set(
                [
                    "qos profile ROCE",
                    "uc-tx-queue 3",
                    "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes",
                    "interface Ethernet1-2",
                    "service-profile ROCE",
                ]
            )
        before = state(lab, name)["running"]
        healthy = conn.send_command(show)
        assert faulted not in healthy, healthy
        inject_switch_fault(lab[0], name, "switch-ecn-off")
        assert faulted in conn.send_command(show)
        heal_switch_fault(lab[0], name)
        assert conn.send_command(show) == healthy
    assert state(lab, name)["running"] == before and state(lab, name)["faults"] == {}


def test_arm_drop_nvue_leaves_running_unchanged(lab) -> None:
    before = state(lab, "nvue-drop")["running"]
    arm_drop(lab[0], "nvue-drop", 2)
    with connect(lab, "nvue-drop") as conn, pytest.raises(DROPPED):
        conn.send_config_set(
            [
                "nv set qos roce",
                "nv set interface swp1 link mtu 9000",
                "nv set interface swp2 link mtu 9000",
                "nv config apply -y",
            ],
            read_timeout=1,
        )
    st = state(lab, "nvue-drop")
    assert st["running"] == before
    assert st["pending"]["config"]["interface"] == {"swp1": {"link": {"mtu": 9000}}}
    assert st["log"][-2]["event"] == "drop" and "swp2" in st["log"][-2]["text"]


def test_arm_drop_eos_session_stays_uncommitted(lab) -> None:
    before = state(lab, "eos-drop")["running"]
    arm_drop(lab[0], "eos-drop", 3)
    with connect(lab, "eos-drop") as conn:
        conn.enable()
        with pytest.raises(DROPPED):
            conn.send_config_set(
                [
                    "configure session push1",
                    "qos map dscp 26 to traffic-class 3",
                    "interface Ethernet1",
                    "mtu 9214",
                    "commit",
                ],
                read_timeout=1,
            )
    st = state(lab, "eos-drop")
    assert st["running"] == before
    assert st["pending"]["push1"]["interfaces"]["Ethernet1"] == {}
    assert st["pending"]["push1"]["qos"]["dscp_map"] == {"26": 3}


def test_arm_drop_sonic_heredoc_never_applies(lab) -> None:
    before = state(lab, "sonic-drop")["running"]
    arm_drop(lab[0], "sonic-drop", 2)
    push = [
        "config checkpoint pre",
        "cat > p.json <<'EOF'",
        '[{"op": "replace", "path": "/PORT_QOS_MAP/Ethernet0/pfc_enable", "value": "3"}]',
        "EOF",
        "config apply-patch p.json",
    ]
    with connect(lab, "sonic-drop") as conn, pytest.raises(DROPPED):
        conn.send_config_set(push, cmd_verify=False, read_timeout=1)
    st = state(lab, "sonic-drop")
    assert st["running"] == before and st["files"] == {}
    assert list(st["checkpoints"]) == ["pre"]


def test_exec_request_runs_one_command(lab) -> None:
    run_dir, specs = lab
    spec = specs["nvue-fault"]
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts_path(run_dir)))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        spec.address, spec.port, spec.username, spec.password, allow_agent=False, look_for_keys=False
    )
    try:
        _, stdout, _ = client.exec_command("nv show qos pfc-watchdog -o json")
        assert json.loads(stdout.read()) == {"polling-interval": 100, "robustness": 3}
        assert stdout.channel.recv_exit_status() == 0
    finally:
        client.close()


def test_controls_refuse_unknown_names(lab, tmp_path: Path) -> None:
    with pytest.raises(MockSwitchError, match="no mock switch named 'nope'"):
        arm_drop(lab[0], "nope", 1)
    with pytest.raises(MockSwitchError, match="unknown switch fault"):
        inject_switch_fault(lab[0], "eos-fault", "switch-on-fire")
    write_spec(tmp_path, [lab[1]["eos-fault"]])
    with pytest.raises(MockSwitchError, match="not running"):
        inject_switch_fault(tmp_path, "eos-fault", "switch-ecn-off")


def test_passwords_never_reach_state_or_logs(lab) -> None:
    run_dir = lab[0]
    for path in (run_dir / "switches").iterdir():
        if path.name in ("spec.json", "control.sock"):
            continue
        text = path.read_text(errors="replace")
        assert not any(pw in text for pw in PASSWORDS.values()), path.name
    assert os.stat(run_dir / "switches" / "ssh_host_ed25519_key").st_mode & 0o777 == 0o600
