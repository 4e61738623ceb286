"""EOS counter parsers: `show interfaces counters queue detail | json` (unicast egress queue drops) and
`show priority-flow-control counters watchdog | json` (stuck tx queues), in the JSON layouts EOS prints
(keys as ANTA's VerifyInterfacesEgressQueueDrops reads them; watchdog ports listed after a first event)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_eos import parse_queue_drops, parse_watchdog_counters
from fabcheck.parsers.switch_records import QueueDrops, WatchdogStatus


def queue_detail(interfaces: dict[str, Any]) -> str:
    return json.dumps({"egressQueueCounters": {"interfaces": interfaces}})


def classes(counts: dict[str, dict[str, int]], kind: str = "ucastQueues") -> dict[str, Any]:
    """{"TC3": {"DP0": 5}} -> one interface's queue detail."""
    return {
        kind: {
            "trafficClasses": {
                tc: {"dropPrecedences": {dp: {"droppedPackets": n} for dp, n in dps.items()}}
                for tc, dps in counts.items()
            }
        }
    }


@pytest.mark.parametrize(
    ("interface", "by_queue"),
    [
        (classes({"TC0": {"DP0": 0}, "TC3": {"DP0": 5}}), ((0, 0), (3, 5))),
        (classes({"TC3": {"DP0": 5, "DP1": 2}}), ((3, 7),)),  # drop precedences of a class add up
        (classes({"TC2-4": {"DP0-2": 9}}), ((2, 9), (3, 9), (4, 9))),  # a range counts for each class
        (classes({"TC3": {"DP0": 1}}) | classes({"TC3": {"DP0": 50}}, "mcastQueues"), ((3, 1),)),
    ],
)
def test_queue_drops_per_unicast_class(interface: dict[str, Any], by_queue: tuple) -> None:
    text = queue_detail({"Ethernet1/1": interface})
    assert parse_queue_drops(text, None, "<t>") == [("Ethernet1/1", QueueDrops(by_queue=by_queue))]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "show interfaces counters queue detail"),
        (json.dumps({"interfaces": {}}), "no 'egressQueueCounters' key"),
        (queue_detail({"Ethernet1": classes({"TC3": {"DP0": 1}}, "mcastQueues")}), "no 'ucastQueues' key"),
        (queue_detail({"Ethernet1": classes({"Q3": {"DP0": 1}})}), "key 'Q3' is not TC<n>"),
        (queue_detail({"Ethernet1": classes({"TC4-2": {"DP0": 1}})}), "backwards range"),
        (queue_detail({"Ethernet1": classes({"TC3": {"X0": 1}})}), "key 'X0' is not DP<n>"),
        (queue_detail({"Ethernet1": classes({"TC3": {"DP0": -1}})}), "outside"),
        (
            queue_detail({"Et1": {"ucastQueues": {"trafficClasses": {"TC3": {"dropPrecedences": []}}}}}),
            "object",
        ),
    ],
)
def test_damaged_queue_detail_is_a_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_queue_drops(text, None, "<t>")


def watchdog(queues: dict[str, Any]) -> str:
    return json.dumps({"interfaces": {"Ethernet1": {"txQueues": queues}}})


def test_watchdog_without_events_lists_no_port_and_means_no_storm() -> None:
    assert parse_watchdog_counters(json.dumps({"interfaces": {}}), None, "<t>") == [
        (None, WatchdogStatus(()))
    ]


def test_watchdog_queue_stuck_more_often_than_recovered_is_stormed() -> None:
    text = watchdog({"3": {"stuckCount": 2, "recoveryCount": 1}, "4": {"stuckCount": 5, "recoveryCount": 5}})
    assert parse_watchdog_counters(text, None, "<t>") == [
        (None, WatchdogStatus(())),
        ("Ethernet1", WatchdogStatus((3,))),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps({"txQueues": {}}), "no 'interfaces' key"),
        (json.dumps({"interfaces": {"Ethernet1": {}}}), "no 'txQueues' key"),
        (watchdog({"9": {"stuckCount": 1, "recoveryCount": 0}}), "outside 0..7"),
        (watchdog({"3": {"recoveryCount": 0}}), "no 'stuckCount' key"),
        (watchdog({"3": {"stuckCount": "x", "recoveryCount": 0}}), "stuckCount"),
    ],
)
def test_damaged_watchdog_counters_are_a_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_watchdog_counters(text, None, "<t>")
