"""The NVUE reader against NVIDIA's public samples (tests/data/real/nvue/INDEX.tsv): the factory values
the applied-tree reader assumes are those of NVIDIA's CL 5.5.0 API dump, the RoCE counters are read at
the nested path of the CL 5.16 sample, the watchdog's words are read as the set command, the QoS guide
and the show table spell them, and the mock prints the real tables' shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_nvue import (
    attribute_tree,
    parse_applied_config,
    parse_port_watchdog,
    parse_roce_counters,
)
from fabcheck.parsers.switch_records import (
    DscpMap,
    EcnQueues,
    PfcPriorities,
    QueueDrops,
    Trust,
    WatchdogConfig,
    WatchdogStatus,
)
from fabcheck_lab.mockswitch.nvue_model import port_qos
from tests.invariant.harness import converged, session_of

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "nvue"
COUNTERS = (REAL / "nv-show-interface-swp16-qos-roce-counters.txt").read_text()
WATCHDOG = (REAL / "nv-show-interface-swp1-qos-pfc-watchdog.txt").read_text()


def applied(qos: dict[str, Any] | None = None, interfaces: dict[str, Any] | None = None) -> str:
    tree: dict[str, Any] = {}
    if qos is not None:
        tree["qos"] = qos
    if interfaces is not None:
        tree["interface"] = interfaces
    return json.dumps([{"header": {"version": "Cumulus Linux 5.16.0"}}, {"set": tree}])


def found(text: str) -> dict[tuple[type, str | None], object]:
    return {(type(record), port): record for port, record in parse_applied_config(text)}


def test_the_factory_values_are_nvidias_api_dump() -> None:
    """An applied tree that sets nothing reads as NVIDIA's factory switch with every default spelled
    out (its qos object, CL 5.5.0): the reader's defaults are the dump's, record for record."""
    dump = json.loads((REAL / "nvue-api-cl55-factory-qos.json").read_text())
    assert found(applied(dump["qos"])) == found(applied())
    factory = found(applied())
    assert factory[(Trust, None)] == Trust("pcp")
    assert factory[(PfcPriorities, None)] == PfcPriorities(())
    ecn = factory[(EcnQueues, None)]
    assert isinstance(ecn, EcnQueues) and [q.traffic_class for q in ecn.queues if q.enabled] == [0]


def test_the_roce_discards_are_read_at_the_nested_path_of_nvidias_sample() -> None:
    # tx-stats -> tx-roce-stats -> unicast-no-buffer-discard; the CNP copy beside it reads 0
    assert parse_roce_counters(COUNTERS, "swp16") == [("swp16", QueueDrops(roce_class=663060754115))]
    flat = COUNTERS.replace("  tx-roce-stats\n", "  tx-other-stats\n")
    with pytest.raises(ParseError, match="tx-stats -> tx-roce-stats -> unicast-no-buffer-discard"):
        parse_roce_counters(flat, "swp16")


def _names(tree: dict[str, Any]) -> Any:
    return {key: _names(value) if isinstance(value, dict) else None for key, value in tree.items()}


def test_the_mock_prints_the_real_counters_table_and_the_gate_reads_it() -> None:
    session = session_of(converged("nvue"), "nvue")
    mock = session.handle("nv show interface swp1 qos roce counters")
    what = "counters"
    assert _names(attribute_tree(mock, "<mock>", what)) == _names(attribute_tree(COUNTERS, "<real>", what))
    assert parse_roce_counters(mock, "swp1") == [("swp1", QueueDrops(roce_class=0))]
    assert "rocev2" not in mock


def test_the_watchdog_view_reads_nvidias_sample_and_its_words() -> None:
    assert parse_port_watchdog(WATCHDOG, "swp1") == [("swp1", WatchdogStatus((2, 7)))]
    off = WATCHDOG.split("\n\n", 1)[0].replace("enabled      enabled", "disabled     disabled")
    assert parse_port_watchdog(off, "swp1") == [("swp1", WatchdogStatus(()))]
    with pytest.raises(ParseError, match="not enabled or disabled"):  # the set word is not the show's
        parse_port_watchdog(WATCHDOG.replace("enabled      enabled", "enable       enable "), "swp1")


@pytest.mark.parametrize(
    ("node", "on"),
    [
        (None, False),  # no node: off (command reference: default disable)
        ({}, True),  # `nv set interface P qos pfc-watchdog` turns it on (QoS guide)
        ({"state": "enable"}, True),  # the set command's word
        ({"state": "disable"}, False),
        ({"state": "enabled"}, True),  # CL 5.16's QoS guide types `state disabled`
        ({"state": "disabled"}, False),
    ],
)
def test_the_applied_watchdog_state_words(node: dict[str, str] | None, on: bool) -> None:
    port = {} if node is None else {"qos": {"pfc-watchdog": node}}
    assert found(applied({}, {"swp1": port}))[(WatchdogConfig, "swp1")] == WatchdogConfig(on)


def test_a_watchdog_state_word_nvue_does_not_have_is_refused() -> None:
    with pytest.raises(ParseError, match="not enable"):
        parse_applied_config(applied({}, {"swp1": {"qos": {"pfc-watchdog": {"state": "maybe"}}}}))


PFC = {"pfc": {"default-global": {"switch-priority": {"3": {}}, "tx": "disable"}}}


def test_pfc_with_tx_off_is_read_with_its_direction_and_the_mock_drops() -> None:
    records = found(applied(PFC, {"swp1": {"qos": {"pfc": {"profile": "default-global"}}}}))
    # rx and cable-length unset: NVIDIA's QoS guide defaults (enable, 10 m)
    assert records[(PfcPriorities, "swp1")] == PfcPriorities((3,), tx=False, rx=True, cable_length_m=10)
    config = {"qos": {**PFC, "traffic-pool": {"default-lossless": {"memory-percent": 50}}}}
    assert port_qos(config, ["swp1"])["swp1"].pfc_priorities == ()  # not lossless with tx off


def test_a_per_port_mapping_profile_is_the_ports_own_dscp_map() -> None:
    qos = {
        "mapping": {
            "default-global": {"trust": "l3", "dscp": {"26": {"switch-priority": 3}}},
            "p2": {"trust": "l3", "dscp": {"26": {"switch-priority": 0}}},
        }
    }
    records = found(applied(qos, {"swp1": {}, "swp2": {"qos": {"mapping": {"profile": "p2"}}}}))
    own = records[(DscpMap, "swp2")]
    assert isinstance(own, DscpMap) and own.mapping[26] == 0
    assert (DscpMap, "swp1") not in records  # default-global's map judges it
    default = records[(DscpMap, None)]
    assert isinstance(default, DscpMap) and default.mapping[26] == 3


def test_the_roce_preset_is_refused_not_guessed() -> None:
    with pytest.raises(ParseError, match="RoCE preset"):
        parse_applied_config(applied({"roce": {"enable": "on"}}))
    assert found(applied({"roce": {"enable": "off"}})) == found(applied())
