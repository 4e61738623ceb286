"""fabcheck.checks.host.firmware: host.nic_firmware (the running firmware against the intent's pin for the
NIC's PSID, else one version per PSID across the fleet; an image waiting for a reset named) and
host.nic_fw_config (each pinned mlxconfig parameter in effect; one only in Next Boot fails as pending).
The outputs are the real layouts (tests/data/real/host/INDEX.tsv) with this host's values."""

from __future__ import annotations

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.desired.nic import desired_host
from fabcheck.gate import host_stage as validate
from fabcheck.intent.model import FabricIntent
from tests.checks.host.hostdata import (
    INTENT,
    NETDEVS,
    flint_q,
    healthy_sections,
    mlxconfig_e_q,
    ok,
    only,
    run_checks,
)

OTHER = "28.37.1014"
UNPINNED = INTENT.model_copy(update={"nic_firmware": []})
VERSION_ONLY = INTENT.model_copy(
    update={"nic_firmware": [INTENT.nic_firmware[0].model_copy(update={"config": {}, "image": "fw-cx7.bin"})]}
)


def fleet(
    changes: dict[str, dict[str, Section]],
    intent: FabricIntent = INTENT,
    hosts: tuple[str, ...] = ("a", "b", "c"),
) -> dict[str, list[Finding]]:
    evidence = {
        host: validate.evidence(HostCollection(host, healthy_sections() | changes.get(host, {}), True))
        for host in hosts
    }
    desired = {host: desired_host(intent, host) for host in hosts}
    return checks.check_fleet(evidence, desired, dict.fromkeys(hosts, intent))


def firmware_findings(results: dict[str, list[Finding]]) -> dict[tuple[str, str], Finding]:
    return {
        (h, f.subject): f for h, found in results.items() for f in found if f.check == checks.NIC_FIRMWARE
    }


def test_every_nic_on_the_pinned_firmware_passes_per_nic() -> None:
    found = firmware_findings(fleet({}))
    assert set(found) == {(h, nic) for h in "abc" for nic in NETDEVS}
    assert {f.status for f in found.values()} == {Status.PASS}
    assert found[("a", "mlx5_0")].expected == "firmware 28.39.1002 running (pinned for MT_0000000838)"
    assert found[("a", "mlx5_0")].actual == "28.39.1002 running (flint)"


def test_a_nic_on_other_firmware_fails_alone_with_the_image_to_burn() -> None:
    found = firmware_findings(fleet({"b": {"flint:mlx5_1/1": ok(flint_q(OTHER))}}, VERSION_ONLY))
    bad = {k: f for k, f in found.items() if f.status is not Status.PASS}
    assert list(bad) == [("b", "mlx5_1")]
    failure = bad[("b", "mlx5_1")]
    assert failure.actual == f"{OTHER} running (flint)"
    assert "no fabcheck role burns firmware: burn fw-cx7.bin" in failure.hint
    assert (
        "`flint -d mlx5_1 -i fw-cx7.bin burn`" in failure.hint
        and "mlxfwreset -d mlx5_1 -y reset" in failure.hint
    )


def test_the_pinned_image_burned_but_not_running_fails_as_pending_a_reset() -> None:
    """flint prints FW Version(Running) while the burned image differs (mstflint flint/subcommands.cpp)."""
    waiting = flint_q("28.39.1002", running=OTHER)
    found = firmware_findings(fleet({"a": {"flint:mlx5_0/1": ok(waiting)}}))
    failure = found[("a", "mlx5_0")]
    assert failure.status is Status.FAIL
    assert failure.actual.startswith(
        f"{OTHER} running; 28.39.1002 burned, runs after a firmware reset or reboot"
    )
    assert failure.actual.endswith("pending: takes effect after a firmware reset or reboot")
    assert "mlxfwreset -d mlx5_0 -y reset" in failure.hint


def test_the_pinned_firmware_running_with_another_image_waiting_fails() -> None:
    found = firmware_findings(fleet({"a": {"flint:mlx5_0/1": ok(flint_q(OTHER, running="28.39.1002"))}}))
    assert found[("a", "mlx5_0")].status is Status.FAIL
    assert f"{OTHER} burned" in found[("a", "mlx5_0")].actual


def test_unpinned_parts_must_agree_across_the_fleet_and_a_waiting_image_is_named() -> None:
    odd = {"flint:mlx5_0/1": ok(flint_q(OTHER)), "flint:mlx5_1/1": ok(flint_q(OTHER))}
    waiting = {"flint:mlx5_1/1": ok(flint_q(OTHER, running="28.39.1002"))}
    found = firmware_findings(fleet({"b": odd, "c": waiting}, UNPINNED))
    subject = "firmware of PSID MT_0000000838"
    assert {k: f.status for k, f in found.items()} == {
        ("a", subject): Status.PASS,
        ("b", subject): Status.FAIL,
        ("c", subject): Status.PASS,
        ("c", "mlx5_1"): Status.FAIL,
    }
    assert found[("b", subject)].actual == f"{OTHER} (28.39.1002 on 2 host(s); {OTHER} on b)"
    assert "pending: takes effect after a firmware reset or reboot" in found[("c", "mlx5_1")].hint


def test_without_flint_the_driver_s_fw_ver_and_board_id_are_judged() -> None:
    gone = {f"flint:{dev}/1": Section(127, "", "sh: 1: flint: not found\n") for dev in NETDEVS}
    found = firmware_findings(fleet({"a": gone}))
    assert found[("a", "mlx5_0")].status is Status.PASS
    assert found[("a", "mlx5_0")].actual == "28.39.1002 running (ibv_devinfo fw_ver; flint not installed)"


def test_flint_failing_is_an_error_naming_the_command_never_a_pass() -> None:
    broken = {"flint:mlx5_0/1": Section(1, "-E- Cannot open Device: mlx5_0. Permission denied\n")}
    found = firmware_findings(fleet({"a": broken}))
    error = found[("a", "mlx5_0")]
    assert error.status is Status.ERROR and "flint -d mlx5_0 q" in error.actual


def test_one_host_alone_with_nothing_pinned_has_nothing_to_compare() -> None:
    found = firmware_findings(fleet({}, UNPINNED, hosts=("a",)))
    assert {f.status for f in found.values()} == {Status.SKIP}


# ---- host.nic_fw_config ------------------------------------------------------------------------------


def test_every_pinned_parameter_in_effect_passes_each_nic() -> None:
    findings = run_checks()
    assert {f.subject: f.status for f in findings if f.check == checks.NIC_FW_CONFIG} == {
        "mlx5_0": Status.PASS,
        "mlx5_1": Status.PASS,
    }
    passed = only(findings, checks.NIC_FW_CONFIG, "mlx5_0")
    assert passed.actual == "all 7 in effect"
    assert "ATS_ENABLED=0" in passed.expected and "LINK_TYPE_P1=ETH" in passed.expected


def test_a_drifted_parameter_fails_with_the_role_and_the_set_command() -> None:
    drifted = mlxconfig_e_q(ATS_ENABLED=("False(0)", "True(1)", "True(1)"))
    findings = run_checks({"mlxconfig:mlx5_0/1": ok(drifted)})
    failure = only(findings, checks.NIC_FW_CONFIG, "mlx5_0")
    assert failure.status is Status.FAIL
    assert failure.actual == "ATS_ENABLED True(1) (Next Boot True(1))"
    assert "role roce_host (tag firmware) sets it fleet-wide" in failure.hint
    assert "`mlxconfig -d mlx5_0 -y set ATS_ENABLED=0`" in failure.hint  # what differs, nothing else
    assert "mlxfwreset -d mlx5_0 -y reset" in failure.hint
    assert only(findings, checks.NIC_FW_CONFIG, "mlx5_1").status is Status.PASS


def test_a_value_set_for_the_next_boot_only_still_fails_as_pending() -> None:
    pending = mlxconfig_e_q(CNP_DSCP_P1=("48", "4", "48"))  # set back, not yet reset
    failure = only(run_checks({"mlxconfig:mlx5_1/1": ok(pending)}), checks.NIC_FW_CONFIG, "mlx5_1")
    assert failure.status is Status.FAIL
    assert (
        failure.actual
        == "CNP_DSCP_P1 4 (Next Boot 48): pending: takes effect after a firmware reset or reboot"
    )
    assert failure.hint.startswith("pending: takes effect after a firmware reset or reboot: `mlxfwreset")


def test_values_match_by_name_or_number_in_any_case() -> None:
    """The intent may say ETH or 2, false or 0; mlxconfig prints ETH(2), False(0)."""
    pin = INTENT.nic_firmware[0]
    by_number = pin.model_copy(
        update={"config": {"LINK_TYPE_P1": 2, "ATS_ENABLED": 0, "PCI_WR_ORDERING": "PER_MKEY"}}
    )
    intent = INTENT.model_copy(update={"nic_firmware": [by_number]})
    findings = run_checks(intent=intent)
    assert {f.status for f in findings if f.check == checks.NIC_FW_CONFIG} == {Status.PASS}


def test_a_parameter_the_nic_does_not_show_fails_naming_why_it_may_be_hidden() -> None:
    pin = INTENT.nic_firmware[0]
    hidden = pin.model_copy(update={"config": {**pin.config, "MAX_ACC_OUT_READ": 44}})
    findings = run_checks(intent=INTENT.model_copy(update={"nic_firmware": [hidden]}))
    failure = only(findings, checks.NIC_FW_CONFIG, "mlx5_0")
    assert failure.status is Status.FAIL
    assert (
        "MAX_ACC_OUT_READ not shown (unsupported, or hidden while ADVANCED_PCI_SETTINGS is off)"
        in failure.actual
    )


def test_without_mlxconfig_or_with_its_error_the_check_errors_never_passes() -> None:
    missing = run_checks({"mlxconfig:mlx5_0/1": Section(127, "", "sh: 1: mlxconfig: not found\n")})
    error = only(missing, checks.NIC_FW_CONFIG, "mlx5_0")
    assert error.status is Status.ERROR and error.actual == "mlxconfig is not installed"
    failing = run_checks({"mlxconfig:mlx5_0/1": Section(3, "-E- Failed to open the device\n")})
    error = only(failing, checks.NIC_FW_CONFIG, "mlx5_0")
    assert error.status is Status.ERROR and "mlxconfig -d mlx5_0 -e q" in error.actual
    plain = mlxconfig_e_q().replace("Default             Current         Next Boot", "Next Boot")
    plain = "\n".join(line[:52] + line[94:] if line.startswith(" ") else line for line in plain.splitlines())
    error = only(run_checks({"mlxconfig:mlx5_0/1": ok(plain + "\n")}), checks.NIC_FW_CONFIG, "mlx5_0")
    assert error.status is Status.ERROR and "no Current column" in error.actual


def test_an_intent_pinning_no_parameters_skips_with_the_reason() -> None:
    findings = run_checks(intent=VERSION_ONLY)
    skip = only(findings, checks.NIC_FW_CONFIG, "host")
    assert (
        skip.status is Status.SKIP and skip.actual == "fabric_intent.nic_firmware pins no firmware parameters"
    )


def test_a_nic_of_another_part_is_skipped_by_name() -> None:
    other = ok(flint_q(psid="MT_0000000999"))
    findings = run_checks({"flint:mlx5_1/1": other})
    skip = only(findings, checks.NIC_FW_CONFIG, "mlx5_1")
    assert skip.status is Status.SKIP and "PSID MT_0000000999" in skip.actual
