"""The SONiC CONFIG_DB patch, pure: the rendered fragment, what fabcheck owns of CONFIG_DB, the RFC 6902
patch from the running CONFIG_DB to the fragment, its scoping to concerns, the ports its changes take
admin-down and the number of changes GCU makes of it. The driver (fabcheck.switch.platforms.sonic)
stages and commits it.

What fabcheck owns (OWNED_TABLES): entries named FABCHECK* (maps, WRED profiles, schedulers); the
PORT_QOS_MAP, QUEUE and PFC_WD entries of the ports the inventory lists; the lossless (dynamic-model)
BUFFER_PG entries and the lossless queues' BUFFER_QUEUE binding of the ports it runs PFC on (a stock
range around a lossless queue is split, the rest keeping the profile it had); the `mtu` field of
those ports. Everything else is left alone: the lossy queues' profiles (q_lossy_profile on the
dynamic model) and the buffers of ports without PFC stay as the switch has them.

Every owned table, or field of a table that mixes concerns, belongs to one concern (OWNED_TABLES);
a push scoped to some concerns keeps only the patch operations on those, an operation on a whole
entry or table of mixed concerns narrowed to its fields of the chosen ones (`scope_patch`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabcheck.desired.switch import SONIC_DYNAMIC_LOSSLESS_PROFILE
from fabcheck.errors import FabcheckError
from fabcheck.switch.concerns import ALL_CONCERNS
from fabcheck.switch.render import RenderedConfig

ConfigDb = dict[str, dict[str, dict[str, str]]]
Patch = list[dict[str, Any]]

OWNER_PREFIX = "FABCHECK"
DYNAMIC_BUFFER_PROFILE = SONIC_DYNAMIC_LOSSLESS_PROFILE  # BUFFER_PG of a lossless PG (dynamic model)
# Tables whose changes make the updater take the port admin-down first (patch_sorter's
# RequiredValueIdentifier: PORT/<port>/admin_status must be "down" while they change).
ADMIN_DOWN_TABLES = ("BUFFER_PG", "BUFFER_QUEUE", "PORT_QOS_MAP", "QUEUE")


class Scope(enum.Enum):
    NAMED = "entries named FABCHECK*"
    PORT = "entries of the managed ports"
    PORT_FIELDS = "entries of the managed ports: removed when not rendered, else only the rendered fields"
    LOSSLESS_PG = "lossless priority groups of the managed ports with PFC"
    LOSSLESS_QUEUES = "lossless queues of the managed ports with PFC (a range around one is split)"
    FIELDS = "only the rendered fields"


@dataclass(frozen=True)
class Owned:
    """Which keys of a table a rendered fragment owns, and which concern its fields belong to:
    one concern for the whole table, or one per field (a field not listed: every concern)."""

    scope: Scope
    concern: str | Mapping[str, str]

    def field_concerns(self, field: str) -> frozenset[str]:
        if isinstance(self.concern, str):
            return frozenset({self.concern})
        found = self.concern.get(field)
        return frozenset({found}) if found else ALL_CONCERNS


# Table -> what a rendered fragment owns of it; also the order of the patch (definitions first).
OWNED_TABLES: Mapping[str, Owned] = {
    "DSCP_TO_TC_MAP": Owned(Scope.NAMED, "dscp"),
    "DOT1P_TO_TC_MAP": Owned(Scope.NAMED, "dscp"),
    "TC_TO_QUEUE_MAP": Owned(Scope.NAMED, "dscp"),
    "TC_TO_PRIORITY_GROUP_MAP": Owned(Scope.NAMED, "dscp"),
    "MAP_PFC_PRIORITY_TO_QUEUE": Owned(Scope.NAMED, "pfc"),
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": Owned(Scope.NAMED, "pfc"),
    "WRED_PROFILE": Owned(Scope.NAMED, "ecn"),
    "SCHEDULER": Owned(Scope.NAMED, "scheduler"),
    "PORT_QOS_MAP": Owned(
        Scope.PORT,
        {
            "dscp_to_tc_map": "dscp",
            "dot1p_to_tc_map": "dscp",
            "tc_to_queue_map": "dscp",
            "tc_to_pg_map": "dscp",
            "pfc_to_queue_map": "pfc",
            "pfc_to_pg_map": "pfc",
            "pfc_enable": "pfc",
            "pfcwd_sw_enable": "watchdog",
        },
    ),
    "QUEUE": Owned(Scope.PORT, {"scheduler": "scheduler", "wred_profile": "ecn"}),
    "BUFFER_PG": Owned(Scope.LOSSLESS_PG, "buffers"),
    "BUFFER_QUEUE": Owned(Scope.LOSSLESS_QUEUES, "buffers"),  # the lossy queues stay the switch's
    "PFC_WD": Owned(Scope.PORT_FIELDS, "watchdog"),  # pfc_stat_history is not ours
    "PORT": Owned(Scope.FIELDS, {"mtu": "mtu"}),
}


class SonicError(FabcheckError):
    """The switch refused or mis-answered a command; names the switch and the command."""


# -- the rendered fragment -------------------------------------------------------------------------


def parse_fragment(config: RenderedConfig) -> ConfigDb:
    """The rendered text as CONFIG_DB tables of string fields, or SonicError naming the line."""
    where = f"{config.switch}: rendered sonic config"
    try:
        data = json.loads(config.text)
    except json.JSONDecodeError as err:
        raise SonicError(f"{where}: line {err.lineno}: not JSON: {err.msg}") from None
    if not isinstance(data, dict):
        raise SonicError(f"{where}: a JSON object of CONFIG_DB tables is expected")
    for table, entries in data.items():
        if table not in OWNED_TABLES:
            raise SonicError(f"{where}: table {table!r} is not one fabcheck owns ({', '.join(OWNED_TABLES)})")
        if not isinstance(entries, dict) or not entries:
            raise SonicError(f"{where}: table {table} must be a non-empty object of entries")
        for key, fields in entries.items():
            if not isinstance(fields, dict) or not fields:
                raise SonicError(f"{where}: {table}|{key} must be a non-empty object of fields")
            bad = [f for f, v in fields.items() if not isinstance(v, str)]
            if bad:
                raise SonicError(f"{where}: {table}|{key}: field {bad[0]!r} must be a string")
    return data


def managed_ports(fragment: ConfigDb) -> set[str]:
    return set(fragment.get("PORT", {}))


# -- the patch (pure) ------------------------------------------------------------------------------


def pointer(*parts: str) -> str:
    """RFC 6901 JSON pointer: '~' and '/' inside a key are escaped."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _priority_groups(key: str) -> set[int]:
    """'Ethernet0|3-4' -> {3, 4} (priority groups or queues); an unreadable range owns nothing."""
    _, _, groups = key.partition("|")
    first, _, last = groups.partition("-")
    if not first.isdigit() or not (last or first).isdigit():
        return set()
    return set(range(int(first), int(last or first) + 1))


def _owns(
    scope: Scope, key: str, fields: Mapping[str, str], ports: set[str], wanted: Mapping[str, Any]
) -> bool:
    port = key.partition("|")[0]
    if scope is Scope.NAMED:
        return key.startswith(OWNER_PREFIX)
    if scope in (Scope.PORT, Scope.PORT_FIELDS):
        return port in ports
    if scope is Scope.LOSSLESS_PG:
        if port not in ports:
            return False
        overlap = any(
            w.partition("|")[0] == port and _priority_groups(w) & _priority_groups(key) for w in wanted
        )
        return fields.get("profile") == DYNAMIC_BUFFER_PROFILE or overlap
    return False  # FIELDS: no whole entry is ours


def _field_ops(
    table: str, key: str, have: Mapping[str, str], want: Mapping[str, str], *, drop_extra: bool
) -> Patch:
    ops: Patch = []
    for field, value in want.items():
        path = pointer(table, key, field)
        if field not in have:
            ops.append({"op": "add", "path": path, "value": value})
        elif have[field] != value:
            ops.append({"op": "replace", "path": path, "value": value})
    if drop_extra:
        ops += [{"op": "remove", "path": pointer(table, key, f)} for f in have if f not in want]
    return ops


def _table_ops(
    table: str, scope: Scope, have: Mapping[str, Any], want: Mapping[str, Any], ports: set[str]
) -> Patch:
    if scope is Scope.LOSSLESS_QUEUES:
        return _lossless_queue_ops(table, have, want)
    if scope is Scope.LOSSLESS_PG:
        ports = {key.partition("|")[0] for key in want}  # a port without PFC keeps its groups
    if scope is Scope.FIELDS:
        ops: Patch = []
        for key, fields in want.items():
            ops += _field_ops(table, key, have[key], fields, drop_extra=False)
        return ops
    if not have:
        return [{"op": "add", "path": pointer(table), "value": dict(want)}] if want else []
    stale = [
        key for key, fields in have.items() if key not in want and _owns(scope, key, fields, ports, want)
    ]
    if not want and len(stale) == len(have):
        return [{"op": "remove", "path": pointer(table)}]  # CONFIG_DB holds no empty tables
    ops = [{"op": "remove", "path": pointer(table, key)} for key in sorted(stale, key=port_key_order)]
    for key, fields in want.items():
        if key in have:
            ops += _field_ops(table, key, have[key], fields, drop_extra=scope is not Scope.PORT_FIELDS)
        else:
            ops.append({"op": "add", "path": pointer(table, key), "value": dict(fields)})
    return ops


def _lossless_queue_ops(table: str, have: Mapping[str, Any], want: Mapping[str, Any]) -> Patch:
    """Bind each wanted queue to its profile and leave every other queue's binding as it is.

    A queue already inside a range bound to the wanted profile needs nothing (stock 3-4 holds
    egress_lossless_profile). Otherwise each range holding a wanted queue is split: the wanted queue
    gets its own key, the rest of the range keeps the range's fields (read from the switch, never
    assumed), in runs of consecutive queues."""
    if not have:
        return [{"op": "add", "path": pointer(table), "value": dict(want)}] if want else []
    ops: Patch = []
    wanted: dict[str, dict[int, dict[str, str]]] = {}
    for key, fields in want.items():
        for queue in _priority_groups(key):
            wanted.setdefault(key.partition("|")[0], {})[queue] = dict(fields)
    for port in sorted(wanted, key=port_key_order):
        held = {key: fields for key, fields in have.items() if key.partition("|")[0] == port}
        holder = {queue: key for key in held for queue in _priority_groups(key)}
        changed = {
            queue: fields
            for queue, fields in wanted[port].items()
            if queue not in holder or held[holder[queue]].get("profile") != fields.get("profile")
        }
        if not changed:
            continue
        touched = sorted({holder[queue] for queue in changed if queue in holder}, key=port_key_order)
        layout: dict[str, dict[str, str]] = {}
        for key in touched:
            kept = sorted(_priority_groups(key) - set(changed))
            layout |= {f"{port}|{span}": dict(held[key]) for span in _spans(kept)}
        for profile in sorted({fields["profile"] for fields in changed.values()}):
            queues = sorted(q for q, fields in changed.items() if fields["profile"] == profile)
            layout |= {f"{port}|{span}": {"profile": profile} for span in _spans(queues)}
        ops += [{"op": "remove", "path": pointer(table, key)} for key in touched if key not in layout]
        for key in sorted(layout, key=_queue_key_order):
            if key in held:
                ops += _field_ops(table, key, held[key], layout[key], drop_extra=False)
            else:
                ops.append({"op": "add", "path": pointer(table, key), "value": layout[key]})
    return ops


def _spans(queues: list[int]) -> list[str]:
    """[0, 1, 2, 5] -> ['0-2', '5']: runs of consecutive queues as CONFIG_DB keys spell them."""
    runs: list[list[int]] = []
    for queue in sorted(queues):
        if runs and runs[-1][1] == queue - 1:
            runs[-1][1] = queue
        else:
            runs.append([queue, queue])
    return [f"{first}" if first == last else f"{first}-{last}" for first, last in runs]


def _queue_key_order(key: str) -> tuple[tuple[int, str], int]:
    return (port_key_order(key.partition("|")[0]), min(_priority_groups(key), default=-1))


def disrupted_ports(patch: Patch) -> dict[str, list[str]]:
    """Pure: port -> the tables whose changes make the updater take it admin-down, in port order."""
    found: dict[str, set[str]] = {}
    for op in patch:
        table, *rest = _parts(op["path"])
        if table not in ADMIN_DOWN_TABLES:
            continue
        keys = [rest[0]] if rest else list(op.get("value") or {})
        for key in keys:
            found.setdefault(key.partition("|")[0], set()).add(table)
    return {port: sorted(found[port]) for port in sorted(found, key=port_key_order)}


def disruption_note(patch: Patch) -> str:
    """The plan's line naming the ports the updater will flap ('' when none)."""
    ports = disrupted_ports(patch)
    if not ports:
        return ""
    listed = ", ".join(f"{port} ({'/'.join(tables)})" for port, tables in ports.items())
    return (
        f"disruption: config apply-patch takes {len(ports)} port(s) admin-down and up again while it "
        f"changes their QoS tables: {listed}; roll out one switch at a time with the gate between"
    )


def _leaves(value: Any) -> int:
    return sum(_leaves(v) for v in value.values()) if isinstance(value, Mapping) else 1


def gcu_change_estimate(patch: Patch, running: Mapping[str, Any]) -> int:
    """Pure: how many changes `config apply-patch` sorts `patch` into, at most: one per leaf field it
    adds, replaces or removes (202205's StrictPatchSorter generates low-level moves, one leaf each;
    later releases group some, so fewer), plus, per port whose BUFFER_*/PORT_QOS_MAP/QUEUE entries
    change while it is admin-up, one change taking it down and one bringing it up
    (patch_sorter.RequiredValueIdentifier)."""
    leaves = 0
    for op in patch:
        value = op.get("value") if op["op"] != "remove" else _lookup(running, op["path"])
        leaves += max(1, _leaves(value)) if value is not None else 1
    ports = running.get("PORT", {})
    flapped = [p for p in disrupted_ports(patch) if ports.get(p, {}).get("admin_status", "down") == "up"]
    return leaves + 2 * len(flapped)


def compute_patch(running: Mapping[str, Any], fragment: ConfigDb) -> Patch:
    """Pure: the RFC 6902 patch that takes the owned part of `running` to `fragment`; [] = in sync."""
    ports = managed_ports(fragment)
    missing = sorted(ports - set(running.get("PORT", {})), key=port_key_order)
    if missing:
        have = ", ".join(sorted(running.get("PORT", {}), key=port_key_order)) or "none"
        raise SonicError(f"the switch has no port {', '.join(missing)} (its ports: {have})")
    patch: Patch = []
    for table, owned in OWNED_TABLES.items():
        patch += _table_ops(table, owned.scope, running.get(table, {}), fragment.get(table, {}), ports)
    return patch


def scope_patch(patch: Patch, running: Mapping[str, Any], concerns: frozenset[str]) -> Patch:
    """Pure: the operations of `patch` on fields of `concerns` alone, in order.

    An add or remove of a whole entry (or table) whose fields mix concerns becomes one on the
    entry's fields of `concerns`: the entry is created with only those fields, or only those are
    removed from it, so the other concerns' fields stay exactly as they run."""
    if concerns >= ALL_CONCERNS:
        return list(patch)
    scoped: Patch = []
    for op in patch:
        table, *rest = _parts(op["path"])
        owned = OWNED_TABLES[table]
        if len(rest) >= 2:  # one field
            if owned.field_concerns(rest[1]) <= concerns:
                scoped.append(op)
        elif op["op"] == "add":
            entries = op["value"] if not rest else {rest[0]: op["value"]}
            scoped += _scoped_adds(table, owned, entries, concerns, whole_table=not rest)
        else:
            have = running.get(table, {})
            keys = [rest[0]] if rest else list(have)
            scoped += _scoped_removes(table, owned, {key: have.get(key, {}) for key in keys}, concerns, op)
    return scoped


def _in_scope(owned: Owned, fields: Mapping[str, str], concerns: frozenset[str]) -> dict[str, str]:
    return {field: value for field, value in fields.items() if owned.field_concerns(field) <= concerns}


def _scoped_adds(
    table: str, owned: Owned, entries: Mapping[str, Any], concerns: frozenset[str], *, whole_table: bool
) -> Patch:
    kept = {key: fields for key, f in entries.items() if (fields := _in_scope(owned, f, concerns))}
    if not kept:
        return []
    if whole_table:
        return [{"op": "add", "path": pointer(table), "value": kept}]
    ((key, fields),) = kept.items()
    return [{"op": "add", "path": pointer(table, key), "value": fields}]


def _scoped_removes(
    table: str, owned: Owned, entries: Mapping[str, Any], concerns: frozenset[str], op: dict[str, Any]
) -> Patch:
    if all(_in_scope(owned, fields, concerns) == fields for fields in entries.values()):
        return [op]  # every field removed is of the chosen concerns
    return [
        {"op": "remove", "path": pointer(table, key, field)}
        for key, fields in entries.items()
        for field in _in_scope(owned, fields, concerns)
    ]


def _parts(path: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def port_key_order(key: str) -> tuple[int, str]:
    """Ethernet4|3 before Ethernet12|0, as SONiC lists ports."""
    port, _, rest = key.partition("|")
    digits = "".join(c for c in port if c.isdigit())
    return (int(digits) if digits else -1, f"{port}|{rest}")


def _lookup(running: Mapping[str, Any], path: str) -> Any:
    node: Any = running
    for part in _parts(path):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def describe_patch(patch: Patch, running: Mapping[str, Any]) -> str:
    """One line per operation, in GCU's terms, with the value it replaces or removes."""

    def show(value: Any) -> str:
        return json.dumps(value, sort_keys=True)

    lines = []
    for op in patch:
        before = _lookup(running, op["path"])
        if op["op"] == "add":
            lines.append(f"add {op['path']}: {show(op['value'])}")
        elif op["op"] == "replace":
            lines.append(f"replace {op['path']}: {show(before)} -> {show(op['value'])}")
        else:
            lines.append(f"remove {op['path']}: {show(before)}")
    return "\n".join(lines)


def managed_state(running: Mapping[str, Any]) -> dict[str, Any]:
    """The tables fabcheck writes, as CONFIG_DB holds them (PORT: only its mtu field)."""
    state = {t: running[t] for t in OWNED_TABLES if t != "PORT" and t in running}
    ports = running.get("PORT", {})
    state["PORT"] = {p: {"mtu": f["mtu"]} for p, f in ports.items() if "mtu" in f}
    return state


def owned_state(db: Mapping[str, Any], fragment: ConfigDb) -> dict[str, Any]:
    """The part of a CONFIG_DB a push of `fragment` owns: the entries its patch would write or remove
    (compute_patch: FABCHECK names, the managed ports' entries, their lossless priority groups), and
    of a table it writes only fields of (PORT, PFC_WD), the fields it renders. The stock AZURE maps
    and profiles, an operator's own and every unmanaged port are not in it."""
    ports = managed_ports(fragment)
    state: dict[str, Any] = {}
    for table, owned in OWNED_TABLES.items():
        want = fragment.get(table, {})
        kept: dict[str, Any] = {}
        for key, fields in db.get(table, {}).items():
            if not isinstance(fields, Mapping):
                continue
            if owned.scope is Scope.FIELDS or (owned.scope is Scope.PORT_FIELDS and key in want):
                rendered = want.get(key, {})
                kept[key] = {field: value for field, value in fields.items() if field in rendered}
            elif key in want or _owns(owned.scope, key, fields, ports, want):
                kept[key] = dict(fields)
        if kept := {key: fields for key, fields in kept.items() if fields}:
            state[table] = kept
    return state
