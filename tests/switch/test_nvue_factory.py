"""The NVUE mock starts from NVIDIA's factory state: its QoS tree (nvue_model.factory_qos_tree) is
diffed leaf by leaf with NVIDIA's published CL 5.5 NVUE API dump of a factory switch
(tests/data/real/nvue/nvue-api-cl55-factory-qos.json, INDEX.tsv), and every difference must be one
listed below with its reason; a listed difference that no longer occurs fails too."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from fabcheck_lab.mockswitch.nvue_model import auto_save, factory_qos_tree

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "nvue"
DUMP = json.loads((REAL / "nvue-api-cl55-factory-qos.json").read_text())

# path prefix -> why the mock differs from the CL 5.5 dump there
KNOWN_DIFFERENCES = {
    ("advance-buffer-config",): "advanced buffer profiles are not modelled (fabcheck writes none)",
    ("egress-shaper",): "an empty collection in the dump; shapers are not modelled (fabcheck writes none)",
    ("link-pause",): "an empty collection in the dump; link pause is not modelled",
    ("remark",): "remarking is not modelled (fabcheck writes none)",
    ("mapping", "default-global", "dscp"): (
        "the dump (trust l2) lists no DSCP map; the mock carries the QoS guide's default DSCP -> "
        "switch-priority table (Trust DSCP: DSCP 8n..8n+7 -> n), which trust l3 uses"
    ),
    ("pfc-watchdog",): (
        "CL 5.6 added the PFC watchdog (NVUE reference, OpenAPI 5.6); its defaults 100 ms and 3 polls "
        "are the QoS guide's (PFC Watchdog)"
    ),
    ("traffic-pool", "default-lossy", "switch-priority"): (
        "which pool holds which switch priority is not modelled (the pools' shares are)"
    ),
}


def leaves(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            yield from leaves(value, (*path, str(key)))
        else:
            yield (*path, str(key)), value


def differences(mock: Mapping[str, Any], real: Mapping[str, Any]) -> dict[tuple[str, ...], tuple[Any, Any]]:
    ours, theirs = dict(leaves(mock)), dict(leaves(real))
    missing = object()
    return {
        path: (ours.get(path, missing), theirs.get(path, missing))
        for path in sorted(ours.keys() | theirs.keys())
        if ours.get(path, missing) != theirs.get(path, missing)
    }


def listed(path: tuple[str, ...]) -> tuple[str, ...] | None:
    return next((prefix for prefix in KNOWN_DIFFERENCES if path[: len(prefix)] == prefix), None)


def test_the_mock_factory_qos_tree_is_nvidias_but_for_the_listed_differences() -> None:
    found = differences(factory_qos_tree(), DUMP["qos"])
    unlisted = {" ".join(path): values for path, values in found.items() if listed(path) is None}
    assert not unlisted, f"mock factory QoS differs from NVIDIA's CL 5.5 dump: {unlisted}"
    stale = set(KNOWN_DIFFERENCES) - {listed(path) for path in found}
    assert not stale, f"listed differences that no longer occur: {stale}"


def test_the_factory_scheduler_is_dwrr_12_13_percent_on_every_class() -> None:
    # the one fact issue 33 turned on: no `nv set` leaves default-global at 100 % in eight classes
    tree = factory_qos_tree()["egress-scheduler"]["default-global"]["traffic-class"]
    assert tree == DUMP["qos"]["egress-scheduler"]["default-global"]["traffic-class"]
    assert sum(entry["bw-percent"] for entry in tree.values()) == 100


def test_a_diff_in_a_modelled_leaf_is_caught() -> None:
    changed = json.loads(json.dumps(DUMP["qos"]))
    changed["egress-scheduler"]["default-global"]["traffic-class"]["3"]["bw-percent"] = 50
    found = [path for path in differences(factory_qos_tree(), changed) if listed(path) is None]
    assert found == [("egress-scheduler", "default-global", "traffic-class", "3", "bw-percent")]


def test_auto_save_follows_the_setting_and_else_the_release_default() -> None:
    # the CL 5.5 dump shows the setting off on a factory 5.5 switch
    assert DUMP["system"]["config"]["auto-save"] == {"enable": "off"}
    assert auto_save(DUMP, (5, 5)) is False
    assert auto_save({}, (5, 8)) is False and auto_save({}, (5, 9)) is True
    assert auto_save({"system": {"config": {"auto-save": {"enable": "off"}}}}, (5, 9)) is False
    assert auto_save({"system": {"config": {"auto-save": {"state": "disabled"}}}}, (5, 16)) is False
    assert auto_save({"system": {"config": {"auto-save": {"enable": "on"}}}}, (5, 5)) is True
