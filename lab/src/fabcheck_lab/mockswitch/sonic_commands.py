"""SONiC CLI commands the mock implements: show, config (click), ecnconfig, sonic-db-cli, sonic-cfggen."""

from __future__ import annotations

import copy
import datetime
import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import jsonpatch

from fabcheck_lab.mockswitch import sonic_show as show
from fabcheck_lab.mockswitch import sonic_wire
from fabcheck_lab.mockswitch.sonic_db import (
    LOSSLESS_PROFILE,
    WRED_COLORS,
    ConfigDbError,
    config_problems,
    priority_list,
    simulate_patch,
)
from fabcheck_lab.mockswitch.sonic_shell import FileSystem, Result

if TYPE_CHECKING:
    from fabcheck_lab.mockswitch.sonic import SonicDevice

NEED_ROOT = "Root privileges are required for this operation"
CHECKPOINT_DIR = "/etc/sonic/checkpoints"
# The generic config updater applies about one change a second; the lab runs it LAB_TIME_SCALE
# times faster (10 ms a change) so that a 300-change push still takes seconds, not minutes.
PER_CHANGE_S = 1.0
SUPPORTED_SPEEDS_MBPS = ("10000", "25000", "40000", "50000", "100000", "200000", "400000")
LAB_TIME_SCALE = 0.01
# Tables whose changes need the port admin-down (sonic-utilities patch_sorter RequiredValueIdentifier).
ADMIN_DOWN_TABLES = (
    "BUFFER_PG",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_QUEUE",
    "PORT_QOS_MAP",
    "QUEUE",
)
# GCU's field-operation validators (sonic-utilities generic_config_updater: gu_common.ConfigWrapper.
# validate_field_operation, field_operation_validators.rdma_config_update_validator and its
# gcu_field_operation_validators.conf.json, at the commits tests/data/real/sonic/INDEX.tsv cites).
# They judge JsonPatch.from_diff(running, target), not the operations sent.
GCU_ILLEGAL_REMOVES = ("/PFC_WD/GLOBAL/POLL_INTERVAL", "/PFC_WD/GLOBAL")
PFC_WD_VALIDATOR = "generic_config_updater.field_operation_validators.rdma_config_update_validator"
PFC_WD_OPERATIONS = ("remove", "add", "replace")
# The PFC_WD fields the validator allows: pfc_stat_history from 202511 on (sonic-utilities #4102).
PFC_WD_FIELDS_BEFORE_202511 = ("restoration_time", "detection_time", "action", "global/poll_interval", "")
PFC_WD_FIELDS = (*PFC_WD_FIELDS_BEFORE_202511[:4], "pfc_stat_history", "")
STAT_HISTORY_BRANCH = "202511"
# hwsku -> ASIC for the Mellanox SKUs (helper_data mellanox_asics at master, trimmed to the families'
# ACS and SN4700/SN5600 SKUs) and each ASIC's minimum 8-digit build for PFC_WD.
MELLANOX_ASICS = {
    "spc1": ("ACS-MSN2700", "ACS-MSN2740", "ACS-MSN2100", "ACS-MSN2410", "ACS-MSN2010", "Mellanox-SN2700"),
    "spc2": ("ACS-MSN3800", "Mellanox-SN3800-D112C8", "ACS-MSN3420", "ACS-MSN3700C", "ACS-MSN3700"),
    "spc3": (
        "ACS-MSN4700",
        "ACS-MSN4600",
        "ACS-MSN4600C",
        "ACS-MSN4410",
        "Mellanox-SN4600C-C64",
        "Mellanox-SN4700-O8C48",
        "Mellanox-SN4700-O28",
    ),
    "spc4": ("ACS-SN5600", "Mellanox-SN5600-O128", "Mellanox-SN5600-V256", "ACS-SN5400"),
}
PFC_WD_MIN_BUILD = {"spc1": "20181100", "spc2": "20191100", "spc3": "20220500", "spc4": "20221100"}


def _asic_of(hwsku: str) -> str:
    for asic, skus in MELLANOX_ASICS.items():
        if hwsku.lower() in (sku.lower() for sku in skus):
            return asic
    return "unknown"


def _branch_build(release: str) -> str | None:
    """The 8-digit build GCU compares ('20220531' of '20220531.18'); None for '202205.263207-...'."""
    found = [part for part in release.split(".") if re.fullmatch(r"\d{8}", part)]
    return found[-1] if found else None


def _pfc_wd_op_allowed(op: dict, hwsku: str, release: str) -> bool:
    asic = _asic_of(hwsku)
    if asic == "unknown":
        return False
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    cleaned = "/".join(p for p in parts[1:] if not any(ch.isdigit() for ch in p)).lower()
    value = op.get("value")
    fields = [f"{cleaned}/{k}" if cleaned else k for k in value] if isinstance(value, dict) else [cleaned]
    branch = _branch_build(release)
    newer = release[:6].isdigit() and release[:6] >= STAT_HISTORY_BRANCH
    allowed = PFC_WD_FIELDS if newer else PFC_WD_FIELDS_BEFORE_202511
    for field in fields:
        if field not in allowed or op["op"] not in PFC_WD_OPERATIONS:
            return False
        if branch is not None and branch < PFC_WD_MIN_BUILD[asic]:
            return False
    return True


def field_validator_refusal(running: dict, target: dict, hwsku: str, release: str) -> str:
    """GCU's verdict on the diff from `running` to `target` ('' = allowed), in its own words."""
    diff = list(jsonpatch.JsonPatch.from_diff(running, target))
    for op in diff:
        if op["op"] == "remove" and op["path"] in GCU_ILLEGAL_REMOVES:
            return f"Given patch operation is invalid. Operation: remove is illegal on field: {op['path']}"
    for op in diff:
        if op["path"].split("/")[1] == "PFC_WD" and not _pfc_wd_op_allowed(op, hwsku, release):
            return (
                f"Modification of PFC_WD table is illegal- validating function {PFC_WD_VALIDATOR} "
                "returned False"
            )
    return ""


def sorted_changes(patch: list, db: dict) -> list[dict]:
    """The patch as the updater applies it: one change per operation, each port whose QoS tables
    change taken admin-down before its first change and up after its last."""
    ports: dict[str, None] = {}
    for op in patch:
        parts = [p for p in op.get("path", "").split("/")[1:] if p]
        if parts and parts[0] in ADMIN_DOWN_TABLES:
            keys = [parts[1]] if len(parts) > 1 else list(op.get("value") or {})
            ports.update(dict.fromkeys(key.split("|")[0] for key in keys))
    up = [p for p in ports if db.get("PORT", {}).get(p, {}).get("admin_status", "up") == "up"]
    down = [{"op": "replace", "path": f"/PORT/{p}/admin_status", "value": "down"} for p in up]
    back = [{"op": "replace", "path": f"/PORT/{p}/admin_status", "value": "up"} for p in up]
    return [*down, *patch, *back]


_ECN_OPTIONS = {
    f"-{c[0]}{k}": f"{c}_{field}"
    for c in WRED_COLORS
    for k, field in (("min", "min_threshold"), ("max", "max_threshold"), ("drop", "drop_probability"))
}


# PatchApplier.apply's console lines (gu_common.TitledLogger prefixes 'Patch Applier: '): 202405 on
# name the scope (localhost) and list the changes once; 202205-202311 name none and list them twice,
# 'The patch was sorted into' up to 202211, 'converted into' from 202305 (generic_updater.py at the
# commits tests/data/real/sonic/INDEX.tsv cites).
SCOPED_LOG_BRANCH = "202405"
CONVERTED_LOG_BRANCH = "202305"
_LEGACY_LINES = {
    "start": "Patch application starting.",
    "patch": "Patch: {}",
    "get": "Getting current config db.",
    "simulate": "Simulating the target full config after applying the patch.",
    "validate": "Validating all JsonPatch operations are permitted on the specified fields",
    "empty": "Validating target config does not have empty tables, since they do not show up in ConfigDb.",
    "sort": "Sorting patch updates.",
    "sorted": "The patch was sorted into {count} change{plural}{colon}",
    "applying": "Applying {count} change{plural} in order{colon}",
    "verify": "Verifying patch updates are reflected on ConfigDB.",
    "done": "Patch application completed.",
}
_SCOPED_LINES = {
    "start": "localhost: Patch application starting.",
    "patch": "localhost: Patch: {}",
    "get": "localhost getting current config db.",
    "simulate": "localhost: simulating the target full config after applying the patch.",
    "validate": "localhost: validating all JsonPatch operations are permitted on the specified fields",
    "empty": "localhost: validating target config does not have empty tables, since they do not show up in "
    "ConfigDb.",
    "sort": "localhost: sorting patch updates.",
    "sorted": "The localhost patch was converted into {count} change{plural}{colon}",
    "applying": "localhost: applying {count} change{plural} in order{colon}",
    "verify": "localhost: verifying patch updates are reflected on ConfigDB.",
    "done": "localhost patch application completed.",
}


def _log(lines: dict[str, str], step: str, text: str = "", count: int = 0) -> str:
    plural, colon = ("s" if count != 1 else ""), (":" if count else ".")
    return "Patch Applier: " + lines[step].format(text, count=count, plural=plural, colon=colon)


def _legacy_log(step: str, text: str = "", count: int = 0) -> str:
    return _log(_LEGACY_LINES, step, text, count)


def _scoped_log(step: str, text: str = "", count: int = 0) -> str:
    return _log(_SCOPED_LINES, step, text, count)


def click_error(command: str, usage: str, message: str) -> Result:
    return Result(
        err=f'Usage: {command} [OPTIONS] {usage}\nTry "{command} -h" for help.\n\nError: {message}', status=2
    )


def confirm_text(answer: str) -> bool:
    return answer.strip().lower() in ("y", "yes")


class SonicCommands:
    """Implements each command on one device; `root` says whether the caller is root (sudo)."""

    def __init__(
        self, device: SonicDevice, fs: FileSystem, ask: Callable[[str, Callable[[str], str]], None]
    ) -> None:
        self.device = device
        self.fs = fs
        self.ask = ask  # prompt the user and call back with the answer line

    @property
    def db(self) -> dict:
        return self.device.running

    # -- show ------------------------------------------------------------------------------------
    def show(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        args = argv[1:]
        ports = list(self.device.ports)
        picked = [a for a in args if a.startswith("Ethernet")]
        unknown = [p for p in picked if p not in ports]
        if unknown:
            return Result(err=f"Invalid interface name {unknown[0]}", status=1)
        chosen = picked or ports
        dev = self.device
        if args[:2] == ["pfc", "priority"]:
            return Result(show.pfc_priority(self.db, chosen) + "\n")
        if args[:2] == ["pfc", "counters"]:
            dev.refresh_counters()
            return Result(show.pfc_counters(dev.counters, chosen) + "\n")
        if args[:2] == ["queue", "counters"]:
            dev.refresh_counters()
            as_json = "-j" in args or "--json" in args
            read_at = datetime.datetime.now().isoformat()
            cleared = dev.queue_counters_cleared
            return Result(show.queue_counters(dev.counters, chosen, as_json, read_at, cleared) + "\n")
        if args[:2] == ["queue", "wredcounters"]:
            dev.refresh_counters()
            return Result(show.wred_counters(dev.counters, chosen) + "\n")
        if args == ["ecn"]:
            return Result(show.ecn_profiles(self.db) + "\n")
        if args[:2] == ["pfcwd", "config"]:
            return Result(show.pfcwd_config(self.db, chosen) + "\n")
        if args[:2] == ["pfcwd", "stats"]:
            return Result(show.pfcwd_stats(self.db, chosen) + "\n")
        if args == ["runningconfiguration", "all"]:
            return Result(show.running_configuration_all(self.db) + "\n")
        wire = sonic_wire.show_interfaces(dev, args, chosen) if args[:1] == ["interfaces"] else None
        if wire is not None:
            return wire
        if args[:2] == ["interfaces", "status"]:
            return Result(show.interfaces_status(self.db, chosen) + "\n")
        if args == ["version"]:
            metadata = self.db.get("DEVICE_METADATA", {}).get("localhost", {})
            return Result(show.version(dev.name, dev.release, metadata) + "\n")
        if args == ["lldp", "table"]:
            return Result(show.lldp_table(dev.lldp_neighbors()) + "\n")
        if not args:
            return click_error("show", "COMMAND [ARGS]...", "Missing command.")
        return click_error("show", "COMMAND [ARGS]...", f'No such command "{args[0]}".')

    # -- config ----------------------------------------------------------------------------------
    def config(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        if not root:
            return Result(err=NEED_ROOT, status=1)
        args = argv[1:]
        if not args:
            return click_error("config", "COMMAND [ARGS]...", "Missing command.")
        handlers = {
            "save": self._save,
            "reload": self._reload,
            "interface": self._interface,
            "ecn": self._ecn,
            "apply-patch": self._apply_patch,
            "checkpoint": self._checkpoint,
            "rollback": self._rollback,
            "list-checkpoints": self._list_checkpoints,
            "delete-checkpoint": self._delete_checkpoint,
            "replace": self._replace,
            "pfcwd": self._pfcwd,
            "qos": self._qos,
        }
        handler = handlers.get(args[0])
        if handler is None:
            return click_error("config", "COMMAND [ARGS]...", f'No such command "{args[0]}".')
        return handler(args[1:], stdin)

    def _save(self, args: list[str], stdin: str | None) -> Result:
        def do_save() -> str:
            self.device.startup = copy.deepcopy(self.db)
            return "Running command: /usr/local/bin/sonic-cfggen -d --print-data > /etc/sonic/config_db.json"

        if "-y" in args or "--yes" in args:
            return Result(do_save() + "\n")
        self.ask(
            "Existing files will be overwritten, continue? [y/N]: ",
            lambda answer: do_save() if confirm_text(answer) else "Aborted!",
        )
        return Result()

    def _reload(self, args: list[str], stdin: str | None) -> Result:
        def do_reload() -> str:
            self.device.running = copy.deepcopy(self.device.startup)
            return "\n".join(
                [
                    "Acquired lock on /etc/sonic/reload.lock",
                    "Disabling container monitoring ...",
                    "Stopping SONiC target ...",
                    "Running command: /usr/local/bin/sonic-cfggen -j /etc/sonic/config_db.json --write-to-db",
                    "Restarting SONiC target ...",
                    "Enabling container monitoring ...",
                    "Released lock on /etc/sonic/reload.lock",
                ]
            )

        if "-y" in args or "--yes" in args:
            return Result(do_reload() + "\n")
        self.ask(
            "Clear current config and reload config in config_db format from the default config file(s) ? "
            "[y/N]: ",
            lambda answer: do_reload() if confirm_text(answer) else "Aborted!",
        )
        return Result()

    def _interface(self, args: list[str], stdin: str | None) -> Result:
        ports = self.device.ports
        if args[:2] == ["pfc", "priority"]:
            usage = "<interface_name> <priority> <status>"
            rest = args[2:]
            if len(rest) != 3:
                return click_error("config interface pfc priority", usage, "Missing argument.")
            port, prio, status = rest
            if port not in ports:
                return click_error("config interface pfc priority", usage, f"Cannot find interface {port}")
            if prio not in [str(i) for i in range(8)]:
                return click_error(
                    "config interface pfc priority",
                    usage,
                    f'Invalid value for "<priority>": '
                    f"invalid choice: {prio}. (choose from 0, 1, 2, 3, 4, 5, 6, 7)",
                )
            if status not in ("on", "off"):
                return click_error(
                    "config interface pfc priority",
                    usage,
                    f'Invalid value for "<status>": invalid choice: {status}. (choose from on, off)',
                )
            entry = self.db.setdefault("PORT_QOS_MAP", {}).setdefault(port, {})
            current = set(priority_list(entry.get("pfc_enable", "")))
            current = current | {int(prio)} if status == "on" else current - {int(prio)}
            entry["pfc_enable"] = ",".join(str(p) for p in sorted(current))
            return Result(show.pfc_priority(self.db, [port]) + "\n")
        if args[:1] == ["mtu"]:
            usage = "<interface_name> <interface_mtu>"
            if len(args) != 3:
                return click_error("config interface mtu", usage, "Missing argument.")
            port, mtu = args[1:]
            if port not in ports:
                return click_error("config interface mtu", usage, f"Interface name {port} is invalid")
            if not mtu.isdigit() or not 68 <= int(mtu) <= 9216:
                return click_error(
                    "config interface mtu",
                    usage,
                    f'Invalid value for "<interface_mtu>": {mtu} is not in the valid range of 68 to 9216.',
                )
            self.db["PORT"][port]["mtu"] = mtu
            return Result()
        if args[:1] == ["speed"]:
            return self._interface_speed(args[1:])
        return click_error(
            "config interface", "COMMAND [ARGS]...", f'No such command "{args[:1] and args[0]}".'
        )

    def _interface_speed(self, args: list[str]) -> Result:
        """`config interface speed PORT MBPS` (sonic-utilities config/main.py: CONFIG_DB PORT speed in
        Mb/s, through scripts/portconfig, which refuses a speed the port does not support; its message
        is unverified). The mock's ports take the Spectrum/Tomahawk Ethernet rates."""
        usage = "<interface_name> <interface_speed>"
        if len(args) != 2:
            return click_error("config interface speed", usage, "Missing argument.")
        port, speed = args
        if port not in self.device.ports:
            return click_error("config interface speed", usage, f"Interface name {port} is invalid")
        if speed not in SUPPORTED_SPEEDS_MBPS:
            valid = ",".join(SUPPORTED_SPEEDS_MBPS)
            return Result(f"Invalid speed specified: {speed}\nValid speeds:{valid}\n", status=1)
        self.db["PORT"][port]["speed"] = speed
        return Result()

    # What `config qos reload` clears before it renders the platform's buffers and QoS templates again
    # (sonic-utilities config/main.py, _clear_qos); PFC_WD is not among them.
    QOS_TABLES = (
        "PORT_QOS_MAP",
        "QUEUE",
        "TC_TO_PRIORITY_GROUP_MAP",
        "MAP_PFC_PRIORITY_TO_QUEUE",
        "TC_TO_QUEUE_MAP",
        "DSCP_TO_TC_MAP",
        "MPLS_TC_TO_TC_MAP",
        "SCHEDULER",
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
        "WRED_PROFILE",
        "CABLE_LENGTH",
        "BUFFER_PG",
        "BUFFER_QUEUE",
        "BUFFER_PORT_INGRESS_PROFILE_LIST",
        "BUFFER_PORT_EGRESS_PROFILE_LIST",
        "BUFFER_PROFILE",
        "BUFFER_POOL",
        "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
        "LOSSLESS_TRAFFIC_PATTERN",
    )

    def _qos(self, args: list[str], stdin: str | None) -> Result:
        """`config qos reload`: every QoS table back to what the platform's templates render (the mock's
        factory tables), whatever was pushed or typed since."""
        if args[:1] != ["reload"]:
            return click_error(
                "config qos", "COMMAND [ARGS]...", f'No such command "{args[:1] and args[0]}".'
            )
        factory = self.device.factory_config()
        for table in self.QOS_TABLES:
            self.db.pop(table, None)
            if table in factory:
                self.db[table] = copy.deepcopy(factory[table])
        return Result()

    def _pfcwd(self, args: list[str], stdin: str | None) -> Result:
        """`config pfcwd start [--action A] [--restoration-time R] PORTS... DETECTION_MS`, `stop`,
        `interval MS`, as sonic-utilities config/main.py and pfcwd/main.py write PFC_WD: start replaces
        each port's entry (restoration 2x detection when not given, said so), skips a port without
        pfc_enable with a warning; stop deletes every port's entry."""
        db, ports = self.db, list(self.device.ports)
        table = db.setdefault("PFC_WD", {})
        if args[:1] == ["stop"]:
            for port in ports:
                table.pop(port, None)
            return Result()
        if args[:1] == ["interval"] and len(args) == 2 and args[1].isdigit() and 100 <= int(args[1]) <= 1000:
            table.setdefault("GLOBAL", {})["POLL_INTERVAL"] = args[1]
            return Result()
        if args[:1] != ["start"]:
            return click_error(
                "config pfcwd", "COMMAND [ARGS]...", f'No such command "{args[:1] and args[0]}".'
            )
        usage = "[OPTIONS] [PORTS]... DETECTION_TIME"
        options, positional, words = {}, [], iter(args[1:])
        for word in words:
            if word in ("--action", "-a", "--restoration-time", "-r"):
                options[word.lstrip("-")[0]] = next(words, "")
            elif word != "--verbose":
                positional.append(word)
        if not positional:
            return click_error("config pfcwd start", usage, "Missing argument 'DETECTION_TIME'.")
        detection, chosen = positional[-1], positional[:-1]
        if not detection.isdigit() or not 100 <= int(detection) <= 5000:
            return click_error(
                "config pfcwd start",
                usage,
                f"Invalid value for 'DETECTION_TIME': {detection} is not in the range 100<=x<=5000.",
            )
        action = options.get("a")
        if action is not None and action not in ("drop", "forward", "alert"):
            return click_error(
                "config pfcwd start",
                usage,
                f"Invalid value for '--action' / '-a': '{action}' is not one of 'drop', 'forward', 'alert'.",
            )
        restoration, said = options.get("r"), []
        if restoration is None:
            restoration = str(2 * int(detection))
            said.append(f"restoration time not defined; default to 2 times detection time: {restoration} ms")
        elif not restoration.isdigit() or not 100 <= int(restoration) <= 60000:
            return click_error(
                "config pfcwd start",
                usage,
                f"Invalid value for '--restoration-time' / '-r': {restoration} is not in the range "
                "100<=x<=60000.",
            )
        targets = ports if not chosen or "all" in chosen else [p for p in chosen if p in ports]
        for port in targets:
            if "pfc_enable" not in db.get("PORT_QOS_MAP", {}).get(port, {}):
                said.append(f"SKIPPED: PFC is not enabled on port: {port}")
                continue
            history = table.get(port, {}).get("pfc_stat_history", "disable")
            entry = {
                "detection_time": detection,
                "restoration_time": restoration,
                "pfc_stat_history": history,
            }
            if action is not None:
                entry["action"] = action
            table[port] = entry
        return Result("".join(line + "\n" for line in said))

    def _ecn(self, args: list[str], stdin: str | None) -> Result:
        return self.set_wred(args, "config ecn")

    def set_wred(self, args: list[str], command: str) -> Result:
        """Update WRED_PROFILE thresholds (`config ecn -profile P -gmin N ...`, `ecnconfig -p P ...`)."""
        pairs = iter(args)
        profile, updates = None, {}
        for option in pairs:
            if option == "-v":
                continue
            value = next(pairs, None)
            if value is None:
                return click_error(command, "", f"Option {option} requires an argument")
            if option in ("-profile", "-p"):
                profile = value
            elif option in _ECN_OPTIONS and value.isdigit():
                updates[_ECN_OPTIONS[option]] = value
            else:
                return click_error(command, "", f"Invalid option or value: {option} {value}")
        profiles = self.db.get("WRED_PROFILE", {})
        if profile not in profiles:
            return Result(err=f"Invalid profile name {profile}", status=1)
        candidate = copy.deepcopy(self.db)
        candidate["WRED_PROFILE"][profile].update(updates)
        problems = config_problems(candidate, self.device.ports)
        if problems:
            return Result(err="; ".join(problems), status=1)
        profiles[profile].update(updates)
        return Result()

    def _patch_text(self, path: str, stdin: str | None) -> str | None:
        if path in ("/dev/stdin", "-"):
            return stdin
        return self.fs.read(path)

    def _apply_patch(self, args: list[str], stdin: str | None) -> Result:
        usage = "PATCH_FILE_PATH"
        paths = [a for a in args if not a.startswith("-")]
        if len(paths) != 1:
            return click_error("config apply-patch", usage, 'Missing argument "PATCH_FILE_PATH".')
        text = self._patch_text(paths[0], stdin)
        if text is None:
            return click_error(
                "config apply-patch",
                usage,
                f'Invalid value for "PATCH_FILE_PATH": Path "{paths[0]}" does not exist.',
            )
        dry_run = "-d" in args or "--dry-run" in args
        release = self.device.release
        legacy = not (release[:6].isdigit() and release[:6] >= SCOPED_LOG_BRANCH)
        say = _legacy_log if legacy else _scoped_log
        lines = ["** DRY RUN EXECUTION **"] if dry_run else []
        lines.append(say("start"))
        try:
            patch = json.loads(text)
            lines.append(say("patch", json.dumps(patch)))
            lines += [say("get"), say("simulate")]
            target = simulate_patch(self.db, patch)
            lines.append(say("validate"))
            hwsku = self.db.get("DEVICE_METADATA", {}).get("localhost", {}).get("hwsku", "")
            refused = field_validator_refusal(self.db, target, hwsku, release)
            if refused:
                raise ConfigDbError(refused)
            lines.append(say("empty"))
            problems = config_problems(target, self.device.ports)
            if problems:
                raise ConfigDbError("Given patch will produce invalid config. Error: " + "; ".join(problems))
        except (ValueError, ConfigDbError) as exc:
            reason = f"Invalid patch JSON: {exc}" if isinstance(exc, ValueError) else str(exc)
            fail = click_error("config apply-patch", usage, reason)
            head = "Failed to apply patch" if legacy else f"Failed to apply patch due to: {reason}"
            return Result(out="\n".join(lines) + "\n", err=f"{head}\n{fail.err}", status=1)
        lines.append(say("sort"))
        changes = sorted_changes(patch, self.db)
        listed = [f"Patch Applier:   * {json.dumps([change])}" for change in changes]
        sorted_line = say("sorted", count=len(changes))
        if legacy and release[:6] >= CONVERTED_LOG_BRANCH:
            sorted_line = sorted_line.replace("sorted into", "converted into")
        lines.append(sorted_line)
        if legacy:
            lines += listed  # 202205-202311 list the sorted changes, then again while applying them
        lines.append(say("applying", count=len(changes)))
        for change, line in zip(changes, listed, strict=True):
            lines.append(line)
            if not dry_run:
                time.sleep(PER_CHANGE_S * LAB_TIME_SCALE)  # the updater's pace, scaled for the lab
                if change["path"].endswith("/admin_status"):
                    port = change["path"].split("/")[2]
                    self.device.port_flaps[port] = self.device.port_flaps.get(port, 0) + (
                        change["value"] == "down"
                    )
                    self.device.record("gcu", "port", f"{port} admin {change['value']}")
        lines += [say("verify"), say("done")]
        if not dry_run:
            self.device.running = target
        lines.append("Patch applied successfully.")
        return Result("\n".join(lines) + "\n")

    def _checkpoint(self, args: list[str], stdin: str | None) -> Result:
        if len(args) != 1:
            return click_error("config checkpoint", "CHECKPOINT_NAME", 'Missing argument "CHECKPOINT_NAME".')
        name = args[0]
        self.device.checkpoints[name] = copy.deepcopy(self.db)
        return Result(
            "\n".join(
                [
                    "Config Rollbacker: Config checkpoint starting.",
                    f"Config Rollbacker: Checkpoint name: {name}.",
                    "Config Rollbacker: Getting current config db.",
                    f"Config Rollbacker: Saving config db content to {CHECKPOINT_DIR}/{name}.cp.json.",
                    "Config Rollbacker: Config checkpoint completed.",
                    "Checkpoint created successfully.",
                ]
            )
            + "\n"
        )

    def _rollback(self, args: list[str], stdin: str | None) -> Result:
        if len(args) != 1:
            return click_error("config rollback", "CHECKPOINT_NAME", 'Missing argument "CHECKPOINT_NAME".')
        name = args[0]
        head = [
            "Config Rollbacker: Config rollbacking starting.",
            f"Config Rollbacker: Checkpoint name: {name}.",
            f"Config Rollbacker: Verifying '{name}' exists.",
        ]
        saved = self.device.checkpoints.get(name)
        if saved is None:
            reason = f"Checkpoint '{name}' does not exist"
            fail = click_error("config rollback", "CHECKPOINT_NAME", reason)
            return Result(
                out="\n".join(head) + "\n",
                err=f"Failed to rollback config due to: {reason}\n{fail.err}",
                status=1,
            )
        self.device.running = copy.deepcopy(saved)
        return Result(
            "\n".join(
                [
                    *head,
                    "Config Rollbacker: Loading checkpoint into memory.",
                    "Config Rollbacker: Replacing config using 'Config Replacer'.",
                    "Config Replacer: Config replacement starting.",
                    "Config Replacer: Config replacement completed.",
                    "Config Rollbacker: Config rollbacking completed.",
                    "Config rolled back successfully.",
                ]
            )
            + "\n"
        )

    def _list_checkpoints(self, args: list[str], stdin: str | None) -> Result:
        return Result(json.dumps(sorted(self.device.checkpoints), indent=4) + "\n")

    def _delete_checkpoint(self, args: list[str], stdin: str | None) -> Result:
        if len(args) != 1 or self.device.checkpoints.pop(args[0], None) is None:
            name = args[0] if args else ""
            return Result(
                err=f"Failed to delete checkpoint due to: Checkpoint '{name}' does not exist", status=1
            )
        return Result("Checkpoint deleted successfully.\n")

    def _replace(self, args: list[str], stdin: str | None) -> Result:
        paths = [a for a in args if not a.startswith("-")]
        text = self._patch_text(paths[0], stdin) if paths else None
        if text is None:
            return click_error("config replace", "TARGET_FILE_PATH", 'Missing argument "TARGET_FILE_PATH".')
        try:
            target = json.loads(text)
        except ValueError as exc:
            return Result(err=f"Failed to replace config due to: {exc}", status=1)
        problems = config_problems(target, self.device.ports)
        if problems:
            return Result(err="Failed to replace config due to: " + "; ".join(problems), status=1)
        self.device.running = target
        return Result("Config replaced successfully.\n")

    # -- ecnconfig / db tools --------------------------------------------------------------------
    def ecnconfig(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        args = argv[1:]
        if args == ["-l"]:
            return Result(show.ecn_profiles(self.db) + "\n")
        if args[:1] == ["-q"] and len(args) in (2, 3):
            queues = args[1].split(",")
            if not all(q in [str(i) for i in range(8)] for q in queues):
                return Result(err=f"Invalid queue index: {args[1]}", status=1)
            if len(args) == 2:
                return Result(
                    show.ecn_queue_status(self.db, self.device.ports, [int(q) for q in queues]) + "\n"
                )
            if not root:
                return Result(err="Root privileges required for this operation", status=1)
            if args[2] not in ("on", "off"):
                return Result(err=f"Invalid ECN status: {args[2]}", status=1)
            self._set_queue_ecn(queues, args[2] == "on")
            return Result()
        if args[:1] == ["-p"]:
            if not root:
                return Result(err="Root privileges required for this operation", status=1)
            return self.set_wred(args, "ecnconfig")
        return Result(err="usage: ecnconfig [-h] [-l] [-p PROFILE] [-q QUEUE [{on,off}]] ...", status=2)

    def _set_queue_ecn(self, queues: list[str], enable: bool) -> None:
        table = self.db.setdefault("QUEUE", {})
        for port in self.device.ports:
            for queue in queues:
                entry = table.setdefault(f"{port}|{queue}", {})
                if enable:
                    entry["wred_profile"] = LOSSLESS_PROFILE
                else:
                    entry.pop("wred_profile", None)
                    if not entry:
                        del table[f"{port}|{queue}"]

    def db_cli(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        args = argv[1:]
        if args[:1] != ["CONFIG_DB"] or len(args) < 3:
            return Result(err="usage: sonic-db-cli [-h] [-s] [-n NAMESPACE] db_or_op [cmd ...]", status=2)
        verb, rest = args[1].lower(), args[2:]
        if verb == "hgetall" and len(rest) == 1:
            return Result(show.hgetall(self.db, rest[0]) + "\n")
        if verb == "hget" and len(rest) == 2:
            table, _, key = rest[0].partition("|")
            value = self.db.get(table, {}).get(key, {}).get(rest[1])
            return Result("" if value is None else value + "\n")
        if verb == "hset" and len(rest) >= 3 and len(rest) % 2 == 1:
            # `sonic-db-cli CONFIG_DB hset 'PFC_WD|Ethernet0' action alert`: redis answers the number of
            # fields it added (0 when they existed and were overwritten).
            table, _, key = rest[0].partition("|")
            entry = self.db.setdefault(table, {}).setdefault(key, {})
            added = 0
            for name, value in zip(rest[1::2], rest[2::2], strict=True):
                added += name not in entry
                entry[name] = value
            return Result(f"{added}\n")
        if verb == "keys" and len(rest) == 1:
            found = show.keys(self.db, rest[0])
            return Result(found + "\n" if found else "")
        return Result(err=f"(error) ERR unknown command '{args[1]}'", status=1)

    def cfggen(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        if "-d" in argv and "--print-data" in argv:
            return Result(show.config_json(self.db) + "\n")
        return Result(err="usage: sonic-cfggen [-h] [-d] [--print-data] ...", status=2)

    def clear(self, argv: list[str], root: bool, stdin: str | None) -> Result:
        kinds = {
            "pfccounters": ("pfc_rx", "pfc_tx"),
            "queuecounters": ("tx_packets", "tx_bytes", "drops", "ecn_marked"),
        }
        if len(argv) != 2 or argv[1] not in kinds:
            return click_error(
                "sonic-clear", "COMMAND [ARGS]...", f'No such command "{argv[1:] and argv[1]}".'
            )
        self.device.counters.clear(self.device.ports, kinds[argv[1]])
        if argv[1] == "queuecounters":  # queuestat now prints differences from this snapshot
            self.device.queue_counters_cleared = True
        return Result("Cleared counters\n")
