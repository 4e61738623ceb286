"""The fabric intent: defaults, validation errors that name file/line/key, inventory loading."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fabcheck.errors import IntentError
from fabcheck.intent.loader import load_inventory
from fabcheck.intent.model import FabricIntent

REPO = Path(__file__).resolve().parents[2]


def write_inventory(tmp_path: Path, intent_yaml: str, hosts_yaml: str | None = None) -> Path:
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text(textwrap.dedent(intent_yaml))
    (tmp_path / "hosts.yml").write_text(
        textwrap.dedent(
            hosts_yaml
            or """\
        all:
          children:
            gpu_hosts:
              hosts:
                h1: {}
                h2: {}
        """
        )
    )
    return tmp_path


def problems_of(tmp_path: Path, intent_yaml: str) -> list[str]:
    with pytest.raises(IntentError) as err:
        load_inventory(write_inventory(tmp_path, intent_yaml))
    return err.value.problems


def test_defaults_are_the_canonical_recipe() -> None:
    intent = FabricIntent()
    assert (intent.lossless.dscp, intent.lossless.priority, intent.lossless.pfc) == ([26], 3, True)
    assert (intent.cnp.dscp, intent.cnp.priority) == (48, 6)
    assert (intent.ecn.min_bytes, intent.ecn.max_bytes, intent.ecn.probability) == (150_000, 1_500_000, 100)
    assert (intent.mtu.netdev, intent.mtu.rdma, intent.roce_tos) == (9000, 4096, 106)
    assert intent.max_gpu_nic_link == "PXB" and intent.link_layer == "Ethernet"
    assert intent.performance.perftest_min_fraction == 0.90
    assert intent.performance.nccl_busbw_min_fraction == 0.85


@pytest.mark.parametrize("inventory", ["inventory/example", "inventory/example-ib", "inventory/lab"])
def test_shipped_inventories_are_valid(inventory: str) -> None:
    loaded = load_inventory(REPO / inventory)
    assert loaded.intent.kind == ("ib" if "ib" in inventory else "roce")


def test_example_inventory_shape() -> None:
    loaded = load_inventory(REPO / "inventory/example")
    hosts = loaded.group("gpu_hosts")
    assert len(hosts) == 4 and all(len(h.intent.rails) == 8 for h in hosts)
    assert {h.name for h in loaded.hosts if h.is_switch} == {"leaf01", "leaf02"}
    platforms = {g for h in loaded.hosts if h.is_switch for g in h.groups if g.startswith("switches_")}
    assert platforms == {"switches_nvue", "switches_eos"}


def test_pfc_priority_out_of_range_names_file_line_and_range(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """\
        fabric_intent:
          lossless:
            priority: 9
        """,
    )
    assert len(problems) == 1
    assert "group_vars/all/fabric.yml:3" in problems[0]
    assert "fabric_intent.lossless.priority = 9" in problems[0]
    assert "0..7" in problems[0]


def test_cnp_priority_equal_to_lossless_is_refused(tmp_path: Path) -> None:
    (problem,) = problems_of(
        tmp_path,
        """\
        fabric_intent:
          cnp: {priority: 3}
        """,
    )
    assert "fabric.yml:2: fabric_intent.cnp.priority = 3: must differ from lossless.priority 3" in problem


def test_ecn_min_above_max_is_refused(tmp_path: Path) -> None:
    (problem,) = problems_of(
        tmp_path,
        """\
        fabric_intent:
          ecn: {min_bytes: 2000000, max_bytes: 1500000}
        """,
    )
    assert "fabric_intent.ecn" in problem and "min_bytes (2000000) is above max_bytes (1500000)" in problem


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """\
        fabric_intent:
          kind: rocev2
          lossless: {dscp: [26, 64]}
          mtu: {rdma: 3000}
          bogus_key: 1
        """,
    )
    text = "\n".join(problems)
    assert len(problems) == 4
    assert "fabric_intent.kind = 'rocev2'" in text and "'roce' or 'ib'" in text
    assert "fabric_intent.lossless.dscp.1 = 64: out of range, allowed: 0..63" in text
    assert "fabric_intent.mtu.rdma = 3000" in text
    assert "fabric_intent.bogus_key: unknown key" in text


def test_netdev_mtu_must_carry_rdma_mtu(tmp_path: Path) -> None:
    (problem,) = problems_of(
        tmp_path,
        """\
        fabric_intent:
          mtu: {netdev: 4096}
        """,
    )
    assert "netdev MTU 4096 cannot carry RDMA MTU 4096: needs at least 4192" in problem


def test_missing_intent_variable(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path, "other_var: 1\n")
    assert "fabric_intent is not defined" in problem


def test_templates_and_per_host_rails_resolve(tmp_path: Path) -> None:
    inventory = write_inventory(
        tmp_path,
        """\
        lossless_prio: 3
        fabric_intent:
          lossless: {priority: "{{ lossless_prio }}"}
          rails: {0: mlx5_0, 1: mlx5_1}
        """,
        """\
        all:
          children:
            gpu_hosts:
              hosts:
                h1: {}
                h2: {fabric_rails: {0: mlx5_4}}
        """,
    )
    loaded = load_inventory(inventory)
    assert loaded.intent.lossless.priority == 3
    assert loaded.host("h1").intent.rails == {0: "mlx5_0", 1: "mlx5_1"}
    assert loaded.host("h2").intent.rails == {0: "mlx5_4"}


def test_hosts_disagreeing_on_the_recipe_are_refused(tmp_path: Path) -> None:
    write_inventory(tmp_path, "fabric_intent: {}\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "h2.yml").write_text("fabric_intent: {lossless: {dscp: [24]}, roce_tos: 96}\n")
    with pytest.raises(IntentError, match="2 different fabric intents"):
        load_inventory(tmp_path)


def test_vault_encrypted_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = b"s3cret-for-tests"
    vault = VaultLib([("default", VaultSecret(secret))])
    ciphertext = vault.encrypt("400").decode()
    indented = textwrap.indent(ciphertext, " " * 8)
    inventory = write_inventory(
        tmp_path, "fabric_intent:\n  link:\n    speed_gbps: !vault |\n" + indented + "\n"
    )
    password_file = tmp_path / "vault-pass"
    password_file.write_bytes(secret)
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(password_file))
    assert load_inventory(inventory).intent.link.speed_gbps == 400


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabcheck.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def test_cli_intent_check_exit_codes(tmp_path: Path) -> None:
    ok = run_cli("intent", "check", "-i", "inventory/example")
    assert ok.returncode == 0, ok.stderr
    assert "fabric intent is valid" in ok.stdout
    write_inventory(tmp_path, "fabric_intent:\n  lossless:\n    priority: 9\n")
    bad = run_cli("intent", "check", "-i", str(tmp_path))
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "fabric.yml:3: fabric_intent.lossless.priority = 9: out of range, allowed: 0..7" in bad.stderr
    missing = run_cli("intent", "check", "-i", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "nope: no such file or directory" in missing.stderr


def test_cross_key_rules_name_the_key_to_fix_even_when_it_is_a_default(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """\
        fabric_intent:
          lossless:
            dscp: [24]
          cnp:
            dscp: 24
        """,
    )
    assert len(problems) == 2
    assert (
        "fabric.yml:5: fabric_intent.cnp.dscp = 24: is also a lossless (RoCE data) DSCP [24]" in problems[0]
    )
    assert "fabric_intent.roce_tos = 106 (default, not set): carries DSCP 26" in problems[1]
    assert "group_vars/all/fabric.yml:" in problems[1]


def test_hosts_rendering_from_equal_inputs_share_one_intent_and_others_render_their_own(
    tmp_path: Path,
) -> None:
    """The loader renders an intent once for hosts whose intent, overrides and every variable its
    templates read (through variables that are templates too) are equal; a host whose variable differs,
    even one read only through another template, gets its own rendering (here: a second recipe, refused)."""
    intent = """\
        netdev_mtu_of_site: 9000
        mtu_alias: "{{ netdev_mtu_of_site }}"
        fabric_intent:
          mtu: {netdev: "{{ mtu_alias }}"}
          rails: {0: mlx5_0, 1: mlx5_1}
        """
    hosts = """\
        all:
          children:
            gpu_hosts:
              hosts:
                h1: {}
                h2: {}
                h4: {fabric_rails: {0: mlx5_4}}
        """
    loaded = load_inventory(write_inventory(tmp_path / "alike", intent, hosts))
    assert {name: loaded.host(name).intent.mtu.netdev for name in ("h1", "h2", "h4")} == dict.fromkeys(
        ("h1", "h2", "h4"), 9000
    )
    assert loaded.host("h1").intent is loaded.host("h2").intent  # rendered once
    assert loaded.host("h4").intent.rails == {0: "mlx5_4"} and loaded.host("h1").intent.rails[1] == "mlx5_1"
    odd = hosts.replace("h2: {}", "h2: {netdev_mtu_of_site: 4200}")
    with pytest.raises(IntentError, match="2 different fabric intents"):
        load_inventory(write_inventory(tmp_path / "odd", intent, odd))
    # Equal to Python (9000 == 9000.0), not to the strict model: h2 renders its own, and is refused.
    for first, second in (("9000", "9000.0"), ("9000.0", "9000")):
        typed = hosts.replace("h1: {}", f"h1: {{netdev_mtu_of_site: {first}}}").replace(
            "h2: {}", f"h2: {{netdev_mtu_of_site: {second}}}"
        )
        with pytest.raises(IntentError, match="integer"):
            load_inventory(write_inventory(tmp_path / f"typed-{first}", intent, typed))
