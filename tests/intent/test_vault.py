"""Vault-encrypted intent values are used but never printed: errors, `intent show`, validate, preflight."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.errors import IntentError, UsageError
from fabcheck.intent.loader import HostEntry, load_inventory
from fabcheck.intent.vaulted import (
    REDACTED,
    contains_vaulted,
    is_under,
    redact_text,
    redacted_tree,
    referenced_names,
)

REPO = Path(__file__).resolve().parents[2]
PASSWORD = b"fabcheck-vault-test-password"
HOSTS = "all:\n  children:\n    gpu_hosts:\n      hosts:\n        h1: {}\n        h2: {}\n"


def vaulted(plaintext: str, indent: int) -> str:
    """`!vault |` block for a YAML value written at `indent` spaces."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    ciphertext = VaultLib([("default", VaultSecret(PASSWORD))]).encrypt(plaintext).decode()
    return "!vault |\n" + textwrap.indent(ciphertext, " " * (indent + 2))


def vault_inventory(tmp_path: Path, intent_yaml: str) -> Path:
    inventory = tmp_path / "inv"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "group_vars" / "all" / "fabric.yml").write_text(intent_yaml)
    (inventory / "hosts.yml").write_text(HOSTS)
    return inventory


@pytest.fixture
def password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "vault-pass"
    path.write_bytes(PASSWORD)
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(path))
    return path


def problems_of(inventory: Path) -> list[str]:
    with pytest.raises(IntentError) as err:
        load_inventory(inventory)
    assert str(err.value)  # the message validate and the CLI print
    return err.value.problems


def test_invalid_vaulted_value_is_redacted_with_file_and_line(tmp_path: Path, password: Path) -> None:
    inventory = vault_inventory(
        tmp_path, f"fabric_intent:\n  lossless:\n    priority: {vaulted('9876543', 4)}\n"
    )
    with pytest.raises(IntentError) as err:
        load_inventory(inventory)
    (problem,) = err.value.problems
    assert "9876543" not in str(err.value)
    assert (
        f"fabric.yml:3: fabric_intent.lossless.priority = {REDACTED}: out of range, allowed: 0..7" in problem
    )


def test_vaulted_text_that_is_not_a_number_is_redacted(tmp_path: Path, password: Path) -> None:
    inventory = vault_inventory(tmp_path, f"fabric_intent:\n  roce_tos: {vaulted('hunter2-secret', 2)}\n")
    (problem,) = problems_of(inventory)
    assert "hunter2" not in problem
    assert f"fabric_intent.roce_tos = {REDACTED}: expected an integer" in problem


def test_vaulted_value_inside_another_keys_message_is_redacted(tmp_path: Path, password: Path) -> None:
    # The ECN ramp rule names both ends; only the vaulted one is hidden.
    inventory = vault_inventory(
        tmp_path,
        f"fabric_intent:\n  ecn:\n    max_bytes: 1500000\n    min_bytes: {vaulted('2345678', 4)}\n",
    )
    (problem,) = problems_of(inventory)
    assert "2345678" not in problem
    assert f"min_bytes ({REDACTED}) is above max_bytes (1500000)" in problem


def test_value_templated_from_a_vaulted_variable_is_redacted(tmp_path: Path, password: Path) -> None:
    # `| int` drops ansible's vault mark; the template still reads a secret, so its result is one.
    inventory = vault_inventory(
        tmp_path,
        f"secret_priority: {vaulted('8765', 0)}\n"
        'fabric_intent:\n  lossless:\n    priority: "{{ secret_priority | int }}"\n',
    )
    (problem,) = problems_of(inventory)
    assert "8765" not in problem
    assert f"fabric_intent.lossless.priority = {REDACTED}: out of range" in problem


def test_valid_vaulted_value_is_used_but_shown_redacted(
    tmp_path: Path, password: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = vault_inventory(tmp_path, f"fabric_intent:\n  link:\n    speed_gbps: {vaulted('233', 4)}\n")
    loaded = load_inventory(inventory)
    assert loaded.intent.link.speed_gbps == 233
    assert loaded.vaulted == frozenset({("link", "speed_gbps")})
    assert main(["intent", "show", "-i", str(inventory)]) == 0
    shown = capsys.readouterr().out
    assert json.loads(shown)["link"]["speed_gbps"] == REDACTED and "233" not in shown
    assert main(["intent", "show", "-i", str(inventory), "--host", "h2"]) == 0
    assert json.loads(capsys.readouterr().out)["link"]["speed_gbps"] == REDACTED
    assert main(["intent", "check", "-i", str(inventory)]) == 0
    checked = capsys.readouterr().out
    assert f"link {REDACTED} Gb/s" in checked and "233" not in checked


def test_validate_reports_the_vaulted_error_redacted(
    tmp_path: Path, password: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = vault_inventory(tmp_path, f"fabric_intent:\n  cnp:\n    dscp: {vaulted('777', 4)}\n")
    assert main(["validate", "-i", str(inventory)]) == 2
    err = capsys.readouterr().err
    assert "777" not in err
    assert f"fabric_intent.cnp.dscp = {REDACTED}: out of range, allowed: 0..63" in err


def test_missing_vault_password_names_the_variable_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE", raising=False)
    inventory = vault_inventory(tmp_path, f"fabric_intent:\n  link:\n    speed_gbps: {vaulted('200', 4)}\n")
    (problem,) = problems_of(inventory)
    assert "fabric.yml:3: fabric_intent.link.speed_gbps: vault-encrypted value" in problem
    assert "no vault password is set; expected ANSIBLE_VAULT_PASSWORD_FILE" in problem


def test_a_password_from_an_earlier_load_does_not_leak_into_the_next(
    tmp_path: Path, password: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = vault_inventory(tmp_path, f"fabric_intent:\n  link:\n    speed_gbps: {vaulted('200', 4)}\n")
    assert load_inventory(inventory).intent.link.speed_gbps == 200
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE")
    (problem,) = problems_of(inventory)
    assert "no vault password is set" in problem


def test_wrong_vault_password_says_it_cannot_decrypt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tmp_path / "wrong-pass"
    wrong.write_text("not-the-password\n")
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(wrong))
    inventory = vault_inventory(tmp_path, f"fabric_intent:\n  roce_tos: {vaulted('106', 2)}\n")
    (problem,) = problems_of(inventory)
    assert "fabric_intent.roce_tos: vault-encrypted value that the password from " in problem
    assert f"ANSIBLE_VAULT_PASSWORD_FILE={wrong} cannot decrypt" in problem
    assert "expected the password the value was encrypted with" in problem


def test_unreadable_vault_password_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(tmp_path / "absent"))
    inventory = vault_inventory(tmp_path, "fabric_intent: {}\n")
    with pytest.raises(
        UsageError, match=r"absent: cannot read the vault password file \(ANSIBLE_VAULT_PASSWORD_FILE\)"
    ):
        load_inventory(inventory)


@pytest.mark.skipif(shutil.which("ansible-playbook", path=str(REPO / ".venv/bin")) is None, reason="no venv")
def test_preflight_playbook_fails_without_printing_the_secret(tmp_path: Path, password: Path) -> None:
    inventory = vault_inventory(
        tmp_path, f"fabric_intent:\n  lossless:\n    priority: {vaulted('9876543', 4)}\n"
    )
    result = subprocess.run(
        [
            str(REPO / ".venv/bin/ansible-playbook"),
            "-i",
            str(inventory),
            str(REPO / "playbooks/preflight.yml"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "9876543" not in output
    assert f"fabric_intent.lossless.priority = {REDACTED}: out of range" in output


def test_redaction_helpers() -> None:
    assert (
        redact_text("priority 3 on fabric.yml3 and 33", {"3"}) == f"priority {REDACTED} on fabric.yml3 and 33"
    )
    assert redact_text("'s3cr3t' and s3cr3t!", {"s3cr3t"}) == f"'{REDACTED}' and {REDACTED}!"
    vaulted_keys = frozenset({("rails", "0"), ("lossless", "dscp", "1")})
    data = {"rails": {"0": "mlx5_0", "1": "mlx5_1"}, "lossless": {"dscp": [26, 24], "priority": 3}}
    assert redacted_tree(data, vaulted_keys) == {
        "rails": {"0": REDACTED, "1": "mlx5_1"},
        "lossless": {"dscp": [26, REDACTED], "priority": 3},
    }
    assert is_under(["rails", 0], vaulted_keys) and not is_under(["rails", 1], vaulted_keys)
    assert is_under(("lossless", "dscp", 1, "x"), vaulted_keys)
    assert referenced_names("{{ a.b | int }} {% if c %}x{% endif %} d") == {
        "a",
        "b",
        "int",
        "if",
        "c",
        "endif",
    }


def test_vaulted_rail_in_host_vars_is_redacted(tmp_path: Path, password: Path) -> None:
    inventory = vault_inventory(tmp_path, "fabric_intent: {rails: {0: mlx5_0}}\n")
    (inventory / "host_vars").mkdir()
    (inventory / "host_vars" / "h2.yml").write_text(
        f"fabric_rails:\n  0: {vaulted('mlx5_0;secret-cmd', 2)}\n"
    )
    (problem,) = problems_of(inventory)
    assert "secret-cmd" not in problem
    assert f"host_vars/h2.yml:2: fabric_intent.rails.0 = {REDACTED}: not a usable NIC name" in problem


def vaulted_variables(entry: HostEntry) -> frozenset[str]:
    return frozenset(name for name, value in entry.variables.items() if contains_vaulted(value))


def test_host_entry_keeps_its_variables_vaulted(tmp_path: Path, password: Path) -> None:
    inventory = vault_inventory(tmp_path, "fabric_intent: {}\n")
    (inventory / "host_vars").mkdir()
    (inventory / "host_vars" / "h1.yml").write_text(
        f"ansible_user: {vaulted('secret-user', 0)}\nansible_host: 192.0.2.1\n"
    )
    loaded = load_inventory(inventory)
    assert "ansible_user" in vaulted_variables(loaded.host("h1"))
    assert "ansible_host" not in vaulted_variables(loaded.host("h1"))
    assert vaulted_variables(loaded.host("h2")) == frozenset()


# ---- values derived from a vaulted one are vaulted (issue 28) --------------------------------------

DERIVED = {
    "upper": "{{ vault_tos | upper }}",
    "int": "{{ vault_tos | int }}",
    "tilde": "{{ vault_tos ~ '' }}",
    "slice": "{{ vault_tos[1:] }}",
    "through-a-variable": "{{ tos_alias | upper }}",
}


def derived_inventory(tmp_path: Path, secret: str, template: str, whole_file: bool) -> Path:
    """roce_tos templated from vault_tos, itself in a `!vault` value or in a file encrypted whole."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    inventory = vault_inventory(
        tmp_path, f"tos_alias: '{{{{ vault_tos }}}}'\nfabric_intent:\n  roce_tos: \"{template}\"\n"
    )
    if whole_file:
        vault = VaultLib([("default", VaultSecret(PASSWORD))]).encrypt(f"vault_tos: '{secret}'\n")
        (inventory / "group_vars" / "all" / "vault.yml").write_bytes(vault)
    else:
        (inventory / "group_vars" / "all" / "vault.yml").write_text(f"vault_tos: {vaulted(secret, 0)}\n")
    return inventory


@pytest.mark.parametrize("whole_file", [False, True], ids=["vault-value", "vault-file"])
@pytest.mark.parametrize("derived", ["upper", "tilde", "slice", "through-a-variable"])
def test_an_invalid_value_derived_from_a_vaulted_one_is_redacted(
    tmp_path: Path, password: Path, derived: str, whole_file: bool
) -> None:
    # No integer however it is derived (`| int` would make it 0: the valid case below has that one).
    inventory = derived_inventory(tmp_path, "q7105x", DERIVED[derived], whole_file)
    (problem,) = problems_of(inventory)
    assert "7105" not in problem and "Q7105" not in problem.upper(), problem
    assert f"fabric_intent.roce_tos = {REDACTED}: expected an integer" in problem


@pytest.mark.parametrize("whole_file", [False, True], ids=["vault-value", "vault-file"])
@pytest.mark.parametrize("derived", ["int", "tilde", "slice", "through-a-variable"])
def test_a_valid_value_derived_from_a_vaulted_one_is_shown_redacted(
    tmp_path: Path, password: Path, capsys: pytest.CaptureFixture[str], derived: str, whole_file: bool
) -> None:
    # ToS 106 (DSCP 26, the lossless class); slicing drops the leading 'x'.
    secret = "x106" if derived == "slice" else "106"
    inventory = derived_inventory(tmp_path, secret, DERIVED[derived], whole_file)
    loaded = load_inventory(inventory)
    assert loaded.intent.roce_tos == 106 and ("roce_tos",) in loaded.vaulted
    assert main(["intent", "show", "-i", str(inventory)]) == 0
    shown = capsys.readouterr().out
    assert json.loads(shown)["roce_tos"] == REDACTED  # (106 is also nccl.traffic_class's own default)


def test_an_undefined_variable_beside_a_vaulted_one_is_not_called_a_vault_problem(
    tmp_path: Path, password: Path
) -> None:
    inventory = derived_inventory(tmp_path, "170", "{{ vault_tos ~ no_such_variable }}", True)
    (problem,) = problems_of(inventory)
    assert "cannot resolve value" in problem and "no_such_variable" in problem
    assert "cannot decrypt" not in problem and "170" not in problem


@pytest.mark.skipif(shutil.which("ansible-playbook", path=str(REPO / ".venv/bin")) is None, reason="no venv")
@pytest.mark.parametrize("limit", ["leaf01", "switches"])
def test_preflight_refuses_a_plain_text_switch_password_when_the_limit_names_only_switches(
    tmp_path: Path, limit: str
) -> None:
    # A play on localhost alone is skipped by `--limit switches`: site.yml then pushed to the switches.
    inventory = tmp_path / "inv"
    shutil.copytree(REPO / "inventory" / "example", inventory)
    hosts = (inventory / "hosts.yml").read_text()
    marker = "switch_password: \"{{ lookup('ansible.builtin.env', 'FABCHECK_SWITCH_PASSWORD') }}\""
    assert marker in hosts
    (inventory / "hosts.yml").write_text(hosts.replace(marker, "switch_password: plain-s3cret-pw"))
    result = subprocess.run(
        [
            str(REPO / ".venv/bin/ansible-playbook"),
            "-i",
            str(inventory),
            "playbooks/preflight.yml",
            "--limit",
            limit,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "leaf01: switch_password = <redacted>: a password in plain text in the inventory" in output
    assert "plain-s3cret-pw" not in output
