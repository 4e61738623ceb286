"""Mock NVIDIA Cumulus Linux switch driven through NVUE (`nv set` / `nv config apply` / `nv show`)."""

from __future__ import annotations

import copy
import json
import shlex
import time
from collections.abc import Callable, Mapping
from typing import Any

from fabcheck_lab.mockswitch import nvue_show as show
from fabcheck_lab.mockswitch import nvue_wire
from fabcheck_lab.mockswitch.device import (
    FAULT_PORT_PRIORITY,
    LOSSLESS_QUEUE,
    CliSession,
    Edit,
    PortQos,
    SwitchDevice,
    delete_path,
    set_path,
)
from fabcheck_lab.mockswitch.nvue_model import (
    auto_save,
    config_problems,
    effective_qos,
    port_pfc_profile,
    port_qos,
)
from fabcheck_lab.mockswitch.nvue_schema import ROCE_STATE_SINCE, NvueError, root_schema, walk
from fabcheck_lab.mockswitch.textfmt import simple_table

DRIFT_PROFILE = "drift-pfc"
DEFAULT_RELEASE = "5.11.0"
NO_ITEM = "Error: The requested item does not exist."
CONFIG_LINE_VERBS = {"set", "unset", "action"}


def _stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def diff_trees(new: Mapping[str, Any], old: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what `set` adds or changes, what `unset` removes) going from old to new."""
    added: dict[str, Any] = {}
    removed: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            added[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(old[key], dict):
            sub_added, sub_removed = diff_trees(value, old[key])
            if sub_added:
                added[key] = sub_added
            if sub_removed:
                removed[key] = sub_removed
        elif value != old[key]:
            added[key] = value
    for key, value in old.items():
        if key not in new:
            removed[key] = copy.deepcopy(value)
    return added, removed


class NvueDevice(SwitchDevice):
    platform = "nvue"

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.release = spec.release or DEFAULT_RELEASE
        major, minor = (int(part) for part in self.release.split(".")[:2])
        self.release_tuple = (major, minor)
        self.booted = time.time()  # `nv show system` uptime
        self.schema = root_schema(spec.ports, self.release_tuple)
        self.pending: dict[str, Any] | None = None
        self.pending_rev: int | None = None
        self.applied_rev = 1
        self.next_rev = 2
        self.history: list[dict[str, Any]] = [
            {"rev-id": 1, "user": "system", "date": _stamp(), "message": "Initial config", "state": "applied"}
        ]

    def factory_config(self) -> dict[str, Any]:
        return {}

    def new_session(self, username: str) -> CliSession:
        return NvueSession(self, username)

    def port_qos(self) -> dict[str, PortQos]:
        return port_qos(self.running, self.ports)

    def fault_edits(self, fault: str) -> list[Edit]:
        if fault == "switch-ecn-off":
            return [
                (
                    (
                        "qos",
                        "congestion-control",
                        "default-global",
                        "traffic-class",
                        str(LOSSLESS_QUEUE),
                        "ecn",
                    ),
                    "disable",
                )
            ]
        port = self.ports[0]
        current = port_pfc_profile(self.running, effective_qos(self.running), port)
        drift = {
            "switch-priority": {str(FAULT_PORT_PRIORITY): {}},
            "tx": "enable",
            "rx": "enable",
            "cable-length": current.cable_length if current else 100,
        }
        return [
            (("qos", "pfc", DRIFT_PROFILE), drift),
            (("interface", port, "qos", "pfc", "profile"), DRIFT_PROFILE),
        ]

    def pending_json(self) -> Any:
        return {} if self.pending is None else {"rev_id": self.pending_rev, "config": self.pending}

    def extra_json(self) -> dict[str, Any]:
        return {"revisions": self.history, "applied_rev": self.applied_rev, "next_rev": self.next_rev}

    def load_extra(self, saved: Mapping[str, Any]) -> None:
        pending = saved.get("pending") or {}
        self.pending = pending.get("config")
        self.pending_rev = pending.get("rev_id")
        self.history = list(saved.get("revisions", self.history))
        self.applied_rev = int(saved.get("applied_rev", self.applied_rev))
        self.next_rev = int(saved.get("next_rev", self.next_rev))

    # -- revision handling ------------------------------------------------------------------------
    def stage(self) -> dict[str, Any]:
        self.stage_created()
        assert self.pending is not None
        return self.pending

    def stage_created(self) -> int | None:
        """Open a pending revision if none is; its id when this call created it (NVUE then prints
        `created [rev_id: N]`), None when one was pending already."""
        if self.pending is not None:
            return None
        self.pending = copy.deepcopy(self.running)
        self.pending_rev = self.next_rev
        self.next_rev += 1
        return self.pending_rev

    def apply(self, user: str) -> str:
        staged = self.stage()
        problems = config_problems(staged)
        if problems:
            raise NvueError(
                f"Error: Invalid config [rev_id: {self.pending_rev}]\n"
                + "\n".join(f"  {p}" for p in problems)
            )
        rev = self.pending_rev
        self.running = staged
        # `system config auto-save` as the revision sets it, else the release's default (on from 5.9)
        saves = auto_save(staged, self.release_tuple)
        if saves:
            self.startup = copy.deepcopy(staged)
        self.pending, self.pending_rev = None, None
        self.applied_rev = int(rev or 0)
        for entry in self.history:
            entry["state"] = "inactive"
        self.history.append(
            {
                "rev-id": rev,
                "user": user,
                "date": _stamp(),
                "message": f"Config update by {user}",
                "state": "applied",
            }
        )
        return f"applied_and_saved [rev_id: {rev}]" if saves else f"applied [rev_id: {rev}]"


class NvueSession(CliSession):
    def __init__(self, device: NvueDevice, username: str) -> None:
        self.device = device
        self.user = username
        self.root = username == "root"
        self.awaiting: Callable[[str], str] | None = None

    def greeting(self) -> str:
        return "\nWelcome to NVIDIA Cumulus (R) Linux (R)\n\n"

    def prompt(self) -> str:
        if self.awaiting is not None:
            return ""
        name = self.device.name
        if self.root:
            home = "~" if self.user == "root" else f"/home/{self.user}"
            return f"root@{name}:mgmt:{home}# "
        return f"{self.user}@{name}:mgmt:~$ "

    def cancel(self) -> None:
        self.awaiting = None

    def is_config_line(self, line: str) -> bool:
        words = line.split()
        if words[:1] == ["sudo"]:
            words = words[1:]
        if len(words) < 2 or words[0] != "nv":
            return False
        if words[1] == "config":
            return words[2:3] in (["apply"], ["save"], ["detach"])
        return words[1] in CONFIG_LINE_VERBS

    def handle(self, line: str) -> str:
        self.last_failed = False
        if self.awaiting is not None:
            answer, self.awaiting = self.awaiting, None
            self.device.record(self.user, "answer", line.strip())
            return self._out(answer(line.strip()))
        text = line.strip()
        if not text:
            return ""
        try:
            words = shlex.split(text)
        except ValueError:
            return self._fail("-bash: syntax error: unexpected end of file")
        output = self._dispatch(words, text)
        self.device.record(self.user, "command", text, not self.last_failed)
        return self._out(output)

    def _out(self, text: str) -> str:
        return text if not text or text.endswith(("\n", "] ")) else text + "\n"

    def _fail(self, message: str) -> str:
        self.last_failed = True
        return message

    def _dispatch(self, words: list[str], text: str) -> str:
        if words[0] == "sudo":
            if words[1:2] in (["-s"], ["-i"], ["su"]) or words[1:] == []:
                self.root = True
                return ""
            words = words[1:]
        command = words[0]
        if command in ("exit", "logout"):
            if self.root and self.user != "root":
                self.root = False
            else:
                self.closed = True
            return ""
        answered = self.device.tmp_command(words, self)
        if answered is not None:
            self.last_failed = ": cannot " in answered
            return answered
        if command == "nv":
            try:
                return self._nv(words[1:], text)
            except NvueError as exc:
                self.last_failed = True
                return str(exc)
        simple = {
            "hostname": self.device.name,
            "whoami": "root" if self.root else self.user,
            "uname": f"Linux {self.device.name} 6.1.0-cl-1-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.94 "
            "x86_64 GNU/Linux"
            if words[1:] == ["-a"]
            else "Linux",
        }
        if command in simple:
            return simple[command]
        return self._fail(f"-bash: {command}: command not found")

    # -- nv ---------------------------------------------------------------------------------------
    def _nv(self, args: list[str], text: str) -> str:
        flags, args = _split_options(args, text)
        if not args:
            raise NvueError(f"Error: Incomplete Command: {text}")
        verb, rest = args[0], args[1:]
        if verb in ("set", "unset"):
            return self._set(rest, text, unset=verb == "unset")
        if verb == "config":
            return self._config(rest, flags, text)
        if verb == "show":
            return self._show(rest, flags, text)
        if verb == "action":
            return self._action(rest, text)
        raise NvueError(f"Error: Invalid Command: {text}")

    def _set(self, args: list[str], text: str, *, unset: bool) -> str:
        if not args:
            raise NvueError(f"Error: Incomplete Command: {text}")
        results = walk(self.device.schema, args, text, unset=unset)
        created = self.device.stage_created()
        tree = self.device.stage()
        for path, value in results:
            if unset:
                delete_path(tree, path)
            elif value == {}:
                node = tree
                for key in path:
                    node = node.setdefault(key, {})
                if path == ("qos", "roce"):
                    # bare `nv set qos roce` turns RoCE on, in the release's words
                    if self.device.release_tuple >= ROCE_STATE_SINCE:
                        node.setdefault("state", "enabled")
                    else:
                        node.setdefault("enable", "on")
            else:
                set_path(tree, path, value)
        return "" if created is None else f"created [rev_id: {created}]"

    def _config(self, args: list[str], flags: dict[str, str], text: str) -> str:
        sub = args[0] if args else ""
        dev = self.device
        if sub == "apply":
            return self._apply(flags)
        if sub == "save":
            dev.startup = copy.deepcopy(dev.running)
            return "saved [rev_id: applied]"
        if sub == "detach":
            dev.pending, dev.pending_rev = None, None
            return ""
        if sub == "diff":
            if dev.pending is None:
                return ""
            added, removed = diff_trees(dev.pending, dev.running)
            docs = [(kind, tree) for kind, tree in (("set", added), ("unset", removed)) if tree]
            if flags.get("output") == "json":
                return json.dumps([{kind: tree} for kind, tree in docs], indent=2)
            return show.config_documents(docs)
        if sub == "show":
            rev = flags.get("rev")
            if rev == "startup":
                source = dev.startup
            elif rev == "pending" and dev.pending is not None:
                source = dev.pending
            else:
                source = dev.running
            header = {
                "model": "SN5600",
                "nvue-api-version": "nvue_v1",
                "rev-id": "1.0.0",
                "version": f"Cumulus Linux {dev.release}",
            }
            if flags.get("output") == "json":
                return json.dumps([{"header": header}, {"set": source}], indent=2)
            return show.config_documents([("header", header), ("set", source)])
        if sub == "history":
            return "\n".join(self._history_yaml())
        if sub == "revision":
            return self._revision_table()
        raise NvueError(f"Error: Invalid Command: {text}")

    def _apply(self, flags: dict[str, str]) -> str:
        dev = self.device
        if "assume-yes" in flags:
            return dev.apply(self.user)
        if "assume-no" in flags:
            return "Declined apply after warnings"
        problems = config_problems(dev.stage())
        if problems:
            return dev.apply(self.user)  # raises the same error a confirmed apply would

        def answer(reply: str) -> str:
            if reply.lower() in ("y", "yes"):
                try:
                    return dev.apply(self.user)
                except NvueError as exc:
                    self.last_failed = True
                    return str(exc)
            return "Declined apply after warnings"

        self.awaiting = answer
        return "Are you sure? [y/N] "

    def _history_yaml(self) -> list[str]:
        lines = []
        for entry in reversed(self.device.history):
            lines += [
                f"- apply-id: rev_{entry['rev-id']}_apply_1",
                f"  date: {entry['date']}",
                f"  message: {entry['message']}",
                f"  rev-id: {entry['rev-id']}",
                f"  user: {entry['user']}",
            ]
        return lines

    def _revision_table(self) -> str:
        dev = self.device
        rows = [[str(e["rev-id"]), e["state"], e["date"], e["user"], e["message"]] for e in dev.history]
        if dev.pending_rev is not None:
            rows.append([str(dev.pending_rev), "pending", "", self.user, ""])
        return simple_table(["Rev ID", "State", "Apply Date", "User", "Message"], rows, "lllll")

    def _show(self, args: list[str], flags: dict[str, str], text: str) -> str:
        dev = self.device
        config = dev.pending if flags.get("rev") == "pending" and dev.pending is not None else dev.running
        shown = self._show_qos(args[1:], config) if args[:1] == ["qos"] else None
        if args == ["interface", "lldp"]:
            shown = show.show_lldp(dev.lldp_neighbors(), dev.ports)
        elif args[:1] == ["interface"] and len(args) >= 2:
            if args[1] not in dev.ports:
                raise NvueError(NO_ITEM)
            shown = self._show_port(args[1], args[2:], config)
        elif args == ["system"]:
            shown = nvue_wire.show_system(dev.name, dev.release, time.time() - self.device.booted)
        elif args[:2] == ["platform", "transceiver"] and len(args) == 3:
            if args[2] not in dev.ports or dev.release_tuple < nvue_wire.TRANSCEIVER_SINCE:
                raise NvueError(NO_ITEM)
            shown = nvue_wire.show_transceiver(dev.wire_faults(args[2]))
        if shown is None:
            raise NvueError(
                NO_ITEM if args[:1] in (["qos"], ["interface"]) else f"Error: Invalid Command: {text}"
            )
        table, data = shown
        return json.dumps(data, indent=2) if flags.get("output") == "json" else table

    def _show_qos(self, args: list[str], config: dict[str, Any]) -> show.Shown | None:
        head, rest = (args[0], args[1:]) if args else ("", [])
        profile = rest[0] if rest else None
        if head == "roce" and not rest:
            return show.show_roce(config)
        if head == "pfc" and len(rest) <= 1:
            return show.show_pfc(config, profile)
        if head == "congestion-control" and len(rest) <= 1:
            return show.show_congestion(config, profile)
        if head == "egress-scheduler" and len(rest) == 1:
            return show.show_scheduler(config, rest[0])
        if head == "mapping" and len(rest) == 1:
            return show.show_mapping(config, rest[0], None)
        if (
            head == "mapping"
            and len(rest) == 3
            and rest[1] == "dscp"
            and rest[2].isdigit()
            and int(rest[2]) < 64
        ):
            return show.show_mapping(config, rest[0], int(rest[2]))
        if head == "pfc-watchdog" and not rest:
            return show.show_watchdog_global(config)
        if head == "traffic-pool" and not rest:
            return show.show_traffic_pools(config)
        if head == "egress-queue-mapping" and len(rest) == 1:
            return show.show_queue_mapping(config, rest[0])
        return None

    def _show_port(self, port: str, args: list[str], config: dict[str, Any]) -> show.Shown | None:
        if args in (["qos", "roce"], ["qos", "roce", "status"]):
            return show.show_port_roce_status(config, port)
        if args == ["qos", "roce", "counters"]:
            self.device.refresh_counters()
            return show.show_port_roce_counters(config, self.device.counters, port)
        if args == ["qos", "pfc-watchdog"]:
            return show.show_port_watchdog(config, port)
        if args == ["qos", "egress-scheduler"]:
            return show.show_port_scheduler(config, port)
        if args == ["link"]:
            return show.show_port_link(config, port)
        return self._show_port_wire(port, args)

    def _show_port_wire(self, port: str, args: list[str]) -> show.Shown | None:
        """The wire views (fabcheck_lab.mockswitch.nvue_wire), each only in the releases that have it."""
        dev = self.device
        release = dev.release_tuple
        if args == ["counters"] and release >= nvue_wire.COUNTERS_SINCE:
            return nvue_wire.show_counters(dev.wire_counters(port))
        phy_detail = nvue_wire.PHY_DETAIL_SINCE <= release < nvue_wire.PHY_HEALTH_SINCE
        if (args == ["link", "phy-detail"] and phy_detail) or (
            args == ["link", "phy", "health"] and release >= nvue_wire.PHY_HEALTH_SINCE
        ):
            minutes = int(max(0.0, time.time() - float(dev.wire[port].get("since", time.time()))) // 60)
            return nvue_wire.show_phy_detail(dev.wire_counters(port), minutes)
        return None

    def _action(self, args: list[str], text: str) -> str:
        if len(args) == 6 and args[:2] == ["clear", "interface"] and args[3:] == ["qos", "roce", "counters"]:
            if args[2] not in self.device.ports:
                raise NvueError(NO_ITEM)
            self.device.counters.clear([args[2]])
            return "Action executing ...\nAction succeeded"
        raise NvueError(f"Error: Invalid Command: {text}")


_VALUE_OPTIONS = {"-o": "output", "--output": "output", "--rev": "rev"}
_FLAG_OPTIONS = {
    "-y": "assume-yes",
    "--y": "assume-yes",
    "--assume-yes": "assume-yes",
    "--assume-no": "assume-no",
    "--pending": "rev=pending",
    "--applied": "rev=applied",
    "--operational": "rev=operational",
    "--startup": "rev=startup",
}


def _split_options(args: list[str], text: str) -> tuple[dict[str, str], list[str]]:
    """Pull NVUE global options (-o json, -y, --pending, ...) out of the words."""
    flags: dict[str, str] = {}
    words: list[str] = []
    items = iter(args)
    for word in items:
        name, _, inline = word.partition("=")
        if name in _VALUE_OPTIONS:
            value = inline or next(items, "")
            if not value:
                raise NvueError(f"Error: Incomplete Command: {text}")
            flags[_VALUE_OPTIONS[name]] = value
        elif word in _FLAG_OPTIONS:
            key, _, value = _FLAG_OPTIONS[word].partition("=")
            flags[key] = value or "1"
        elif word.startswith("-"):
            raise NvueError(f"Error: Invalid option: {word}")
        else:
            words.append(word)
    if flags.get("output", "auto") not in ("auto", "json"):
        raise NvueError(f"Error: Invalid output format '{flags['output']}'")
    return flags, words
