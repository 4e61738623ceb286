"""NVUE behaviours issue 33 found the mock and the driver assumed away, replayed from cited sources:

- auto-save is a setting (`system config auto-save`, CL 5.4+; NVUE command reference, NVIDIA's NVUE
  OpenAPI), on by default from CL 5.9 only: the driver reads it from the applied config and saves
  where it is off, whatever the release; the mock applies and saves (or not) by the same setting;
- the DWRR shares of an egress-scheduler profile add up to at most 100 (NVIDIA's QoS guide): the mock's
  `nv config apply` refuses more (NVUE's wording of that refusal is not public: unverified), and
  fabcheck's render stays within it on the mock's factory default-global.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mockswitches import MockSwitches, mock_switches
from test_nvue_real import PORTS, ScriptedChannel, transcript
from test_nvue_render import nvue_desired

from fabcheck.switch.connect import connect
from fabcheck.switch.driver import push
from fabcheck.switch.platforms.nvue import SHOW_CONFIG, NvueDriver, auto_save_setting, needs_save
from fabcheck.switch.render import RenderedConfig, render_switch

SWITCHES = {"ns-off-511": "5.11.0", "ns-on-58": "5.8.0", "ns-dwrr": "5.11.0"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    with mock_switches(
        tmp_path_factory.mktemp("nvue-save"), dict.fromkeys(SWITCHES, "nvue"), 250, releases=SWITCHES
    ) as switches:
        yield switches


def config(name: str) -> RenderedConfig:
    return render_switch(nvue_desired(None, name=name, host_ports=PORTS[:3], uplinks=PORTS[3:]))


def applied_config(version: str, system: dict[str, object]) -> str:
    """`nv config show -o json` as the driver reads it: [header, set] (the set tree holding `system`)."""
    header = {"model": "SN5600", "nvue-api-version": "nvue_v1", "rev-id": "1.0.0", "version": version}
    return json.dumps([{"header": header}, {"set": {"system": system}}])


def auto_save_of(key: str, value: str) -> dict[str, object]:
    return {"config": {"auto-save": {key: value}}}


# -- the driver ---------------------------------------------------------------------------------------


def test_auto_save_off_on_a_5_9_or_later_switch_is_read_and_the_apply_saved_explicitly() -> None:
    (_apply, applied), (save, saved) = transcript("nv-config-apply-no-auto-save.txt")
    channel = ScriptedChannel(
        {
            SHOW_CONFIG: applied_config("Cumulus Linux 5.11.0", auto_save_of("state", "disabled")),
            "nv config apply -y": applied,
            save: saved,
        }
    )
    driver = NvueDriver(channel)
    driver.config_tree()
    assert driver.auto_save is False and driver.needs_save()  # before any apply: the setting says it
    driver.commit()
    assert not driver.saved_by_apply and driver.needs_save()
    driver.save()
    assert channel.sent[-1] == "nv config save"


@pytest.mark.parametrize(
    ("version", "system", "saves"),
    [
        ("Cumulus Linux 5.16.0", auto_save_of("state", "disabled"), False),  # 5.10+: state
        ("Cumulus Linux 5.9.1", auto_save_of("enable", "off"), False),  # 5.4-5.9: enable
        ("Cumulus Linux 5.8.0", auto_save_of("enable", "on"), True),  # on before its default
        ("Cumulus Linux 5.16.0", {}, True),  # not set: the release's default, on from 5.9
        ("Cumulus Linux 5.8.0", {}, False),  # not set: off before 5.9
    ],
)
def test_the_setting_wins_over_the_release_default(
    version: str, system: dict[str, object], saves: bool
) -> None:
    driver = NvueDriver(ScriptedChannel({SHOW_CONFIG: applied_config(version, system)}))
    assert driver.needs_save() is not saves
    assert needs_save(version, {"system": system}) is not saves


def test_an_auto_save_value_neither_form_has_is_refused() -> None:
    from fabcheck.switch.platforms.nvue import NvueCommandError

    with pytest.raises(NvueCommandError, match="auto-save state 'yes'"):
        auto_save_setting({"system": auto_save_of("state", "yes")})


# -- the mock, with both settings, and the push over it ---------------------------------------------


def _typed(lab: MockSwitches, name: str, *lines: str) -> list[str]:
    conn = connect(lab.login(name))
    try:
        driver = NvueDriver(conn)
        return [driver._exchange(line).strip() for line in lines]
    finally:
        conn.disconnect()


def _pushed(lab: MockSwitches, name: str) -> list[str]:
    conn = connect(lab.login(name))
    try:
        result = push(NvueDriver(conn), config(name), check=False)
    finally:
        conn.disconnect()
    state = lab.state(name)
    assert result.changed and state["startup"] == state["running"]
    return [entry["text"] for entry in state["log"] if entry["event"] == "command"]


def test_a_5_11_switch_with_auto_save_disabled_applies_without_saving_and_the_push_saves(
    lab: MockSwitches,
) -> None:
    name = "ns-off-511"
    answers = _typed(lab, name, "nv set system config auto-save state disabled", "nv config apply -y")
    assert answers[1].startswith("applied [rev_id: ")  # not applied_and_saved: the setting, not 5.11
    assert _typed(lab, name, "nv set system config auto-save enable off")[0].startswith("Error:")  # 5.9 form
    commands = _pushed(lab, name)
    assert commands.count("nv config save") == 1


def test_a_5_8_switch_with_auto_save_on_saves_with_the_apply(lab: MockSwitches) -> None:
    name = "ns-on-58"
    answers = _typed(lab, name, "nv set system config auto-save enable on", "nv config apply -y")
    assert answers[1].startswith("applied_and_saved [rev_id: ")
    assert "nv config save" not in _pushed(lab, name)


def test_dwrr_shares_over_100_are_refused_at_apply_and_fabchecks_push_fits(lab: MockSwitches) -> None:
    name = "ns-dwrr"
    sched = "nv set qos egress-scheduler"
    # the 163 %: RoCE and default 50 % each over the factory 12-13 % of the other classes
    over = _typed(
        lab,
        name,
        f"{sched} default-global traffic-class 0,3 bw-percent 50",
        f"{sched} default-global traffic-class 6 mode strict",
        "nv config apply -y",
    )
    assert over[2].startswith("Error: Invalid config") and "adds up to 163, above 100" in over[2]
    assert lab.state(name)["running"] == {}
    _typed(lab, name, "nv config detach")
    # NVIDIA's port-group example: a profile weights only some classes, the rest run best effort
    fine = _typed(
        lab,
        name,
        f"{sched} list2 traffic-class 2,5,6 mode dwrr",
        f"{sched} list2 traffic-class 2,5 bw-percent 50",
        f"{sched} list2 traffic-class 6 mode strict",
        "nv config apply -y",
    )
    assert fine[-1].startswith("applied")
    profile = _typed(lab, name, f"{sched} list3 traffic-class 1,2 bw-percent 60", "nv config apply -y")
    assert "qos egress-scheduler list3" in profile[1] and "adds up to 120" in profile[1]
    _typed(lab, name, "nv config detach")
    _pushed(lab, name)
    scheduler = lab.state(name)["running"]["qos"]["egress-scheduler"]["default-global"]["traffic-class"]
    assert (
        sum(entry.get("bw-percent", 0) for entry in scheduler.values() if entry.get("mode") == "dwrr") <= 100
    )
    assert len(scheduler) == 8  # every class of default-global written, none left at its factory share


def test_the_watchdog_takes_the_set_commands_words_not_the_show_tables(lab: MockSwitches) -> None:
    # NVUE reference and NVIDIA's OpenAPI: `state enable|disable`; `enabled` is what the show prints
    name = "ns-dwrr"
    answers = _typed(
        lab,
        name,
        "nv set interface swp1 qos pfc-watchdog state enabled",
        "nv set interface swp1 qos pfc-watchdog state enable",
        "nv config detach",
    )
    assert answers[0].startswith("Error: Invalid value 'enabled'") and not answers[1].startswith("Error")
    rendered = [line for line in config(name).lines if "pfc-watchdog state" in line]
    assert rendered and all(line.endswith(" state enable") for line in rendered)
