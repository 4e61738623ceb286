"""Arista EOS show output for the mock: text layouts and the `| json` models."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fabcheck_lab.mockswitch.device import Counters
from fabcheck_lab.mockswitch.eos_model import (
    DEFAULT_MTU,
    DEFAULT_TRUST,
    EOS_VERSION,
    effective_block,
    port_qos,
    port_speed_gbps,
    running_config_text,
    sections,
    short_name,
)
from fabcheck_lab.mockswitch.textfmt import simple_table

Shown = tuple[str, Any]  # (text, JSON model or None when EOS has no JSON for the command)


def running_config(
    config: Mapping[str, Any], section: str | None = None, interfaces: Sequence[str] | None = None
) -> str:
    text = running_config_text(config)
    if section is None and interfaces is None:
        return text
    blocks = sections(text)
    if interfaces is not None:
        wanted = {f"interface {p}" for p in interfaces}
        picked = [b for b in blocks if b[0] in wanted]
    else:
        regex = re.compile(section or "")
        picked = [b for b in blocks if any(regex.search(line) for line in b)]
    return "\n".join(line for block in picked for line in block)


def session_diffs(running: Mapping[str, Any], session: Mapping[str, Any], name: str) -> str:
    before = running_config_text(running).splitlines()
    after = running_config_text(session).splitlines()
    diff = difflib.unified_diff(
        before, after, "system:/running-config", f"session:/{name}-session-config", lineterm=""
    )
    return "\n".join(diff)


def pfc_status(config: Mapping[str, Any], ports: Sequence[str]) -> Shown:
    wd = config["pfc_watchdog"]
    qos = port_qos(config, ports)
    rows, model = [], {}
    for port in ports:
        eff = effective_block(config, port)
        enabled = eff.get("pfc") == "on"
        watchdog = bool(eff.get("pfc_watchdog")) and enabled
        prios = list(qos[port].pfc_priorities)
        flags = " ".join(
            f for f, on in (("E", enabled), ("A", enabled and bool(prios)), ("W", watchdog)) if on
        )
        rows.append([short_name(port), flags or "D", " ".join(map(str, prios)) or "-", "DCBX disabled"])
        model[port] = {
            "enabled": enabled,
            "active": enabled and bool(prios),
            "priorities": prios,
            "watchdogEnabled": watchdog,
            "dcbxStatus": "dcbxDisabled",
        }
    head = [
        "The hardware supports PFC on priorities 0 1 2 3 4 5 6 7",
        f"The PFC watchdog timeout is {wd.get('timeout', '0')} second(s)",
        f"The PFC watchdog recovery-time is {wd.get('recovery-time', '0')} second(s) (auto)",
        f"The PFC watchdog polling-interval is {wd.get('polling-interval', '0')} second(s) (auto)",
        f"The PFC watchdog action is {wd.get('action', 'errdisable')}",
        "",
        "E: PFC Enabled, D: PFC Disabled, A: PFC Active, W: PFC Watchdog Enabled",
    ]
    table = simple_table(["Port", "Status", "Priorities", "Note"], rows, "llll")
    data = {
        "hardwarePriorities": list(range(8)),
        "watchdog": {
            "timeout": float(wd.get("timeout", 0)),
            "recoveryTime": float(wd.get("recovery-time", 0)),
            "pollingInterval": float(wd.get("polling-interval", 0)),
            "action": wd.get("action", "errdisable"),
        },
        "interfaceStatuses": model,
    }
    return "\n".join([*head, table]), data


def watchdog_scope(config: Mapping[str, Any], ports: Sequence[str]) -> Shown:
    """`show priority-flow-control watchdog`: per port, the tx-queues the watchdog monitors. Arista's
    manual says it monitors only PFC queues with guaranteed bandwidth, so a no-drop priority's queue
    without `bandwidth guaranteed` is listed unmonitored. UNVERIFIED: no real output of this command was
    found; the layout is the mock's own and EOS's JSON model for it is not known (`| json` refuses)."""
    wd = config["pfc_watchdog"]
    rows = []
    for port in ports:
        eff = effective_block(config, port)
        on = eff.get("pfc") == "on" and bool(eff.get("pfc_watchdog"))
        no_drop = sorted(int(p) for p, mode in eff["pfc_priorities"].items() if mode == "no-drop" and on)
        guaranteed = {int(q) for q, cfg in eff["tx_queues"].items() if cfg.get("bandwidth_guaranteed")}
        watched = [q for q in no_drop if q in guaranteed]
        unwatched = [q for q in no_drop if q not in guaranteed]
        rows.append(
            [
                short_name(port),
                "enabled" if on else "disabled",
                " ".join(map(str, watched)) or "-",
                " ".join(map(str, unwatched)) or "-",
            ]
        )
    head = [
        f"The PFC watchdog timeout is {wd.get('timeout', '0')} second(s)",
        f"The PFC watchdog action is {wd.get('action', 'errdisable')}",
        "",
    ]
    table = simple_table(["Port", "Watchdog", "Monitored TxQ", "Unmonitored TxQ"], rows, "llll")
    return "\n".join([*head, table]), None


def pfc_counters(counters: Counters, ports: Sequence[str]) -> Shown:
    rows, model = [], {}
    for port in ports:
        c = counters.ports[port]
        rx, tx = sum(c["pfc_rx"]), sum(c["pfc_tx"])
        rows.append([short_name(port), rx, tx])
        model[port] = {"rxFrames": rx, "txFrames": tx}
    return simple_table(["Port", "RxPfc", "TxPfc"], rows, "lrr"), {"interfaceCounters": model}


def queue_drops(counters: Counters, ports: Sequence[str]) -> Shown:
    """`show interfaces counters queue detail`: per port and unicast traffic class, the packets the egress
    queue dropped (one drop precedence, DP0; multicast queues carry no lab traffic). The text table is the
    mock's own layout; the JSON keys are EOS's."""
    rows, model = [], {}
    for port in ports:
        drops = counters.ports[port]["drops"]
        rows += [[short_name(port), f"UC{tc}", drops[tc]] for tc in range(8)]
        model[port] = {
            kind: {
                "trafficClasses": {
                    f"TC{tc}": {"dropPrecedences": {"DP0": {"droppedPackets": drops[tc] if unicast else 0}}}
                    for tc in range(8)
                }
            }
            for kind, unicast in (("ucastQueues", True), ("mcastQueues", False))
        }
    table = simple_table(["Port", "TxQ", "Drop/pkts"], rows, "llr")
    return table, {"egressQueueCounters": {"interfaces": model}}


def watchdog_counters(ports: Sequence[str]) -> Shown:
    """`show priority-flow-control counters watchdog`: EOS lists a port only after its first watchdog
    event, and nothing in the lab's traffic model holds a queue paused for good, so no port is listed."""
    del ports  # every port is event-free
    return simple_table(["Port", "TxQ", "Stuck", "Recovered"], [], "llrr"), {"interfaces": {}}


def ecn_counters(config: Mapping[str, Any], counters: Counters, ports: Sequence[str]) -> Shown:
    qos = port_qos(config, ports)
    blocks, model = [], {}
    for port in ports:
        marked = counters.ports[port]["ecn_marked"]
        values = {str(q): str(marked[q]) if q in qos[port].ecn_queues else "-" for q in range(8)}
        model[port] = {"queueCounters": values}
        rows = [[q, values[q]] for q in values]
        blocks.append(
            f"{port}:\n" + simple_table(["Tx-Queue", "ECN Marked Packets"], rows, "lr", indent="   ")
        )
    return "\n\n".join(blocks), {"intfQueueCounters": model}


def qos_interfaces(config: Mapping[str, Any], ports: Sequence[str]) -> Shown:
    blocks, model = [], {}
    for port in ports:
        eff = effective_block(config, port)
        trust = eff.get("trust", DEFAULT_TRUST)
        queues, rows = {}, []
        for q in range(7, -1, -1):
            configured = eff["tx_queues"].get(str(q))
            cfg = configured or {}
            ecn = cfg.get("ecn")
            bw = cfg.get("bandwidth_percent", cfg.get("bandwidth_guaranteed"))
            # a queue no block configures is strict, as a new block is until `no priority`
            priority = "SP" if configured is None or cfg.get("priority") == "strict" else "RR"
            rows.append([q, "-" if bw is None else f"{bw}%", priority, "ECN" if ecn else "Disabled"])
            queues[str(q)] = {
                "bandwidthPercent": bw,
                "priority": "strict" if priority == "SP" else "roundRobin",
                "ecn": None
                if not ecn
                else {
                    "minThreshold": ecn["min"],
                    "maxThreshold": ecn["max"],
                    "unit": ecn["min_unit"],
                    "maxMarkProbability": ecn.get("probability", 100),
                    "weight": ecn.get("weight", 0),
                },
            }
        head = [
            f"{port}:",
            f"   Trust Mode: {trust.upper()}",
            "   Default COS: 0",
            "   Default DSCP: 0",
            f"   MTU: {eff.get('mtu', DEFAULT_MTU)}",
            "",
        ]
        table = simple_table(["Tx-Queue", "Bandwidth", "Priority", "ECN/WRED"], rows, "llll", indent="   ")
        blocks.append("\n".join([*head, table]))
        model[port] = {"trustMode": trust, "defaultCos": 0, "defaultDscp": 0, "txQueues": queues}
    return "\n\n".join(blocks), {"intfQosConfig": model}


def interfaces(config: Mapping[str, Any], ports: Sequence[str]) -> Shown:
    """`show interfaces`: link state and MTU (the mock's links are always up at 400G)."""
    blocks, model = [], {}
    for port in ports:
        mtu = int(effective_block(config, port).get("mtu", DEFAULT_MTU))
        gbps = port_speed_gbps(config, port)
        blocks.append(
            "\n".join(
                [
                    f"{port} is up, line protocol is up (connected)",
                    "  Hardware is Ethernet, address is 001c.7300.0001 (bia 001c.7300.0001)",
                    f"  Ethernet MTU {mtu} bytes, BW {gbps * 1_000_000} kbit",
                    f"  Full-duplex, {gbps}Gb/s, auto negotiation: off, uni-link: n/a",
                ]
            )
        )
        # The keys a real `show interfaces | json` has per port (aristanetworks/anta tests, VerifyL3MTU
        # data): a switched port is `bridged`, without a configured L3 MTU, l2Mru 0 (no MRU limit).
        model[port] = {
            "name": port,
            "forwardingModel": "bridged",
            "lineProtocolStatus": "up",
            "interfaceStatus": "connected",
            "hardware": "ethernet",
            "mtu": mtu,
            "l3MtuConfigured": False,
            "l2Mru": 0,
            "bandwidth": gbps * 1_000_000_000,
            "duplex": "duplexFull",
        }
    return "\n".join(blocks), {"interfaces": model}


def sessions(
    names: Mapping[str, Any], current: str | None, instances: Mapping[str, Mapping[str, Any]] | None = None
) -> Shown:
    """`instances`: per session, the live terminals in it (pid -> user, terminal), as EOS's JSON has."""
    live = instances or {}
    rows = [[("* " if n == current else "  ") + n, "pending", "", ""] for n in sorted(names)]
    table = simple_table(["  Name", "State", "User", "Terminal"], rows, "llll")
    model = {
        "sessions": {
            n: {"state": "pending", "commitUser": "", "description": "", "instances": dict(live.get(n, {}))}
            for n in names
        },
        "maxSavedSessions": 1,
        "maxOpenSessions": 5,
    }
    return "Maximum number of completed sessions: 1\nMaximum number of pending sessions: 5\n\n" + table, model


def version(hostname: str, model_name: str = "cEOSLab") -> Shown:
    text = "\n".join(
        [
            f"Arista {model_name}",
            "Hardware version: ",
            "Serial number: ",
            "Hardware MAC address: 001c.7300.0001",
            "System MAC address: 001c.7300.0001",
            "",
            f"Software image version: {EOS_VERSION}",
            "Architecture: x86_64",
            f"Internal build version: {EOS_VERSION}-mock",
            "",
            "cEOS tools version: (unknown)",
            "Kernel version: 6.1.0",
            "",
            "Uptime: 1 day, 2 hours and 3 minutes",
            "Total memory: 32000000 kB",
            "Free memory: 24000000 kB",
        ]
    )
    return text, {
        "modelName": model_name,
        "version": EOS_VERSION,
        "architecture": "x86_64",
        "systemMacAddress": "00:1c:73:00:00:01",
        "hostname": hostname,
    }


def lldp_neighbors(neighbors: Mapping[str, tuple[str, str]]) -> Shown:
    """`show lldp neighbors`: the table counters, then one row per port that hears a neighbour."""
    rows = [[port, system, remote, "120"] for port, (system, remote) in neighbors.items()]
    table = simple_table(["Port", "Neighbor Device ID", "Neighbor Port ID", "TTL"], rows, "lllr")
    head = (
        "Last table change time   : 0:00:42 ago\n"
        f"Number of table inserts  : {len(rows)}\n"
        "Number of table deletes  : 0\n"
        "Number of table drops    : 0\n"
        "Number of table age-outs : 0\n\n"
    )
    model = {
        "tablesLastChangeTime": 1700000000.0,
        "tablesAgeOuts": 0,
        "tablesInserts": len(rows),
        "lldpNeighbors": [
            {"port": port, "neighborDevice": system, "neighborPort": remote, "ttl": 120}
            for port, (system, remote) in neighbors.items()
        ],
        "tablesDeletes": 0,
        "tablesDrops": 0,
    }
    return head + table, model
