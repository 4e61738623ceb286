"""SONiC CONFIG_DB for the mock: stock Azure-template QoS, YANG-like checks, RFC 6902 patches."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fabcheck_lab.mockswitch.device import ROCE_DSCP, PortQos

ConfigDb = dict[str, dict[str, dict[str, str]]]
LOSSLESS_PROFILE = "AZURE_LOSSLESS"
WRED_COLORS = ("green", "yellow", "red")
ECN_MODES = (
    "ecn_none",
    "ecn_green",
    "ecn_yellow",
    "ecn_red",
    "ecn_green_yellow",
    "ecn_green_red",
    "ecn_yellow_red",
    "ecn_all",
)
_MAP_TABLES = {
    "dscp_to_tc_map": "DSCP_TO_TC_MAP",
    "tc_to_queue_map": "TC_TO_QUEUE_MAP",
    "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
    "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
    "pfc_to_pg_map": "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
}


class ConfigDbError(Exception):
    """A change CONFIG_DB validation refuses; str() is the reason."""


def _stock_dscp_map() -> dict[str, str]:
    special = {3: "3", 4: "4", 5: "2", 8: "0", 46: "5", 48: "6"}
    return {str(d): special.get(d, "1") for d in range(64)}


# The factory state is a real dynamic-buffer Mellanox CONFIG_DB: sonic-utilities
# tests/db_migrator_input/config_db/acs-msn4700-t1-version_3_0_3.json (trimmed copy and commit in
# tests/data/real/sonic/, INDEX.tsv). Its switch-wide tables are copied whole and its Ethernet0
# entries onto each port; tests/switch/test_sonic_factory.py diffs this against the file and lists
# every difference with its reason. The QoS tables (maps, schedulers, WRED, QUEUE, PORT_QOS_MAP,
# PFC_WD) are not in that dump: they are qos_config.j2's, as the mock had them before.
FACTORY_HWSKU = "ACS-MSN4700"
FACTORY_PLATFORM = "x86_64-mlnx_msn4700-r0"
FACTORY_PORT_SPEED = "400000"  # the cited dump's ports run 10G/25G; the lab's hosts link at 400G
FACTORY_CABLE_LENGTH = "300m"


def factory_alias(index: int) -> str:
    """The alias of the factory CONFIG_DB's port number index (0-based): what its LLDP sends as port ID."""
    return f"etp{index + 1}"


def factory_config_db(hostname: str, ports: Sequence[str], hwsku: str = FACTORY_HWSKU) -> ConfigDb:
    """What a SONiC switch boots with: the cited Mellanox dynamic-buffer CONFIG_DB plus the stock
    qos_config.j2 QoS tables, with the PFC watchdog started by default (`pfcwd start_default`)."""
    identity = {str(i): str(i) for i in range(8)}
    db: ConfigDb = {
        "DEVICE_METADATA": {
            "localhost": {
                "hwsku": hwsku,
                "default_bgp_status": "up",
                "type": "LeafRouter",
                "synchronous_mode": "enable",
                "region": "None",
                "hostname": hostname,
                "platform": FACTORY_PLATFORM,
                "mac": "00:01:02:03:04:00",
                "default_pfcwd_status": "enable",
                "bgp_asn": "65100",
                "buffer_model": "dynamic",
                "deployment_id": "1",
                "docker_routing_config_mode": "separated",
                "cloudtype": "None",
            }
        },
        "VERSIONS": {"DATABASE": {"VERSION": "version_3_0_3"}},
        "PORT": {},
        "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": "AZURE"}},
        "DSCP_TO_TC_MAP": {"AZURE": _stock_dscp_map()},
        "TC_TO_QUEUE_MAP": {"AZURE": dict(identity)},
        "TC_TO_PRIORITY_GROUP_MAP": {
            "AZURE": {"0": "0", "1": "0", "2": "0", "3": "3", "4": "4", "5": "0", "6": "0", "7": "7"}
        },
        "MAP_PFC_PRIORITY_TO_QUEUE": {"AZURE": dict(identity)},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {"AZURE": {"3": "3", "4": "4"}},
        "SCHEDULER": {
            "scheduler.0": {"type": "DWRR", "weight": "14"},
            "scheduler.1": {"type": "DWRR", "weight": "15"},
        },
        "WRED_PROFILE": {
            LOSSLESS_PROFILE: {
                "wred_green_enable": "true",
                "wred_yellow_enable": "true",
                "wred_red_enable": "true",
                "ecn": "ecn_all",
                **{f"{c}_min_threshold": "1048576" for c in WRED_COLORS},
                **{f"{c}_max_threshold": "2097152" for c in WRED_COLORS},
                **{f"{c}_drop_probability": "5" for c in WRED_COLORS},
            }
        },
        "QUEUE": {},
        "PFC_WD": {"GLOBAL": {"POLL_INTERVAL": "200"}},
        "CABLE_LENGTH": {"AZURE": {p: FACTORY_CABLE_LENGTH for p in ports}},
        "DEFAULT_LOSSLESS_BUFFER_PARAMETER": {"AZURE": {"default_dynamic_th": "0"}},
        "LOSSLESS_TRAFFIC_PATTERN": {"AZURE": {"small_packet_percentage": "100", "mtu": "1024"}},
        "BUFFER_POOL": {
            "egress_lossless_pool": {"type": "egress", "mode": "dynamic", "size": "60817392"},
            "egress_lossy_pool": {"type": "egress", "mode": "dynamic"},
            "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic"},
            "ingress_lossy_pool": {"type": "ingress", "mode": "dynamic"},
        },
        "BUFFER_PROFILE": {
            "egress_lossless_profile": {"dynamic_th": "7", "pool": "egress_lossless_pool", "size": "0"},
            "egress_lossy_profile": {"dynamic_th": "7", "pool": "egress_lossy_pool", "size": "9216"},
            "ingress_lossless_profile": {"dynamic_th": "7", "pool": "ingress_lossless_pool", "size": "0"},
            "ingress_lossy_profile": {"dynamic_th": "3", "pool": "ingress_lossy_pool", "size": "0"},
            "q_lossy_profile": {"dynamic_th": "3", "pool": "egress_lossy_pool", "size": "0"},
        },
        "BUFFER_PORT_EGRESS_PROFILE_LIST": {},
        "BUFFER_PORT_INGRESS_PROFILE_LIST": {},
        "BUFFER_PG": {},
        "BUFFER_QUEUE": {},
    }
    for index, port in enumerate(ports):
        db["PORT"][port] = {
            "index": str(index + 1),
            "lanes": ",".join(str(index * 8 + i) for i in range(8)),
            "admin_status": "up",
            "mtu": "9100",
            "alias": factory_alias(index),
            "pfc_asym": "off",
            "speed": FACTORY_PORT_SPEED,
            "fec": "rs",
        }
        db["PORT_QOS_MAP"][port] = {
            **{f: "AZURE" for f in _MAP_TABLES},
            "pfc_enable": "3,4",
            "pfcwd_sw_enable": "3,4",
        }
        for queue in ("0", "1", "2", "5", "6"):
            db["QUEUE"][f"{port}|{queue}"] = {"scheduler": "scheduler.0"}
        for queue in ("3", "4"):
            db["QUEUE"][f"{port}|{queue}"] = {"scheduler": "scheduler.1", "wred_profile": LOSSLESS_PROFILE}
        db["PFC_WD"][port] = {
            "action": "drop",
            "detection_time": "200",
            "restoration_time": "200",
            "pfc_stat_history": "disable",
        }
        db["BUFFER_PORT_EGRESS_PROFILE_LIST"][port] = {
            "profile_list": "egress_lossless_profile,egress_lossy_profile"
        }
        db["BUFFER_PORT_INGRESS_PROFILE_LIST"][port] = {
            "profile_list": "ingress_lossless_profile,ingress_lossy_profile"
        }
        db["BUFFER_PG"][f"{port}|0"] = {"profile": "ingress_lossy_profile"}
        db["BUFFER_PG"][f"{port}|3-4"] = {"profile": "NULL"}
        db["BUFFER_QUEUE"][f"{port}|0-2"] = {"profile": "q_lossy_profile"}
        db["BUFFER_QUEUE"][f"{port}|3-4"] = {"profile": "egress_lossless_profile"}
        db["BUFFER_QUEUE"][f"{port}|5-6"] = {"profile": "q_lossy_profile"}
    return db


# -- derived per-port behaviour --------------------------------------------------------------------


def _port_map(db: ConfigDb, port: str, field: str) -> dict[str, str]:
    name = db.get("PORT_QOS_MAP", {}).get(port, {}).get(field)
    if name is None and field == "dscp_to_tc_map":
        name = db.get("PORT_QOS_MAP", {}).get("global", {}).get(field)
    return db.get(_MAP_TABLES[field], {}).get(name or "", {})


def priority_list(text: str) -> list[int]:
    return sorted({int(p) for p in text.split(",") if p.strip().isdigit()})


def ecn_queues(db: ConfigDb, port: str) -> list[int]:
    out = []
    for key, fields in db.get("QUEUE", {}).items():
        name, _, queues = key.partition("|")
        profile = db.get("WRED_PROFILE", {}).get(fields.get("wred_profile", ""), {})
        if name == port and profile.get("ecn", "ecn_none") != "ecn_none":
            out.extend(expand_range(queues))
    return sorted(set(out))


def expand_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def port_qos(db: ConfigDb, ports: Sequence[str]) -> dict[str, PortQos]:
    out = {}
    for port in ports:
        tc = int(_port_map(db, port, "dscp_to_tc_map").get(str(ROCE_DSCP), "0"))
        queue = int(_port_map(db, port, "tc_to_queue_map").get(str(tc), str(tc)))
        pfc = priority_list(db.get("PORT_QOS_MAP", {}).get(port, {}).get("pfc_enable", ""))
        mtu = int(db.get("PORT", {}).get(port, {}).get("mtu", "9100"))
        out[port] = PortQos(
            roce_priority=tc,
            roce_queue=queue,
            pfc_priorities=tuple(pfc),
            ecn_queues=tuple(ecn_queues(db, port)),
            mtu=mtu,
            trust="dscp",
        )
    return out


# -- validation (what the YANG models would refuse) ------------------------------------------------


def _int_in(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, str) and value.isdigit() and lo <= int(value) <= hi


def _check_map(table: str, name: str, entries: Mapping[str, Any], key_hi: int) -> list[str]:
    return [
        f"{table}|{name}: invalid mapping {k!r}: {v!r}"
        for k, v in entries.items()
        if not (_int_in(k, 0, key_hi) and _int_in(v, 0, 7))
    ]


# A port that classifies by PCP binds a DOT1P_TO_TC_MAP (sonic-port-qos-map.yang, vendor/sonic-yang:
# leaf dot1p_to_tc_map); the factory ports bind none.
_BINDINGS = {**_MAP_TABLES, "dot1p_to_tc_map": "DOT1P_TO_TC_MAP"}


def _check_port_qos(db: ConfigDb, key: str, fields: Mapping[str, Any], ports: Sequence[str]) -> list[str]:
    problems = [] if key == "global" or key in ports else [f"PORT_QOS_MAP|{key}: no such port"]
    for field, value in fields.items():
        if field in _BINDINGS:
            if value not in db.get(_BINDINGS[field], {}):
                problems.append(f"PORT_QOS_MAP|{key}: {field} refers to missing {_BINDINGS[field]}|{value}")
        elif field in ("pfc_enable", "pfcwd_sw_enable"):
            if not isinstance(value, str) or not re.fullmatch(r"([0-7](,[0-7])*)?", value):
                problems.append(f"PORT_QOS_MAP|{key}: {field} {value!r} is not a list of priorities 0-7")
        else:
            problems.append(f"PORT_QOS_MAP|{key}: unknown field {field!r}")
    return problems


def _check_wred(name: str, fields: Mapping[str, Any]) -> list[str]:
    problems = []
    for field, value in fields.items():
        if field.endswith("_threshold") and not _int_in(value, 0, 2**32 - 1):
            problems.append(f"WRED_PROFILE|{name}: {field} {value!r} is not a byte count")
        elif field.endswith("_drop_probability") and not _int_in(value, 0, 100):
            problems.append(f"WRED_PROFILE|{name}: {field} {value!r} is not 0-100")
        elif field == "ecn" and value not in ECN_MODES:
            problems.append(f"WRED_PROFILE|{name}: ecn {value!r} is not one of {', '.join(ECN_MODES)}")
        elif field.endswith("_enable") and value not in ("true", "false"):
            problems.append(f"WRED_PROFILE|{name}: {field} {value!r} is not true/false")
    for color in WRED_COLORS:
        low, high = fields.get(f"{color}_min_threshold"), fields.get(f"{color}_max_threshold")
        if _int_in(low, 0, 2**32) and _int_in(high, 0, 2**32) and int(low) > int(high):
            problems.append(
                f"WRED_PROFILE|{name}: {color}_min_threshold {low} exceeds {color}_max_threshold {high}"
            )
    return problems


def _check_queue(db: ConfigDb, key: str, fields: Mapping[str, Any], ports: Sequence[str]) -> list[str]:
    port, _, queues = key.partition("|")
    problems = []
    if port not in ports or not re.fullmatch(r"[0-7](-[0-7])?", queues):
        problems.append(f"QUEUE|{key}: not a port|queue key")
    if "scheduler" in fields and fields["scheduler"] not in db.get("SCHEDULER", {}):
        problems.append(f"QUEUE|{key}: scheduler refers to missing SCHEDULER|{fields['scheduler']}")
    if "wred_profile" in fields and fields["wred_profile"] not in db.get("WRED_PROFILE", {}):
        problems.append(f"QUEUE|{key}: wred_profile refers to missing WRED_PROFILE|{fields['wred_profile']}")
    return problems


def _check_misc(table: str, key: str, fields: Mapping[str, Any], ports: Sequence[str]) -> list[str]:
    where = f"{table}|{key}"
    if table == "PORT":
        if key not in ports:
            return [f"{where}: no such port"]
        if "mtu" in fields and not _int_in(fields["mtu"], 68, 9216):
            return [f"{where}: mtu {fields['mtu']!r} is not 68-9216"]
        if fields.get("admin_status", "up") not in ("up", "down"):
            return [f"{where}: admin_status must be up or down"]
    if table == "SCHEDULER":
        if fields.get("type", "WRR") not in ("DWRR", "WRR", "STRICT"):
            return [f"{where}: type {fields.get('type')!r} is not DWRR, WRR or STRICT"]
        if "weight" in fields and not _int_in(fields["weight"], 1, 100):
            return [f"{where}: weight {fields['weight']!r} is not 1-100"]
    if table == "PFC_WD" and key != "GLOBAL":
        if key not in ports:
            return [f"{where}: no such port"]
        if fields.get("action", "drop") not in ("drop", "forward", "alert"):
            return [f"{where}: action must be drop, forward or alert"]
        if not _int_in(fields.get("detection_time", "200"), 100, 5000):
            return [f"{where}: detection_time is not 100-5000"]
        if not _int_in(fields.get("restoration_time", "200"), 100, 60000):
            return [f"{where}: restoration_time is not 100-60000"]
    return []


def config_problems(db: Any, ports: Sequence[str]) -> list[str]:
    """Every reason this CONFIG_DB would be refused; empty when valid."""
    if not isinstance(db, dict):
        return ["config is not a JSON object of tables"]
    problems = []
    for table, entries in db.items():
        if not isinstance(entries, dict) or not entries:
            problems.append(f"table {table} is empty or not an object")
            continue
        for key, fields in entries.items():
            if not isinstance(fields, dict) or any(not isinstance(v, str) for v in fields.values()):
                problems.append(f"{table}|{key}: field values must be strings")
                continue
            problems += _check_entry(db, table, key, fields, ports)
    return problems


def _check_entry(
    db: ConfigDb, table: str, key: str, fields: Mapping[str, Any], ports: Sequence[str]
) -> list[str]:
    if table == "DSCP_TO_TC_MAP":
        return _check_map(table, key, fields, 63)
    if table in (
        "DOT1P_TO_TC_MAP",
        "TC_TO_QUEUE_MAP",
        "TC_TO_PRIORITY_GROUP_MAP",
        "MAP_PFC_PRIORITY_TO_QUEUE",
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    ):
        return _check_map(table, key, fields, 7)
    if table == "PORT_QOS_MAP":
        return _check_port_qos(db, key, fields, ports)
    if table == "WRED_PROFILE":
        return _check_wred(key, fields)
    if table == "QUEUE":
        return _check_queue(db, key, fields, ports)
    if table in ("BUFFER_PG", "BUFFER_QUEUE"):
        return _check_buffer_binding(db, table, key, fields, ports)
    return _check_misc(table, key, fields, ports)


def _check_buffer_binding(
    db: ConfigDb, table: str, key: str, fields: Mapping[str, Any], ports: Sequence[str]
) -> list[str]:
    """sonic-buffer-pg / sonic-buffer-queue YANG: PORT|N or PORT|N-M keys, the profile a leafref to
    BUFFER_PROFILE ("NULL" on a priority group: the dynamic model sizes its headroom)."""
    port, _, span = key.partition("|")
    problems = []
    if port not in ports or not re.fullmatch(r"[0-7](-[0-7])?", span):
        problems.append(f"{table}|{key}: not a port|range key")
    profile = fields.get("profile")
    if not (table == "BUFFER_PG" and profile == "NULL") and profile not in db.get("BUFFER_PROFILE", {}):
        problems.append(f'{table}|{key}: Invalid leafref value "{profile}" (no BUFFER_PROFILE|{profile})')
    return problems


# -- RFC 6902 JSON patch (what `config apply-patch` takes) -----------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or not path.startswith("/"):
        raise ConfigDbError(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> dict[str, Any]:
    node = doc
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            raise ConfigDbError(f"can't resolve path {path}: member '{part}' not found")
        node = node[part]
    if not isinstance(node, dict):
        raise ConfigDbError(f"can't resolve path {path}: not an object")
    return node


def _apply_op(doc: dict[str, Any], op: Mapping[str, Any]) -> None:
    kind, path = op.get("op"), op.get("path")
    parts = _pointer(path)
    if parts == [""]:
        raise ConfigDbError("patching the whole config is not supported; use config replace")
    parent = _parent(doc, parts, str(path))
    leaf = parts[-1]
    if kind in ("add", "replace", "test") and "value" not in op:
        raise ConfigDbError(f"operation {kind} on {path} has no 'value'")
    if kind == "add":
        parent[leaf] = copy.deepcopy(op["value"])
    elif kind == "replace":
        if leaf not in parent:
            raise ConfigDbError(f"can't replace a non-existent object '{leaf}'")
        parent[leaf] = copy.deepcopy(op["value"])
    elif kind == "remove":
        if leaf not in parent:
            raise ConfigDbError(f"can't remove a non-existent object '{leaf}'")
        del parent[leaf]
    elif kind == "test":
        if parent.get(leaf) != op["value"]:
            raise ConfigDbError(f"test at {path} failed")
    else:
        raise ConfigDbError(f"unsupported patch operation {kind!r}")


def simulate_patch(db: ConfigDb, patch: Any) -> ConfigDb:
    """The config the patch's operations make (GCU's simulate_patch), unvalidated; `db` stays as is."""
    if not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
        raise ConfigDbError("a patch is a JSON list of operations")
    target = copy.deepcopy(db)
    for op in patch:
        _apply_op(target, op)
    return target


def apply_patch(db: ConfigDb, patch: Any, ports: Sequence[str]) -> ConfigDb:
    """The config after the patch, or ConfigDbError; the input is never modified (all or nothing)."""
    target = simulate_patch(db, patch)
    problems = config_problems(target, ports)
    if problems:
        raise ConfigDbError("Given patch will produce invalid config. Error: " + "; ".join(problems))
    return target
