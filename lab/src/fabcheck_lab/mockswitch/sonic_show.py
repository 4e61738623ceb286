"""SONiC show/ecnconfig/sonic-db-cli output in the sonic-utilities layouts."""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Mapping, Sequence

from fabcheck_lab.mockswitch.device import Counters
from fabcheck_lab.mockswitch.sonic_db import ConfigDb, ecn_queues, priority_list
from fabcheck_lab.mockswitch.textfmt import ruled_pairs, simple_table

_table = functools.partial(simple_table, header_pad=2)  # sonic-utilities prints through tabulate


def pfc_priority(db: ConfigDb, ports: Sequence[str]) -> str:
    rows = [[p, db.get("PORT_QOS_MAP", {}).get(p, {}).get("pfc_enable", "")] for p in ports]
    return _table(["Interface", "Lossless priorities"], rows, "ll")


def pfc_counters(counters: Counters, ports: Sequence[str]) -> str:
    heads = [f"PFC{i}" for i in range(8)]
    rx = [[p, *counters.ports[p]["pfc_rx"]] for p in ports]
    tx = [[p, *counters.ports[p]["pfc_tx"]] for p in ports]
    return "\n\n".join([_table(["Port Rx", *heads], rx, "r" * 9), _table(["Port Tx", *heads], tx, "r" * 9)])


def queue_counters(
    counters: Counters, ports: Sequence[str], as_json: bool, read_at: str = "", cleared: bool = False
) -> str:
    """`show queue counters [--json]`. As sonic-utilities scripts/queuestat prints it: JSON through
    json_dump (sorted keys, indent 2) with each port's reading `time` (isoformat); after `sonic-clear
    queuecounters` every count is a difference from the saved snapshot, grouped by thousands
    (utilities_common/netstat.py ns_diff: '{:,}')."""
    if as_json:

        def count(n: int) -> str:
            return f"{n:,}" if cleared else str(n)

        data: dict[str, dict[str, object]] = {
            p: {
                **{
                    f"UC{q}": {
                        "totalpacket": count(c["tx_packets"][q]),
                        "totalbytes": count(c["tx_bytes"][q]),
                        "droppacket": count(c["drops"][q]),
                        "dropbytes": count(c["drops"][q] * 1078),
                    }
                    for q in range(8)
                },
                "time": read_at,
            }
            for p, c in ((p, counters.ports[p]) for p in ports)
        }
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)
    blocks = []
    for port in ports:
        c = counters.ports[port]
        rows = [
            [port, f"UC{q}", c["tx_packets"][q], c["tx_bytes"][q], c["drops"][q], c["drops"][q] * 1078]
            for q in range(8)
        ]
        blocks.append(
            _table(
                ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"], rows, "rrrrrr"
            )
        )
    return "\n\n".join(blocks)


def wred_counters(counters: Counters, ports: Sequence[str]) -> str:
    blocks = []
    for port in ports:
        c = counters.ports[port]
        rows = [[port, f"UC{q}", 0, 0, c["ecn_marked"][q], c["ecn_marked"][q] * 1078] for q in range(8)]
        blocks.append(
            _table(
                ["Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"],
                rows,
                "rrrrrr",
            )
        )
    return "\n\n".join(blocks)


def ecn_profiles(db: ConfigDb) -> str:
    """`show ecn` / `ecnconfig -l`: every WRED profile as a ruled two-column table."""
    blocks = []
    for name, fields in sorted(db.get("WRED_PROFILE", {}).items()):
        blocks.append(f"Profile: {name}\n" + ruled_pairs(sorted(fields.items())))
    return "\n\n".join(blocks)


def ecn_queue_status(db: ConfigDb, ports: Sequence[str], queues: Sequence[int]) -> str:
    lines = ["ECN status:"]
    for q in queues:
        on = all(q in ecn_queues(db, p) for p in ports)
        lines.append(f"queue {q}: {'on' if on else 'off'}")
    return "\n".join(lines)


def pfcwd_config(db: ConfigDb, ports: Sequence[str]) -> str:
    wd = db.get("PFC_WD", {})
    rows = [
        [
            p,
            wd[p].get("action", "drop"),
            wd[p].get("detection_time", "200"),
            wd[p].get("restoration_time", "200"),
            wd[p].get("pfc_stat_history", "disable"),
        ]
        for p in ports
        if p in wd
    ]
    poll = wd.get("GLOBAL", {}).get("POLL_INTERVAL", "200")
    table = _table(["PORT", "ACTION", "DETECTION TIME", "RESTORATION TIME", "HISTORY"], rows, "rrrrr")
    return f"Changed polling interval to {poll}ms\n{table}"


def pfcwd_stats(db: ConfigDb, ports: Sequence[str]) -> str:
    """`show pfcwd stats`: one row per watched queue; the mock's watchdog never sees a storm."""
    wd = db.get("PFC_WD", {})
    rows = []
    for port in ports:
        watched = db.get("PORT_QOS_MAP", {}).get(port, {}).get("pfcwd_sw_enable", "")
        if port in wd:
            rows += [
                [f"{port}:{q}", "operational", "0/0", "0/0", "0/0", "0/0", "0/0"]
                for q in priority_list(watched)
            ]
    heads = [
        "QUEUE",
        "STATUS",
        "STORM DETECTED/RESTORED",
        "TX OK/DROP",
        "RX OK/DROP",
        "TX LAST OK/DROP",
        "RX LAST OK/DROP",
    ]
    return _table(heads, rows, "rrrrrrr") if rows else ""


def config_json(db: ConfigDb) -> str:
    return json.dumps(db, indent=4, sort_keys=True)


def running_configuration_all(db: ConfigDb) -> str:
    """`show runningconfiguration all`: `sonic-cfggen -d --print-data` with FRR's running config as
    the string "bgpraw" beside the tables (sonic-utilities show/main.py); the mock runs no FRR."""
    return json.dumps({**db, "bgpraw": ""}, indent=4, sort_keys=True)


def interfaces_status(db: ConfigDb, ports: Sequence[str]) -> str:
    """`show interfaces status` in intfutil's columns (sonic-utilities tests/intfutil_test.py): speed
    in G, the mock's links always up unless admin down, no VLAN membership (routed)."""
    rows = []
    for port in ports:
        entry = db.get("PORT", {}).get(port, {})
        speed = entry.get("speed", "")
        shown = f"{int(speed) // 1000}G" if speed.isdigit() else "N/A"
        admin = entry.get("admin_status", "down")
        rows.append(
            [
                port,
                entry.get("lanes", "N/A"),
                shown,
                entry.get("mtu", "N/A"),
                entry.get("fec", "N/A"),
                entry.get("alias", "N/A"),
                "routed",
                admin,
                admin,
                "QSFP-DD Double Density 8X Pluggable Transceiver",
                "off",
            ]
        )
    headers = [
        "Interface",
        "Lanes",
        "Speed",
        "MTU",
        "FEC",
        "Alias",
        "Vlan",
        "Oper",
        "Admin",
        "Type",
        "Asym PFC",
    ]
    return simple_table(headers, rows, "r" * len(headers), header_pad=2)


def hgetall(db: ConfigDb, key: str) -> str:
    table, sep, rest = key.partition("|")
    fields = db.get(table, {}).get(rest, {}) if sep else {}
    return repr(dict(fields))


def keys(db: ConfigDb, pattern: str) -> str:
    found = [
        f"{t}|{k}" for t, entries in db.items() for k in entries if fnmatch.fnmatchcase(f"{t}|{k}", pattern)
    ]
    return "\n".join(sorted(found))


def version(name: str, release: str, metadata: Mapping[str, str]) -> str:
    """`show version`: the platform and hwsku are DEVICE_METADATA's (as on a switch)."""
    return "\n".join(
        [
            "",
            f"SONiC Software Version: SONiC.{release}",
            "SONiC OS Version: 12",
            "Distribution: Debian 12.6",
            "Kernel: 6.1.0-22-2-amd64",
            "Build commit: 0000000",
            "Build date: Mon Jun 10 00:00:00 UTC 2024",
            "Built by: sonicbld@mock",
            "",
            f"Platform: {metadata.get('platform', '')}",
            f"HwSKU: {metadata.get('hwsku', '')}",
            "ASIC: mellanox",
            "ASIC Count: 1",
            f"Serial Number: MT0000X{name[:5].upper()}",
            "Model Number: MSN4700-WS2FO",
            "Hardware Revision: A1",
            "Uptime: 10:00:00 up 1 day,  2:00,  1 user,  load average: 0.50, 0.40, 0.30",
            "Date: Mon 01 Jul 2024 10:00:00",
        ]
    )


def lldp_table(neighbors: Mapping[str, tuple[str, str]]) -> str:
    """`show lldp table` (sonic-utilities' lldpshow summary)."""
    rows = [[port, system, remote, "O", remote] for port, (system, remote) in neighbors.items()]
    headers = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
    return "\n".join(
        [
            "Capability codes: (R) Router, (B) Bridge, (O) Other",
            simple_table(headers, rows, "lllll"),
            "-" * 50,
            f"Total entries displayed:  {len(rows)}",
        ]
    )
