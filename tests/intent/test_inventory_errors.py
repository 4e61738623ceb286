"""Inventories ansible cannot read: each is a UsageError naming the file (and line), never a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabcheck.errors import UsageError
from fabcheck.intent.ansible_session import INVENTORY_EXPECTED
from fabcheck.intent.loader import PROBE_HOST, load_inventory

INTENT = "fabric_intent: {}\n"
HOSTS = "all:\n  children:\n    gpu_hosts:\n      hosts:\n        h1: {}\n"


def inventory(tmp_path: Path, hosts: str | None = HOSTS, intent: str | None = INTENT) -> Path:
    root = tmp_path / "inv"
    root.mkdir()
    if intent is not None:
        (root / "group_vars" / "all").mkdir(parents=True)
        (root / "group_vars" / "all" / "fabric.yml").write_text(textwrap.dedent(intent))
    if hosts is not None:
        (root / "hosts.yml").write_text(textwrap.dedent(hosts))
    return root


def usage_error(source: Path) -> str:
    with pytest.raises(UsageError) as err:
        load_inventory(source)
    message = str(err.value)
    assert "\n" not in message and PROBE_HOST not in message
    return message


def test_yaml_syntax_error_in_group_vars_names_file_and_line(tmp_path: Path) -> None:
    source = inventory(tmp_path, intent="fabric_intent:\n  kind: roce\n   bad: [\n")
    message = usage_error(source)
    assert message.startswith(f"{source}/group_vars/all/fabric.yml:3: YAML syntax error: ")
    assert message.endswith("expected valid YAML (check indentation, colons and brackets)")


def test_yaml_syntax_error_in_host_vars_names_that_file(tmp_path: Path) -> None:
    source = inventory(tmp_path)
    (source / "host_vars").mkdir()
    (source / "host_vars" / "h1.yml").write_text("fabric_rails:\n  0: mlx5_0\n  - 1\n")
    assert usage_error(source).startswith(f"{source}/host_vars/h1.yml:3: YAML syntax error: ")


def test_unparseable_hosts_file_is_an_error_not_zero_hosts(tmp_path: Path) -> None:
    source = inventory(tmp_path, hosts="all:\n  hosts: [\n   h1: {\n")
    message = usage_error(source)
    assert message.startswith(f"{source}/hosts.yml:4: YAML syntax error: ")


def test_hosts_file_given_directly_with_bad_structure(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("all:\n  children: [gpu_hosts]\n")
    message = usage_error(hosts)
    assert message.startswith(f"{hosts}: not an inventory ansible can parse (yaml plugin: ")
    assert "expected an Ansible inventory" in message


def test_ini_inventory_that_is_not_one(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("        GPU0    GPU1    NIC0\nGPU0     X      NV12    PXB\n")
    message = usage_error(hosts)
    assert message.startswith(f"{hosts}: not an inventory ansible can parse (ini plugin: ")


@pytest.mark.parametrize(
    ("content", "expected"),
    [(b"", "file is empty"), (b"  \n\n", "file is empty"), (bytes(range(256)) * 4, "binary data, not text")],
)
def test_empty_or_binary_inventory_file(tmp_path: Path, content: bytes, expected: str) -> None:
    hosts = tmp_path / "hosts.yml"
    hosts.write_bytes(content)
    assert usage_error(hosts) == f"{hosts}: {expected}; {INVENTORY_EXPECTED}"


def test_missing_inventory(tmp_path: Path) -> None:
    assert usage_error(tmp_path / "nope").startswith(
        f"{tmp_path / 'nope'}: no such file or directory; expected"
    )


@pytest.mark.parametrize("hosts", [None, ""])
def test_inventory_without_hosts_or_intent_does_not_name_an_internal_host(
    tmp_path: Path, hosts: str | None
) -> None:
    source = inventory(tmp_path, hosts=hosts, intent=None)
    assert usage_error(source) == (
        f"{source}: the inventory has no hosts and no variable fabric_intent; expected an Ansible "
        "inventory with hosts (hosts.yml) and the fabric intent (group_vars/all/fabric.yml)"
    )


def test_intent_without_hosts_is_still_checkable(tmp_path: Path) -> None:
    # The lab inventory before `lab up`: groups and intent, no hosts yet.
    loaded = load_inventory(inventory(tmp_path, hosts="all:\n  children:\n    gpu_hosts: {}\n"))
    assert loaded.hosts == () and loaded.intent.kind == "roce"


def test_warnings_of_a_good_inventory_still_reach_the_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = inventory(tmp_path, hosts="all:\n  hosts:\n    h1: {}\n  bogus_section: {}\n")
    assert [h.name for h in load_inventory(source).hosts] == ["h1"]
    assert "bogus_section" in capsys.readouterr().err
