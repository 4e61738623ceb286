"""`validate --limit` takes what `ansible-playbook --limit` takes and selects the same hosts (it asks
ansible-core's own InventoryManager); an empty limit or one matching nothing is a usage error (exit 2),
never "check everything"."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.errors import UsageError
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.loader import Inventory, load_inventory

# Every host is on a loopback port where nothing listens: a round trip fails at once, by construction.
HOSTS_YML = """
all:
  vars:
    ansible_host: 127.0.0.1
    ansible_port: 1
    ansible_ssh_common_args: -F /dev/null
  children:
    gpu_hosts:
      hosts:
        gpu01:
        gpu02:
        gpu03:
        gpu10:
    rack_a:
      hosts:
        gpu01:
        gpu02:
        sm01:
    subnet_managers:
      hosts:
        sm01:
"""


@pytest.fixture(scope="module")
def inventory_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inventory")
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (root / "hosts.yml").write_text(HOSTS_YML)
    (root / "limit.txt").write_text("gpu02\ngpu10\n")
    return root


@pytest.fixture(scope="module")
def inventory(inventory_dir: Path) -> Inventory:
    return load_inventory(inventory_dir)


PATTERNS = {
    "gpu0*": ["gpu01", "gpu02", "gpu03"],
    "gpu_hosts": ["gpu01", "gpu02", "gpu03", "gpu10"],
    "gpu_hosts:!gpu03": ["gpu01", "gpu02", "gpu10"],
    "all:!gpu03": ["gpu01", "gpu02", "gpu10"],
    "rack_a:&gpu_hosts": ["gpu01", "gpu02"],
    "gpu01:gpu10": ["gpu01", "gpu10"],
    "gpu01,gpu03": ["gpu01", "gpu03"],
    "~gpu0[23]": ["gpu02", "gpu03"],
    "gpu_hosts[1:2]": ["gpu02", "gpu03"],
    "rack_a": ["gpu01", "gpu02"],  # sm01 is in rack_a too, but not a GPU host: listed as not checked
}


@pytest.mark.parametrize(("pattern", "expected"), PATTERNS.items(), ids=list(PATTERNS))
def test_limit_selects_what_ansible_selects(inventory: Inventory, pattern: str, expected: list[str]) -> None:
    chosen = plan_gate(inventory, pattern, ("host",))
    assert [h.name for h in chosen.hosts] == expected


def test_limit_from_a_file_and_the_rest_listed_as_not_checked(
    inventory: Inventory, inventory_dir: Path
) -> None:
    assert [h.name for h in plan_gate(inventory, f"@{inventory_dir / 'limit.txt'}", ("host",)).hosts] == [
        "gpu02",
        "gpu10",
    ]
    assert [h.name for h in plan_gate(inventory, "rack_a", ("host",)).not_checked] == ["sm01"]
    every = ["gpu01", "gpu02", "gpu03", "gpu10"]
    assert [h.name for h in plan_gate(inventory, None, ("host",)).hosts] == every
    once = plan_gate(inventory, "gpu01", ("host",)).hosts
    assert once == plan_gate(inventory, "gpu01", ("host",)).hosts  # no state kept


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "--limit is empty"),
        ("  ", "--limit is empty"),
        ("gpu9*", "--limit 'gpu9*' matches no host in"),
        ("nosuchgroup", "--limit 'nosuchgroup' matches no host in"),
        ("sm01", "no GPU host (group gpu_hosts) or switch matching --limit 'sm01' to check in /"),
        ("@/nonexistent/limit.txt", "--limit '@/nonexistent/limit.txt': Unable to find limit file"),
    ],
)
def test_empty_or_unmatched_limit_is_a_usage_error(inventory: Inventory, pattern: str, message: str) -> None:
    with pytest.raises(UsageError, match="^" + re.escape(message)):
        plan_gate(inventory, pattern, ("host",))


def test_cli_usage_errors_exit_2(inventory_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-i", str(inventory_dir), "--limit", ""]) == 2
    assert "fabcheck: --limit is empty" in capsys.readouterr().err
    assert main(["validate", "-i", str(inventory_dir), "--limit", "gpu9*"]) == 2
    assert "matches no host" in capsys.readouterr().err
    for option, value in (
        ("--timeout", "0"),
        ("--connect-timeout", "nan"),
        ("--deadline", "-5"),
        ("--timeout", "x"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["validate", "-i", str(inventory_dir), option, value])
        assert exited.value.code == 2
        assert f"argument {option}" in capsys.readouterr().err


def test_cli_judges_exactly_the_limited_hosts(
    inventory_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["validate", "-i", str(inventory_dir), "--json", "--limit", "gpu_hosts:!gpu02:!gpu03"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rc == 3  # nothing failed, nothing could be checked: never a pass
    assert [r["host"] for r in results] == ["gpu01", "gpu10"]
    for result in results:
        [finding] = result["findings"]
        assert finding["actual"].endswith("port 1: Connection refused")


def test_ansible_playbook_itself_agrees(inventory_dir: Path, tmp_path: Path) -> None:
    """The same patterns through `ansible-playbook --list-hosts` on a play for gpu_hosts."""
    playbook_cli = Path(sys.executable).with_name("ansible-playbook")
    if not playbook_cli.exists() and shutil.which("ansible-playbook") is None:
        pytest.skip("ansible-playbook is not installed")
    play = tmp_path / "play.yml"
    play.write_text("- hosts: gpu_hosts\n  gather_facts: false\n  tasks: []\n")
    patterns = ["gpu0*", "gpu_hosts:!gpu03", "rack_a:&gpu_hosts", "~gpu0[23]", "gpu_hosts[1:2]", "rack_a"]
    # One run per pattern is a few seconds of CPU each: a handful, chosen to cover each syntax.
    inventory = load_inventory(inventory_dir)
    for pattern in patterns:
        done = subprocess.run(
            [str(playbook_cli), "-i", str(inventory_dir), str(play), "--list-hosts", "--limit", pattern],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        listed = sorted(line.strip() for line in done.stdout.splitlines() if line.startswith("      "))
        assert listed == sorted(h.name for h in plan_gate(inventory, pattern, ("host",)).hosts), pattern
