"""`fabcheck intent check` refuses a subnet-manager intent that OpenSM would run wrongly, before any change:
two SMs sharing the top priority, priorities for hosts that are not SM nodes, pkeys outside 0x0001..0x7fff,
duplicate pkeys or names, IPoIB settings on a partition without IPoIB. Each is one line naming file:line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabcheck.cli import main

HOSTS = """\
all:
  children:
    gpu_hosts:
      hosts:
        gpu01: {}
    subnet_managers:
      hosts:
        sm01: {}
        sm02: {}
"""
HEAD = """\
fabric_intent:
  kind: ib
  roce_tos: 104
  subnet_manager:
"""


def check(tmp_path: Path, subnet_manager: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """Run `intent check` on an IB inventory with this subnet_manager block; (exit code, problem lines)."""
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    body = HEAD + textwrap.indent(textwrap.dedent(subnet_manager), "    ")
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text(body)
    (tmp_path / "hosts.yml").write_text(HOSTS)
    code = main(["intent", "check", "-i", str(tmp_path)])
    err = capsys.readouterr().err
    return code, [line.removeprefix("  - ") for line in err.splitlines() if line.startswith("  - ")]


FABRIC = "group_vars/all/fabric.yml"


def test_a_master_and_a_standby_are_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, problems = check(tmp_path, "sm_priorities: {sm01: 15, sm02: 14}\n", capsys)
    assert (code, problems) == (0, [])


def test_two_sms_sharing_the_top_priority_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, problems = check(tmp_path, "sm_priorities:\n  sm01: 15\n  sm02: 15\n", capsys)
    assert code == 2
    assert problems == [
        f"{tmp_path}/{FABRIC}:7: fabric_intent.subnet_manager.sm_priorities.sm02 = 15: sm01, sm02 share the "
        "top priority 15: exactly one SM must be the intended master (give the standbys lower priorities, "
        "e.g. 15 and 14)"
    ]


def test_an_unlisted_sm_at_the_default_priority_ties_with_a_listed_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, problems = check(tmp_path, "sm_priorities:\n  sm01: 0\n", capsys)
    assert code == 2
    (problem,) = problems
    assert problem.startswith(f"{tmp_path}/{FABRIC}:")
    assert "fabric_intent.subnet_manager.sm_priorities: sm01, sm02 share the top priority 0" in problem
    assert "sm02 not listed" in problem


def test_an_unlisted_sm_below_the_master_is_a_standby(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check(tmp_path, "sm_priorities: {sm01: 1}\n", capsys) == (0, [])


def test_a_priority_for_a_host_that_is_no_subnet_manager_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, problems = check(tmp_path, "sm_priorities:\n  sm01: 15\n  gpu01: 14\n", capsys)
    assert code == 2
    assert problems == [
        f"{tmp_path}/{FABRIC}:7: fabric_intent.subnet_manager.sm_priorities.gpu01: 'gpu01' is not a host "
        "of group subnet_managers (its hosts: sm01, sm02)"
    ]


@pytest.mark.parametrize("pkey", ['"0x8001"', "0x8001", '"0x0000"', "0", '"0xffff"'])
def test_a_pkey_outside_the_15_bit_range_is_refused(
    pkey: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = f"sm_priorities: {{sm01: 15, sm02: 14}}\npartitions:\n  - name: compute\n    pkey: {pkey}\n"
    code, problems = check(tmp_path, block, capsys)
    assert code == 2
    (problem,) = problems
    assert problem.startswith(f"{tmp_path}/{FABRIC}:8: fabric_intent.subnet_manager.partitions.0.pkey = ")
    assert "is outside 0x0001..0x7fff" in problem


def test_an_unquoted_hex_pkey_is_read_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = "sm_priorities: {sm01: 15, sm02: 14}\npartitions:\n  - {name: compute, pkey: 0x0a01}\n"
    assert check(tmp_path, block, capsys) == (0, [])


def test_duplicate_pkeys_and_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = """\
    sm_priorities: {sm01: 15, sm02: 14}
    partitions:
      - {name: compute, pkey: "0x0001"}
      - {name: storage, pkey: "0x0001"}
      - {name: compute, pkey: "0x0002"}
    """
    code, problems = check(tmp_path, block, capsys)
    assert code == 2
    assert problems == [
        f"{tmp_path}/{FABRIC}:8: fabric_intent.subnet_manager.partitions.1.pkey = '0x0001': "
        "is also the pkey of partitions[0] (pkeys are unique)",
        f"{tmp_path}/{FABRIC}:9: fabric_intent.subnet_manager.partitions.2.name = 'compute': "
        "is also the name of partitions[0] (names are unique)",
    ]


def test_ipoib_settings_need_an_ipoib_partition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = """\
    sm_priorities: {sm01: 15, sm02: 14}
    partitions:
      - {name: storage, pkey: "0x0003", ipoib: false, mtu: 4096, ipoib_parents: [ib0]}
      - {name: Default, pkey: "0x7fff", ipoib_parents: [ib0]}
    """
    code, problems = check(tmp_path, block, capsys)
    assert code == 2
    assert [p.split(": ", 2)[1].split(" = ")[0] for p in problems] == [
        "fabric_intent.subnet_manager.partitions.0.mtu",
        "fabric_intent.subnet_manager.partitions.0.ipoib_parents",
        "fabric_intent.subnet_manager.partitions.1.ipoib_parents",
    ]
    assert "the partition has ipoib: false" in problems[0]
    assert "default partition 0x7fff is the parent interface itself" in problems[2]


@pytest.mark.parametrize(
    ("block", "key", "says"),
    [
        ("partitions: [{name: 'a b', pkey: '0x1'}]", "partitions.0.name", "not a partition name"),
        ("partitions: [{name: a, pkey: '0x1', members: 'ALL=fool'}]", "partitions.0.members", "'ALL=fool'"),
        ("partitions: [{name: a, pkey: '0x1', ipoib_parents: [ib0123456789]}]", "partitions.0", "too long"),
        ("qos_max_vls: 8", "qos_max_vls", "is set but qos is false"),
        ("qos: true\nqos_vlarb_high: '0:64,15:1'", "qos_vlarb_high", "entry '15:1' is not VL:weight"),
        ("qos: true\nqos_sl2vl: [0, 1]", "qos_sl2vl", "at least 16 items"),
        ("routing_engine: ftree,bogus", "routing_engine", "unknown routing engine(s) ['bogus']"),
    ],
)
def test_bad_values_name_their_key(
    block: str, key: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, problems = check(tmp_path, f"sm_priorities: {{sm01: 15, sm02: 14}}\n{block}\n", capsys)
    assert code == 2
    (problem,) = problems
    assert problem.startswith(f"{tmp_path}/{FABRIC}:"), problem
    assert f"fabric_intent.subnet_manager.{key}" in problem and says in problem, problem
