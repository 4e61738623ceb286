"""The invariant: every field role switch_qos owns (fabcheck.checks.switch.OWNED_FIELDS), drifted
alone in an in-process mock switch's running state, gives both signals. The platform driver's check
mode (what `site.yml --check --diff` shows) shows that field alone, on its port, and changes nothing;
and the gate fails exactly the check that owns it on exactly its port (a per-port field) or on the
switch / every port it feeds (a switch-wide one), and nothing else. A field no check reads yet leaves
the gate silent (its declaration says so) while the diff still shows it.

The converged mock switches (the drivers' own push, tests/invariant/harness.py) pass every check and
have nothing to push. One drift per field, in the platform's own running state: the shape
of the mock's config tree (NVUE's `nv set` tree, SONiC's CONFIG_DB, EOS's config model).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from fabcheck.checks.switch import (
    LOSSLESS_DROPS,
    OWNED_FIELDS,
    PFC,
    STARTUP_CONFIG,
    WATCHDOG,
    OwnedField,
    owned_fields_markdown,
)
from fabcheck.switch.platforms import eos
from fabcheck.switch.render import render_switch
from tests.invariant.harness import (
    NAMES,
    PORTS,
    check_diff,
    converged,
    desired_of,
    judged,
    not_passing,
    session_of,
)

DRIFTED = {platform: ports[1] for platform, ports in PORTS.items()}  # a host port, not the cabled one
Drift = Callable[[dict[str, Any], str], None]


def _nvue_global(path: list[str], value: Any) -> Drift:
    def drift(tree: dict[str, Any], _port: str) -> None:
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return drift


def _nvue_port(path: list[str], value: Any) -> Drift:
    def drift(tree: dict[str, Any], port: str) -> None:
        node = tree["interface"][port]
        for key in path[:-1]:
            node = node.setdefault(key, {})
        if value is None:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return drift


def _nvue_port_profile(kind: str, profile: dict[str, Any]) -> Drift:
    """An operator's own profile bound to one managed port (`nv set qos <kind> drift ...` and
    `nv set interface <port> qos <kind> profile drift`): the port's effective state changes."""

    def drift(tree: dict[str, Any], port: str) -> None:
        tree["qos"].setdefault(kind, {})["drift"] = profile
        tree["interface"][port].setdefault("qos", {})[kind] = {"profile": "drift"}

    return drift


def _sonic(table: str, key: str, field: str, value: str | None) -> Drift:
    def drift(db: dict[str, Any], port: str) -> None:
        entry = db[table][key.replace("<port>", port)]
        if value is None:
            del entry[field]
        else:
            entry[field] = value

    return drift


def _sonic_rebind(old: str, new: str, name: str) -> Drift:
    def drift(db: dict[str, Any], port: str) -> None:
        entry = db["PORT_QOS_MAP"][port]
        del entry[old]
        entry[new] = name
        db.setdefault("DOT1P_TO_TC_MAP", {}).setdefault(name, {str(pcp): str(pcp) for pcp in range(8)})

    return drift


def _eos_profile(path: list[str], value: Any) -> Drift:
    def drift(tree: dict[str, Any], _port: str) -> None:
        node = tree["qos_profiles"]["FABCHECK-ROCE"]
        for key in path[:-1]:
            node = node[key]
        if value is None:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return drift


def _eos_port_block(path: list[str], value: Any) -> Drift:
    """A setting of the port's own class lines (the port that carries them instead of the profile)."""

    def drift(tree: dict[str, Any], port: str) -> None:
        node = tree["interfaces"][port]
        for key in path[:-1]:
            node = node[key]
        if value is None:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return drift


def _eos_set(path: list[str], value: Any) -> Drift:
    def drift(tree: dict[str, Any], port: str) -> None:
        node = tree
        for key in path[:-1]:
            node = node[key.replace("<port>", port)]
        node[path[-1]] = value

    return drift


NVUE_CC = ["qos", "congestion-control", "default-global", "traffic-class", "3"]
NVUE_SCHED = ["qos", "egress-scheduler", "default-global", "traffic-class"]
DRIFTS: dict[tuple[str, str], Drift] = {
    ("nvue", "qos mapping default-global trust"): _nvue_global(
        ["qos", "mapping", "default-global", "trust"], "l2"
    ),
    ("nvue", "qos mapping default-global dscp <d> switch-priority"): _nvue_global(
        ["qos", "mapping", "default-global", "dscp", "26", "switch-priority"], 0
    ),
    ("nvue", "qos egress-queue-mapping default-global switch-priority <p> traffic-class"): _nvue_global(
        ["qos", "egress-queue-mapping", "default-global", "switch-priority", "6", "traffic-class"], 0
    ),
    ("nvue", "qos pfc default-global switch-priority <p>"): _nvue_global(
        ["qos", "pfc", "default-global", "switch-priority"], {"4": {}}
    ),
    # PFC with either direction off is not lossless; a cable length off the intent's mis-sizes headroom
    ("nvue", "qos pfc default-global tx"): _nvue_global(["qos", "pfc", "default-global", "tx"], "disable"),
    ("nvue", "qos pfc default-global rx"): _nvue_global(["qos", "pfc", "default-global", "rx"], "disable"),
    ("nvue", "qos pfc default-global cable-length"): _nvue_global(
        ["qos", "pfc", "default-global", "cable-length"], 5
    ),
    ("nvue", "interface <port> qos pfc profile"): _nvue_port_profile("pfc", {"switch-priority": {"4": {}}}),
    ("nvue", "interface <port> qos mapping profile"): _nvue_port_profile("mapping", {"trust": "l2"}),
    ("nvue", "interface <port> qos congestion-control profile"): _nvue_port_profile(
        "congestion-control", {"traffic-class": {"3": {"ecn": "disable"}}}
    ),
    ("nvue", "interface <port> qos egress-scheduler profile"): _nvue_port_profile(
        "egress-scheduler", {"traffic-class": {"3": {"mode": "dwrr", "bw-percent": 10}}}
    ),
    ("nvue", "qos congestion-control default-global traffic-class <tc> min-threshold"): _nvue_global(
        [*NVUE_CC, "min-threshold"], 300000
    ),
    ("nvue", "qos congestion-control default-global traffic-class <tc> max-threshold"): _nvue_global(
        [*NVUE_CC, "max-threshold"], 3000000
    ),
    ("nvue", "qos congestion-control default-global traffic-class <tc> probability"): _nvue_global(
        [*NVUE_CC, "probability"], 50
    ),
    ("nvue", "qos congestion-control default-global traffic-class <tc> ecn"): _nvue_global(
        [*NVUE_CC, "ecn"], "disable"
    ),
    ("nvue", "qos egress-scheduler default-global traffic-class <tc> bw-percent"): _nvue_global(
        [*NVUE_SCHED, "3", "bw-percent"], 30
    ),
    ("nvue", "qos egress-scheduler default-global traffic-class <tc> mode"): _nvue_global(
        [*NVUE_SCHED, "6"], {"mode": "dwrr", "bw-percent": 10}
    ),
    ("nvue", "interface <port> qos pfc-watchdog state"): _nvue_port(
        ["qos", "pfc-watchdog", "state"], "disable"
    ),
    ("nvue", "qos pfc-watchdog polling-interval"): _nvue_global(
        ["qos", "pfc-watchdog", "polling-interval"], 5000
    ),
    ("nvue", "qos pfc-watchdog robustness"): _nvue_global(["qos", "pfc-watchdog", "robustness"], 1000),
    ("nvue", "interface <port> link mtu"): _nvue_port(["link", "mtu"], 1500),
    ("nvue", "qos traffic-pool <pool> memory-percent"): _nvue_global(
        ["qos", "traffic-pool", "default-lossless", "memory-percent"], 10
    ),
    ("sonic", "PORT_QOS_MAP|<port> pfc_enable"): _sonic("PORT_QOS_MAP", "<port>", "pfc_enable", "3,4"),
    ("sonic", "PORT_QOS_MAP|<port> pfcwd_sw_enable"): _sonic("PORT_QOS_MAP", "<port>", "pfcwd_sw_enable", ""),
    ("sonic", "DSCP_TO_TC_MAP|FABCHECK <d>"): _sonic("DSCP_TO_TC_MAP", "FABCHECK", "26", "0"),
    ("sonic", "QUEUE|<port>|<tc> wred_profile"): _sonic("QUEUE", "<port>|3", "wred_profile", None),
    ("sonic", "WRED_PROFILE|FABCHECK_ECN_TC<tc> green_min_threshold"): _sonic(
        "WRED_PROFILE", "FABCHECK_ECN_TC3", "green_min_threshold", "300000"
    ),
    ("sonic", "WRED_PROFILE|FABCHECK_ECN_TC<tc> yellow_max_threshold"): _sonic(
        "WRED_PROFILE", "FABCHECK_ECN_TC3", "yellow_max_threshold", "3000000"
    ),
    ("sonic", "WRED_PROFILE|FABCHECK_ECN_TC<tc> red_min_threshold"): _sonic(
        "WRED_PROFILE", "FABCHECK_ECN_TC3", "red_min_threshold", "300000"
    ),
    ("sonic", "SCHEDULER|FABCHECK_TC<tc> weight"): _sonic("SCHEDULER", "FABCHECK_TC3", "weight", "30"),
    ("sonic", "SCHEDULER|FABCHECK_TC<tc> type"): _sonic("SCHEDULER", "FABCHECK_TC3", "type", "STRICT"),
    ("sonic", "QUEUE|<port>|<tc> scheduler"): _sonic("QUEUE", "<port>|3", "scheduler", "FABCHECK_TC6"),
    ("sonic", "WRED_PROFILE|FABCHECK_ECN_TC<tc> ecn"): _sonic(
        "WRED_PROFILE", "FABCHECK_ECN_TC3", "ecn", "ecn_none"
    ),
    **{
        ("sonic", f"WRED_PROFILE|FABCHECK_ECN_TC<tc> {field}"): _sonic(
            "WRED_PROFILE", "FABCHECK_ECN_TC3", field, value
        )
        for colour in ("green", "yellow", "red")
        for field, value in (
            (f"wred_{colour}_enable", "false"),
            (f"{colour}_min_threshold", "300000"),
            (f"{colour}_max_threshold", "3000000"),
            (f"{colour}_drop_probability", "50"),
        )
    },
    # on the switch that trusts PCP (VARIANTS): PCP 3 rides class 1
    ("sonic", "DOT1P_TO_TC_MAP|FABCHECK <pcp>"): _sonic("DOT1P_TO_TC_MAP", "FABCHECK", "3", "1"),
    ("sonic", "PFC_WD|<port> action"): _sonic("PFC_WD", "<port>", "action", "alert"),
    ("sonic", "PFC_WD|<port> detection_time"): _sonic("PFC_WD", "<port>", "detection_time", "5000"),
    ("sonic", "PFC_WD|<port> restoration_time"): _sonic("PFC_WD", "<port>", "restoration_time", "5000"),
    ("sonic", "PORT|<port> mtu"): _sonic("PORT", "<port>", "mtu", "1500"),
    ("sonic", "BUFFER_PG|<port>|<pg> profile"): _sonic(
        "BUFFER_PG", "<port>|3", "profile", "ingress_lossy_profile"
    ),
    ("sonic", "BUFFER_QUEUE|<port>|<queues> profile"): _sonic(
        "BUFFER_QUEUE", "<port>|3-4", "profile", "egress_lossy_profile"
    ),
    ("eos", "qos map dscp <d> to traffic-class <tc>"): _eos_set(["qos", "dscp_map", "26"], 1),
    ("eos", "qos profile FABCHECK-ROCE: qos trust"): _eos_profile(["trust"], "cos"),
    ("eos", "qos profile FABCHECK-ROCE: priority-flow-control priority <p>"): _eos_profile(
        ["pfc_priorities"], {"4": "no-drop"}
    ),
    ("eos", "qos profile FABCHECK-ROCE: priority-flow-control"): _eos_profile(["pfc"], None),
    ("eos", "qos profile FABCHECK-ROCE: uc-tx-queue <tc> priority"): _eos_profile(
        ["tx_queues", "3", "priority"], "strict"
    ),
    ("eos", "qos profile FABCHECK-ROCE: priority-flow-control pause watchdog"): _eos_profile(
        ["pfc_watchdog"], False
    ),
    ("eos", "qos profile FABCHECK-ROCE: uc-tx-queue <tc> random-detect ecn"): _eos_profile(
        ["tx_queues", "3", "ecn", "min"], 300000
    ),
    ("eos", "qos profile FABCHECK-ROCE: uc-tx-queue <tc> bandwidth percent"): _eos_profile(
        ["tx_queues", "3", "bandwidth_percent"], 30
    ),
    ("eos", "qos profile FABCHECK-ROCE: uc-tx-queue <tc> bandwidth guaranteed"): _eos_profile(
        ["tx_queues", "3", "bandwidth_guaranteed"], 20
    ),
    ("eos", "priority-flow-control pause watchdog default timeout"): _eos_set(
        ["pfc_watchdog", "timeout"], "10"
    ),
    ("eos", "priority-flow-control pause watchdog default recovery-time"): _eos_set(
        ["pfc_watchdog", "recovery-time"], "10"
    ),
    ("eos", "priority-flow-control pause watchdog action"): _eos_set(["pfc_watchdog", "action"], "no-drop"),
    ("eos", "interface <port>: mtu"): _eos_set(["interfaces", "<port>", "mtu"], 1500),
    ("eos", "interface <port>: service-profile"): _eos_set(
        ["interfaces", "<port>", "service_profile"], "OTHER"
    ),
    ("eos", "interface <port>: qos trust"): _eos_port_block(["trust"], "dscp"),
    ("eos", "interface <port>: priority-flow-control"): _eos_port_block(["pfc"], None),
    ("eos", "interface <port>: priority-flow-control priority <p>"): _eos_port_block(
        ["pfc_priorities"], {"4": "no-drop"}
    ),
    ("eos", "interface <port>: priority-flow-control pause watchdog"): _eos_port_block(
        ["pfc_watchdog"], False
    ),
    ("eos", "interface <port>: uc-tx-queue <tc> random-detect ecn"): _eos_port_block(
        ["tx_queues", "3", "ecn", "min"], 300000
    ),
    ("eos", "interface <port>: uc-tx-queue <tc> bandwidth percent"): _eos_port_block(
        ["tx_queues", "3", "bandwidth_percent"], 30
    ),
    ("eos", "interface <port>: uc-tx-queue <tc> priority"): _eos_port_block(
        ["tx_queues", "3", "priority"], "strict"
    ),
    ("eos", "interface <port>: uc-tx-queue <tc> bandwidth guaranteed"): _eos_port_block(
        ["tx_queues", "3", "bandwidth_guaranteed"], 20
    ),
    # the port falls back to PORT_QOS_MAP|global's map (stock AZURE: DSCP 26 -> TC 1)
    ("sonic", "PORT_QOS_MAP|<port> dscp_to_tc_map"): _sonic("PORT_QOS_MAP", "<port>", "dscp_to_tc_map", None),
    # class 3 leaves by queue 1 (an ECN-less, lossy queue) on every port bound to the map
    ("sonic", "TC_TO_QUEUE_MAP|FABCHECK <tc>"): _sonic("TC_TO_QUEUE_MAP", "FABCHECK", "3", "1"),
    ("sonic", "PORT_QOS_MAP|<port> tc_to_queue_map"): _sonic(
        "PORT_QOS_MAP", "<port>", "tc_to_queue_map", None
    ),
    ("sonic", "TC_TO_PRIORITY_GROUP_MAP|FABCHECK <tc>"): _sonic(
        "TC_TO_PRIORITY_GROUP_MAP", "FABCHECK", "3", "0"
    ),
    ("sonic", "PORT_QOS_MAP|<port> tc_to_pg_map"): _sonic("PORT_QOS_MAP", "<port>", "tc_to_pg_map", None),
    ("sonic", "MAP_PFC_PRIORITY_TO_QUEUE|FABCHECK <p>"): _sonic(
        "MAP_PFC_PRIORITY_TO_QUEUE", "FABCHECK", "3", "4"
    ),
    ("sonic", "PORT_QOS_MAP|<port> pfc_to_queue_map"): _sonic(
        "PORT_QOS_MAP", "<port>", "pfc_to_queue_map", None
    ),
    ("sonic", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|FABCHECK <p>"): _sonic(
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "FABCHECK", "3", "0"
    ),
    ("sonic", "PORT_QOS_MAP|<port> pfc_to_pg_map"): _sonic("PORT_QOS_MAP", "<port>", "pfc_to_pg_map", None),
    # the port bound to a PCP map instead: it trusts PCP (switch.dscp_map is a skip there)
    ("sonic", "PORT_QOS_MAP|<port> dot1p_to_tc_map"): _sonic_rebind(
        "dscp_to_tc_map", "dot1p_to_tc_map", "AZURE"
    ),
}
# A port's own class lines exist only where the port differs from the profile: those fields are
# drifted on the test switch's variant whose drifted port trusts PCP; a PCP map only where the
# switch trusts PCP (fabcheck.switch.owned: PORT_VARIANTS, REFERENCE_INTENTS).
VARIANTS: dict[tuple[str, str], str] = {("sonic", "DOT1P_TO_TC_MAP|FABCHECK <pcp>"): "pcp-trust"}
VARIANTS |= {
    key: "one port trusts PCP"
    for key in DRIFTS
    if key[0] == "eos"
    and key[1].startswith("interface <port>:")
    and key[1]
    not in (
        "interface <port>: mtu",
        "interface <port>: service-profile",
    )
}
# A PFC drift lets the mock's traffic model drop on the lossless queue: that consequence is measured.
# One that switches PFC off on a port also leaves the PFC watchdog nothing to watch there.
CONSEQUENCES = {PFC: {LOSSLESS_DROPS, WATCHDOG}}


def test_every_check_that_judges_a_setting_judges_fields_the_role_owns() -> None:
    """The reverse: on each platform, every switch check that judges configuration (not a counter)
    has owned fields behind it, so no check judges a setting nobody pushes, unless it names who sets
    it (no role, and the owner its hint gives)."""
    from fabcheck.checks.switch import SWITCH_CHECKS
    from fabcheck.collect.switch_probes import provided

    # judge drops measured during the run, and whether startup holds what runs: not settings
    not_settings = {LOSSLESS_DROPS, STARTUP_CONFIG}
    foreign = {check.id for check in SWITCH_CHECKS if check.role is None}
    assert all(check.judge and check.judge.owner for check in SWITCH_CHECKS if check.id in foreign)
    not_settings |= foreign
    for platform in PORTS:
        owned = {name for f in OWNED_FIELDS if f.platform == platform for name in (f.check, *f.also)}
        judging = {
            check.id
            for check in SWITCH_CHECKS
            if check.judge is not None
            and check.judge.needs in provided(platform)
            and check.id not in not_settings
        }
        assert judging - owned == set(), platform


def test_every_owned_field_has_a_drift_and_every_drift_a_field() -> None:
    assert set(DRIFTS) == {(owned.platform, owned.field) for owned in OWNED_FIELDS}


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_the_converged_mock_switch_passes_every_check(platform: str) -> None:
    assert not_passing(judged(platform, converged(platform))) == set()


def _expected_subjects(owned: OwnedField) -> list[set[str]]:
    name, ports = NAMES[owned.platform], PORTS[owned.platform]
    if owned.scope == "port":
        return [{f"{name}:{DRIFTED[owned.platform]}"}]
    return [{name}, {f"{name}:{port}" for port in ports}]


# A binding that moves from one map table to another: its repair removes one key and adds the other.
TOKENS = {"PORT_QOS_MAP|<port> dot1p_to_tc_map": "_to_tc_map"}


def _token(field: str) -> str:
    """The word of a field's name its platform's diff must show (`robustness`, `pfc_enable`, `mtu`)."""
    if field in TOKENS:
        return TOKENS[field]
    return [word for word in re.split(r"[ :|]+", field) if word and not word.startswith("<")][-1]


def _changed_lines(platform: str, diff: str) -> list[str]:
    if platform == "sonic":  # one patch operation per line (beside notes such as the ports it flaps)
        return [line for line in diff.splitlines() if line.startswith(("add ", "replace ", "remove "))]
    if platform == "eos":  # a unified diff of the session against running
        return [
            line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
    return []  # NVUE's `nv config diff` is a YAML tree: the token is checked in the whole of it


@pytest.mark.parametrize("owned", OWNED_FIELDS, ids=lambda owned: f"{owned.platform}:{owned.field}")
def test_one_drifted_field_shows_in_check_mode_diff_alone_and_check_mode_changes_nothing(
    owned: OwnedField,
) -> None:
    variant = VARIANTS.get((owned.platform, owned.field))
    device = converged(owned.platform, variant)
    assert check_diff(owned.platform, device, variant) == "", "the converged switch has nothing to push"
    DRIFTS[(owned.platform, owned.field)](device.running, DRIFTED[owned.platform])
    drifted = copy.deepcopy(device.running)
    diff = check_diff(owned.platform, device, variant)
    assert device.running == drifted, "check mode changed the switch"
    token = _token(owned.field)
    assert token in diff, diff
    if owned.scope == "port" and variant is None:
        assert DRIFTED[owned.platform] in diff, diff
    elif owned.scope == "port":  # deep in the port's own block, EOS's diff context may not reach its name
        ports = PORTS[owned.platform]
        running = session_of(device, owned.platform).handle("show running-config")
        rendered = render_switch(desired_of(owned.platform, variant)).text
        changed = eos.settings(rendered, ports) ^ eos.settings(eos.managed_text(running), ports)
        assert {field.port for field, _setting in changed} == {DRIFTED[owned.platform]}, changed
    assert all(token in line for line in _changed_lines(owned.platform, diff)), diff


@pytest.mark.parametrize("owned", OWNED_FIELDS, ids=lambda owned: f"{owned.platform}:{owned.field}")
def test_one_drifted_field_fails_exactly_its_check_where_it_is(owned: OwnedField) -> None:
    variant = VARIANTS.get((owned.platform, owned.field))
    device = converged(owned.platform, variant)
    DRIFTS[(owned.platform, owned.field)](device.running, DRIFTED[owned.platform])
    # Saved, as a drift that survives a reboot is: an unsaved one also fails switch.startup_config
    # (tests/invariant/test_operator_commands.py).
    device.startup = copy.deepcopy(device.running)
    failing = not_passing(judged(owned.platform, device, variant))
    if owned.check is None:
        assert failing == set(), f"{owned.field} is declared unjudged ({owned.why}) but the gate judged it"
        return
    allowed = {owned.check, *owned.also} | CONSEQUENCES.get(owned.check, set())
    assert {check for check, _subject, _status in failing} - allowed == set(), failing
    assert set(owned.also) <= {check for check, _subject, _status in failing}, failing
    own = {subject for check, subject, status in failing if check == owned.check and status == "fail"}
    assert own in _expected_subjects(owned), failing
    assert all(status == "fail" for _check, _subject, status in failing), failing


def test_the_docs_list_every_owned_field_with_its_check_and_test() -> None:
    """docs/checks/switch.md's table; `scripts/gen_docs` regenerates it."""
    from pathlib import Path

    tests = {
        (owned.platform, owned.field): "`tests/invariant/test_switch_fields.py`" for owned in OWNED_FIELDS
    }
    readme = (Path(__file__).resolve().parents[2] / "docs" / "checks" / "switch.md").read_text()
    start = "<!-- owned-fields (generated: fabcheck.checks.switch.owned_fields_markdown) -->\n"
    assert start in readme, "docs/checks/switch.md lacks the owned-field table"
    table = readme.split(start, 1)[1].split("\n<!-- /owned-fields -->", 1)[0]
    assert table == owned_fields_markdown(tests)
