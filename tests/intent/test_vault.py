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
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.vaulted import REDACTED, is_under, redact_text, redacted_tree, referenced_names

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


def test_host_entry_names_its_vaulted_variables(tmp_path: Path, password: Path) -> None:
    inventory = vault_inventory(tmp_path, "fabric_intent: {}\n")
    (inventory / "host_vars").mkdir()
    (inventory / "host_vars" / "h1.yml").write_text(
        f"ansible_user: {vaulted('secret-user', 0)}\nansible_host: 192.0.2.1\n"
    )
    loaded = load_inventory(inventory)
    assert "ansible_user" in loaded.host("h1").vaulted_variables()
    assert "ansible_host" not in loaded.host("h1").vaulted_variables()
    assert loaded.host("h2").vaulted_variables() == frozenset()
