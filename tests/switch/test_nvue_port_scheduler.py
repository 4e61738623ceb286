"""NVUE per-port egress scheduling: the mock's `nv show interface P qos egress-scheduler` and the
gate's parser of it. A port bound to an egress-scheduler profile of its own is judged by that
profile's classes (on top of NVUE's stock scheduler); a port with none bound yields nothing of its own,
so default-global's scheduler judges it."""

from __future__ import annotations

import json

import pytest

from fabcheck.errors import ParseError
from fabcheck.lab.mockswitch.nvue_model import port_qos, port_view
from fabcheck.lab.mockswitch.nvue_show import show_port_roce_status, show_port_scheduler
from fabcheck.parsers.switch_nvue import parse_port_scheduler
from fabcheck.parsers.switch_records import Schedulers

CONFIG = {
    "qos": {
        "roce": {"enable": "on", "mode": "lossless"},
        "egress-scheduler": {"mine": {"traffic-class": {"3": {"mode": "dwrr", "bw-percent": 10}}}},
    },
    "interface": {"swp1": {}, "swp2": {"qos": {"egress-scheduler": {"profile": "mine"}}}},
}


def test_a_port_with_no_profile_shows_an_empty_node_and_yields_nothing_of_its_own() -> None:
    _text, data = show_port_scheduler(CONFIG, "swp1")
    assert data == {}
    assert parse_port_scheduler(json.dumps(data), "swp1") == []


def test_a_bound_profile_is_the_stock_scheduler_under_its_own_classes() -> None:
    text, data = show_port_scheduler(CONFIG, "swp2")
    assert data["profile"] == "mine" and "mine" in text
    [(port, record)] = parse_port_scheduler(json.dumps(data), "swp2")
    assert port == "swp2" and isinstance(record, Schedulers)
    assert (record.queue(3).mode, record.queue(3).weight_percent) == ("dwrr", 10)
    # stock NVUE weights, not the RoCE preset's strict CNP class: the profile starts from defaults
    assert (record.queue(6).mode, record.queue(6).weight_percent) == ("dwrr", 12)


def test_the_roce_status_and_the_traffic_model_read_the_same_port_view() -> None:
    _text, status = show_port_roce_status(CONFIG, "swp2")
    assert status["sp-tc-map"]["roce"]["scheduler-weight"] == "dwrr-10%"
    assert status["sp-tc-map"]["cnp"]["scheduler-weight"] == "dwrr-12%"
    view = port_view(CONFIG, "swp2")
    assert port_qos(CONFIG, ["swp2"])["swp2"].ecn_queues == tuple(view.ecn_tcs)


def test_default_global_named_on_the_port_is_not_a_profile_of_its_own() -> None:
    assert parse_port_scheduler('{"profile": "default-global"}', "swp1") == []


def test_a_bound_profile_shown_without_its_classes_is_refused() -> None:
    with pytest.raises(ParseError, match="traffic classes are not shown"):
        parse_port_scheduler('{"profile": "mine"}', "swp2")


def test_a_mode_nvue_does_not_have_is_refused() -> None:
    bad = {"profile": "mine", "traffic-class": {"3": {"mode": "wfq"}}}
    with pytest.raises(ParseError, match="not strict or dwrr"):
        parse_port_scheduler(json.dumps(bad), "swp2")
