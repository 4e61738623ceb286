"""Per-host GPU-NIC affinity intent: host var fabric_max_gpu_nic_link, the one key besides the rails that a
host may set for itself (a PCIe server's NICs sit behind the host bridge); the lab's PCIe host gets it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabcheck.errors import IntentError
from fabcheck.intent.loader import MAX_LINK_VAR, load_inventory
from fabcheck_lab import inventory, nodes
from fabcheck_lab.state import LabPaths, LabState

REPO = Path(__file__).resolve().parents[2]
HOSTS = """\
all:
  children:
    gpu_hosts:
      hosts:
        rail01: {}
        pcie01: {fabric_max_gpu_nic_link: NODE}
"""


def write(tmp_path: Path, hosts_yaml: str = HOSTS, intent_yaml: str = "fabric_intent: {}\n") -> Path:
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text(intent_yaml)
    (tmp_path / "hosts.yml").write_text(textwrap.dedent(hosts_yaml))
    return tmp_path


def test_a_host_states_its_own_worst_link_and_the_others_keep_the_fabric_default(tmp_path: Path) -> None:
    loaded = load_inventory(write(tmp_path))
    assert loaded.host("pcie01").intent.max_gpu_nic_link == "NODE"
    assert loaded.host("rail01").intent.max_gpu_nic_link == "PXB"
    # Only this key differs: the recipe is still one fabric intent.
    assert loaded.host("pcie01").intent.model_copy(update={"max_gpu_nic_link": "PXB"}) == (
        loaded.host("rail01").intent
    )


def test_the_host_var_overrides_a_fabric_wide_value_templates_included(tmp_path: Path) -> None:
    hosts = HOSTS.replace("{fabric_max_gpu_nic_link: NODE}", "{fabric_max_gpu_nic_link: '{{ pcie_link }}'}")
    loaded = load_inventory(
        write(tmp_path, hosts, "pcie_link: SYS\nfabric_intent: {max_gpu_nic_link: PIX}\n")
    )
    assert loaded.host("pcie01").intent.max_gpu_nic_link == "SYS"
    assert loaded.host("rail01").intent.max_gpu_nic_link == "PIX"


def test_a_bad_class_names_the_file_the_line_and_what_is_allowed(tmp_path: Path) -> None:
    with pytest.raises(IntentError) as err:
        load_inventory(write(tmp_path, HOSTS.replace("NODE", "NEAR")))
    (problem,) = err.value.problems
    assert f"{tmp_path / 'hosts.yml'}:6" in problem
    assert "max_gpu_nic_link = 'NEAR'" in problem
    assert all(name in problem for name in ("PIX", "PXB", "PHB", "NODE", "SYS"))


def test_the_fabric_intent_itself_still_may_not_differ_per_host(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "pcie01.yml").write_text("fabric_intent: {mtu: {netdev: 4200}}\n")
    with pytest.raises(IntentError, match=f"2 different fabric intents.*{MAX_LINK_VAR}"):
        load_inventory(tmp_path)


def test_the_lab_inventory_gives_its_pcie_host_node_and_rail_hosts_the_fabric_pxb(tmp_path: Path) -> None:
    lab = tmp_path / "inventory" / "lab"
    lab.mkdir(parents=True)
    for shared in ("group_vars", "groups.yml"):
        (lab / shared).symlink_to(REPO / "inventory" / "lab" / shared)
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    planned = nodes.plan_nodes("roce", 4, 3)
    state = LabState(str(tmp_path), str(paths.run_dir), "roce", 4, 3, "lo", nodes=planned)
    inventory.write_inventory(paths, state)
    loaded = load_inventory(lab)
    links = {h.name: h.intent.max_gpu_nic_link for h in loaded.group("gpu_hosts")}
    assert links == {"gpu01": "PXB", "gpu02": "PXB", "gpu03": "PXB", "gpu04": "NODE"}
    assert loaded.host("gpu04").variables["lab_profile"] == "pcie"
