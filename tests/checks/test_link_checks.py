"""Both ends of every link: NIC records (as the host gate parses them) against the switch port's
records replayed from the mock switches; a mismatch names both ends and the role for each side."""

from __future__ import annotations

from dataclasses import replace

import pytest
from switchfabric import SWITCHES, desired, fabric, intent, replayed

from fabcheck.checks import link
from fabcheck.checks.link import NicEnd, check_links
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.roles import HOST_QOS_ROLE, SWITCH_QOS_ROLE
from fabcheck.desired.nic import desired_nic
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.switch_records import LldpNeighbor

MLNX_QOS = """DCBX mode: OS controlled
Priority trust state: dscp
dscp2prio mapping:
\tprio:0 dscp:07,06,05,04,03,02,01,00,
\tprio:1 dscp:15,14,13,12,11,10,09,08,
\tprio:2 dscp:23,22,21,20,19,18,17,16,
\tprio:3 dscp:31,30,29,28,27,26,25,24,
\tprio:4 dscp:39,38,37,36,35,34,33,32,
\tprio:5 dscp:47,46,45,44,43,42,41,40,
\tprio:6 dscp:55,54,53,52,51,50,49,48,
\tprio:7 dscp:63,62,61,60,59,58,57,56,
Cable len: 7
PFC configuration:
\tpriority    0   1   2   3   4   5   6   7
\tenabled     0   0   0   1   0   0   0   0
tc: 0 ratelimit: unlimited, tsa: vendor
\t priority:  1
"""
NICS = {link_.nic: link_ for link_ in fabric().links}


def nic_end(nic: str, **changes: object) -> NicEnd:
    netdev = f"ens{int(nic.removeprefix('mlx5_')) + 1}np0"  # what the captured LLDP neighbours send
    end = NicEnd.of("gpu01", nic, parse_mlnx_qos(MLNX_QOS), 9000, netdev)
    return replace(end, **changes)


def judge(state: str = "converged", nics: dict[str, NicEnd] | None = None) -> list[Finding]:
    ends = nics if nics is not None else {nic: nic_end(nic) for nic in NICS}
    return check_links(
        fabric(),
        {("gpu01", nic): end for nic, end in ends.items()},
        {("gpu01", nic): desired_nic(intent(), "gpu01", nic) for nic in NICS},
        {name: replayed(state, name) for name in SWITCHES},
        {name: desired(name) for name in SWITCHES},
    )


def failures(findings: list[Finding]) -> dict[tuple[str, str], Finding]:
    return {(f.check, f.subject): f for f in findings if f.status not in (Status.PASS, Status.SKIP)}


def test_agreeing_ends_pass_on_every_link_and_concern() -> None:
    findings = judge()
    assert len(findings) == 5 * len(NICS) and {f.status for f in findings} == {Status.PASS}
    assert {f.subject for f in findings} == {f"gpu01:{n} <-> {lk.switch_end}" for n, lk in NICS.items()}


def test_a_switch_fault_names_both_ends_and_the_switch_role_only() -> None:
    bad = failures(judge("switch-pfc-prio"))
    assert set(bad) == {(link.PFC, f"gpu01:{n} <-> {lk.switch_end}") for n, lk in NICS.items()}
    finding = bad[(link.PFC, "gpu01:mlx5_0 <-> leaf01:swp1")]
    assert finding.actual == "gpu01:mlx5_0 holds PFC on 3; leaf01:swp1 holds PFC on 4"
    assert SWITCH_QOS_ROLE in finding.hint and "--limit leaf01 --tags pfc" in finding.hint
    assert HOST_QOS_ROLE not in finding.hint


@pytest.mark.parametrize(
    ("changes", "check"),
    [
        ({"pfc_priorities": (3, 4)}, link.PFC),
        ({"trust": "pcp"}, link.TRUST),
        ({"dscp_to_priority": ((26, 0), (48, 6))}, link.DSCP),
        ({"mtu": 1500}, link.MTU),
        ({"mtu": 9500}, link.MTU),  # above the switch port's too: still only the host is off
    ],
)
def test_a_host_side_mismatch_names_the_host_role_only(changes: dict, check: str) -> None:
    nics = {nic: nic_end(nic) for nic in NICS} | {"mlx5_1": nic_end("mlx5_1", **changes)}
    bad = failures(judge(nics=nics))
    assert set(bad) == {(check, "gpu01:mlx5_1 <-> leaf02:Ethernet0")}
    hint = bad[(check, "gpu01:mlx5_1 <-> leaf02:Ethernet0")].hint
    assert HOST_QOS_ROLE in hint and "--limit gpu01" in hint and SWITCH_QOS_ROLE not in hint


def test_a_nic_trusting_pcp_skips_the_dscp_map_as_the_host_check_does() -> None:
    nics = {nic: nic_end(nic) for nic in NICS} | {
        "mlx5_1": nic_end("mlx5_1", trust="pcp", dscp_to_priority=None)  # mlnx_qos prints no map then
    }
    findings = judge(nics=nics)
    dscp = next(f for f in findings if f.check == link.DSCP and f.subject.startswith("gpu01:mlx5_1 "))
    assert dscp.status is Status.SKIP and "trusts pcp" in dscp.actual and link.TRUST in dscp.actual
    assert set(failures(findings)) == {(link.TRUST, "gpu01:mlx5_1 <-> leaf02:Ethernet0")}


def test_a_nic_the_host_did_not_report_is_an_error_not_a_pass() -> None:
    nics = {nic: nic_end(nic) for nic in NICS if nic != "mlx5_2"}
    bad = failures(judge(nics=nics))
    assert {f.status for f in bad.values()} == {Status.ERROR} and len(bad) == 5
    assert all("did not report mlx5_2" in f.hint for f in bad.values())


def test_unread_nic_fields_are_errors() -> None:
    nics = {nic: nic_end(nic) for nic in NICS} | {"mlx5_0": NicEnd.of("gpu01", "mlx5_0", None, None)}
    bad = failures(judge(nics=nics))
    assert {(c, f.status) for (c, _s), f in bad.items()} == {
        (check, Status.ERROR) for check in (link.TRUST, link.PFC, link.DSCP, link.MTU)
    }


def test_a_nic_without_a_cable_is_reported() -> None:
    nics = {nic: nic_end(nic) for nic in NICS} | {"mlx5_9": nic_end("mlx5_9")}
    bad = failures(judge(nics=nics))
    assert set(bad) == {(link.CABLED, "gpu01:mlx5_9")}
    assert bad[(link.CABLED, "gpu01:mlx5_9")].status is Status.FAIL


def judge_heard(heard: dict[tuple[str, str], LldpNeighbor | None]) -> dict[tuple[str, str], Finding]:
    """The converged fabric with some ports' LLDP neighbours replaced (None: the port hears nobody)."""
    switches = {name: replayed("converged", name) for name in SWITCHES}
    for (name, port), record in heard.items():
        records = dict(switches[name].records)
        records.pop((LldpNeighbor, port), None)
        if record is not None:
            records[(LldpNeighbor, port)] = record
        switches[name] = replace(switches[name], records=records)
    findings = check_links(
        fabric(),
        {("gpu01", nic): nic_end(nic) for nic in NICS},
        {("gpu01", nic): desired_nic(intent(), "gpu01", nic) for nic in NICS},
        switches,
        {name: desired(name) for name in SWITCHES},
    )
    return {(f.check, f.subject): f for f in findings if f.check == link.LLDP}


def test_lldp_proves_each_cable_on_every_platform() -> None:
    lldp = judge_heard({})
    assert {key: f.status for key, f in lldp.items()} == {
        (link.LLDP, f"gpu01:{n} <-> {lk.switch_end}"): Status.PASS for n, lk in NICS.items()
    }
    assert lldp[(link.LLDP, "gpu01:mlx5_1 <-> leaf02:Ethernet0")].actual == (
        "leaf02:Ethernet0 hears gpu01 ens2np0"
    )


def test_a_miswired_port_fails_naming_what_it_hears() -> None:
    lldp = judge_heard({("leaf01", "swp1"): LldpNeighbor("gpu07.example.net", "ens5np0")})
    bad = {key: f for key, f in lldp.items() if f.status is not Status.PASS}
    assert list(bad) == [(link.LLDP, "gpu01:mlx5_0 <-> leaf01:swp1")]
    finding = bad[(link.LLDP, "gpu01:mlx5_0 <-> leaf01:swp1")]
    assert finding.actual == "leaf01:swp1 hears gpu07.example.net ens5np0"
    assert "fabric_links" in finding.hint and "mlx5_0" in finding.hint
    # The right host on the wrong interface is a miswire too.
    wrong_nic = judge_heard({("leaf01", "swp1"): LldpNeighbor("gpu01", "ens4np0")})
    assert wrong_nic[(link.LLDP, "gpu01:mlx5_0 <-> leaf01:swp1")].status is Status.FAIL


def test_fqdn_and_mac_port_ids_still_prove_the_host() -> None:
    lldp = judge_heard({("leaf01", "swp1"): LldpNeighbor("GPU01.dc1.example.net", "48:b0:2d:76:ee:8e")})
    assert lldp[(link.LLDP, "gpu01:mlx5_0 <-> leaf01:swp1")].status is Status.PASS


def test_a_silent_port_is_skipped_with_the_reason_and_a_stray_neighbour_fails() -> None:
    lldp = judge_heard({("leaf01", "swp1"): None, ("leaf02", "Ethernet8"): LldpNeighbor("gpu01", "ens8np0")})
    silent = lldp[(link.LLDP, "gpu01:mlx5_0 <-> leaf01:swp1")]
    assert silent.status is Status.SKIP and "lldpd" in silent.actual
    stray = lldp[(link.LLDP, "leaf02:Ethernet8")]
    assert stray.status is Status.FAIL and stray.actual == "LLDP on leaf02:Ethernet8 hears gpu01 ens8np0"


def test_only_the_port_that_hears_several_neighbours_is_ambiguous() -> None:
    """A cabled port hearing two neighbours cannot prove its cable (an error naming both); the other
    cables are judged as usual, and a management port hearing the management network (and even a
    host there) is no fabric port: no finding."""
    two = LldpNeighbor("gpu01", "ens2np0", (("gpu09", "ens2np0"),))
    lldp = judge_heard(
        {
            ("leaf02", "Ethernet0"): two,
            ("leaf02", "eth0"): LldpNeighbor("mgmt-sw01", "swp10", (("gpu01", "eno1"),)),
        }
    )
    ambiguous = lldp[(link.LLDP, "gpu01:mlx5_1 <-> leaf02:Ethernet0")]
    assert ambiguous.status is Status.ERROR
    assert ambiguous.actual == "leaf02:Ethernet0 hears 2 LLDP neighbours: gpu01 ens2np0; gpu09 ens2np0"
    assert "point to point" in ambiguous.hint
    others = {
        key: f.status for key, f in lldp.items() if key != (link.LLDP, "gpu01:mlx5_1 <-> leaf02:Ethernet0")
    }
    assert set(others.values()) == {Status.PASS} and len(others) == len(NICS) - 1


def test_a_neighbour_without_a_system_name_fails_saying_so() -> None:
    lldp = judge_heard({("leaf02", "Ethernet0"): LldpNeighbor("", "1c:34:da:5e:00:04")})
    unnamed = lldp[(link.LLDP, "gpu01:mlx5_1 <-> leaf02:Ethernet0")]
    assert unnamed.status is Status.FAIL
    assert unnamed.actual == "leaf02:Ethernet0 hears (no system name) 1c:34:da:5e:00:04"


def test_a_switch_port_with_pfc_tx_off_fails_link_pfc_naming_the_direction() -> None:
    """PFC is lossless only with pauses sent and honoured: the NVUE port whose PFC profile has tx off
    (as the applied tree reads it) disagrees with the NIC's PFC on 3, and only the switch is named."""
    from fabcheck.parsers.switch_records import PfcPriorities

    switches = {name: replayed("converged", name) for name in SWITCHES}
    leaf01 = switches["leaf01"]
    records = dict(leaf01.records)
    records[(PfcPriorities, "swp1")] = PfcPriorities((3,), tx=False, rx=True, cable_length_m=100)
    switches["leaf01"] = replace(leaf01, records=records)
    findings = check_links(
        fabric(),
        {("gpu01", nic): nic_end(nic) for nic in NICS},
        {("gpu01", nic): desired_nic(intent(), "gpu01", nic) for nic in NICS},
        switches,
        {name: desired(name) for name in SWITCHES},
    )
    bad = failures(findings)
    assert set(bad) == {(link.PFC, "gpu01:mlx5_0 <-> leaf01:swp1")}
    finding = bad[(link.PFC, "gpu01:mlx5_0 <-> leaf01:swp1")]
    assert finding.actual == "gpu01:mlx5_0 holds PFC on 3; leaf01:swp1 holds PFC on 3 (tx disabled)"
    assert SWITCH_QOS_ROLE in finding.hint and HOST_QOS_ROLE not in finding.hint
