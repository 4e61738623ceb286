"""The owned-field invariant from what the push writes (issue 33, item 6).

Every setting a push can write (the render of the default and the other reference intents and per-port
variants on each platform, fabcheck.switch.owned, plus what the drivers take back on their own) has a
key, and every key one declaration in fabcheck.checks.switch.FIELD_CHECKS naming the gate check that
judges it. A written key without a judging check is a failure unless KNOWN_GAPS lists it with who is
adding the check; a declaration no push writes is a failure too. The check's concern tag is the
concern the driver files the setting under, so the hint's `--tags` pushes exactly what failed.
"""

from __future__ import annotations

from typing import Any

import pytest

from fabcheck.checks.switch import FIELD_CHECKS, OWNED_FIELDS, SWITCH_CHECKS
from fabcheck.parsers.eos_config import ConfigNode
from fabcheck.switch import sonic_patch
from fabcheck.switch.owned import Setting, normalise, reference_fields, reference_switches, settings_of
from fabcheck.switch.platforms import eos, nvue, sonic
from fabcheck.switch.render import render_switch
from tests.invariant.harness import (
    check_diff,
    converged,
    desired_of,
    judged,
    not_passing,
    repush,
    session_of,
)

PLATFORMS = ("nvue", "sonic", "eos")
# Written keys no gate check judges yet, each with who is adding its check (shrinks as they land).
KNOWN_GAPS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_written_field_has_a_judging_check(platform: str) -> None:
    declared = {entry.field: entry for entry in FIELD_CHECKS if entry.platform == platform}
    unjudged = {
        field
        for field in reference_fields(platform)
        if (entry := declared.get(field)) is None or entry.check is None
    }
    gaps = {field for (where, field) in KNOWN_GAPS if where == platform}
    assert unjudged - gaps == set(), "written, but no check judges it"
    assert gaps - unjudged == set(), "KNOWN_GAPS lists a field that is judged now (or no longer written)"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_declaration_is_a_field_a_push_writes(platform: str) -> None:
    declared = [entry.field for entry in FIELD_CHECKS if entry.platform == platform]
    assert len(declared) == len(set(declared)), "one declaration per field"
    assert set(declared) - reference_fields(platform) == set(), "declared, but no push writes it"


def test_owned_fields_are_the_derived_fields_with_their_declared_checks() -> None:
    derived = {(platform, field) for platform in PLATFORMS for field in reference_fields(platform)}
    assert {(owned.platform, owned.field) for owned in OWNED_FIELDS} == derived
    declared = {(entry.platform, entry.field): entry for entry in FIELD_CHECKS}
    for owned in OWNED_FIELDS:
        entry = declared[(owned.platform, owned.field)]
        assert (owned.check, owned.also) == (entry.check, entry.also)
        assert owned.scope == ("port" if "<port>" in owned.field else "switch")


def _concerns(platform: str, setting: str) -> frozenset[str]:
    """The concerns the platform's driver files one rendered setting under (its scoped push)."""
    if platform == "nvue":
        return frozenset({nvue.line_concern(setting)})
    if platform == "sonic":
        where, _, _value = setting.partition(" = ")
        table, _, field = where.partition(" ")
        return sonic_patch.OWNED_TABLES[table.split("|")[0]].field_concerns(field)
    line = setting.rpartition(": ")[2] if ": " in setting else setting
    return eos.concerns_of(ConfigNode(line))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_judging_checks_tag_is_the_concern_the_driver_pushes_it_under(platform: str) -> None:
    """`--tags <the check's tag>` (the failure's hint) pushes the field: the check's tag is a concern
    the driver files the setting under, and every such concern is the tag of a check that fails with it."""
    tags = {check.id: check.tag for check in SWITCH_CHECKS}
    declared = {entry.field: entry for entry in FIELD_CHECKS if entry.platform == platform}
    wrong = set()
    for switch in reference_switches(platform).values():
        ports = [port.port for port in switch.ports]
        for field, setting in settings_of(platform)(render_switch(switch).text, ports):
            entry = declared.get(field.field)
            if entry is None or entry.check is None:
                continue
            judged_under = {tags[name] for name in (entry.check, *entry.also)}
            concerns = _concerns(platform, setting)
            if tags[entry.check] not in concerns or not concerns <= judged_under:
                wrong.add(
                    (field.field, tuple(sorted(judged_under)), tuple(sorted(_concerns(platform, setting))))
                )
    assert wrong == set()


VARIANTS = [(platform, name) for platform in PLATFORMS for name in reference_switches(platform)]


@pytest.mark.parametrize(("platform", "variant"), VARIANTS, ids=[f"{p}:{v}" for p, v in VARIANTS])
def test_every_reference_render_converges_a_mock_and_passes_the_gate(platform: str, variant: str) -> None:
    """What the owned-field table is derived from is pushable: each reference render goes onto the
    platform's factory mock through its driver, leaves nothing to push, and passes every check."""
    wanted = None if variant == "default" else variant
    device = converged(platform, wanted)
    assert check_diff(platform, device, wanted) == ""
    assert not_passing(judged(platform, device, wanted)) == set()


# -- the gate's managed views count only what a push writes ------------------------------------------

UNMANAGED = {"nvue": "swp5", "sonic": "Ethernet16", "eos": "Ethernet5"}
MODULES = {"nvue": nvue, "sonic": sonic, "eos": eos}
NOTHING_SAVED = {"nvue": '[{"set": {}}]', "sonic": "{}", "eos": ""}


def _clutter(platform: str, running: dict[str, Any]) -> None:
    """What an operator keeps beside fabcheck's config: an unmanaged port's MTU and QoS, and a
    profile or map of their own that no managed port uses."""
    port = UNMANAGED[platform]
    if platform == "nvue":
        running["interface"].setdefault(port, {}).setdefault("link", {})["mtu"] = 1500
        running["qos"]["mapping"]["operator"] = {"trust": "l2"}
        running["qos"].setdefault("pfc", {})["operator"] = {"switch-priority": {"5": {}}}
    elif platform == "sonic":
        running["PORT"][port]["mtu"] = "1500"
        running["PORT_QOS_MAP"][port]["pfc_enable"] = "5"
        running["DSCP_TO_TC_MAP"]["OPERATOR"] = {"8": "1"}
    else:
        running["interfaces"].setdefault(port, {})["mtu"] = 1500
        running["interfaces"][port]["trust"] = "cos"
        running["qos_profiles"]["OPERATOR"] = {"trust": "cos"}


def _counted(platform: str, lines: list[str], ports: tuple[str, ...]) -> set[str]:
    """The keys of what a startup_lag_lines report names (each platform's own line format)."""
    if platform == "eos":
        added = "\n".join(line[1:] for line in lines if line.startswith("+") and not line.startswith("+++"))
        return {field.field for field, _setting in eos.settings(added, ports)}
    heads = [line.split(": ", 1)[0] for line in lines]
    if platform == "nvue":
        return {field.field for head in heads for field in normalise(head.split(), nvue.KEYED, ports)}
    found = set()
    for head in heads:
        where, field = head.rsplit(" ", 1)
        table, key = where.split("|", 1)
        found |= {key for key, _setting in sonic.db_settings({table: {key: {field: "x"}}}, ports)}
    return {field.field for field in found}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_startup_view_counts_only_fields_a_push_writes(platform: str) -> None:
    """switch.startup_config fails on what its managed view counts; a setting no push writes
    (an operator's unmanaged port, their own profile) would fail it forever, since no push saves it.
    The view of a converged switch that also holds such settings, against a startup that holds
    nothing, names every field it counts: each must be a key a push writes."""
    device = converged(platform, None, (UNMANAGED[platform],))
    _clutter(platform, device.running)
    module = MODULES[platform]
    running = session_of(device, platform).handle(module.STARTUP_LAG_PROBES[0])
    rendered = render_switch(desired_of(platform)).text
    lines = module.startup_lag_lines(running, NOTHING_SAVED[platform], rendered)
    assert lines, "the view counts nothing: the test would prove nothing"
    ports = tuple(port.port for port in desired_of(platform).ports)
    assert _counted(platform, lines, ports) - reference_fields(platform) == set()


# -- what a push changes is what the table derives ---------------------------------------------------

# Keys a push changes that the table does not hold, each with who decides (shrinks as they land).
KNOWN_SIDE_WRITES: dict[tuple[str, str], str] = {
    ("sonic", "PFC_WD|<port> pfc_stat_history"): (
        "sonic-push (issue 33): stopping the watchdog on a port removes its whole PFC_WD entry, the "
        "operator's pfc_stat_history with it, though OWNED_TABLES calls that field not fabcheck's"
    ),
}
MOVES = [
    (platform, start, end)
    for platform in PLATFORMS
    for name in reference_switches(platform)
    if name != "default"
    for start, end in ((name, "default"), ("default", name))
]


def _running_settings(platform: str, device: Any, ports: tuple[str, ...]) -> set[Setting]:
    running = session_of(device, platform).handle(MODULES[platform].STARTUP_LAG_PROBES[0])
    return settings_of(platform)(running, ports)


@pytest.mark.parametrize(("platform", "start", "end"), MOVES, ids=[f"{p}:{s}->{e}" for p, s, e in MOVES])
def test_what_a_push_changes_is_a_field_of_the_table(platform: str, start: str, end: str) -> None:
    """The drivers write beyond the render (NVUE unsets stale entries and foreign port profiles, EOS
    negates what an older push left, SONiC removes stale entries): a push of one reference state over
    a switch converged to another, beside an operator's own settings, changes only settings whose
    keys the owned-field table has, on managed ports, and leaves the operator's alone."""
    variant = {name: (None if name == "default" else name) for name in (start, end)}
    device = converged(platform, variant[start], (UNMANAGED[platform],))
    _clutter(platform, device.running)
    ports = tuple(port.port for port in desired_of(platform).ports)
    before = _running_settings(platform, device, ports)
    repush(platform, device, variant[end])
    changed = before ^ _running_settings(platform, device, ports)
    assert changed, "the two states render alike: the move proves nothing"
    side = {field for (where, field) in KNOWN_SIDE_WRITES if where == platform}
    assert {field.field for field, _setting in changed} - reference_fields(platform) - side == set(), changed


def test_the_known_side_write_still_happens() -> None:
    """KNOWN_SIDE_WRITES holds only what a push still does (remove the entry when it is fixed)."""
    device = converged("sonic")
    ports = tuple(port.port for port in desired_of("sonic").ports)
    before = _running_settings("sonic", device, ports)
    repush("sonic", device, "watchdog off on one port")
    changed = {field.field for field, _setting in before ^ _running_settings("sonic", device, ports)}
    assert {field for (_platform, field) in KNOWN_SIDE_WRITES} <= changed
