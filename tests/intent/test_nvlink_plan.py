"""The inventory's NVLink domains (issue 38): the child groups of `nvlink_domains`, each member's IMEX
address; every problem one IntentError line naming file:line and the group or variable."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabcheck.errors import IntentError
from fabcheck.intent.fabric import InventoryNode, fabric_of, read_fabric
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.nvlink import GroupTree, NvlinkDomain, NvlinkPlan

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "inventory/example-nvl"
INTENT = (EXAMPLE / "group_vars/all/fabric.yml").read_text()
NO_IMEX = INTENT.replace("imex: true ", "imex: false")

TWO_RACKS = """\
all:
  children:
    gpu_hosts:
      hosts:
        gpu01: {ansible_host: 10.0.0.1}
        gpu02: {ansible_host: 10.0.0.2, nvlink_address: 10.9.0.2}
        gpu03:
        gpu04:
    nvlink_domains:
      children:
        nvl_rack1:
          hosts:
            gpu01:
            gpu02:
        nvl_rack2:
          hosts:
            gpu03:
            gpu04:
"""


def inventory(tmp_path: Path, hosts: str, intent: str = INTENT) -> Path:
    root = tmp_path / "inv"
    (root / "group_vars/all").mkdir(parents=True)
    (root / "group_vars/all/fabric.yml").write_text(intent)
    (root / "hosts.yml").write_text(textwrap.dedent(hosts))
    return root


def problems_of(source: Path) -> list[str]:
    with pytest.raises(IntentError) as err:
        fabric_of(load_inventory(source))
    return err.value.problems


def test_the_example_has_two_racks_of_two_trays() -> None:
    plan = fabric_of(load_inventory(EXAMPLE)).nvlink
    assert plan == NvlinkPlan(
        (
            NvlinkDomain("nvl_rack1", ("tray01", "tray02"), ("198.51.100.31", "198.51.100.32")),
            NvlinkDomain("nvl_rack2", ("tray03", "tray04"), ("198.51.100.33", "198.51.100.34")),
        )
    )


def test_the_address_is_nvlink_address_else_ansible_host_else_the_name(tmp_path: Path) -> None:
    plan = fabric_of(load_inventory(inventory(tmp_path, TWO_RACKS))).nvlink
    assert plan.domain_of("gpu01").addresses == ("10.0.0.1", "10.9.0.2")
    assert plan.domain_of("gpu04") == NvlinkDomain("nvl_rack2", ("gpu03", "gpu04"), ("gpu03", "gpu04"))


def test_a_host_in_no_domain_is_one_of_its_own(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("        gpu04:\n    nvlink", "        gpu04:\n        hgx01:\n    nvlink")
    plan = fabric_of(load_inventory(inventory(tmp_path, hosts, NO_IMEX))).nvlink
    assert plan.domain_of("hgx01") == NvlinkDomain("hgx01", ("hgx01",), (), declared=False)


def test_no_nvlink_domains_group_is_an_empty_plan() -> None:
    assert fabric_of(load_inventory(REPO / "inventory/example")).nvlink == NvlinkPlan()


def test_a_host_in_two_domains_names_both_groups_and_their_lines(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("            gpu03:\n", "            gpu03:\n            gpu02:\n")
    source = inventory(tmp_path, hosts)
    [problem] = problems_of(source)
    file = source / "hosts.yml"
    assert problem == (
        f"{file}:15: gpu02: groups: a host is in at most one NVLink domain (child group of nvlink_domains); "
        f"it is in {file}:11: nvl_rack1, {file}:15: nvl_rack2"
    )


def test_an_empty_domain_group_is_named_at_its_line(tmp_path: Path) -> None:
    source = inventory(tmp_path, TWO_RACKS + "        nvl_rack3:\n")
    [problem] = problems_of(source)
    assert problem.startswith(f"{source / 'hosts.yml'}:19: group nvl_rack3: an NVLink domain (child group of")
    assert "with no host" in problem


def test_a_host_of_the_group_itself_belongs_in_a_domain(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("    nvlink_domains:\n", "    nvlink_domains:\n      hosts:\n        gpu05:\n")
    hosts = hosts.replace("        gpu04:\n    nvlink", "        gpu04:\n        gpu05:\n    nvlink")
    [problem] = problems_of(inventory(tmp_path, hosts, NO_IMEX))
    assert ": gpu05: group nvlink_domains: its hosts belong in its child groups" in problem
    assert problem.startswith(f"{tmp_path / 'inv/hosts.yml'}:")


def test_a_member_that_is_not_a_gpu_host(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("            gpu04:\n", "            gpu04:\n            login01:\n")
    [problem] = problems_of(inventory(tmp_path, hosts))
    assert problem == (
        f"{tmp_path / 'inv/hosts.yml'}:19: login01: group nvl_rack2: a member of an NVLink domain is a GPU "
        "host (group gpu_hosts)"
    )


def test_two_members_with_one_address(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("nvlink_address: 10.9.0.2", "nvlink_address: 10.0.0.1")
    [problem] = problems_of(inventory(tmp_path, hosts))
    assert problem == (
        f"{tmp_path / 'inv/hosts.yml'}:6: gpu02: nvlink_address = '10.0.0.1': gpu01 of NVLink domain "
        "nvl_rack1 has it too; each member's IMEX address (nvlink_address, else ansible_host, else its "
        "name) is its own"
    )


@pytest.mark.parametrize("value", ["'10.0.0.2 10.0.0.3'", "[10.0.0.2]", "''"])
def test_an_address_that_is_not_one_word(tmp_path: Path, value: str) -> None:
    hosts = TWO_RACKS.replace("nvlink_address: 10.9.0.2", f"nvlink_address: {value}")
    [problem] = problems_of(inventory(tmp_path, hosts))
    assert f"{tmp_path / 'inv/hosts.yml'}:6: gpu02: nvlink_address = " in problem
    assert "expected the address its IMEX daemon listens on" in problem


def test_imex_with_a_gpu_host_in_no_domain_is_an_error_at_the_intent_key(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("        gpu04:\n    nvlink", "        gpu04:\n        hgx01:\n    nvlink")
    [problem] = problems_of(inventory(tmp_path, hosts))
    line = next(n for n, text in enumerate(INTENT.splitlines(), 1) if "imex:" in text)
    assert problem.startswith(
        f"{tmp_path / 'inv/group_vars/all/fabric.yml'}:{line}: fabric_intent.nvlink.imex"
    )
    assert "fabric_intent.nvlink.imex = True: GPU host(s) hgx01: in no NVLink domain" in problem
    assert "a one-host group for a server on its own" in problem


def test_a_one_host_domain_runs_imex_with_its_own_address(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("        gpu04:\n    nvlink", "        gpu04:\n        hgx01:\n    nvlink")
    hosts += "        nvl_hgx01:\n          hosts:\n            hgx01: {nvlink_address: 10.9.0.9}\n"
    plan = fabric_of(load_inventory(inventory(tmp_path, hosts))).nvlink
    assert plan.domain_of("hgx01") == NvlinkDomain("nvl_hgx01", ("hgx01",), ("10.9.0.9",))


def test_every_problem_at_once(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace("nvlink_address: 10.9.0.2", "nvlink_address: 10.0.0.1")
    hosts = (
        hosts.replace("            gpu04:\n", "            gpu04:\n            login01:\n")
        + "        nvl_x:\n"
    )
    assert len(problems_of(inventory(tmp_path, hosts))) == 3


def test_without_the_group_tree_no_plan_is_read() -> None:
    """The switch play's filter hands read_fabric templated host vars only: no hierarchy, no plan (the
    preflight play's `fabcheck intent check` judged it)."""
    node = InventoryNode("gpu01", ("gpu_hosts", "nvl_rack1", "nvlink_domains"), {}, {})
    assert read_fabric([node], lambda _v: "").nvlink == NvlinkPlan()
    tree = GroupTree({"nvlink_domains": ("all",), "nvl_rack1": ("nvlink_domains",), "gpu_hosts": ("all",)})
    fabric = read_fabric([node], lambda _v: "", groups=tree)
    assert fabric.nvlink == NvlinkPlan((NvlinkDomain("nvl_rack1", ("gpu01",), ("gpu01",)),))


def test_intent_check_prints_the_domains(capsys: pytest.CaptureFixture[str]) -> None:
    from fabcheck.cli import main

    assert main(["intent", "check", "-i", str(EXAMPLE)]) == 0
    assert "  NVLink domains: 2 (nvlink_domains); hosts per domain: nvl_rack1=2, nvl_rack2=2\n" in (
        capsys.readouterr().out
    )


def test_a_host_of_its_own_may_state_its_own_nvlink_intent(tmp_path: Path) -> None:
    """fabric_nvlink (the loader's NVLINK_VAR): an HGX server beside the racks runs no IMEX."""
    from fabcheck.intent.loader import NVLINK_VAR
    from fabcheck.intent.nvlink import NVLINK_HOST_VAR

    assert NVLINK_HOST_VAR == NVLINK_VAR
    hosts = TWO_RACKS.replace(
        "        gpu04:\n    nvlink",
        "        gpu04:\n        hgx01: {fabric_nvlink: {gpus: 8, fabric_manager: true}}\n    nvlink",
    )
    plan = fabric_of(load_inventory(inventory(tmp_path, hosts))).nvlink
    assert not plan.domain_of("hgx01").declared


def test_a_lone_host_whose_own_intent_asks_imex_is_named_at_its_variable(tmp_path: Path) -> None:
    hosts = TWO_RACKS.replace(
        "        gpu04:\n    nvlink",
        "        gpu04:\n        hgx01:\n          fabric_nvlink: {imex: true}\n    nvlink",
    )
    [problem] = problems_of(inventory(tmp_path, hosts, NO_IMEX))
    assert problem.startswith(
        f"{tmp_path / 'inv/hosts.yml'}:10: hgx01: fabric_nvlink.imex = True: in no NVLink"
    )


def test_members_of_one_domain_with_different_intents_name_both_hosts_and_the_override(
    tmp_path: Path,
) -> None:
    hosts = TWO_RACKS.replace(
        "        gpu04:\n", "        gpu04: {fabric_nvlink: {gpus: 4, links_per_gpu: 16}}\n", 1
    )
    [problem] = problems_of(inventory(tmp_path, hosts, NO_IMEX))
    assert problem == (
        f"{tmp_path / 'inv/hosts.yml'}:8: gpu03 and gpu04 of NVLink domain nvl_rack2 resolve different "
        "nvlink intents (links_per_gpu 18 and 16, link_gbytes 53.125 and None); one domain has one intent "
        "(fabric_nvlink overrides fabric_intent.nvlink for a host)"
    )
