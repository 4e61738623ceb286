"""`show ...` commands of the EOS mock, with `| json`, `| include` and `| exclude`."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from fabcheck_lab.mockswitch import eos_show as show
from fabcheck_lab.mockswitch import eos_wire as wire
from fabcheck_lab.mockswitch.eos_grammar import INVALID, EosInputError, Rule, match
from fabcheck_lab.mockswitch.eos_model import parse_interfaces, running_config_text

if TYPE_CHECKING:
    from fabcheck_lab.mockswitch.eos import EosDevice

_R = Rule.of
SHOW_RULES = [
    _R("show running-config", "running"),
    _R("show running-config section <rest>", "running_section"),
    _R("show running-config interfaces <ifs>", "running_ifs"),
    _R("show startup-config", "startup"),
    _R("show session-config diffs", "diffs"),
    _R("show session-config named <word> diffs", "named_diffs"),
    _R("show configuration sessions", "sessions"),
    _R("show priority-flow-control", "pfc"),
    _R("show priority-flow-control status", "pfc"),
    _R("show priority-flow-control interfaces <ifs>", "pfc"),
    _R("show priority-flow-control interfaces <ifs> status", "pfc"),
    _R("show priority-flow-control counters", "pfc_counters"),
    _R("show priority-flow-control interfaces <ifs> counters", "pfc_counters"),
    _R("show priority-flow-control counters watchdog", "pfc_watchdog"),
    _R("show priority-flow-control watchdog", "watchdog_scope"),
    _R("show priority-flow-control interfaces <ifs> watchdog", "watchdog_scope"),
    _R("show priority-flow-control interfaces <ifs> counters watchdog", "pfc_watchdog"),
    _R("show qos interfaces", "qos"),
    _R("show qos interfaces <ifs>", "qos"),
    _R("show qos interfaces ecn counters queue", "ecn"),
    _R("show qos interfaces <ifs> ecn counters queue", "ecn"),
    _R("show interfaces", "interfaces"),
    _R("show interfaces <ifs>", "interfaces"),
    _R("show interfaces counters queue detail", "queue_drops"),
    _R("show interfaces <ifs> counters queue detail", "queue_drops"),
    _R("show interfaces counters errors", "wire_errors"),
    _R("show interfaces <ifs> counters errors", "wire_errors"),
    _R("show interfaces phy detail", "wire_phy"),
    _R("show interfaces <ifs> phy detail", "wire_phy"),
    _R("show interfaces transceiver dom thresholds", "wire_dom"),
    _R("show interfaces <ifs> transceiver dom thresholds", "wire_dom"),
    _R("show version", "version"),
    _R("show lldp neighbors", "lldp"),
]
PRIVILEGED = {"running", "running_section", "running_ifs", "startup", "diffs", "named_diffs", "sessions"}
UNCONVERTED = "% This is an unconverted command"


def run_show(device: EosDevice, session: str | None, privileged: bool, words: list[str], pipe: str) -> str:
    found = match(SHOW_RULES, ["show", *words], lambda token: parse_interfaces(token, device.ports))
    if found.action in PRIVILEGED and not privileged:
        raise EosInputError(f"{INVALID} (privileged mode required)")
    ports = found.values[0] if found.values and isinstance(found.values[0], list) else list(device.ports)
    text, model = _render(device, session, found.action, found.values, ports)
    return _filter(text, model, pipe, len(words) + 1)


def _render(
    device: EosDevice, session: str | None, action: str, values: list[Any], ports: list[str]
) -> tuple[str, Any]:
    config = device.running
    if action == "running":
        return show.running_config(config), None
    if action == "running_section":
        return show.running_config(config, section=values[0]), None
    if action == "running_ifs":
        return show.running_config(config, interfaces=ports), None
    if action == "startup":
        return running_config_text(device.startup).replace(
            "show running-config", "show startup-config", 1
        ), None
    if action in ("diffs", "named_diffs"):
        name = values[0] if action == "named_diffs" else session
        if name is None or name not in device.sessions:
            raise EosInputError(
                "% Not in a configuration session" if name is None else f"% Session {name} does not exist"
            )
        return show.session_diffs(config, device.sessions[name]["config"], name), None
    if action == "sessions":
        return show.sessions(device.sessions, session, device.session_instances())
    if action == "pfc":
        return show.pfc_status(config, ports)
    if action in ("pfc_counters", "ecn", "queue_drops"):
        device.refresh_counters()
        if action == "pfc_counters":
            return show.pfc_counters(device.counters, ports)
        if action == "queue_drops":
            return show.queue_drops(device.counters, ports)
        return show.ecn_counters(config, device.counters, ports)
    if action == "pfc_watchdog":
        return show.watchdog_counters(ports)
    if action == "watchdog_scope":
        return show.watchdog_scope(config, ports)
    if action == "qos":
        return show.qos_interfaces(config, ports)
    if action == "interfaces":
        text, model = show.interfaces(config, ports)
        for port in ports:
            model["interfaces"][port].update(wire.interface_counters(device, port))
        return text, model
    if action == "wire_errors":
        return wire.error_counters(device, ports)
    if action == "wire_phy":
        return wire.phy_detail(device, ports)
    if action == "wire_dom":
        return wire.transceiver_dom(device, ports)
    if action == "lldp":
        return show.lldp_neighbors(device.lldp_neighbors())
    return show.version(device.name, device.model)


def _filter(text: str, model: Any, pipe: str, token_index: int) -> str:
    if not pipe:
        return text
    verb, _, arg = pipe.partition(" ")
    if verb == "json":
        if model is None:
            raise EosInputError(UNCONVERTED)
        return json.dumps(model, indent=2)
    if verb in ("include", "exclude", "grep") and arg:
        regex = re.compile(arg.strip())
        keep = verb != "exclude"
        return "\n".join(line for line in text.splitlines() if bool(regex.search(line)) == keep)
    raise EosInputError(f"{INVALID} (at token {token_index + 1}: '{verb}')")
