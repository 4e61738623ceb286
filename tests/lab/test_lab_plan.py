"""Lab shapes, state files and access files: pure logic, no root needed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabcheck_lab import inventory, keys, nodes
from fabcheck_lab.state import (
    ActiveFault,
    LabError,
    LabPaths,
    LabPids,
    LabState,
    ProcessRef,
    load_state,
    run_dir_for,
)


def _state(profile: str = "roce", hosts: int = 4, switches: int = 3) -> LabState:
    return LabState(
        project="/repo",
        run_dir="/dev/shm/fabcheck-lab-0",
        profile=profile,
        hosts=hosts,
        switches=switches,
        net="lo",
        nodes=nodes.plan_nodes(profile, hosts, switches),
    )


def test_roce_plan_has_rail8_hosts_a_pcie_host_and_cycling_switch_platforms() -> None:
    plan = nodes.plan_nodes("roce", 4, 4)
    hosts = [n for n in plan if n.kind == "host"]
    switches = [n for n in plan if n.kind == "switch"]
    assert [(n.name, n.profile, n.address, n.port, n.group) for n in hosts] == [
        ("gpu01", "rail8", "127.0.1.1", 2222, "gpu_hosts"),
        ("gpu02", "rail8", "127.0.1.2", 2222, "gpu_hosts"),
        ("gpu03", "rail8", "127.0.1.3", 2222, "gpu_hosts"),
        ("gpu04", "pcie", "127.0.1.4", 2222, "gpu_hosts"),
    ]
    assert [(n.name, n.profile, n.address, n.port, n.username) for n in switches] == [
        ("leaf01", "nvue", "127.0.3.1", 2201, "cumulus"),
        ("leaf02", "sonic", "127.0.3.2", 2201, "admin"),
        ("leaf03", "eos", "127.0.3.3", 2201, "admin"),
        ("leaf04", "nvue", "127.0.3.4", 2201, "cumulus"),
    ]
    assert switches[0].ports[:2] == ("swp1", "swp2")
    assert switches[1].ports[:3] == ("Ethernet0", "Ethernet8", "Ethernet16")
    assert switches[2].ports[:2] == ("Ethernet1/1", "Ethernet2/1")


def test_two_host_roce_lab_has_no_pcie_host() -> None:
    assert [n.profile for n in nodes.plan_nodes("roce", 2, 0)] == ["rail8", "rail8"]


def test_ib_plan_adds_two_subnet_managers_and_no_switches() -> None:
    plan = nodes.plan_nodes("ib", 2, 0)
    assert [(n.name, n.profile, n.group, n.address) for n in plan] == [
        ("gpu01", "ib", "gpu_hosts", "127.0.1.1"),
        ("gpu02", "ib", "gpu_hosts", "127.0.1.2"),
        ("sm01", "sm", "subnet_managers", "127.0.1.3"),
        ("sm02", "sm", "subnet_managers", "127.0.1.4"),
    ]


def test_addresses_roll_over_every_250_hosts_and_names_widen() -> None:
    plan = nodes.plan_nodes("roce", 256, 16)
    assert plan[0].name == "gpu001"
    assert plan[249].address == "127.0.1.250"
    assert plan[250].address == "127.0.2.1"
    assert plan[255].profile == "pcie"
    assert plan[-1].name == "leaf16" and plan[-1].address == "127.0.3.16"
    assert len({(n.address, n.port) for n in plan}) == len(plan)


def test_past_500_hosts_addresses_skip_the_switches_block() -> None:
    plan = nodes.plan_nodes("roce", 1024, 8)
    hosts = [n for n in plan if n.kind == "host"]
    assert hosts[499].address == "127.0.2.250" and hosts[500].address == "127.0.4.1"
    assert hosts[-1].name == "gpu1024" and hosts[-1].address == "127.0.6.24"
    assert not any(n.address.startswith("127.0.3.") for n in hosts)
    assert len({(n.address, n.port) for n in plan}) == len(plan)


@pytest.mark.parametrize(
    ("profile", "hosts", "switches", "message"),
    [
        ("roce", 0, 2, "at least one host"),
        ("ib", 2, 1, "are IB leaves and spines: give 0, or 2 or more"),
        ("ib", 4, 2, r"--switches 2: 34 HCAs over 1 leaves: 34 per leaf, more than 32 down ports"),
        ("roce", 1251, 2, "at most 1250"),
        ("roce", 2, 251, r"--switches 251: out of range, allowed: 0\.\.250"),
        ("roce", 2, -1, r"--switches -1: out of range, allowed: 0\.\.250"),
        ("eth", 2, 2, "unknown lab profile 'eth'; profiles: roce, ib"),
    ],
)
def test_impossible_shapes_are_refused_with_a_reason(
    profile: str, hosts: int, switches: int, message: str
) -> None:
    with pytest.raises(LabError, match=message):
        nodes.plan_nodes(profile, hosts, switches)


def test_state_round_trips_through_json(tmp_path: Path) -> None:
    state = _state()
    state.faults.append(ActiveFault("down", "gpu02"))
    paths = LabPaths(project=tmp_path, run_dir=tmp_path)
    (tmp_path / "lab.json").write_text(state.to_json())
    loaded = load_state(paths)
    assert loaded == state
    assert loaded is not None and loaded.node("leaf03").ports == state.node("leaf03").ports


def test_damaged_state_is_a_clear_error_and_missing_state_is_none(tmp_path: Path) -> None:
    paths = LabPaths(project=tmp_path, run_dir=tmp_path)
    assert load_state(paths) is None
    (tmp_path / "lab.json").write_text("{not json")
    with pytest.raises(LabError, match="fabcheck lab down"):
        load_state(paths)


def test_unknown_node_lists_the_lab_nodes() -> None:
    with pytest.raises(LabError, match=r"unknown node 'gpu9'; lab nodes: gpu01, gpu02, gpu03, gpu04, leaf01"):
        _state().node("gpu9")


def test_pids_round_trip_and_name_lookup() -> None:
    pids = LabPids(ProcessRef(10, 1), ProcessRef(11, 2), {"gpu01": ProcessRef(12, 3)})
    again = LabPids.from_json(pids.to_json())
    assert again == pids
    names = (again.name_of(12), again.name_of(11), again.name_of(99))
    assert names == ("node gpu01", "switch server", "pid 99")


def test_run_dir_is_in_shm_and_depends_on_the_checkout() -> None:
    first, second = run_dir_for(Path("/a/repo")), run_dir_for(Path("/b/repo"))
    assert first.parent == Path("/dev/shm") and first.name.startswith("fabcheck-lab-")
    assert len(first.name) == len("fabcheck-lab-") + 8 and first != second


def test_generated_private_key_is_0600_and_matches_its_public_half(tmp_path: Path) -> None:
    pair = keys.generate_keypair("lab@test")
    keys.write_private(tmp_path / "id", pair)
    assert stat.S_IMODE(os.stat(tmp_path / "id").st_mode) == 0o600
    assert pair.public_line.startswith("ssh-ed25519 ") and pair.public_line.endswith(" lab@test")
    if shutil.which("ssh-keygen"):
        command = ["ssh-keygen", "-y", "-f", str(tmp_path / "id")]
        derived = subprocess.run(command, capture_output=True, text=True, check=True)
        assert derived.stdout.split()[:2] == pair.public_line.split()[:2]


def test_sshd_config_pins_address_port_and_key_only_root_login() -> None:
    text = nodes.sshd_config("127.0.1.7", 2222)
    lines = set(text.splitlines())
    assert {"Port 2222", "ListenAddress 127.0.1.7", "PasswordAuthentication no", "UsePAM no"} <= lines
    assert "PermitRootLogin prohibit-password" in lines


def test_inventory_has_contract_groups_and_connection_vars(tmp_path: Path) -> None:
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    document = inventory.inventory_document(paths, _state())
    children = document["all"]["children"]
    gpu = children["gpu_hosts"]
    pcie = {"ansible_host": "127.0.1.4", "ansible_port": 2222, "lab_profile": "pcie"}
    # The PCIe server has 2 NICs, one per socket: its rails follow the NUMA node of each GPU.
    pcie["fabric_rails"] = {i: "mlx5_0" if i < 4 else "mlx5_1" for i in range(8)}
    pcie["fabric_max_gpu_nic_link"] = "NODE"  # its NICs sit behind the host bridge: NODE is its best
    pcie["fabric_nvlink"] = {"gpus": None, "fabric_manager": False, "imex": False}  # no NVLink, no FM
    # The cabling map: every rail NIC on its own switch port, rails spread round-robin over the switches.
    pcie["fabric_links"] = {"mlx5_0": "leaf01:swp9", "mlx5_1": "leaf02:Ethernet64"}
    assert gpu["hosts"]["gpu04"] == pcie
    ends = [end for host in gpu["hosts"].values() for end in host["fabric_links"].values()]
    assert len(ends) == len(set(ends)) == 3 * 8 + 2
    assert gpu["hosts"]["gpu01"]["fabric_links"]["mlx5_0"] == "leaf01:swp1"
    assert gpu["hosts"]["gpu01"]["fabric_rails"] == {i: f"mlx5_{i}" for i in range(8)}
    assert document["all"]["vars"] == {"lab_fabric_kind": "roce"}
    args = gpu["vars"]["ansible_ssh_common_args"]
    assert f"-o UserKnownHostsFile={paths.known_hosts}" in args
    assert "-o StrictHostKeyChecking=yes" in args and f"-o ControlPath={paths.control_dir}/%C" in args
    assert gpu["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert gpu["vars"]["ansible_user"] == "root"
    switches = children["switches"]
    assert set(switches["children"]) == {"switches_nvue", "switches_sonic", "switches_eos"}
    eos = switches["children"]["switches_eos"]["hosts"]["leaf03"]
    assert eos["netmiko_device_type"] == "arista_eos" and eos["switch_port"] == 2201
    assert switches["vars"]["ansible_connection"] == "local"
    # One source: the run dir's password file, which the switch server was given its password from.
    assert (
        switches["vars"]["switch_password"]
        == f"{{{{ lookup('ansible.builtin.file', '{paths.switch_password}') }}}}"
    )


def test_ib_inventory_puts_subnet_managers_in_their_group(tmp_path: Path) -> None:
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    children = inventory.inventory_document(paths, _state("ib", 2, 0))["all"]["children"]
    assert set(children) == {"gpu_hosts", "subnet_managers"}
    assert set(children["subnet_managers"]["hosts"]) == {"sm01", "sm02"}


def test_ib_inventory_with_ib_switches_has_their_groups_and_every_cable(tmp_path: Path) -> None:
    """`up --profile ib --hosts 4 --switches 4`: 2 leaves + 2 spines as the IB plan's contract wants them
    (fabcheck/intent/ib_fabric.py): group ib_switches with ib_leaves / ib_spines, each HCA's cable on its
    host (SM nodes too), each leaf's uplinks on the leaf; no IB switch is a lab node."""
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    state = _state("ib", 4, 4)
    assert [n.name for n in state.nodes] == ["gpu01", "gpu02", "gpu03", "gpu04", "sm01", "sm02"]
    children = inventory.inventory_document(paths, state)["all"]["children"]
    tiers = children["ib_switches"]["children"]
    assert {tier: sorted(group["hosts"]) for tier, group in tiers.items()} == {
        "ib_leaves": ["leaf01", "leaf02"],
        "ib_spines": ["spine01", "spine02"],
    }
    gpu01 = children["gpu_hosts"]["hosts"]["gpu01"]["fabric_links"]
    assert gpu01 == {f"mlx5_{n}": f"leaf01/{n + 1}" for n in range(8)}
    assert children["subnet_managers"]["hosts"]["sm02"]["fabric_links"] == {"mlx5_0": "leaf02/17"}
    uplinks = [tiers["ib_leaves"]["hosts"][leaf]["fabric_links"] for leaf in ("leaf01", "leaf02")]
    assert [len(u) for u in uplinks] == [17, 17] and uplinks[0][33] == "spine01/1"
    cabled = [p for host in children["gpu_hosts"]["hosts"].values() for p in host["fabric_links"].values()]
    cabled += [
        p for host in children["subnet_managers"]["hosts"].values() for p in host["fabric_links"].values()
    ]
    cabled += [p for u in uplinks for p in u.values()]
    assert len(cabled) == len(set(cabled)) == 34 + 34


def _ansible() -> str | None:
    beside_python = Path(sys.executable).parent / "ansible"
    return str(beside_python) if beside_python.exists() else shutil.which("ansible")


@pytest.mark.skipif(_ansible() is None, reason="ansible is not installed")
def test_switch_password_comes_from_the_file_only_never_from_the_inventory(tmp_path: Path) -> None:
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    paths.run_dir.mkdir()
    paths.switch_password.write_text("s3cret-from-file\n")
    inventory.write_inventory(paths, _state())
    assert "s3cret" not in paths.inventory.read_text()
    command = [str(_ansible()), "leaf01", "-i", str(paths.inventory)]
    command += ["-m", "ansible.builtin.debug", "-a", "var=switch_password"]
    env = {k: v for k, v in os.environ.items() if k != "FABCHECK_LAB_SWITCH_PASSWORD"}
    env["ANSIBLE_DEPRECATION_WARNINGS"] = "False"
    from_file = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert '"switch_password": "s3cret-from-file"' in from_file.stdout, from_file.stdout + from_file.stderr
    # Set after `up`, the variable cannot change what the switches accept, so it must not win here either.
    env["FABCHECK_LAB_SWITCH_PASSWORD"] = "from-env"
    from_env = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert '"switch_password": "s3cret-from-file"' in from_env.stdout, from_env.stdout + from_env.stderr


def test_generated_inventory_is_yaml_with_a_header(tmp_path: Path) -> None:
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    inventory.write_inventory(paths, _state())
    text = paths.inventory.read_text()
    assert text.startswith("# Generated by `fabcheck lab up`")
    gpu01 = yaml.safe_load(text)["all"]["children"]["gpu_hosts"]["hosts"]["gpu01"]
    assert gpu01["ansible_host"] == "127.0.1.1"


def test_ssh_config_names_every_node_and_keeps_host_key_checking_on(tmp_path: Path) -> None:
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    text = inventory.ssh_config_text(paths, _state())
    blocks = text.split("Host ")
    gpu02 = next(b for b in blocks if b.startswith("gpu02\n"))
    assert "HostName 127.0.1.2" in gpu02 and "Port 2222" in gpu02 and "User root" in gpu02
    leaf01 = next(b for b in blocks if b.startswith("leaf01\n"))
    assert "Port 2201" in leaf01 and "User cumulus" in leaf01
    assert "StrictHostKeyChecking yes" in text and f"ControlPath {paths.control_dir}/%C" in text
    assert f"UserKnownHostsFile {paths.known_hosts}" in text


def test_known_host_line_uses_bracketed_address_and_port() -> None:
    node = _state().node("gpu03")
    assert inventory.known_host_line(node, "ssh-ed25519 AAAA") == "[127.0.1.3]:2222 ssh-ed25519 AAAA"


def test_state_json_is_plain_data() -> None:
    raw = json.loads(_state().to_json())
    assert raw["nodes"][0]["name"] == "gpu01" and raw["faults"] == []


def test_switch_password_is_the_one_chosen_before_up_or_a_random_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from fabcheck_lab.assemble import switch_password
    from fabcheck_lab.state import PASSWORD_ENV, LabError

    monkeypatch.setenv(PASSWORD_ENV, "chosen")
    assert switch_password() == "chosen"
    monkeypatch.delenv(PASSWORD_ENV)
    first, second = switch_password(), switch_password()
    assert first != second and len(first) >= 20
    for bad in ("two\nlines", " padded"):
        monkeypatch.setenv(PASSWORD_ENV, bad)
        with pytest.raises(LabError, match=PASSWORD_ENV):
            switch_password()
