"""Pushes scoped to concerns, per platform, against the lab's mock switches over real SSH.

Each platform's switch runs the converged config with two drifts at once (the lab faults
switch-pfc-prio and switch-ecn-off): a push scoped to pfc repairs the PFC drift and leaves the ECN
drift exactly as it runs; a push of every concern then repairs the ECN drift alone. The pure tests
below check that every rendered operation has a concern and that a scoped SONiC patch never
rewrites the fields of another concern.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from mockswitches import PORTS, MockSwitches, mock_switches
from test_eos_templates import NON_DEFAULT, eos_desired
from test_nvue_render import nvue_desired
from test_sonic_render import sonic_desired

from fabcheck.desired.switch import DesiredSwitch
from fabcheck.switch import sonic_patch
from fabcheck.switch.concerns import CONCERNS, ConcernError, chosen_concerns, concerns_from_tags
from fabcheck.switch.connect import connect
from fabcheck.switch.driver import SwitchDriver, push
from fabcheck.switch.platforms import eos, nvue, sonic
from fabcheck.switch.render import render_switch
from fabcheck_lab.mockswitch import inject_switch_fault

SWITCHES = {"nvue": "nv-scoped", "sonic": "sonic-scoped", "eos": "eos-scoped"}
DRIFT_PROFILE = "drift-pfc"  # the NVUE fault's own PFC profile: not fabcheck's, left in place


@dataclass(frozen=True)
class Platform:
    desired: Callable[[dict[str, Any] | None], DesiredSwitch]
    driver: Callable[[Any], SwitchDriver]
    pfc: Callable[[dict[str, Any]], Any]  # the PFC part of the mock's running config
    ecn: Callable[[dict[str, Any]], Any]  # and its ECN part


def _nvue_pfc(running: dict[str, Any]) -> Any:
    profiles = {k: v for k, v in running["qos"]["pfc"].items() if k != DRIFT_PROFILE}
    ports = {port: qos.get("qos", {}).get("pfc") for port, qos in running["interface"].items()}
    return profiles, ports


def _sonic_pfc(running: dict[str, Any]) -> Any:
    return {port: entry.get("pfc_enable") for port, entry in running["PORT_QOS_MAP"].items()}


def _sonic_ecn(running: dict[str, Any]) -> Any:
    queues = {key: entry.get("wred_profile") for key, entry in running["QUEUE"].items()}
    return queues, running.get("WRED_PROFILE")


def _eos_blocks(running: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return {
        (kind, name): {key: block.get(key) for key in keys}
        for kind in ("qos_profiles", "interfaces")
        for name, block in running[kind].items()
    }


def _eos_ecn(running: dict[str, Any]) -> Any:
    return {
        (kind, name, queue): settings.get("ecn")
        for kind in ("qos_profiles", "interfaces")
        for name, block in running[kind].items()
        for queue, settings in block.get("tx_queues", {}).items()
    }


PLATFORMS = {
    "nvue": Platform(
        lambda intent: nvue_desired(intent, SWITCHES["nvue"], PORTS["nvue"][:3], PORTS["nvue"][3:]),
        nvue.NvueDriver,
        _nvue_pfc,
        lambda running: running["qos"]["congestion-control"],
    ),
    "sonic": Platform(
        lambda intent: sonic_desired(intent, SWITCHES["sonic"], PORTS["sonic"][:3], PORTS["sonic"][3:]),
        sonic.SonicDriver,
        _sonic_pfc,
        _sonic_ecn,
    ),
    "eos": Platform(
        lambda intent: eos_desired(intent, SWITCHES["eos"]),
        lambda connection: eos.EosDriver(connection, switch=SWITCHES["eos"]),
        lambda running: _eos_blocks(running, ("pfc", "pfc_priorities")),
        _eos_ecn,
    ),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    names = {name: platform for platform, name in SWITCHES.items()}
    with mock_switches(tmp_path_factory.mktemp("concerns"), names, 200) as switches:
        yield switches


@contextlib.contextmanager
def driver_of(lab: MockSwitches, platform: str) -> Iterator[SwitchDriver]:
    connection = connect(lab.login(SWITCHES[platform]))
    try:
        yield PLATFORMS[platform].driver(connection)
    finally:
        with contextlib.suppress(Exception):
            connection.disconnect()


@pytest.mark.parametrize("platform", sorted(SWITCHES))
def test_a_pfc_push_repairs_pfc_and_leaves_the_ecn_drift(lab: MockSwitches, platform: str) -> None:
    name, parts = SWITCHES[platform], PLATFORMS[platform]
    config = render_switch(parts.desired(None))
    with driver_of(lab, platform) as driver:
        assert push(driver, config, check=False).changed
    healthy = lab.state(name)["running"]
    inject_switch_fault(lab.run_dir, name, "switch-pfc-prio")
    inject_switch_fault(lab.run_dir, name, "switch-ecn-off")
    drifted = lab.state(name)["running"]
    assert parts.pfc(drifted) != parts.pfc(healthy) and parts.ecn(drifted) != parts.ecn(healthy)

    with driver_of(lab, platform) as driver:
        checked = push(driver, config, check=True, concerns=["pfc"])
        assert checked.changed and lab.state(name)["running"] == drifted  # check mode: nothing changed
        pfc_only = push(driver, config, check=False, concerns=["pfc"])
        assert pfc_only.changed and changes(pfc_only.diff) == changes(checked.diff)
        after_pfc = lab.state(name)["running"]
        assert parts.pfc(after_pfc) == parts.pfc(healthy), pfc_only.diff
        assert parts.ecn(after_pfc) == parts.ecn(drifted), pfc_only.diff  # the ECN drift is still there
        # Nothing of PFC left to do; the ECN drift is what an ECN push would change.
        assert not push(driver, config, check=True, concerns=["pfc"]).changed
        ecn_check = push(driver, config, check=True, concerns=["ecn"])
        assert ecn_check.changed

        whole = push(driver, config, check=False)
        assert whole.changed and changes(whole.diff) == changes(ecn_check.diff)  # only the ECN drift was left
        repaired = lab.state(name)["running"]
        assert parts.ecn(repaired) == parts.ecn(healthy) and parts.pfc(repaired) == parts.pfc(healthy)
        assert not push(driver, config, check=False).changed
    state = lab.state(name)
    assert state["startup"] == state["running"]  # every commit was saved


# What an MTU-only diff may name, in each platform's own diff terms.
MTU_ONLY = {
    "nvue": lambda diff: all(path[-2:] == ("link", "mtu") for path in _yaml_paths(diff)),
    "sonic": lambda diff: all(
        re.fullmatch(r'replace /PORT/Ethernet\d+/mtu: "\d+" -> "\d+"', ln) for ln in changes(diff)
    ),
    "eos": lambda diff: all(re.fullmatch(r"[+-]\s+mtu \d+", ln) for ln in changes(diff) if ln[:1] in "+-"),
}


def _yaml_paths(diff: str) -> list[tuple[str, ...]]:
    def walk(node: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                yield from walk(value, (*path, str(key)))
        else:
            yield path

    return [path[1:] for document in yaml.safe_load(diff) for path in walk(document, ())]


@pytest.mark.parametrize("platform", sorted(SWITCHES))
def test_a_scoped_diff_names_only_objects_of_its_concern(lab: MockSwitches, platform: str) -> None:
    """A non-default intent over the default one touches every concern; an MTU push only the MTU."""
    parts = PLATFORMS[platform]
    with driver_of(lab, platform) as driver:
        push(driver, render_switch(parts.desired(None)), check=False)
        other = render_switch(parts.desired(NON_DEFAULT))
        mtu = push(driver, other, check=True, concerns=["mtu"])
        whole = push(driver, other, check=True)
    assert mtu.changed and MTU_ONLY[platform](mtu.diff), mtu.diff
    assert not MTU_ONLY[platform](whole.diff), whole.diff


def changes(diff: str) -> list[str]:
    """The diff without its file header lines (EOS names the session there)."""
    return [line for line in diff.splitlines() if line.strip() and not line.startswith(("---", "+++"))]


@pytest.mark.parametrize("platform", sorted(SWITCHES))
def test_an_unknown_concern_is_a_clear_error(lab: MockSwitches, platform: str) -> None:
    parts = PLATFORMS[platform]
    before = lab.state(SWITCHES[platform])["running"]
    with driver_of(lab, platform) as driver, pytest.raises(ConcernError) as err:
        push(driver, render_switch(parts.desired(None)), check=False, concerns=["pfc", "qos"])
    assert str(err.value) == f"unknown concern(s) qos; known: {', '.join(CONCERNS)}"
    assert lab.state(SWITCHES[platform])["running"] == before


# -- pure: the tags, and every rendered operation has a concern ----------------------------------------


@pytest.mark.parametrize(
    ("tags", "concerns"),
    [
        (["all"], list(CONCERNS)),
        (["switch"], list(CONCERNS)),
        (["pfc"], ["pfc"]),
        (["ecn", "pfc"], ["pfc", "ecn"]),
        (["pfc", "switch"], list(CONCERNS)),
        (["roce_host"], list(CONCERNS)),  # no concern named: the play's tasks would not even run
    ],
)
def test_tags_choose_concerns(tags: list[str], concerns: list[str]) -> None:
    assert concerns_from_tags(tags) == concerns


def test_no_concern_is_an_error() -> None:
    with pytest.raises(ConcernError, match="no concern chosen"):
        chosen_concerns([" "])


@pytest.mark.parametrize("intent", [None, NON_DEFAULT], ids=["default", "non-default"])
def test_every_rendered_nvue_line_has_a_concern(intent: dict[str, Any] | None) -> None:
    lines = render_switch(PLATFORMS["nvue"].desired(intent)).lines
    by_concern = {concern: nvue.scoped_lines(lines, frozenset({concern})) for concern in CONCERNS}
    assert sum(len(found) for found in by_concern.values()) == len(lines)
    assert all(" link mtu " in line for line in by_concern["mtu"]) and by_concern["mtu"]
    assert all(line.startswith("nv set qos congestion-control ") for line in by_concern["ecn"])


def test_an_nvue_line_of_no_concern_is_refused() -> None:
    with pytest.raises(nvue.NvueCommandError, match="writes no object of a known concern"):
        nvue.scoped_lines(["nv set system hostname leaf01"], frozenset({"pfc"}))


@pytest.mark.parametrize("intent", [None, NON_DEFAULT], ids=["default", "non-default"])
def test_eos_lines_are_scoped_inside_their_blocks(intent: dict[str, Any] | None) -> None:
    text = render_switch(PLATFORMS["eos"].desired(intent)).text
    whole = eos.session_lines(text, "")
    scoped = {concern: eos.session_lines(text, "", frozenset({concern})) for concern in CONCERNS}
    # service-profile binds every class setting of the profile to a port: it goes only with all of them
    binding = {line for line in whole if line.startswith("service-profile ")}
    assert binding and not binding & set().union(*scoped.values())
    assert set().union(*scoped.values()) | binding == set(whole)
    assert scoped["buffers"] == []  # EOS holds no buffer settings of ours
    ecn = scoped["ecn"]
    assert ecn[0] == "qos profile FABCHECK-ROCE" and any(line.startswith("random-detect ecn") for line in ecn)
    assert all(line.startswith(("random-detect ecn", "uc-tx-queue", "qos profile")) for line in ecn)


def test_an_eos_stale_queue_of_mixed_concerns_loses_only_the_chosen_lines() -> None:
    running = "\n".join(
        [
            "qos profile FABCHECK-ROCE",
            "   uc-tx-queue 7",
            "      bandwidth percent 10",
            "      random-detect ecn minimum-threshold 1 bytes maximum-threshold 2 bytes"
            " max-mark-probability 3",
        ]
    )
    rendered = "qos profile FABCHECK-ROCE\n   qos trust dscp\n"
    assert eos.session_lines(rendered, running, frozenset({"ecn"})) == [
        "qos profile FABCHECK-ROCE",
        "uc-tx-queue 7",
        "no random-detect ecn",
    ]
    assert eos.session_lines(rendered, running) == [
        "qos profile FABCHECK-ROCE",
        "no uc-tx-queue 7",
        "qos trust dscp",
    ]


def test_eos_startup_lag_is_judged_per_concern() -> None:
    rendered = "interface Ethernet1\n   mtu 9214\n   priority-flow-control on\n"
    running = (
        "interface Ethernet1\n   mtu 9214\n   priority-flow-control on\ninterface Ethernet9\n   mtu 1500\n"
    )
    startup = "interface Ethernet1\n   mtu 1500\n   priority-flow-control on\n"
    assert eos.startup_differences(rendered, running, startup, frozenset({"pfc"})) == []
    lag = eos.startup_differences(rendered, running, startup, frozenset({"mtu"}))
    assert "-   mtu 1500" in lag and "+   mtu 9214" in lag
    assert not any("Ethernet9" in line for line in lag)  # a block the push does not render is not ours


@pytest.mark.parametrize("intent", [None, NON_DEFAULT], ids=["default", "non-default"])
def test_every_rendered_sonic_field_has_one_concern(intent: dict[str, Any] | None) -> None:
    config = render_switch(PLATFORMS["sonic"].desired(intent))
    for table, entries in sonic_patch.parse_fragment(config).items():
        for key, fields in entries.items():
            for field in fields:
                assert len(sonic_patch.OWNED_TABLES[table].field_concerns(field)) == 1, (table, key, field)


def test_a_scoped_sonic_patch_adds_only_chosen_fields_of_a_new_entry() -> None:
    fragment = {
        "PORT_QOS_MAP": {
            "Ethernet0": {"dscp_to_tc_map": "FABCHECK", "pfc_enable": "3", "pfcwd_sw_enable": "3"}
        },
        "PORT": {"Ethernet0": {"mtu": "9100"}},
    }
    running = {"PORT": {"Ethernet0": {"mtu": "9100", "speed": "400000"}}}
    whole = sonic_patch.compute_patch(running, fragment)
    assert whole == [{"op": "add", "path": "/PORT_QOS_MAP", "value": fragment["PORT_QOS_MAP"]}]
    assert sonic_patch.scope_patch(whole, running, frozenset({"pfc"})) == [
        {"op": "add", "path": "/PORT_QOS_MAP", "value": {"Ethernet0": {"pfc_enable": "3"}}}
    ]
    assert sonic_patch.scope_patch(whole, running, frozenset({"mtu"})) == []
    running["PORT_QOS_MAP"] = {"Ethernet4": {"pfc_enable": "3"}}
    entry = sonic_patch.compute_patch(running, fragment)
    assert sonic_patch.scope_patch(entry, running, frozenset({"watchdog"})) == [
        {"op": "add", "path": "/PORT_QOS_MAP/Ethernet0", "value": {"pfcwd_sw_enable": "3"}}
    ]


def test_a_scoped_sonic_patch_removes_only_chosen_fields_of_a_stale_entry() -> None:
    running = {
        "PORT": {"Ethernet0": {"mtu": "9100"}},
        "QUEUE": {
            "Ethernet0|3": {"scheduler": "FABCHECK_TC3"},
            "Ethernet0|5": {"scheduler": "FABCHECK_TC5", "wred_profile": "FABCHECK_ECN_TC5"},
        },
    }
    fragment = {
        "PORT": {"Ethernet0": {"mtu": "9100"}},
        "QUEUE": {"Ethernet0|3": {"scheduler": "FABCHECK_TC3"}},
    }
    whole = sonic_patch.compute_patch(running, fragment)
    assert whole == [{"op": "remove", "path": "/QUEUE/Ethernet0|5"}]
    assert sonic_patch.scope_patch(whole, running, frozenset({"ecn"})) == [
        {"op": "remove", "path": "/QUEUE/Ethernet0|5/wred_profile"}
    ]
    assert sonic_patch.scope_patch(whole, running, frozenset({"ecn", "scheduler"})) == whole
    assert sonic_patch.scope_patch(whole, running, frozenset({"pfc"})) == []


def test_nvue_startup_differences_are_per_concern() -> None:
    running = {"qos": {"pfc": {"default-global": {"switch-priority": {"3": {}}}}}, "interface": {}}
    startup = {"qos": {"pfc": {"default-global": {"switch-priority": {"4": {}}}}}, "interface": {}}
    assert nvue.startup_differences(startup, running, frozenset({"ecn"})) == []
    assert nvue.startup_differences(startup, running, frozenset({"pfc"})) == [
        "qos pfc default-global switch-priority 3:  -> {}",
        "qos pfc default-global switch-priority 4: {} -> ",
    ]
