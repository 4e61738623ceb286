"""The EOS mock starts from Arista's documented factory defaults (issue 33).

A factory mock switch is asked what the gate and an operator would ask (`show running-config`, `show
qos interfaces | json`, `show priority-flow-control | json`, `show interfaces | json`) and its answers,
flattened to facts, are diffed with ARISTA_DEFAULTS: each default with the source that documents it.
Any difference not in KNOWN_DIFFERENCES fails, and so does a listed difference that no longer occurs.
`read_here` says whether the fact was read in the cited source while writing this table (True), or the
source is Arista's manual chapter the project has cited all along but no copy of its text was at hand
(False: docs/switches/eos.md lists these as unverified).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fabcheck_lab.mockswitch.eos import EosDevice
from fabcheck_lab.mockswitch.eos_model import default_tc, factory_config
from fabcheck_lab.mockswitch.spec import SwitchSpec

PORTS = ("Ethernet1", "Ethernet2")
AVD = "aristanetworks/avd"
AVD_AT = "3cac535c16978abb099f159b0bd6839536a9108c"
ANTA_AT = "68667e0ed117e688f505b8b870e2ccd8e1e9297b"
QOS_MANUAL = "https://www.arista.com/en/um-eos/eos-quality-of-service"
PFC_MANUAL = "https://www.arista.com/um-eos/eos-dcbx-and-flow-control"
CITATION = re.compile(r"https://\S+|[\w.-]+/[\w.-]+:\S+@[0-9a-f]{40}")


@dataclass(frozen=True)
class Default:
    value: Any
    source: str
    read_here: bool


# The default DSCP -> traffic class map on Trident/Tomahawk: DSCP to CoS DSCP/8, CoS to traffic class
# with CoS 0 -> TC 1 and CoS 1 -> TC 0 (Arista EOS User Manual, Quality of Service).
_DSCP_MAP = {dscp: {0: 1, 1: 0}.get(dscp >> 3, dscp >> 3) for dscp in range(64)}

ARISTA_DEFAULTS: dict[str, Default] = {
    "running-config QoS lines": Default((), QOS_MANUAL, False),  # nothing set: no qos/PFC line shows
    **{f"dscp {d} traffic class": Default(tc, QOS_MANUAL, False) for d, tc in _DSCP_MAP.items()},
    "port trust": Default("cos", QOS_MANUAL, False),  # a switched port trusts CoS until `qos trust dscp`
    # tx-queues are strict priority until `no priority`: AVD pairs `no priority` with every round-robin
    # share (its intended qos.cfg)
    **{
        f"port tx-queue {q} priority": Default(
            "strict",
            f"{AVD}:ansible_collections/arista/avd/molecule/eos_cli_config_gen/intended/configs/qos.cfg@{AVD_AT}",
            True,
        )
        for q in range(8)
    },
    **{f"port tx-queue {q} ecn": Default(None, QOS_MANUAL, False) for q in range(8)},
    "port PFC enabled": Default(False, PFC_MANUAL, False),
    "port PFC priorities": Default((), PFC_MANUAL, False),
    "port PFC watchdog": Default(False, PFC_MANUAL, False),
    # the watchdog's action when none is set errdisables the port: AVD's schema, "Timeout in seconds after
    # which port should be errdisabled or should start dropping" (drop / no-drop are the actions set)
    "watchdog action": Default(
        "errdisable",
        f"{AVD}:python-avd/pyavd/_eos_cli_config_gen/schema/schema_fragments/priority_flow_control.schema.yml@{AVD_AT}",
        True,
    ),
    # ANTA's VerifyL3MTU expects 1500 on interfaces that set none (its default input)
    "port mtu": Default(1500, f"aristanetworks/anta:anta/tests/interfaces.py@{ANTA_AT}", True),
}

# fact -> why the mock differs from the documented default there (none today)
KNOWN_DIFFERENCES: dict[str, str] = {}


def factory_facts() -> dict[str, Any]:
    spec = SwitchSpec("factory-eos", "eos", "127.0.3.1", 2201, "admin", "pw", PORTS)
    session = EosDevice(spec).new_session("admin")
    session.handle("enable")
    running = session.handle("show running-config")
    qos = json.loads(session.handle("show qos interfaces | json"))["intfQosConfig"]
    pfc = json.loads(session.handle("show priority-flow-control | json"))
    interfaces = json.loads(session.handle("show interfaces | json"))["interfaces"]
    qos_words = re.compile(r"\s*(qos |priority-flow-control|service-profile|mtu |(uc-)?tx-queue|bandwidth)")
    facts: dict[str, Any] = {
        "running-config QoS lines": tuple(line for line in running.splitlines() if qos_words.match(line)),
        "watchdog action": pfc["watchdog"]["action"],
    }
    config = factory_config("factory-eos", PORTS)
    assert config["qos"]["dscp_map"] == {}  # every class below is the mock's default map
    facts |= {f"dscp {d} traffic class": default_tc(d) for d in range(64)}
    per_port: dict[str, set[Any]] = {}
    for port in PORTS:
        status = pfc["interfaceStatuses"][port]
        seen = {
            "port trust": qos[port]["trustMode"],
            "port PFC enabled": status["enabled"],
            "port PFC priorities": tuple(status["priorities"]),
            "port PFC watchdog": status["watchdogEnabled"],
            "port mtu": interfaces[port]["mtu"],
        }
        for queue, shown in qos[port]["txQueues"].items():
            seen[f"port tx-queue {queue} priority"] = shown["priority"]
            seen[f"port tx-queue {queue} ecn"] = shown["ecn"]
        for key, value in seen.items():
            per_port.setdefault(key, set()).add(value)
    for key, values in per_port.items():
        assert len(values) == 1, f"{key}: the factory ports differ ({values})"
        facts[key] = values.pop()
    return facts


def test_the_mock_factory_is_aristas_documented_defaults_but_for_the_listed_differences() -> None:
    facts = factory_facts()
    assert facts.keys() == ARISTA_DEFAULTS.keys(), "a mock fact without its documented default, or back"
    differing = {
        key: (facts[key], ARISTA_DEFAULTS[key].value)
        for key in facts
        if facts[key] != ARISTA_DEFAULTS[key].value
    }
    unlisted = {key: pair for key, pair in differing.items() if key not in KNOWN_DIFFERENCES}
    assert unlisted == {}, "mock factory state (mock, documented) not as Arista documents it"
    assert sorted(KNOWN_DIFFERENCES) == sorted(differing), "a listed difference no longer occurs"


def test_every_default_cites_a_resolvable_source() -> None:
    assert [key for key, default in ARISTA_DEFAULTS.items() if not CITATION.fullmatch(default.source)] == []


def test_the_default_map_is_the_one_the_gate_reads_a_dscp_without_a_map_line_by() -> None:
    from fabcheck.parsers.eos_config import DEFAULT_DSCP_TO_TC

    assert DEFAULT_DSCP_TO_TC == _DSCP_MAP
