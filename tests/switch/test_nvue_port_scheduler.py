"""NVUE per-port egress scheduling, read from the applied configuration tree: a port bound to an
egress-scheduler profile of its own (`nv set interface P qos egress-scheduler profile NAME`) is judged by
that profile's classes, and only those (NVIDIA's QoS guide, Port Groups: the classes a profile does not
list are not scheduled); a port with none bound yields nothing of its own, so default-global's scheduler
judges it. The mock's roce status and traffic model read the same per-port view."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.switch_nvue import parse_applied_config
from fabcheck.parsers.switch_records import Schedulers
from fabcheck_lab.mockswitch.nvue_model import port_qos, port_view
from fabcheck_lab.mockswitch.nvue_show import show_port_roce_status

QOS: dict[str, Any] = {
    "egress-scheduler": {"mine": {"traffic-class": {"3": {"mode": "dwrr", "bw-percent": 10}}}},
}
INTERFACES = {"swp1": {}, "swp2": {"qos": {"egress-scheduler": {"profile": "mine"}}}}


def schedulers(qos: dict[str, Any], interfaces: dict[str, Any]) -> dict[str | None, Schedulers]:
    text = json.dumps([{"header": {}}, {"set": {"qos": qos, "interface": interfaces}}])
    return {port: r for port, r in parse_applied_config(text) if isinstance(r, Schedulers)}


def test_a_port_with_no_profile_yields_nothing_of_its_own() -> None:
    found = schedulers(QOS, INTERFACES)
    assert "swp1" not in found
    assert (found[None].queue(6).mode, found[None].queue(6).weight_percent) == ("dwrr", 12)  # type: ignore[union-attr]


def test_a_bound_profile_is_its_own_classes_only() -> None:
    record = schedulers(QOS, INTERFACES)["swp2"]
    assert [(q.traffic_class, q.mode, q.weight_percent) for q in record.queues] == [(3, "dwrr", 10)]
    assert record.queue(6) is None  # not listed: not scheduled by the profile


def test_default_global_named_on_the_port_is_not_a_profile_of_its_own() -> None:
    named = {"swp1": {"qos": {"egress-scheduler": {"profile": "default-global"}}}}
    assert "swp1" not in schedulers(QOS, named)


def test_a_profile_bound_but_not_defined_is_refused() -> None:
    with pytest.raises(ParseError, match="bound but not defined"):
        schedulers({}, INTERFACES)


def test_a_mode_nvue_does_not_have_is_refused() -> None:
    bad = {"egress-scheduler": {"mine": {"traffic-class": {"3": {"mode": "wfq"}}}}}
    with pytest.raises(ParseError, match="not strict or dwrr"):
        schedulers(bad, INTERFACES)


MOCK_CONFIG = {"qos": {"roce": {"enable": "on", "mode": "lossless"}, **QOS}, "interface": INTERFACES}


def test_the_roce_status_and_the_traffic_model_read_the_same_port_view() -> None:
    _text, status = show_port_roce_status(MOCK_CONFIG, "swp2")
    assert status["tc-map"]["roce"]["scheduler-weight"] == "dwrr-10%"
    assert status["tc-map"]["cnp"]["scheduler-weight"] == "dwrr-12%"
    view = port_view(MOCK_CONFIG, "swp2")
    assert port_qos(MOCK_CONFIG, ["swp2"])["swp2"].ecn_queues == tuple(view.ecn_tcs)
