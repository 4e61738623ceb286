"""Drifts typed the way an operator types them into the mock switches' CLIs (not `lab inject`): each
fails exactly the check that owns the field, where it is, and nothing else. The commands follow the real
platforms: SONiC `config pfcwd` (sonic-utilities config/main.py and pfcwd/main.py: start replaces a
port's PFC_WD entry, stop removes every port's), `sonic-db-cli CONFIG_DB hset` and `config interface
speed`; NVUE `nv set` + `nv config apply -y` with a per-port mapping profile and a link speed; EOS global
config lines and an interface's `speed`.
"""

from __future__ import annotations

import json

import pytest

from tests.invariant.harness import (
    check_diff,
    converged,
    judged,
    not_passing,
    repush,
    session_of,
    type_lines,
)

ALL_SONIC = ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")
SONIC_CLASS_3_BY_QUEUE_1 = [
    "sonic-db-cli CONFIG_DB hset 'TC_TO_QUEUE_MAP|OPERATOR' 0 0 1 1 2 2 3 1 4 4 5 5 6 6 7 7",
    "sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet4' tc_to_queue_map OPERATOR",
]
ALL_NVUE = ("swp1", "swp2", "swp3", "swp4")
CASES = [
    (
        "sonic",
        ["sudo config pfcwd start --action alert Ethernet4 200 --restoration-time 200"],
        {("switch.watchdog_settings", "leaf02:Ethernet4", "fail")},
    ),
    (
        "sonic",
        ["sudo config pfcwd start Ethernet8 5000"],  # restoration defaults to 2 x detection
        {("switch.watchdog_settings", "leaf02:Ethernet8", "fail")},
    ),
    ("sonic", ["sudo config pfcwd stop"], {("switch.watchdog", f"leaf02:{p}", "fail") for p in ALL_SONIC}),
    (
        "sonic",
        ["sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|FABCHECK_ECN_TC3' red_min_threshold 300000"],
        {("switch.ecn", f"leaf02:{p}", "fail") for p in ALL_SONIC},
    ),
    (
        "nvue",
        ["nv set qos pfc-watchdog polling-interval 5000", "nv config apply -y"],
        {("switch.watchdog_settings", "leaf01", "fail")},
    ),
    (
        "nvue",
        [
            "nv set qos mapping p1 trust l2",
            "nv set interface swp2 qos mapping profile p1",
            "nv config apply -y",
        ],
        {("switch.trust", "leaf01:swp2", "fail")},
    ),
    # A per-port mapping profile sending DSCP 26 to switch priority 0 on one port: the port's own
    # classification, read from the applied tree (not default-global's map).
    (
        "nvue",
        [
            "nv set qos mapping p2 trust l3",
            "nv set qos mapping p2 dscp 26 switch-priority 0",
            "nv set interface swp2 qos mapping profile p2",
            "nv config apply -y",
        ],
        {("switch.dscp_map", "leaf01:swp2", "fail")},
    ),
    # PFC is lossless only with both directions on: tx off fails switch.pfc on every port the profile
    # feeds (the finding names the direction: test_the_pfc_finding_names_what_is_off).
    (
        "nvue",
        ["nv set qos pfc default-global tx disable", "nv config apply -y"],
        {("switch.pfc", f"leaf01:{p}", "fail") for p in ALL_NVUE},
    ),
    (
        "nvue",
        ["nv set qos pfc default-global cable-length 5", "nv config apply -y"],
        {("switch.pfc", f"leaf01:{p}", "fail") for p in ALL_NVUE},
    ),
    (
        "eos",
        ["configure", "priority-flow-control pause watchdog default timeout 10", "end"],
        {("switch.watchdog_settings", "leaf03", "fail")},
    ),
    (
        "eos",
        ["configure", "priority-flow-control pause watchdog action no-drop", "end"],
        {("switch.watchdog_settings", "leaf03", "fail")},
    ),
    # An interface-level tx-queue merges with the profile's queue (its bandwidth stays); the mock opens a
    # new tx-queue block strict until `no priority` (EOS's default, unverified on a real switch), so the
    # port's scheduling changes too, and the driver's diff removes the whole block.
    (
        "eos",
        [
            "configure",
            "interface Ethernet2",
            "uc-tx-queue 3",
            "random-detect ecn minimum-threshold 300 kbytes maximum-threshold 1500 kbytes"
            " max-mark-probability 100",
            "end",
        ],
        {("switch.ecn", "leaf03:Ethernet2", "fail"), ("switch.scheduler", "leaf03:Ethernet2", "fail")},
    ),
    # EOS's default map still sends DSCP 26 to traffic class 3: no finding (issue 23's noise).
    ("eos", ["configure", "no qos map dscp 26 to traffic-class 3", "end"], set()),
    # A port forced to another rate than the inventory's: no fabcheck role sets it, the gate names who.
    (
        "sonic",
        ["sudo config interface speed Ethernet4 100000"],
        {("switch.port_speed", "leaf02:Ethernet4", "fail")},
    ),
    (
        "nvue",
        ["nv set interface swp2 link speed 100G", "nv config apply -y"],
        {("switch.port_speed", "leaf01:swp2", "fail")},
    ),
    (
        "eos",
        ["configure", "interface Ethernet2", "speed 100g-4", "end"],
        {("switch.port_speed", "leaf03:Ethernet2", "fail")},
    ),
    # SONiC has no `config` command for a port's class -> queue map: an operator writes CONFIG_DB. One
    # port bound to a map that sends class 3 to queue 1 (redis HSET takes field/value pairs).
    (
        "sonic",
        SONIC_CLASS_3_BY_QUEUE_1,
        {("switch.queue_map", "leaf02:Ethernet4", "fail")},
    ),
]


def _case_id(value: object) -> str:
    # Sets print in hash order, which differs between xdist workers: ids must not.
    return str(sorted(value) if isinstance(value, set) else value)[:60]


# How the operator saves: SONiC's commands change CONFIG_DB, not the file a reboot loads; EOS's change
# running-config; NVUE (CL 5.9+, the mocks' release) saves on `nv config apply`.
SAVES = {"sonic": ["sudo config save -y"], "eos": ["copy running-config startup-config"], "nvue": []}


@pytest.mark.parametrize(("platform", "lines", "failing"), CASES, ids=_case_id)
def test_an_operator_drift_fails_exactly_its_check(platform: str, lines: list[str], failing: set) -> None:
    device = converged(platform)
    type_lines(session_of(device, platform), [*lines, *SAVES[platform]])
    assert not_passing(judged(platform, device)) == failing


@pytest.mark.parametrize(("platform", "switch"), [("sonic", "leaf02"), ("eos", "leaf03")])
def test_an_unsaved_drift_also_fails_startup_config_until_saved(platform: str, switch: str) -> None:
    """A change in running that a reboot would revert (a push cut off before its save, or an operator
    who did not save): switch.startup_config fails beside the drifted field's check, naming the switch
    role's fix (a push repairs running and saves, tests/switch/test_push.py); once saved, only the
    drifted field's check fails."""
    lines, failing = next((lines, failing) for p, lines, failing in CASES if p == platform and failing)
    device = converged(platform)
    type_lines(session_of(device, platform), lines)
    found = judged(platform, device)
    assert not_passing(found) == failing | {("switch.startup_config", switch, "fail")}
    lag = next(f for f in found if f.check == "switch.startup_config")
    assert "a reboot reverts them" in lag.actual and "--tags switch" in lag.hint
    type_lines(session_of(device, platform), SAVES[platform])
    assert not_passing(judged(platform, device)) == failing


SPEED_CASES = [(platform, lines, failing) for platform, lines, failing in CASES if "speed" in " ".join(lines)]


@pytest.mark.parametrize(("platform", "lines", "failing"), SPEED_CASES, ids=_case_id)
def test_a_port_speed_is_not_the_pushs_own_it_neither_diffs_nor_reverts_it(
    platform: str, lines: list[str], failing: set
) -> None:
    """No role sets a port's speed: check mode shows nothing, a push leaves it, the gate keeps failing it
    with a hint naming who sets it."""
    device = converged(platform)
    type_lines(session_of(device, platform), [*lines, *SAVES[platform]])
    assert check_diff(platform, device) == ""
    repush(platform, device)
    found = judged(platform, device)
    assert not_passing(found) == failing
    [speed] = [f for f in found if f.check == "switch.port_speed" and f.status.value == "fail"]
    assert speed.actual == "100G" and "no fabcheck role sets it" in speed.hint and "--tags" not in speed.hint


def test_sonic_config_qos_reload_undoes_the_push_and_the_push_redoes_it() -> None:
    device = converged("sonic")
    type_lines(session_of(device, "sonic"), ["sudo config qos reload"])
    failing = {check for check, _subject, _status in not_passing(judged("sonic", device))}
    assert {"switch.pfc", "switch.dscp_map", "switch.ecn", "switch.scheduler"} <= failing
    assert "switch.watchdog_settings" not in failing  # PFC_WD is not a QoS table it clears
    assert "PORT_QOS_MAP" in check_diff("sonic", device)


def test_sonic_config_pfcwd_start_says_what_it_defaulted_and_skips_ports_without_pfc() -> None:
    device = converged("sonic")
    del device.running["PORT_QOS_MAP"]["Ethernet12"]["pfc_enable"]
    said = type_lines(session_of(device, "sonic"), ["sudo config pfcwd start all 400"])
    assert said == (
        "restoration time not defined; default to 2 times detection time: 800 ms\n"
        "SKIPPED: PFC is not enabled on port: Ethernet12\n"
    )
    assert device.running["PFC_WD"]["Ethernet0"] == {
        "detection_time": "400",
        "restoration_time": "800",
        "pfc_stat_history": "disable",
    }


def test_an_interface_tx_queue_keeps_the_profiles_bandwidth() -> None:
    device = converged("eos")
    session = session_of(device, "eos")
    typed = ["configure", "interface Ethernet2", "uc-tx-queue 3", "no priority", "end", *SAVES["eos"]]
    type_lines(session, typed)
    shown = session.handle("show qos interfaces | json")
    assert '"bandwidthPercent": 50' in shown.split('"Ethernet2"', 1)[1].split('"Ethernet3"', 1)[0]
    assert not_passing(judged("eos", device)) == set()


def test_sonic_show_interfaces_status_has_intfutils_columns() -> None:
    text = session_of(converged("sonic"), "sonic").handle("show interfaces status")
    header = text.splitlines()[0].split()
    assert header == [
        "Interface",
        "Lanes",
        "Speed",
        "MTU",
        "FEC",
        "Alias",
        "Vlan",
        "Oper",
        "Admin",
        "Type",
        "Asym",
        "PFC",
    ]
    assert text.splitlines()[2].split()[:4] == ["Ethernet0", "0,1,2,3,4,5,6,7", "400G", "9216"]


def test_sonic_a_port_whose_class_3_leaves_by_queue_1_fails_and_a_push_repairs_it() -> None:
    """The gate reads the class -> queue map each port binds (TC_TO_QUEUE_MAP via PORT_QOS_MAP, from the
    CONFIG_DB it already reads): the drifted port fails switch.queue_map naming the entry and the tag
    that pushes it; check mode shows the binding; a push rebinds it and the gate passes."""
    device = converged("sonic")
    type_lines(session_of(device, "sonic"), [*SONIC_CLASS_3_BY_QUEUE_1, *SAVES["sonic"]])
    [finding] = [f for f in judged("sonic", device) if f.status.value == "fail"]
    assert finding.subject == "leaf02:Ethernet4"
    assert finding.actual == "TC_TO_QUEUE_MAP: class 3 -> queue 1 (not 3)"
    assert "--tags dscp" in finding.hint
    diff = check_diff("sonic", device)
    assert "/PORT_QOS_MAP/Ethernet4/tc_to_queue_map" in diff, diff
    repush("sonic", device)
    assert device.running["PORT_QOS_MAP"]["Ethernet4"]["tc_to_queue_map"] == "FABCHECK"
    assert not_passing(judged("sonic", device)) == set()


def test_sonic_queue_counters_after_sonic_clear_print_grouped_differences_the_gate_reads() -> None:
    """As queuestat does (scripts/queuestat, utilities_common/netstat.py ns_diff): each port's reading
    `time`, and after `sonic-clear queuecounters` counts since the clear grouped by thousands; the gate's
    parser reads both forms to the same numbers."""
    from fabcheck.parsers.switch_sonic import parse_queue_counters

    device = converged("sonic")
    session = session_of(device, "sonic")
    device.counters.add("Ethernet4", {"tx_packets": {"3": 1234567}, "drops": {"3": 1234}})
    plain = json.loads(session.handle("show queue counters --json"))
    assert plain["Ethernet4"]["UC3"]["droppacket"] == "1234" and "time" in plain["Ethernet4"]
    assert session.handle("sonic-clear queuecounters") == "Cleared counters\n"
    device.counters.add("Ethernet4", {"tx_packets": {"3": 1234567}, "drops": {"3": 1234}})
    text = session.handle("show queue counters --json")
    cleared = json.loads(text)
    assert cleared["Ethernet4"]["UC3"]["totalpacket"] == "1,234,567"
    assert cleared["Ethernet4"]["UC3"]["droppacket"] == "1,234"
    assert dict(dict(parse_queue_counters(text))["Ethernet4"].by_queue)[3] == 1234  # type: ignore[union-attr]


NVUE_REPAIRED = [
    case
    for case in CASES
    if case[0] == "nvue"
    and any("qos pfc default-global" in line or "mapping profile" in line for line in case[1])
]


@pytest.mark.parametrize(("platform", "lines", "failing"), NVUE_REPAIRED, ids=_case_id)
def test_an_nvue_drift_the_gate_now_reads_shows_in_check_mode_and_a_push_repairs_it(
    platform: str, lines: list[str], failing: set
) -> None:
    """Issue 33's missed NVUE drifts: check mode shows each, a push repairs it, the gate passes again."""
    device = converged(platform)
    type_lines(session_of(device, platform), [*lines, *SAVES[platform]])
    assert not_passing(judged(platform, device)) == failing
    diff = check_diff(platform, device)
    assert diff, "check mode shows nothing to repair"
    repush(platform, device)
    assert check_diff(platform, device) == ""
    assert not_passing(judged(platform, device)) == set()


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("nv set qos pfc default-global tx disable", "PFC on priorities 3, tx disabled"),
        ("nv set qos pfc default-global rx disable", "PFC on priorities 3, rx disabled"),
        ("nv set qos pfc default-global cable-length 5", "PFC on priorities 3, cable-length 5 m"),
    ],
)
def test_the_pfc_finding_names_what_is_off(line: str, said: str) -> None:
    device = converged("nvue")
    type_lines(session_of(device, "nvue"), [line, "nv config apply -y"])
    found = [f for f in judged("nvue", device) if f.check == "switch.pfc" and f.subject == "leaf01:swp2"]
    assert [f.actual for f in found] == [said]
    assert "cable-length 100 m" in found[0].expected and "--tags pfc" in found[0].hint
