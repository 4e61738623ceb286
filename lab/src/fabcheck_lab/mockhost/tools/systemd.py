"""Mock systemd and udev of a lab node: generic unit files, enablement, oneshot starts, boots, udev events.

Runs inside the node: ExecStart and RUN programs must run in the node's environment. Only the read
verbs on a unit the node's own /etc/systemd/system defines are served (served_systemctl says when).
Unit files are read from the node's own unit folders exactly as systemd searches them; a unit is
loaded on first use and kept until `daemon-reload`, so a unit file changed on disk without a reload
runs its old definition (with systemd's warning). `enable` makes the [Install] symlinks under
/etc/systemd/system, so enablement survives a simulated reboot like on a real host. Runtime state
(loaded units, what is active) lives in the node's state folder and a boot clears it.

The opensm unit names are subnet_manager's (its systemctl is called unchanged for them).
`fabcheck-mock-boot` is the boot: every unit enabled through the node's systemctl runs, in After=/Before=
order (units the lab machine itself has enabled, seen through the overlay, are not the node's).
`udevadm trigger --action=add --subsystem-match=S --sysname-match=N` runs the RUN programs of the
matching rules in /etc/udev/rules.d and /run/udev/rules.d (the machine's own vendor rules in
/lib/udev/rules.d are not simulated: they would run the machine's programs).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

from . import nic_firmware, subnet_manager
from .common import Delegate, Node, ToolError, err, out

STATE_FILE = "systemd.json"
# Units enabled through this node's systemctl. The node's / is an overlay of the lab machine's, whose
# own enabled units (sshd, timers, databases) are not the node's: a boot starts only these.
ENABLED_FILE = "systemd-enabled.json"
UDEV_LOG = "udev.log"
UNIT_DIRS = (
    "etc/systemd/system",
    "run/systemd/system",
    "usr/local/lib/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
)
RULE_DIRS = ("etc/udev/rules.d", "run/udev/rules.d")
UDEVD = "systemd-udevd.service"
UNIT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_TIMEOUT_S = 90.0
LOG_LINES = 20
READ_VERBS = ("is-enabled", "is-active", "show", "status")  # change nothing: no state is saved after them
# The lower layer of every node's overlay / (nodeinit.py mounts lowerdir=/): the lab machine's own tree.
LOWER_ROOT = Path("/")


def root_of(node: Node) -> Path:
    """The node's / (its /etc's parent): the unit and rule folders are found under it."""
    return node.etc.parent


def unit_name(text: str) -> str:
    return text if "." in text else f"{text}.service"


# ---- unit files ------------------------------------------------------------------------------------


def unit_file(node: Node, unit: str) -> Path | None:
    for folder in UNIT_DIRS:
        path = root_of(node) / folder / unit
        if path.is_file():
            return path
    return None


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """[Section] Key=value lines (a key may repeat; an empty value resets it), continuation lines joined."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
        elif "=" in line and current is not None:
            key, value = (part.strip() for part in line.split("=", 1))
            values = current.setdefault(key, [])
            if value:
                values.append(value)
            else:
                values.clear()
    return sections


def words(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> list[str]:
    return [word for value in unit.get(section, {}).get(key, []) for word in value.split()]


def value(unit: dict[str, dict[str, list[str]]], section: str, key: str, default: str = "") -> str:
    values = unit.get(section, {}).get(key, [])
    return values[-1] if values else default


# ---- runtime state ---------------------------------------------------------------------------------


def runtime(node: Node) -> dict[str, Any]:
    return node.load(STATE_FILE, {"loaded": {}, "units": {}})


def loaded_unit(node: Node, state: dict[str, Any], unit: str) -> tuple[dict[str, Any], bool]:
    """The unit's definition as systemd holds it (loaded on first use); True when the file changed since."""
    path = unit_file(node, unit)
    text = path.read_text() if path is not None else None
    held = state["loaded"].get(unit)
    if held is None:
        if text is None:
            raise ToolError(f"Failed to start {unit}: Unit {unit} not found.\n", 5)
        held = {"text": text, "path": str(path)}
        state["loaded"][unit] = held
    return parse_unit(held["text"]), text is not None and text != held["text"]


def record(state: dict[str, Any], unit: str, active: str, sub: str, log: list[str], pid: int = 0) -> None:
    state["units"][unit] = {
        "active": active,
        "sub": sub,
        "log": log[-LOG_LINES:],
        "pid": pid,
        "since": time.strftime("%a %Y-%m-%d %H:%M:%S %Z"),
    }


# ---- running a unit --------------------------------------------------------------------------------


def unit_env() -> dict[str, str]:
    env = dict([UNIT_PATH.split("=", 1)], LANG="C.UTF-8")
    # Outside a node (tests) the mock tools find their node through these; inside they use the defaults.
    env.update({k: v for k, v in os.environ.items() if k.startswith("FABCHECK_MOCK_")})
    return env


def command_line(line: str, unit: str) -> tuple[list[str], bool]:
    """ExecStart= syntax: optional prefixes (`-` ignores failure), specifiers %n %N %i %%, then argv."""
    ignore = False
    while line and line[0] in "-@+!:":
        ignore |= line[0] == "-"
        line = line[1:]
    stem, _, instance = unit.rpartition(".")[0].partition("@")
    for spec, text in (("%n", unit), ("%N", unit.rpartition(".")[0]), ("%i", instance), ("%p", stem)):
        line = line.replace(spec, text)
    return shlex.split(line.replace("%%", "%")), ignore


def conditions_met(unit: dict[str, dict[str, list[str]]], node: Node) -> str | None:
    """None when every ConditionPathExists= holds, else the failed condition."""
    for condition in unit.get("Unit", {}).get("ConditionPathExists", []):
        negate = condition.startswith("!")
        path = condition.lstrip("!")
        exists = (root_of(node) / path.lstrip("/")).exists()
        if exists == negate:
            return f"ConditionPathExists={condition}"
    return None


def run_lines(lines: list[str], unit: str, timeout: float) -> tuple[bool, list[str]]:
    log: list[str] = []
    for line in lines:
        argv, ignore = command_line(line, unit)
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                env=unit_env(),
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.append(f"{argv[0] if argv else line}: {exc}")
            return False, log
        log += (done.stdout + done.stderr).splitlines()
        if done.returncode != 0 and not ignore:
            log.append(f"{unit}: Main process exited, code=exited, status={done.returncode}/FAILURE")
            return False, log
    return True, log


def start(node: Node, state: dict[str, Any], unit: str) -> None:
    definition, changed = loaded_unit(node, state, unit)
    if changed:
        err(
            f"Warning: The unit file, source configuration file or drop-ins of {unit} changed on disk. "
            "Run 'systemctl daemon-reload' to reload units.\n"
        )
    current = state["units"].get(unit, {})
    if current.get("active") == "active":
        return
    failed_condition = conditions_met(definition, node)
    if failed_condition:
        record(
            state,
            unit,
            "inactive",
            "dead",
            [f"{unit} was skipped because of an unmet condition check ({failed_condition})."],
        )
        return
    kind = value(definition, "Service", "Type", "simple")
    lines = definition.get("Service", {}).get("ExecStart", [])
    if not lines:
        raise ToolError(f"Failed to start {unit}: Unit {unit} has no ExecStart= setting.\n", 1)
    if kind != "oneshot":
        argv, _ = command_line(lines[-1], unit)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=unit_env(),
            start_new_session=True,
        )
        record(state, unit, "active", "running", [f"Started {unit}."], pid=proc.pid)
        return
    timeout = float(value(definition, "Service", "TimeoutStartSec", str(DEFAULT_TIMEOUT_S)).rstrip("s"))
    ok, log = run_lines(lines, unit, timeout)
    if not ok:
        record(state, unit, "failed", "failed", log)
        raise ToolError(
            f"Job for {unit} failed because the control process exited with error code.\n"
            f'See "systemctl status {unit}" and "journalctl -xeu {unit}" for details.\n',
            1,
        )
    remain = value(definition, "Service", "RemainAfterExit", "no").lower() in ("yes", "true", "1", "on")
    record(state, unit, "active" if remain else "inactive", "exited" if remain else "dead", log)


def stop(state: dict[str, Any], unit: str) -> None:
    current = state["units"].get(unit)
    if current and current.get("pid"):
        with contextlib.suppress(OSError):  # already gone
            os.killpg(current["pid"], 15)
    if current:
        record(state, unit, "inactive", "dead", current.get("log", []))


# ---- enablement ------------------------------------------------------------------------------------


def install_targets(node: Node, unit: str) -> tuple[Path, list[str]]:
    path = unit_file(node, unit)
    if path is None:
        raise ToolError(f"Failed to enable unit: Unit file {unit} does not exist.\n", 1)
    definition = parse_unit(path.read_text())
    targets = [f"{t}.wants" for t in words(definition, "Install", "WantedBy")]
    targets += [f"{t}.requires" for t in words(definition, "Install", "RequiredBy")]
    return path, targets


def links_of(node: Node, unit: str) -> list[Path]:
    folder = root_of(node) / "etc/systemd/system"
    targets = [*folder.glob("*.wants"), *folder.glob("*.requires")] if folder.is_dir() else []
    # is_symlink, not exists: a link is the enablement even while its target cannot be resolved
    return sorted(target / unit for target in targets if (target / unit).is_symlink())


def in_node(path: Path, node: Node) -> str:
    """A path as the node names it (outside a node, tests see the node's / under their own folder)."""
    return "/" + str(path.relative_to(root_of(node)))


def enable(node: Node, unit: str) -> None:
    path, targets = install_targets(node, unit)
    if not targets:
        err(f"The unit files have no installation config (WantedBy=, RequiredBy=) for {unit}.\n")
        return
    for target in targets:
        link = root_of(node) / "etc/systemd/system" / target / unit
        if link.is_symlink() and os.readlink(link) == in_node(path, node):
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(in_node(path, node))
        err(f"Created symlink {in_node(link, node)} \u2192 {in_node(path, node)}.\n")
    node.save(ENABLED_FILE, sorted(set(node.load(ENABLED_FILE, [])) | {unit}))


def disable(node: Node, unit: str) -> None:
    for link in links_of(node, unit):
        link.unlink()
        err(f'Removed "{in_node(link, node)}".\n')
    node.save(ENABLED_FILE, sorted(set(node.load(ENABLED_FILE, [])) - {unit}))


def enabled_state(node: Node, unit: str) -> str | None:
    """enabled, disabled or static; None when there is no such unit file."""
    path = unit_file(node, unit)
    if path is None:
        return None
    if links_of(node, unit):
        return "enabled"
    definition = parse_unit(path.read_text())
    return (
        "disabled"
        if words(definition, "Install", "WantedBy") + words(definition, "Install", "RequiredBy")
        else "static"
    )


# ---- the verbs -------------------------------------------------------------------------------------


def status_text(state: dict[str, Any], node: Node, unit: str) -> str:
    current = state["units"].get(unit, {"active": "inactive", "sub": "dead", "log": []})
    path = unit_file(node, unit)
    enabled = enabled_state(node, unit) or "disabled"
    where = in_node(path, node) if path else "/dev/null"
    text = (
        f"\u25cf {unit}\n     Loaded: loaded ({where}; {enabled}; preset: enabled)\n"
        f"     Active: {current['active']} ({current['sub']})"
        + (f" since {current['since']}" if current.get("since") else "")
        + "\n"
    )
    return text + "".join(f"   {line}\n" for line in current.get("log", [])[-10:])


def unit_verb(node: Node, state: dict[str, Any], verb: str, unit: str) -> int:
    if unit == UDEVD:
        return udevd_verb(node, verb)
    if verb == "start":
        start(node, state, unit)
    elif verb in ("restart", "reload-or-restart", "try-restart"):
        if verb != "try-restart" or state["units"].get(unit, {}).get("active") == "active":
            stop(state, unit)
            start(node, state, unit)
    elif verb == "stop":
        stop(state, unit)
    elif verb == "enable":
        enable(node, unit)
    elif verb == "disable":
        disable(node, unit)
    elif verb == "is-enabled":
        found = enabled_state(node, unit)
        if found is None:
            raise ToolError(f"Failed to get unit file state for {unit}: No such file or directory\n", 1)
        out(found + "\n")
        return 0 if found in ("enabled", "static") else 1
    elif verb == "is-active":
        active = state["units"].get(unit, {}).get("active", "inactive")
        out(active + "\n")
        return 0 if active == "active" else 3
    elif verb == "show":
        current = state["units"].get(unit, {"active": "inactive", "sub": "dead"})
        found = unit_file(node, unit) is not None
        out(
            f"Id={unit}\nLoadState={'loaded' if found else 'not-found'}\nActiveState={current['active']}\n"
            f"SubState={current['sub']}\nUnitFileState={enabled_state(node, unit) or ''}\n"
        )
    elif verb == "status":
        if unit_file(node, unit) is None and unit not in state["loaded"]:
            raise ToolError(f"Unit {unit} could not be found.\n", 4)
        out(status_text(state, node, unit))
        return 0 if state["units"].get(unit, {}).get("active") == "active" else 3
    else:
        raise ToolError(f"Unknown command verb '{verb}'.\n", 1)
    return 0


def udevd_verb(node: Node, verb: str) -> int:
    """systemd-udevd.service: always running on a node; `reload` is `udevadm control --reload`."""
    if verb in ("reload", "restart", "reload-or-restart", "try-restart", "start"):
        rules(node)  # a rules file udevd cannot read is reported, like udevd logs it
        return 0
    if verb in ("is-active", "status"):
        out("active\n" if verb == "is-active" else f"\u25cf {UDEVD}\n     Active: active (running)\n")
        return 0
    if verb == "is-enabled":
        out("static\n")
        return 0
    raise ToolError(f"Failed to {verb} {UDEVD}: Operation refused, unit may not be {verb}d.\n", 1)


def is_sm_unit(text: str) -> bool:
    return text in subnet_manager.UNIT_NAMES or text.removesuffix(".service") in subnet_manager.UNIT_NAMES


def systemctl(node: Node, args: list[str], dispatcher: str) -> int:
    """`systemctl VERB [UNIT...]`; opensm units go to subnet_manager.systemctl unchanged."""
    names = [a for a in args if not a.startswith("-")]
    if "-p" in args:  # `-p NAME`: the value is not a unit
        names.remove(args[args.index("-p") + 1])
    if not names:
        raise ToolError("systemctl: a command is required on a lab node\n", 1)
    verb, units = names[0], [unit_name(u) for u in names[1:]]
    if any(is_sm_unit(u) for u in names[1:]):
        return subnet_manager.systemctl(node, args, dispatcher)
    state = runtime(node)
    if verb == "daemon-reload":
        state["loaded"] = {}  # every unit is read from disk again on its next use
        node.save(STATE_FILE, state)
        return 0
    if not units:
        raise ToolError("Too few arguments.\n", 1)
    code = 0
    try:
        for unit in units:
            code = max(code, unit_verb(node, state, verb, unit))
    finally:
        if verb not in READ_VERBS:
            node.save(STATE_FILE, state)
    return code


def served_systemctl(node: Node, args: list[str]) -> int:
    """systemctl under the tool server, which sees a node's / only as its overlay's upper layer. A read
    verb without options on units whose file is the node's own /etc/systemd/system/UNIT (first in the
    search order, so no lower file can shadow it), none of them linked into a target by the lab machine's
    own /etc, answers exactly as in the node. Everything else runs in the node (Delegate): the other
    verbs start programs, opensm units follow daemon pids, other unit files may be the machine's."""
    if len(args) < 2 or args[0] not in READ_VERBS or any(a.startswith("-") for a in args):
        raise Delegate
    for unit in map(unit_name, args[1:]):
        if unit == UDEVD or is_sm_unit(unit) or not node_defines(node, unit):
            raise Delegate
    return systemctl(node, args, dispatcher="")  # the dispatcher only starts opensm, never reached here


def node_defines(node: Node, unit: str) -> bool:
    """The unit's file and every [Install] link of it lie in the node's upper layer."""
    if not (root_of(node) / "etc/systemd/system" / unit).is_file():
        return False
    lower = LOWER_ROOT / "etc/systemd/system"
    return not any(lower.glob(f"*.wants/{unit}")) and not any(lower.glob(f"*.requires/{unit}"))


# ---- boot ------------------------------------------------------------------------------------------


def boot_units(node: Node) -> list[str]:
    """Units enabled on this node and still linked into a target, in After=/Before= order, then by name."""
    folder = root_of(node) / "etc/systemd/system"
    linked = {link.name for link in folder.glob("*.wants/*")} if folder.is_dir() else set()
    wanted = sorted(linked & set(node.load(ENABLED_FILE, [])))
    after: dict[str, set[str]] = {unit: set() for unit in wanted}
    for unit in wanted:
        path = unit_file(node, unit)
        definition = parse_unit(path.read_text()) if path else {}
        after[unit] |= {u for u in words(definition, "Unit", "After") if u in after}
        for later in words(definition, "Unit", "Before"):
            if later in after:
                after[later].add(unit)
    ordered: list[str] = []
    while after:
        ready = sorted(u for u, deps in after.items() if not deps - set(ordered)) or sorted(after)[:1]
        ordered.append(ready[0])
        del after[ready[0]]
    return ordered


def load_modules(node: Node) -> list[str]:
    """systemd-modules-load: every module named in /etc/modules-load.d/*.conf, through the mock modprobe."""
    from . import system

    folder = root_of(node) / "etc/modules-load.d"
    problems = []
    for conf in sorted(folder.glob("*.conf")) if folder.is_dir() else []:
        if not conf.is_file():  # e.g. Debian's modules.conf -> /etc/modules, absent on this machine
            continue
        for line in conf.read_text(errors="replace").splitlines():
            name = line.split("#", 1)[0].strip()
            if not name or name.startswith(";"):
                continue
            try:
                system.modprobe(node, [name])
            except ToolError as exc:
                problems.append(f"systemd-modules-load: {conf.name}: {exc.message.strip()}")
    return problems


def boot(node: Node, dispatcher: str) -> int:
    """A fresh boot: nothing loaded or active, modules-load.d loaded, then every enabled unit starts
    (opensm as its own service state says). A reboot ends every process: the daemons the units started
    before (nvidia-imex, nvidia-fabricmanager) are stopped first, as the power cycle would."""
    before = runtime(node)
    for unit in list(before["units"]):
        stop(before, unit)
    state = {"loaded": {}, "units": {}}
    failed = []
    nic_firmware.boot(node)  # the NICs' firmware: Next Boot parameters take effect, a burned image runs
    for problem in load_modules(node):
        err(problem + "\n")
    for unit in boot_units(node):
        try:
            start(node, state, unit)
        except ToolError as exc:
            failed.append(unit)
            err(exc.message)
        current = state["units"].get(unit, {})
        out(
            f"{'FAILED' if unit in failed else 'started'} {unit}: {current.get('active', '?')} "
            f"({current.get('sub', '?')})\n"
        )
    node.save(STATE_FILE, state)
    if node.info.get("profile") == "sm":
        subnet_manager.systemctl(node, ["stop", "opensm"], dispatcher)
        if subnet_manager.service_state(node).get("enabled"):
            subnet_manager.systemctl(node, ["start", "opensm"], dispatcher)
    return 1 if failed else 0


# ---- udev ------------------------------------------------------------------------------------------

Rule = list[tuple[str, str, str]]  # (key, operator, value)


def parse_rule(line: str) -> Rule:
    """`KEY=="v", KEY+="v"` pairs; ValueError for a pair udev would refuse."""
    pairs: Rule = []
    rest = line.strip()
    while rest:
        key, op_value = _split_key(rest)
        for op in ("==", "!=", "+=", "-=", ":=", "="):
            if op_value.startswith(op):
                break
        else:
            raise ValueError(f"no operator after {key!r}")
        quoted = op_value[len(op) :].lstrip()
        if not quoted.startswith('"') or '"' not in quoted[1:]:
            raise ValueError(f"{key}: value must be double-quoted")
        end = quoted.index('"', 1)
        pairs.append((key, op, quoted[1:end]))
        rest = quoted[end + 1 :].strip().removeprefix(",").strip()
    return pairs


def _split_key(text: str) -> tuple[str, str]:
    index = next((i for i, c in enumerate(text) if c in "=!+-:"), len(text))
    key = text[:index].strip()
    if not key:
        raise ValueError("empty key")
    return key, text[index:]


def rules(node: Node) -> list[tuple[str, int, Rule]]:
    """Every rule line of the node's admin rule folders, in udev's order (file name; /etc wins a name)."""
    files: dict[str, Path] = {}
    for folder in reversed(RULE_DIRS):
        base = root_of(node) / folder
        for path in sorted(base.glob("*.rules")) if base.is_dir() else []:
            files[path.name] = path
    found = []
    for name in sorted(files):
        text = files[name].read_text(errors="replace").replace("\\\n", "")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                found.append((name, number, parse_rule(line)))
            except ValueError as exc:
                err(f"{in_node(files[name], node)}:{number}: invalid rule, ignored: {exc}\n")
    return found


MATCH_KEYS = ("ACTION", "SUBSYSTEM", "KERNEL")


def matches(rule: Rule, event: dict[str, str]) -> bool:
    for key, op, wanted in rule:
        if op not in ("==", "!="):
            continue
        if key not in MATCH_KEYS:
            return False  # a key this mock does not know never matches (nothing runs by mistake)
        hit = any(fnmatch.fnmatchcase(event[key], part) for part in wanted.split("|"))
        if hit != (op == "=="):
            return False
    return True


def event_programs(node: Node, event: dict[str, str]) -> list[str]:
    programs: list[str] = []
    for _name, _number, rule in rules(node):
        if not matches(rule, event):
            continue
        for key, op, text in rule:
            if key == "RUN":
                programs = [text] if op in ("=", ":=") else [*programs, text]
    kernel = event["KERNEL"]
    return [p.replace("%k", kernel).replace("$kernel", kernel).replace("%%", "%") for p in programs]


def udev_event(node: Node, event: dict[str, str]) -> int:
    """Run the event's RUN programs one after the other, as udevd's worker does; log their output."""
    code = 0
    env = unit_env() | {
        "ACTION": event["ACTION"],
        "SUBSYSTEM": event["SUBSYSTEM"],
        "DEVPATH": f"/devices/virtual/{event['SUBSYSTEM']}/{event['KERNEL']}",
    }
    lines = []
    for program in event_programs(node, event):
        try:
            done = subprocess.run(
                shlex.split(program),
                capture_output=True,
                text=True,
                errors="replace",
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=180,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            lines.append(f"{event['KERNEL']}: '{program}' failed: {exc}")
            code = 1
            continue
        lines += [f"{event['KERNEL']}: {line}" for line in (done.stdout + done.stderr).splitlines()]
        if done.returncode != 0:
            lines.append(f"{event['KERNEL']}: Process '{program}' failed with exit code {done.returncode}.")
            code = 1
    with open(node.state / UDEV_LOG, "a") as log:
        log.writelines(line + "\n" for line in lines)
    out("".join(line + "\n" for line in lines))
    return code


def udevadm(node: Node, args: list[str]) -> int:
    """`udevadm control --reload`, `udevadm settle`, `udevadm trigger --action=A --subsystem-match=S
    --sysname-match=N` (synchronous: the RUN programs have finished when it returns)."""
    if not args:
        raise ToolError("udevadm: missing command\n", 2)
    command, options = args[0], dict(_option(a) for a in args[1:])
    if command == "control" and ("--reload" in options or "--reload-rules" in options):
        rules(node)
        return 0
    if command == "settle":
        return 0
    if command == "trigger":
        subsystem, name = options.get("--subsystem-match"), options.get("--sysname-match")
        if not subsystem or not name:
            raise ToolError("udevadm trigger: this lab needs --subsystem-match and --sysname-match\n", 2)
        if not (node.sys_class / subsystem / name).exists():
            raise ToolError(f"udevadm trigger: no device {subsystem}/{name}\n", 1)
        event = {"ACTION": options.get("--action", "change"), "SUBSYSTEM": subsystem, "KERNEL": name}
        return udev_event(node, event)
    raise ToolError(f"udevadm: unknown command {command!r}\n", 2)


def _option(arg: str) -> tuple[str, str]:
    key, _, val = arg.partition("=")
    return key, val
