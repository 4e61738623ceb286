"""The nvlink role (issue 38) run by ansible-playbook on a mock node of a tmp dir (local connection, the
node's mock systemctl first on PATH; no lab, no sshd): it writes the domain's IMEX node list from the
desired addresses, keeps nvidia-imex enabled and running and restarts it only when the list changed,
starts nvidia-fabricmanager only when the intent asks, never touches a unit the intent does not ask for,
and in check mode with --diff shows the change and restarts nothing.

The node list's shape is the real one: addresses one a line, nothing else (Crusoe's nodes_config.cfg,
tests/data/real/nvlink/imex-nodes-config-4-trays.cfg and its INDEX row); the restart on change because
the daemon reads the file only at start-up
(https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/1418)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_mockhost_support import MockNode, installed_bin, make_nodes

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
REAL_NODES_CONFIG = REPO / "tests/data/real/nvlink/imex-nodes-config-4-trays.cfg"
UNITS = ("nvidia-imex", "nvidia-fabricmanager")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the role writes the node list owned by root")

INTENT = """\
fabric_intent:
  rails: {{0: mlx5_0}}
  nvlink: {{gpus: 4, link_gbytes: 53.125, imex: {imex}, fabric_manager: {fabric_manager}}}
"""

# The four trays of Crusoe's real example: the role must write exactly its file.
HOSTS = """\
all:
  vars: {{ansible_connection: local, ansible_python_interpreter: {python}}}
  children:
    gpu_hosts:
      hosts:
        tray01: {{nvlink_address: 172.27.58.70}}
        tray02: {{nvlink_address: {second}}}
        tray03: {{nvlink_address: 172.27.58.72}}
        tray04: {{nvlink_address: 172.27.58.73}}
        hgx01:
    nvlink_domains:
      children:
        nvl_rack1:
          hosts:
            tray01:
            tray02:
            tray03:
            tray04:
{lone}"""

PLAY = """\
- name: NVLink domain services
  hosts: "{{ target }}"
  gather_facts: false
  roles:
    - role: fabcheck.fabric.nvlink
"""


def with_fleet_fact(play: str) -> str:
    """The play with the GPU hosts' play's own pre-task (playbooks/hosts.yml): every record read once."""
    [hosts_play] = yaml.safe_load((REPO / "playbooks/hosts.yml").read_text())
    [task] = [t for t in hosts_play["pre_tasks"] if "nvlink_fleet" in t.get("ansible.builtin.set_fact", {})]
    [parsed] = yaml.safe_load(play)
    return yaml.safe_dump([{**parsed, "pre_tasks": [task]}], sort_keys=False)


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def node(tmp_path: Path, bin_dir: Path) -> MockNode:
    """A GB200-like mock node with both units defined: each start appends its name to a marker."""
    made = make_nodes(tmp_path / "nodes", bin_dir, [("tray01", "rail8")])[0]
    for unit in UNITS:
        path = made.paths.upper / "etc/systemd/system" / f"{unit}.service"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"[Unit]\nDescription={unit}\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
            f"ExecStart=/bin/sh -c 'echo {unit} >> {tmp_path / 'started'}'\n\n"
            "[Install]\nWantedBy=multi-user.target\n"
        )
    return made


def inventory(
    tmp_path: Path, *, imex: bool, fabric_manager: bool, second: str = "172.27.58.71", fleet: bool = True
) -> Path:
    root = tmp_path / "inv"
    (root / "group_vars/all").mkdir(parents=True, exist_ok=True)
    (root / "group_vars/all/fabric.yml").write_text(
        INTENT.format(imex=str(imex).lower(), fabric_manager=str(fabric_manager).lower())
    )
    lone = "" if not imex else "        nvl_hgx01:\n          hosts:\n            hgx01:\n"
    (root / "hosts.yml").write_text(HOSTS.format(python=sys.executable, second=second, lone=lone))
    (root / "play.yml").write_text(with_fleet_fact(PLAY) if fleet else PLAY)
    return root


def nodes_config(node: MockNode) -> Path:
    return node.paths.etc / "nvidia-imex" / "nodes_config.cfg"


def play(
    node: MockNode, root: Path, *options: str, target: str = "tray01"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        **node.env,
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(root / "tmp"),
        "ANSIBLE_REMOTE_TEMP": str(root / "tmp"),
    }
    config = nodes_config(node)
    argv = [
        str(PLAYBOOK_BIN),
        "-i",
        str(root / "hosts.yml"),
        str(root / "play.yml"),
        "-e",
        f"target={target}",
    ]
    argv += ["-e", f"nvlink_imex_nodes_config_path={config}", *options]
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)


def recap(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 0, run.stdout + run.stderr
    return next(line for line in run.stdout.splitlines() if line.startswith(("tray01", "hgx01")))


def state(node: MockNode, unit: str) -> tuple[str, str]:
    enabled = node.run("systemctl", "is-enabled", unit, rc=None).stdout.strip()
    return enabled, node.run("systemctl", "is-active", unit, rc=None).stdout.strip()


def started(tmp_path: Path) -> list[str]:
    marker = tmp_path / "started"
    return marker.read_text().split() if marker.exists() else []


def test_imex_writes_the_real_node_list_starts_once_and_restarts_only_on_change(
    node: MockNode, tmp_path: Path
) -> None:
    root = inventory(tmp_path, imex=True, fabric_manager=False)
    nodes_config(node).parent.mkdir(parents=True)
    assert "changed=3" in recap(play(node, root))  # the list, its restart, the enable
    assert nodes_config(node).read_bytes() == REAL_NODES_CONFIG.read_bytes()
    assert state(node, "nvidia-imex") == ("enabled", "active")
    assert started(tmp_path) == ["nvidia-imex"]
    # The fabric manager is not asked for: never enabled nor started.
    assert state(node, "nvidia-fabricmanager") == ("disabled", "inactive")

    assert "changed=0" in recap(play(node, root))  # a second run changes nothing, restarts nothing
    assert started(tmp_path) == ["nvidia-imex"]

    moved = inventory(tmp_path, imex=True, fabric_manager=False, second="172.27.58.81")
    checked = play(node, moved, "--check", "--diff")
    assert "-172.27.58.71\n+172.27.58.81" in checked.stdout and "changed=2" in recap(checked)
    assert nodes_config(node).read_bytes() == REAL_NODES_CONFIG.read_bytes()  # check mode writes nothing
    assert started(tmp_path) == ["nvidia-imex"]  # and restarts nothing

    assert "changed=2" in recap(play(node, moved))  # the list and the restart
    assert nodes_config(node).read_text().split() == [
        "172.27.58.70",
        "172.27.58.81",
        "172.27.58.72",
        "172.27.58.73",
    ]
    assert started(tmp_path) == ["nvidia-imex", "nvidia-imex"]


def test_a_one_host_domain_lists_its_own_address_the_role_alone_reading_it(
    node: MockNode, tmp_path: Path
) -> None:
    root = inventory(tmp_path, imex=True, fabric_manager=False, fleet=False)  # no nvlink_fleet fact
    nodes_config(node).parent.mkdir(parents=True)
    recap(play(node, root, target="hgx01"))
    assert nodes_config(node).read_text() == "hgx01\n"  # no nvlink_address, no ansible_host: its name


def test_fabric_manager_alone_leaves_imex_and_its_node_list_untouched(node: MockNode, tmp_path: Path) -> None:
    root = inventory(tmp_path, imex=False, fabric_manager=True)
    assert "changed=1" in recap(play(node, root, target="hgx01"))
    assert state(node, "nvidia-fabricmanager") == ("enabled", "active")
    assert state(node, "nvidia-imex") == ("disabled", "inactive")
    assert not nodes_config(node).exists()
    assert started(tmp_path) == ["nvidia-fabricmanager"]


def test_nothing_asked_touches_nothing(node: MockNode, tmp_path: Path) -> None:
    root = inventory(tmp_path, imex=False, fabric_manager=False)
    assert "changed=0" in recap(play(node, root))
    assert [state(node, unit) for unit in UNITS] == [("disabled", "inactive")] * 2
    assert not nodes_config(node).exists() and started(tmp_path) == []


def test_an_invalid_domain_stops_the_role_naming_the_problem(node: MockNode, tmp_path: Path) -> None:
    root = inventory(tmp_path, imex=True, fabric_manager=False, second="172.27.58.70")
    run = play(node, root)
    assert run.returncode != 0
    assert (
        "tray02: nvlink_address = '172.27.58.70': tray01 of NVLink domain nvl_rack1 has it too" in run.stdout
    )
    assert not nodes_config(node).exists() and started(tmp_path) == []


def test_the_gpu_hosts_play_lists_the_role() -> None:
    listed = subprocess.run(
        [str(PLAYBOOK_BIN), "-i", "inventory/example-nvl", "playbooks/hosts.yml", "--list-tasks"],
        cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert "Work out every GPU host's NVLink domain once for nvlink" in listed.stdout
    assert "nvlink : Keep nvidia-imex enabled and running" in listed.stdout
