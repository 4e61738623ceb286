"""SONiC's class -> queue / priority group and PFC priority maps: the values the push writes (the
rendered CONFIG_DB fragment) are the desired record's, so switch.queue_map and switch.pfc judge exactly
what the push owns, on the default intent and on a non-default one (other lossless and CNP priorities,
PCP trust)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "checks")]

from switchfabric import desired  # noqa: E402

from fabcheck.switch.render import render_switch  # noqa: E402

INTENTS = {
    "default": None,
    "lossless 4, cnp 5, pcp": {"lossless": {"priority": 4}, "cnp": {"priority": 5}, "trust": "pcp"},
}


def _as_ints(entries: dict[str, str]) -> dict[int, int]:
    return {int(key): int(value) for key, value in entries.items()}


@pytest.mark.parametrize("overrides", INTENTS.values(), ids=list(INTENTS))
def test_the_rendered_maps_are_the_desired_ones(overrides: dict[str, Any] | None) -> None:
    switch = desired("leaf02", overrides)
    fragment = json.loads(render_switch(switch).text)
    assert _as_ints(fragment["TC_TO_QUEUE_MAP"]["FABCHECK"]) == switch.traffic_class_to_queue
    assert (
        _as_ints(fragment["TC_TO_PRIORITY_GROUP_MAP"]["FABCHECK"]) == switch.traffic_class_to_priority_group
    )
    assert _as_ints(fragment["MAP_PFC_PRIORITY_TO_QUEUE"]["FABCHECK"]) == switch.pfc_priority_to_queue
    assert (
        _as_ints(fragment["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]["FABCHECK"])
        == switch.pfc_priority_to_priority_group
    )
    if switch.trust != "dscp":
        assert _as_ints(fragment["DOT1P_TO_TC_MAP"]["FABCHECK"]) == switch.pcp_to_traffic_class
    for port in switch.ports:
        binds = fragment["PORT_QOS_MAP"][port.port]
        assert {
            binds[f] for f in ("tc_to_queue_map", "tc_to_pg_map", "pfc_to_queue_map", "pfc_to_pg_map")
        } == {"FABCHECK"}
