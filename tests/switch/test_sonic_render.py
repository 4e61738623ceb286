"""The SONiC template spells the desired switch record as a CONFIG_DB fragment; the patch is exact.

Golden files: tests/switch/golden/sonic-*.json; regenerate with FABCHECK_REGOLDEN=1 (then review the diff).
No switch is needed here: the patch is checked against the mock's own CONFIG_DB validation.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from fabcheck.desired import desired_switch
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent
from fabcheck.switch.platforms.sonic import HEREDOC_END, patch_lines
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck.switch.sonic_patch import (
    OWNED_TABLES,
    SonicError,
    compute_patch,
    describe_patch,
    managed_state,
    parse_fragment,
    pointer,
)
from fabcheck_lab.mockswitch.sonic_db import apply_patch, factory_config_db

GOLDEN = Path(__file__).parent / "golden"
REGOLDEN = os.environ.get("FABCHECK_REGOLDEN") == "1"
MOCK_PORTS = ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")
NON_DEFAULT_INTENT: dict[str, Any] = {
    "lossless": {"dscp": [24], "priority": 4},
    "cnp": {"dscp": 46, "priority": 5},
    "roce_tos": 98,
    "congestion_control": "pfc_only",
    "ecn": {"min_bytes": 200000, "max_bytes": 2000000, "probability": 50},
    "mtu": {"switch": 9100},
}


def sonic_desired(
    intent: dict[str, Any] | None = None,
    name: str = "leaf01",
    host_ports: tuple[str, ...] = ("Ethernet0", "Ethernet4", "Ethernet8"),
    uplinks: tuple[str, ...] = ("Ethernet12",),
) -> DesiredSwitch:
    """One SONiC switch: host ports (the first cabled to gpu01:mlx5_0) and uplinks."""
    switch = InventoryNode(
        name,
        ("switches_sonic",),
        {
            "switch_address": "192.0.2.1",
            "switch_username": "admin",
            "switch_password": "{{ lookup('ansible.builtin.env', 'P') }}",
            "switch_ports": list(host_ports),
            "switch_uplinks": list(uplinks),
        },
        {},
    )
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"{name}:{host_ports[0]}"}}, {0: "mlx5_0"}
    )
    fabric = read_fabric([switch, gpu], lambda _value: "")
    return desired_switch(FabricIntent.model_validate(intent or {}), fabric, name)


def rendered(intent: dict[str, Any] | None = None) -> RenderedConfig:
    return render_switch(sonic_desired(intent))


def fragment(intent: dict[str, Any] | None = None) -> dict[str, Any]:
    return parse_fragment(rendered(intent))


def leaves(text: str) -> dict[tuple[str, ...], tuple[set[int], str]]:
    """Every field of the canonical layout: (table, key, field) -> (its and its parents' lines, value)."""
    out: dict[tuple[str, ...], tuple[set[int], str]] = {}
    path: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().rstrip(",")
        if stripped.endswith("{") and stripped != "{":
            path.append((json.loads(stripped[:-1].rstrip().rstrip(":")), number))
        elif stripped == "}" and path:
            path.pop()
        elif ":" in stripped:
            key, value = json.loads("{" + stripped + "}").popitem()
            out[(*(name for name, _ in path), key)] = ({number, *(n for _, n in path)}, value)
    return out


def changes(before: str, after: str) -> dict[tuple[str, ...], tuple[str | None, str | None]]:
    """Fields whose value differs (None: absent); each sits on (or under) a line the text diff touches."""
    old, new = leaves(before), leaves(after)

    def value(side: dict[tuple[str, ...], tuple[set[int], str]], path: tuple[str, ...]) -> str | None:
        return side[path][1] if path in side else None

    changed = {
        path: (value(old, path), value(new, path))
        for path in old.keys() | new.keys()
        if value(old, path) != value(new, path)
    }
    touched_old, touched_new = set(), set()
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            touched_old |= set(range(i1 + 1, i2 + 1))
            touched_new |= set(range(j1 + 1, j2 + 1))
    for path, (was, now) in changed.items():
        if was is not None:
            assert old[path][0] & touched_old, f"{path}: its lines {sorted(old[path][0])} are not in the diff"
        if now is not None:
            assert new[path][0] & touched_new, f"{path}: its lines {sorted(new[path][0])} are not in the diff"
    return changed


# -- templates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("golden", "intent"), [("sonic-default.json", None), ("sonic-non-default.json", NON_DEFAULT_INTENT)]
)
def test_golden(golden: str, intent: dict[str, Any] | None) -> None:
    text = rendered(intent).text
    path = GOLDEN / golden
    if REGOLDEN:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} missing: run with FABCHECK_REGOLDEN=1 once and review it"
    assert text == path.read_text()


@pytest.mark.parametrize(
    "intent",
    [
        None,
        NON_DEFAULT_INTENT,
        {"trust": "pcp"},
        {"lossless": {"pfc": False}, "congestion_control": "ecn_only"},
        {"congestion_control": "pfc_only", "ecn": {"enabled": False}},
        {"lossless": {"dscp": [24, 26, 30]}},
    ],
)
def test_output_is_canonical_config_db_json(intent: dict[str, Any] | None) -> None:
    text = rendered(intent).text
    data = json.loads(text)
    assert text == json.dumps(data, indent=4) + "\n"  # one CONFIG_DB field per line, stable layout
    assert set(data) <= set(OWNED_TABLES)
    assert all(isinstance(v, str) for entries in data.values() for f in entries.values() for v in f.values())


def test_default_fragment_is_the_roce_recipe_in_config_db_terms() -> None:
    db = fragment()
    assert db["DSCP_TO_TC_MAP"] == {"FABCHECK": {"26": "3", "48": "6"}}  # AZURE puts 26 on TC1
    assert db["PORT_QOS_MAP"]["Ethernet0"] == {
        "dscp_to_tc_map": "FABCHECK",
        "tc_to_queue_map": "FABCHECK",
        "tc_to_pg_map": "FABCHECK",
        "pfc_to_queue_map": "FABCHECK",
        "pfc_to_pg_map": "FABCHECK",
        "pfc_enable": "3",
        "pfcwd_sw_enable": "3",
    }
    assert db["QUEUE"]["Ethernet12|3"] == {"scheduler": "FABCHECK_TC3", "wred_profile": "FABCHECK_ECN_TC3"}
    assert db["SCHEDULER"] == {
        "FABCHECK_TC0": {"type": "DWRR", "weight": "50"},
        "FABCHECK_TC3": {"type": "DWRR", "weight": "50"},
        "FABCHECK_TC6": {"type": "STRICT"},
    }
    wred = db["WRED_PROFILE"]["FABCHECK_ECN_TC3"]
    assert (wred["ecn"], wred["green_min_threshold"], wred["red_max_threshold"]) == (
        "ecn_all",
        "150000",
        "1500000",
    )
    assert db["BUFFER_PG"] == {f"{p}|3": {"profile": "NULL"} for p in MOCK_PORTS}
    assert db["PFC_WD"]["Ethernet4"] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}
    assert db["PORT"] == {p: {"mtu": "9216"} for p in MOCK_PORTS}


# (intent change, {(table, key, field): (old, new)}); nothing else may change.
ONE_VALUE_CHANGES: list[tuple[dict[str, Any], dict[tuple[str, ...], tuple[str | None, str | None]]]] = [
    (
        {"lossless": {"dscp": [24]}, "roce_tos": 98},
        {
            ("DSCP_TO_TC_MAP", "FABCHECK", "26"): ("3", None),
            ("DSCP_TO_TC_MAP", "FABCHECK", "24"): (None, "3"),
        },
    ),
    (
        {"cnp": {"dscp": 46}},
        {
            ("DSCP_TO_TC_MAP", "FABCHECK", "48"): ("6", None),
            ("DSCP_TO_TC_MAP", "FABCHECK", "46"): (None, "6"),
        },
    ),
    (
        {"ecn": {"min_bytes": 200000}},
        {
            ("WRED_PROFILE", "FABCHECK_ECN_TC3", f"{c}_min_threshold"): ("150000", "200000")
            for c in ("green", "yellow", "red")
        },
    ),
    (
        {"ecn": {"max_bytes": 2000000}},
        {
            ("WRED_PROFILE", "FABCHECK_ECN_TC3", f"{c}_max_threshold"): ("1500000", "2000000")
            for c in ("green", "yellow", "red")
        },
    ),
    (
        {"ecn": {"probability": 50}},
        {
            ("WRED_PROFILE", "FABCHECK_ECN_TC3", f"{c}_drop_probability"): ("100", "50")
            for c in ("green", "yellow", "red")
        },
    ),
    ({"mtu": {"switch": 9100}}, {("PORT", p, "mtu"): ("9216", "9100") for p in MOCK_PORTS}),
]


@pytest.mark.parametrize(("change", "expected"), ONE_VALUE_CHANGES)
def test_one_intent_value_changes_exactly_its_lines(
    change: dict[str, Any], expected: dict[tuple[str, ...], tuple[str | None, str | None]]
) -> None:
    assert changes(rendered().text, rendered(change).text) == expected


def test_trust_pcp_binds_a_dot1p_map_instead_of_the_dscp_map() -> None:
    changed = changes(rendered().text, rendered({"trust": "pcp"}).text)
    sp_to_tc = {str(p): str(t) for p, t in enumerate((0, 0, 0, 3, 0, 0, 6, 0))}
    expected: dict[tuple[str, ...], tuple[str | None, str | None]] = {
        ("DSCP_TO_TC_MAP", "FABCHECK", "26"): ("3", None),
        ("DSCP_TO_TC_MAP", "FABCHECK", "48"): ("6", None),
    }
    expected |= {("DOT1P_TO_TC_MAP", "FABCHECK", p): (None, t) for p, t in sp_to_tc.items()}
    for port in MOCK_PORTS:
        expected[("PORT_QOS_MAP", port, "dscp_to_tc_map")] = ("FABCHECK", None)
        expected[("PORT_QOS_MAP", port, "dot1p_to_tc_map")] = (None, "FABCHECK")
    assert changed == expected


def test_lossless_priority_moves_every_hop_of_the_chain() -> None:
    changed = changes(rendered().text, rendered({"lossless": {"priority": 4}}).text)
    assert changed[("DSCP_TO_TC_MAP", "FABCHECK", "26")] == ("3", "4")
    assert changed[("TC_TO_PRIORITY_GROUP_MAP", "FABCHECK", "4")] == ("0", "4")
    assert changed[("MAP_PFC_PRIORITY_TO_QUEUE", "FABCHECK", "3")] == ("3", "0")
    assert changed[("MAP_PFC_PRIORITY_TO_QUEUE", "FABCHECK", "4")] == ("0", "4")
    for port in MOCK_PORTS:
        assert changed[("PORT_QOS_MAP", port, "pfc_enable")] == ("3", "4")
        assert changed[("PORT_QOS_MAP", port, "pfcwd_sw_enable")] == ("3", "4")
        assert changed[("QUEUE", f"{port}|3", "wred_profile")] == ("FABCHECK_ECN_TC3", None)
        assert changed[("QUEUE", f"{port}|4", "wred_profile")] == (None, "FABCHECK_ECN_TC4")
        assert changed[("BUFFER_PG", f"{port}|3", "profile")] == ("NULL", None)
        assert changed[("BUFFER_PG", f"{port}|4", "profile")] == (None, "NULL")
    assert changed[("SCHEDULER", "FABCHECK_TC4", "weight")] == (None, "50")
    assert ("PFC_WD", "Ethernet0", "action") not in changed  # the watchdog follows PFC, still on


def test_cnp_priority_moves_the_strict_queue() -> None:
    changed = changes(rendered().text, rendered({"cnp": {"priority": 5}}).text)
    assert changed[("DSCP_TO_TC_MAP", "FABCHECK", "48")] == ("6", "5")
    assert changed[("SCHEDULER", "FABCHECK_TC6", "type")] == ("STRICT", None)
    assert changed[("SCHEDULER", "FABCHECK_TC5", "type")] == (None, "STRICT")
    assert changed[("QUEUE", "Ethernet0|5", "scheduler")] == (None, "FABCHECK_TC5")
    assert not any(path[0] in ("WRED_PROFILE", "PFC_WD", "PORT", "BUFFER_PG") for path in changed)


def test_no_pfc_drops_pfc_watchdog_and_lossless_buffers() -> None:
    db = fragment({"lossless": {"pfc": False}, "congestion_control": "ecn_only"})
    assert "BUFFER_PG" not in db and "PFC_WD" not in db
    assert all(
        "pfc_enable" not in entry and "pfcwd_sw_enable" not in entry for entry in db["PORT_QOS_MAP"].values()
    )
    assert db["QUEUE"]["Ethernet0|3"]["wred_profile"] == "FABCHECK_ECN_TC3"  # ECN-only RoCE still marks


def test_ecn_off_drops_the_wred_profile() -> None:
    db = fragment({"congestion_control": "pfc_only", "ecn": {"enabled": False}})
    assert "WRED_PROFILE" not in db
    assert all("wred_profile" not in entry for entry in db["QUEUE"].values())
    assert db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3"


# -- the patch ---------------------------------------------------------------------------------------


def factory() -> dict[str, Any]:
    return factory_config_db("leaf01", MOCK_PORTS)


def test_patch_from_factory_converges_owned_keys_and_leaves_the_rest() -> None:
    running = factory()
    want = fragment()
    patch = compute_patch(running, want)
    after = apply_patch(running, patch, MOCK_PORTS)  # the mock's YANG-like checks accept it
    assert compute_patch(after, want) == []
    for table, entries in want.items():
        for key, fields in entries.items():
            if table in ("PORT", "PFC_WD"):
                assert fields.items() <= after[table][key].items()
            elif table == "BUFFER_QUEUE":  # held by the stock range around it (3-4)
                port, _, queue = key.partition("|")
                assert profile_per_queue(after, port)[int(queue)] == fields["profile"]
            else:
                assert after[table][key] == fields
    # Not ours: the stock AZURE objects, the global map, the lossy PG, other PORT fields, DEVICE_METADATA.
    assert after["DSCP_TO_TC_MAP"]["AZURE"] == running["DSCP_TO_TC_MAP"]["AZURE"]
    assert after["PORT_QOS_MAP"]["global"] == running["PORT_QOS_MAP"]["global"]
    assert after["BUFFER_PG"]["Ethernet0|0"] == {"profile": "ingress_lossy_profile"}
    assert after["PORT"]["Ethernet0"]["lanes"] == running["PORT"]["Ethernet0"]["lanes"]
    assert after["PFC_WD"]["Ethernet0"]["pfc_stat_history"] == "disable"
    assert after["DEVICE_METADATA"] == running["DEVICE_METADATA"]
    # The stock lossless range 3-4 is replaced by exactly the lossless PG; queue 4 loses its AZURE WRED.
    assert "Ethernet0|3-4" not in after["BUFFER_PG"] and after["BUFFER_PG"]["Ethernet0|3"] == {
        "profile": "NULL"
    }
    assert "Ethernet0|4" not in after["QUEUE"]


def test_ports_outside_the_inventory_are_untouched() -> None:
    running = factory()
    want = parse_fragment(render_switch(sonic_desired(host_ports=("Ethernet0",), uplinks=())))
    after = apply_patch(running, compute_patch(running, want), MOCK_PORTS)
    for table in ("PORT_QOS_MAP", "PFC_WD", "PORT"):
        assert after[table]["Ethernet8"] == running[table]["Ethernet8"]
    assert {k: v for k, v in after["QUEUE"].items() if k.startswith("Ethernet8|")} == {
        k: v for k, v in running["QUEUE"].items() if k.startswith("Ethernet8|")
    }
    assert after["BUFFER_PG"]["Ethernet8|3-4"] == {"profile": "NULL"}


def test_a_non_default_intent_over_the_default_removes_what_no_longer_applies() -> None:
    running = apply_patch(factory(), compute_patch(factory(), fragment()), MOCK_PORTS)
    patch = compute_patch(running, fragment(NON_DEFAULT_INTENT))
    after = apply_patch(running, patch, MOCK_PORTS)
    assert after["DSCP_TO_TC_MAP"]["FABCHECK"] == {"24": "4", "46": "5"}
    assert {"FABCHECK_TC3", "FABCHECK_TC6"}.isdisjoint(after["SCHEDULER"])
    assert "FABCHECK_ECN_TC3" not in after["WRED_PROFILE"] and "FABCHECK_ECN_TC4" in after["WRED_PROFILE"]
    assert after["WRED_PROFILE"]["FABCHECK_ECN_TC4"]["green_drop_probability"] == "50"
    assert after["PORT_QOS_MAP"]["Ethernet4"]["pfc_enable"] == "4"
    assert (
        after["BUFFER_PG"]["Ethernet4|4"] == {"profile": "NULL"} and "Ethernet4|3" not in after["BUFFER_PG"]
    )
    assert after["PORT"]["Ethernet4"]["mtu"] == "9100"
    assert compute_patch(after, fragment(NON_DEFAULT_INTENT)) == []


def test_stale_fabcheck_objects_go_and_foreign_ones_stay() -> None:
    running = factory()
    running["SCHEDULER"]["FABCHECK_TC7"] = {"type": "DWRR", "weight": "10"}
    running["SCHEDULER"]["operator_sched"] = {"type": "DWRR", "weight": "10"}
    patch = compute_patch(running, fragment())
    assert {"op": "remove", "path": "/SCHEDULER/FABCHECK_TC7"} in patch
    assert not any(op["path"].startswith("/SCHEDULER/operator_sched") for op in patch)


def test_missing_and_emptied_tables_are_added_and_removed_whole() -> None:
    running = factory()
    del running["QUEUE"]
    patch = compute_patch(running, fragment())
    assert {"op": "add", "path": "/QUEUE", "value": fragment()["QUEUE"]} in patch
    running = apply_patch(factory(), compute_patch(factory(), fragment()), MOCK_PORTS)
    patch = compute_patch(running, fragment({"congestion_control": "pfc_only", "ecn": {"enabled": False}}))
    assert {"op": "remove", "path": "/WRED_PROFILE/FABCHECK_ECN_TC3"} in patch  # AZURE_LOSSLESS remains
    only_ours = copy.deepcopy(running)
    del only_ours["WRED_PROFILE"]["AZURE_LOSSLESS"]
    patch = compute_patch(only_ours, fragment({"congestion_control": "pfc_only", "ecn": {"enabled": False}}))
    assert {"op": "remove", "path": "/WRED_PROFILE"} in patch  # CONFIG_DB holds no empty table
    apply_patch(only_ours, patch, MOCK_PORTS)


def test_a_port_the_switch_lacks_is_named() -> None:
    want = parse_fragment(render_switch(sonic_desired(host_ports=("Ethernet0", "Ethernet96"), uplinks=())))
    with pytest.raises(
        SonicError, match=r"no port Ethernet96 \(its ports: Ethernet0, Ethernet4, Ethernet8, Ethernet12\)"
    ):
        compute_patch(factory(), want)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  "PORT": {\n    "Ethernet0": {"mtu": 9216,}\n  }\n}', r"line 3: not JSON"),
        ('{"VLAN": {"Vlan10": {"vlanid": "10"}}}', r"table 'VLAN' is not one fabcheck owns"),
        ('{"PORT": {"Ethernet0": {"mtu": 9216}}}', r"PORT\|Ethernet0: field 'mtu' must be a string"),
        ('{"PORT": {}}', r"table PORT must be a non-empty object"),
        ("[]", r"a JSON object of CONFIG_DB tables"),
    ],
)
def test_a_bad_fragment_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(SonicError, match=message):
        parse_fragment(RenderedConfig("leaf01", "sonic", text))


def test_diff_text_names_each_operation_with_its_old_value() -> None:
    running = apply_patch(factory(), compute_patch(factory(), fragment()), MOCK_PORTS)
    running["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "4"
    del running["QUEUE"]["Ethernet4|3"]["wred_profile"]
    running["SCHEDULER"]["FABCHECK_TC7"] = {"type": "STRICT"}
    patch = compute_patch(running, fragment())
    assert describe_patch(patch, running).splitlines() == [
        'remove /SCHEDULER/FABCHECK_TC7: {"type": "STRICT"}',
        'replace /PORT_QOS_MAP/Ethernet0/pfc_enable: "4" -> "3"',
        'add /QUEUE/Ethernet4|3/wred_profile: "FABCHECK_ECN_TC3"',
    ]


def test_patch_lines_are_short_json_and_never_the_heredoc_end() -> None:
    running = factory()
    del running["QUEUE"]  # one op carrying the whole table: longer than a line may be
    patch = compute_patch(running, fragment())
    lines = patch_lines(patch)
    assert json.loads("\n".join(lines)) == patch
    assert max(len(line) for line in lines) <= 512 and HEREDOC_END not in lines
    assert all(line[0] in "[] " for line in lines)


def test_pointer_escapes_slash_and_tilde() -> None:
    assert pointer("QUEUE", "Ethernet0|3", "a/b~c") == "/QUEUE/Ethernet0|3/a~1b~0c"


def test_managed_state_is_the_owned_tables_and_port_mtus() -> None:
    state = managed_state(factory())
    assert set(state) == {t for t in OWNED_TABLES if t in factory()} | {"PORT"}
    assert state["PORT"]["Ethernet0"] == {"mtu": "9100"} and "DEVICE_METADATA" not in state


# -- BUFFER_QUEUE: the lossless queues of the ports with PFC, nothing else -----------------------------


def queue_profiles(db: dict[str, Any], port: str) -> dict[str, str]:
    return {
        k.partition("|")[2]: v["profile"] for k, v in db["BUFFER_QUEUE"].items() if k.startswith(port + "|")
    }


def profile_per_queue(db: dict[str, Any], port: str) -> dict[int, str]:
    """Queue -> the profile its binding holds, whatever range keys it."""
    out: dict[int, str] = {}
    for span, profile in queue_profiles(db, port).items():
        first, _, last = span.partition("-")
        out |= dict.fromkeys(range(int(first), int(last or first) + 1), profile)
    return out


# The cited factory layout (sonic-utilities acs-msn4700-t1-version_3_0_3.json, dynamic buffer model).
STOCK_QUEUES = {"0-2": "q_lossy_profile", "3-4": "egress_lossless_profile", "5-6": "q_lossy_profile"}


@pytest.mark.parametrize("priority", [3, 4])
def test_a_lossless_class_inside_the_stock_3_4_binds_only_its_queue_and_changes_nothing(
    priority: int,
) -> None:
    want = fragment({"lossless": {"priority": priority}})
    for port in MOCK_PORTS:
        assert queue_profiles(want, port) == {str(priority): "egress_lossless_profile"}
        assert queue_profiles(factory(), port) == STOCK_QUEUES
    patch = compute_patch(factory(), want)
    assert not [op for op in patch if op["path"].startswith("/BUFFER_QUEUE")]  # stock 3-4 holds it


def test_a_non_default_lossless_queue_is_split_out_of_its_range_and_the_rest_keeps_its_profile() -> None:
    want = fragment({"lossless": {"priority": 5}})
    for port in MOCK_PORTS:
        assert queue_profiles(want, port) == {"5": "egress_lossless_profile"}
        assert want["BUFFER_PG"][f"{port}|5"] == {"profile": "NULL"}
    running = factory()
    patch = compute_patch(running, want)
    after = apply_patch(running, patch, MOCK_PORTS)
    assert compute_patch(after, want) == []
    for port in MOCK_PORTS:
        assert queue_profiles(after, port) == {
            "0-2": "q_lossy_profile",
            "3-4": "egress_lossless_profile",  # the switch's own binding, untouched
            "5": "egress_lossless_profile",
            "6": "q_lossy_profile",  # read from the switch's 5-6, never assumed
        }
    assert [op for op in patch if op["path"].startswith("/BUFFER_QUEUE/Ethernet0")] == [
        {"op": "remove", "path": pointer("BUFFER_QUEUE", "Ethernet0|5-6")},
        {
            "op": "add",
            "path": pointer("BUFFER_QUEUE", "Ethernet0|5"),
            "value": {"profile": "egress_lossless_profile"},
        },
        {
            "op": "add",
            "path": pointer("BUFFER_QUEUE", "Ethernet0|6"),
            "value": {"profile": "q_lossy_profile"},
        },
    ]


def test_a_lossless_queue_inside_a_range_splits_it_in_runs_keeping_every_field() -> None:
    running = factory()
    running["BUFFER_QUEUE"]["Ethernet0|0-2"] = {"profile": "q_lossy_profile"}
    want = fragment({"lossless": {"priority": 1}})
    after = apply_patch(running, compute_patch(running, want), MOCK_PORTS)
    assert queue_profiles(after, "Ethernet0") == {
        "0": "q_lossy_profile",
        "1": "egress_lossless_profile",
        "2": "q_lossy_profile",
        "3-4": "egress_lossless_profile",
        "5-6": "q_lossy_profile",
    }


def test_lossless_priority_7_binds_queue_7_beyond_the_stock_0_6() -> None:
    want = fragment({"lossless": {"priority": 7}})
    assert queue_profiles(want, "Ethernet0") == {"7": "egress_lossless_profile"}
    after = apply_patch(factory(), compute_patch(factory(), want), MOCK_PORTS)
    assert queue_profiles(after, "Ethernet0") == STOCK_QUEUES | {"7": "egress_lossless_profile"}


def test_without_pfc_no_buffer_binding_is_rendered_or_touched() -> None:
    want = fragment({"lossless": {"pfc": False}})
    assert "BUFFER_QUEUE" not in want and "BUFFER_PG" not in want
    patch = compute_patch(factory(), want)
    assert not [op for op in patch if op["path"].startswith(("/BUFFER_QUEUE", "/BUFFER_PG"))]
