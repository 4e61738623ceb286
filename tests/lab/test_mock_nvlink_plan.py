"""The lab's NVLink shapes as fabcheck reads them (no lab is started): `--profile nvl --hosts 4` is 2 NVLink
domains of 2 GB200-like trays under intent nvl; the roce profile's HGX boards keep intent nvlink with the
fabric manager while its PCIe server states that it has no NVLink (host var fabric_nvlink)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.desired.nvlink import PAIR_NETWORK, PAIR_NVLINK, desired_nvlink
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.fabric import GPU_HOSTS, fabric_of
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck_lab import inventory, nodes
from fabcheck_lab.state import LabPaths, LabState

REPO = Path(__file__).resolve().parents[2]


def lab_inventory(tmp_path: Path, profile: str, hosts: int, switches: int) -> Inventory:
    """The lab's own group_vars and groups with the hosts.yml `fabcheck lab up` would write."""
    lab = tmp_path / "inventory" / "lab"
    lab.mkdir(parents=True)
    for shared in ("group_vars", "groups.yml"):
        (lab / shared).symlink_to(REPO / "inventory" / "lab" / shared)
    paths = LabPaths(project=tmp_path, run_dir=tmp_path / "run")
    planned = nodes.plan_nodes(profile, hosts, switches)
    inventory.write_inventory(
        paths, LabState(str(tmp_path), str(paths.run_dir), profile, hosts, switches, "lo", nodes=planned)
    )
    return load_inventory(lab)


def test_nvl_lab_is_two_domains_of_two_trays_under_the_nvl_intent(tmp_path: Path) -> None:
    planned = nodes.plan_nodes("nvl", 4, 2)
    assert [(n.name, n.profile) for n in planned if n.kind == "host"] == [
        (f"gpu0{i}", "nvl") for i in range(1, 5)
    ]
    loaded = lab_inventory(tmp_path, "nvl", 4, 2)
    hosts = loaded.group(GPU_HOSTS)
    assert {h.intent.nvlink.model_dump()["gpus"] for h in hosts} == {4}
    intent = hosts[0].intent.nvlink
    assert (intent.links_per_gpu, intent.link_gbytes, intent.imex, intent.fabric_manager) == (
        18,
        53.125,
        True,
        False,
    )
    assert hosts[0].intent.rails == {0: "mlx5_0", 1: "mlx5_1", 2: "mlx5_2", 3: "mlx5_3"}
    plan = fabric_of(loaded).nvlink
    assert [(d.name, d.hosts, d.addresses) for d in plan.domains] == [
        ("nvl_rack1", ("gpu01", "gpu02"), ("127.0.1.1", "127.0.1.2")),
        ("nvl_rack2", ("gpu03", "gpu04"), ("127.0.1.3", "127.0.1.4")),
    ]
    desired = desired_nvlink({h.name: h.intent.nvlink for h in hosts}, plan, [h.name for h in hosts])
    assert (
        desired["gpu01"].pair_class("gpu02") == PAIR_NVLINK
        and desired["gpu01"].pair_class("gpu03") == PAIR_NETWORK
    )
    assert desired["gpu03"].addresses == ("127.0.1.3", "127.0.1.4")


def test_roce_lab_hgx_boards_need_the_fabric_manager_and_the_pcie_server_no_nvlink(tmp_path: Path) -> None:
    loaded = lab_inventory(tmp_path, "roce", 4, 3)
    by_host = {h.name: h.intent.nvlink for h in loaded.group(GPU_HOSTS)}
    for board in ("gpu01", "gpu02", "gpu03"):
        assert (by_host[board].gpus, by_host[board].links_per_gpu, by_host[board].link_gbytes) == (
            8,
            18,
            26.562,
        )
        assert by_host[board].fabric_manager and not by_host[board].imex
    assert (by_host["gpu04"].gpus, by_host["gpu04"].fabric_manager, by_host["gpu04"].imex) == (
        None,
        False,
        False,
    )
    assert fabric_of(loaded).nvlink.domains == ()  # each board is a domain of its own


@pytest.mark.parametrize(("profile", "hosts", "switches"), [("nvl", 4, 2), ("roce", 4, 3)])
def test_the_gate_plans_every_default_stage_of_the_lab(
    tmp_path: Path, profile: str, hosts: int, switches: int
) -> None:
    """`fabcheck validate` on the lab: every default stage plans, each GPU host with its NVLink state."""
    plan = plan_gate(lab_inventory(tmp_path, profile, hosts, switches))
    nvlink = plan.desired.nvlink
    assert sorted(nvlink) == [f"gpu0{i}" for i in range(1, hosts + 1)]
    if profile == "nvl":
        assert {d.domain for d in nvlink.values()} == {"nvl_rack1", "nvl_rack2"}
        assert all(d.multi_node and d.imex and not d.fabric_manager for d in nvlink.values())
    else:
        assert [h for h, d in nvlink.items() if d.fabric_manager] == ["gpu01", "gpu02", "gpu03"]
        assert nvlink["gpu04"].gpus is None and not any(d.multi_node for d in nvlink.values())
