"""Hostile or mistyped intent values: unsafe NIC names, booleans for numbers, FQCN lookups."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from fabcheck.errors import IntentError
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.model import NIC_NAME_PATTERN, FabricIntent, is_safe_nic_name

REPO = Path(__file__).resolve().parents[2]
HOSTS = "all:\n  children:\n    gpu_hosts:\n      hosts:\n        h1: {}\n"

# Names a NIC can have, and names that smuggle shell syntax, paths or control characters.
GOOD_NAMES = ["mlx5_0", "mlx5_bond_0", "ens1f0np0", "ib0:1", "eth-1.100", "a", "..a"]
BAD_NAMES = [
    "mlx5_0;reboot",
    "$(id)",
    "`id`",
    "a\nb",
    "mlx5_0\n",
    "\nmlx5_0",
    "mlx5 0",
    "../../etc",
    "a/b",
    "",
    ".",
    "..",
    "mlx5_0|cat",
    "mlx5_0&",
    "mlx5_0\t",
    "mlx5_0\x00",
    "név",
]


@pytest.fixture(scope="module")
def roce_nic() -> ModuleType:
    """The role's name rule lives in its module_utils (shared by the roce_nic module and the boot applier)."""
    name = "ansible.module_utils.roce_nic_apply"
    path = REPO / "plugins/module_utils/roce_nic_apply.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def module_accepts(roce_nic: ModuleType, name: str) -> bool:
    try:
        roce_nic.check_name("RDMA device", name)
    except roce_nic.NicError:
        return False
    return True


def test_intent_and_roce_nic_module_share_one_name_rule(roce_nic: ModuleType) -> None:
    assert roce_nic.NAME.pattern == NIC_NAME_PATTERN
    for name in GOOD_NAMES + BAD_NAMES:
        assert is_safe_nic_name(name) == module_accepts(roce_nic, name), repr(name)
    assert all(is_safe_nic_name(n) for n in GOOD_NAMES)
    assert not any(is_safe_nic_name(n) for n in BAD_NAMES)


def write(tmp_path: Path, intent_yaml: str, hosts_yaml: str = HOSTS) -> Path:
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text(textwrap.dedent(intent_yaml))
    (tmp_path / "hosts.yml").write_text(textwrap.dedent(hosts_yaml))
    return tmp_path


def problems_of(inventory: Path) -> list[str]:
    with pytest.raises(IntentError) as err:
        load_inventory(inventory)
    return err.value.problems


def test_every_unsafe_rail_name_is_reported_with_file_and_line(tmp_path: Path) -> None:
    inventory = write(
        tmp_path,
        """\
        fabric_intent:
          rails:
            0: mlx5_0
            1: "mlx5_1;reboot"
            2: "$(id)"
            3: "`id`"
            4: "mlx5_4\\n"
        """,
    )
    problems = problems_of(inventory)
    assert len(problems) == 4
    for gpu, line in ((1, 4), (2, 5), (3, 6), (4, 7)):
        assert any(f"fabric.yml:{line}: fabric_intent.rails.{gpu} = " in p for p in problems), gpu
    assert all("not a usable NIC name" in p for p in problems)
    assert "fabric_intent.rails.1 = 'mlx5_1;reboot'" in "\n".join(problems)


def test_unsafe_per_host_rails_name_their_host_vars_line(tmp_path: Path) -> None:
    inventory = write(
        tmp_path,
        "fabric_intent: {rails: {0: mlx5_0}}\n",
        """\
        all:
          children:
            gpu_hosts:
              hosts:
                h1:
                  fabric_rails:
                    0: "mlx5_0 && rm -rf /"
        """,
    )
    (problem,) = problems_of(inventory)
    assert "hosts.yml:7: fabric_intent.rails.0 = 'mlx5_0 && rm -rf /': not a usable NIC name" in problem


@pytest.mark.parametrize(
    ("yaml_line", "key", "expected"),
    [
        ("roce_tos: true", "roce_tos = True", "expected an integer, got a boolean"),
        ("lossless: {priority: false}", "lossless.priority = False", "expected an integer, got a boolean"),
        ("mtu: {rdma: true}", "mtu.rdma = True", "Input should be 256, 512, 1024, 2048 or 4096"),
        ("lossless: {pfc: 1}", "lossless.pfc = 1", "expected true or false, got an integer"),
        ("lossless: {dscp: [true]}", "lossless.dscp.0 = True", "expected an integer, got a boolean"),
        ("link: {speed_gbps: 400.5}", "link.speed_gbps = 400.5", "expected an integer, got a number"),
        ("performance: {perftest_min_fraction: true}", "perftest_min_fraction = True", "expected a number"),
        ("ecn: {enabled: null}", "ecn.enabled = None", "expected true or false, got null"),
        ("rails: {true: mlx5_0}", "rails: key True", "expected an integer, got a boolean"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_with_file_and_line(
    tmp_path: Path, yaml_line: str, key: str, expected: str
) -> None:
    inventory = write(tmp_path, f"fabric_intent:\n  {yaml_line}\n")
    problems = problems_of(inventory)
    match = [p for p in problems if key in p]
    assert match, problems
    assert "group_vars/all/fabric.yml:2: fabric_intent." in match[0]
    assert expected in match[0]


def test_strings_holding_the_literal_are_read_as_their_type() -> None:
    # Vault-encrypted values are always strings: "400" must still be a line rate.
    intent = FabricIntent.model_validate(
        {
            "roce_tos": "106",
            "link": {"speed_gbps": " 200 "},
            "mtu": {"rdma": "2048"},
            "lossless": {"pfc": "true"},
            "performance": {"perftest_min_fraction": "0.8"},
            "rails": {"0": "mlx5_0"},
        }
    )
    assert (intent.roce_tos, intent.link.speed_gbps, intent.mtu.rdma) == (106, 200, 2048)
    assert intent.lossless.pfc is True and intent.performance.perftest_min_fraction == 0.8
    assert intent.rails == {0: "mlx5_0"}


def test_lookup_written_with_its_collection_name_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FABCHECK_TEST_KIND", "ib")
    inventory = write(
        tmp_path,
        """\
        fabric_intent:
          kind: "{{ lookup('ansible.builtin.env', 'FABCHECK_TEST_KIND', default='roce') }}"
          roce_tos: 104
          nccl: {gid_index: null, traffic_class: null}
        """,
    )
    assert load_inventory(inventory).intent.kind == "ib"


def test_example_switch_vars_with_fqcn_lookups_render(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABCHECK_SWITCH_USERNAME", "netops")
    loaded = load_inventory(REPO / "inventory/example")
    leaf = next(h for h in loaded.hosts if h.is_switch)
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    username = Templar(loader=DataLoader(), variables=dict(leaf.variables)).template(
        leaf.variables["switch_username"]
    )
    assert username == "netops"
