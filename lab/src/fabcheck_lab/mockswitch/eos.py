"""Mock Arista EOS switch: modal CLI, configure sessions with commit/abort, QoS/PFC/ECN commands."""

from __future__ import annotations

import copy
import gc
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabcheck_lab.mockswitch.device import (
    FAULT_PORT_PRIORITY,
    LOSSLESS_QUEUE,
    CliSession,
    Edit,
    PortQos,
    SwitchDevice,
    delete_path,
    get_path,
    set_path,
)
from fabcheck_lab.mockswitch.eos_cli_show import run_show
from fabcheck_lab.mockswitch.eos_grammar import INVALID, EosInputError, Matched, Rule, match
from fabcheck_lab.mockswitch.eos_model import (
    ECN_UNITS,
    factory_config,
    parse_interfaces,
    parse_speed_gbps,
    port_qos,
    short_name,
)

UNITS = "{" + "|".join(ECN_UNITS) + "}"
# Jericho / VOQ families (7280R, 7500R, 7800R and their R2/R3 generations): `tx-queue` only.
VOQ_MODEL = re.compile(r"^(DCS-)?7(280|500|800)[A-Z]*R")
_R = Rule.of
EXEC_RULES = [
    _R("enable", "enable"),
    _R("disable", "disable"),
    _R("{exit|logout|quit}", "logout"),
    _R("terminal width <int:0-32767>", "width"),
    _R("terminal length <int:0-32767>", "length"),
    _R("configure", "configure"),
    _R("configure terminal", "configure"),
    _R("configure session", "session"),
    _R("configure session <word>", "session"),
    _R("copy running-config startup-config", "save"),
    _R("write", "save"),
    _R("write memory", "save"),
    _R("clear priority-flow-control counters", "clear_pfc"),
    _R("clear counters", "clear_all"),
]
PRIVILEGED = {"configure", "session", "save", "clear_pfc", "clear_all", "disable"}
CONFIG_COMMON = [_R("exit", "exit"), _R("end", "end")]
SESSION_ONLY = [_R("commit", "commit"), _R("abort", "abort")]
GLOBAL_RULES = [
    _R("interface <ifs>", "interface"),
    _R("qos profile <word>", "profile"),
    _R("no qos profile <word>", "no_profile"),
    _R("qos map dscp <int:0-63>+ to traffic-class <int:0-7>", "dscp_map"),
    _R("no qos map dscp <int:0-63>+ to traffic-class <int:0-7>", "no_dscp_map"),
    _R("qos random-detect ecn allow non-ect", "non_ect"),
    _R("qos random-detect ecn allow non-ect chip-based", "non_ect"),
    _R("no qos random-detect ecn allow non-ect", "no_non_ect"),
    _R(
        "priority-flow-control pause watchdog default {timeout|recovery-time|polling-interval} <dec>",
        "wd_default",
    ),
    _R(
        "no priority-flow-control pause watchdog default {timeout|recovery-time|polling-interval}",
        "no_wd_default",
    ),
    _R("priority-flow-control pause watchdog action {drop|no-drop}", "wd_action"),
    _R("no priority-flow-control pause watchdog action", "no_wd_action"),
    _R("hostname <word>", "hostname"),
]
BLOCK_RULES = [
    _R("qos trust {dscp|cos|disabled}", "trust"),
    _R("no qos trust", "no_trust"),
    _R("priority-flow-control on", "pfc_on"),
    _R("priority-flow-control mode on", "pfc_on"),
    _R("no priority-flow-control", "no_pfc"),
    _R("no priority-flow-control mode", "no_pfc"),
    _R("priority-flow-control priority <int:0-7> {no-drop|drop}", "pfc_priority"),
    _R("no priority-flow-control priority <int:0-7>", "no_pfc_priority"),
    _R("priority-flow-control pause watchdog", "pfc_wd"),
    _R("no priority-flow-control pause watchdog", "no_pfc_wd"),
    _R("{uc-tx-queue|tx-queue} <int:0-7>", "txq"),
    _R("no {uc-tx-queue|tx-queue} <int:0-7>", "no_txq"),
]
INTERFACE_RULES = [
    _R("mtu <int:68-9214>", "mtu"),
    _R("no mtu", "no_mtu"),
    _R("speed <word>", "speed"),
    _R("no speed", "no_speed"),
    _R("service-profile <word>", "service_profile"),
    _R("no service-profile", "no_service_profile"),
    _R("description <rest>", "description"),
    _R("no description", "no_description"),
    _R("shutdown", "shutdown"),
    _R("no shutdown", "no_shutdown"),
]
_THRESHOLD = f"<int:1-256000000> {UNITS}"
_ECN = f"random-detect ecn minimum-threshold {_THRESHOLD} maximum-threshold {_THRESHOLD}"
TXQ_RULES = [
    _R("bandwidth percent <int:1-100>", "bw"),
    _R("no bandwidth percent", "no_bw"),
    _R("bandwidth guaranteed percent <int:1-100>", "bw_guaranteed"),
    _R("no bandwidth guaranteed", "no_bw_guaranteed"),
    _R("priority strict", "strict"),
    _R("no priority", "no_strict"),
    _R(_ECN, "ecn"),
    _R(_ECN + " max-mark-probability <int:1-100>", "ecn_p"),
    _R(_ECN + " weight <int:0-15>", "ecn_w"),
    _R(_ECN + " max-mark-probability <int:1-100> weight <int:0-15>", "ecn_pw"),
    _R("no random-detect ecn", "no_ecn"),
    _R("random-detect ecn count", "ecn_count"),
    _R("no random-detect ecn count", "no_ecn_count"),
]
UNIT_BYTES = {"bytes": 1, "kbytes": 1024, "mbytes": 1024 * 1024, "segments": 208, "milliseconds": 50_000}


@dataclass
class Frame:
    kind: str  # config | if | profile | txq
    label: str  # prompt fragment, e.g. "if-Et1"
    paths: list[tuple[str, ...]]  # config-tree blocks this mode edits


class EosDevice(SwitchDevice):
    platform = "eos"

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.sessions: dict[str, dict[str, Any]] = {}
        self.model = spec.model or "cEOSLab"

    @property
    def voq(self) -> bool:
        """Jericho (VOQ) families name unicast egress queues `tx-queue` and refuse `uc-tx-queue`."""
        return bool(VOQ_MODEL.match(self.model))

    def session_instances(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per configuration session, the live logins inside it, as `show configuration sessions`
        lists them under `instances` (a session whose terminal went away has none)."""
        gc.collect()  # a dropped login may sit in a reference cycle (asyncssh's task and frames)
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for pid, shell in list(self.shells.items()):
            name = getattr(shell, "session", None)
            if name is not None and not shell.closed:
                found.setdefault(name, {})[str(pid)] = {
                    "user": getattr(shell, "user", ""),
                    "terminal": f"vty{pid % 100}",
                    "currentTerminal": False,
                }
        return found

    def factory_config(self) -> dict[str, Any]:
        return factory_config(self.spec.name, self.spec.ports)

    def new_session(self, username: str) -> CliSession:
        session = EosSession(self, username)
        self.shell_pid(session)  # a login with a pid, so its sessions list it while it lives
        return session

    def port_qos(self) -> dict[str, PortQos]:
        return port_qos(self.running, self.ports)

    def fault_edits(self, fault: str) -> list[Edit]:
        if fault == "switch-pfc-prio":
            base = ("interfaces", self.ports[0])
            return [
                ((*base, "pfc"), "on"),
                ((*base, "pfc_priorities", str(LOSSLESS_QUEUE)), "drop"),
                ((*base, "pfc_priorities", str(FAULT_PORT_PRIORITY)), "no-drop"),
            ]
        edits: list[Edit] = []
        for kind in ("qos_profiles", "interfaces"):
            for name, block in self.running[kind].items():
                if block.get("tx_queues", {}).get(str(LOSSLESS_QUEUE), {}).get("ecn"):
                    edits.append(((kind, name, "tx_queues", str(LOSSLESS_QUEUE), "ecn"), None))
        return edits

    def pending_json(self) -> Any:
        return {name: s["config"] for name, s in self.sessions.items()}

    def load_extra(self, saved: Mapping[str, Any]) -> None:
        self.sessions = {name: {"config": cfg} for name, cfg in (saved.get("pending") or {}).items()}


class EosSession(CliSession):
    def __init__(self, device: EosDevice, username: str) -> None:
        self.device = device
        self.user = username
        self.privileged = False
        self.stack: list[Frame] = []
        self.session: str | None = None

    # -- prompt and modes -------------------------------------------------------------------------
    def prompt(self) -> str:
        name = self.device.name
        if not self.stack:
            return f"{name}{'#' if self.privileged else '>'}"
        parts = (
            ["config"] + ([f"s-{self.session}"] if self.session else []) + [f.label for f in self.stack[1:]]
        )
        return f"{name}({'-'.join(parts)})#"

    def is_config_line(self, line: str) -> bool:
        return bool(self.stack) and bool(line.strip()) and not line.strip().startswith("show")

    def tree(self) -> dict[str, Any]:
        return self.device.sessions[self.session]["config"] if self.session else self.device.running

    # -- dispatch ---------------------------------------------------------------------------------
    def handle(self, line: str) -> str:
        self.last_failed = False
        text = line.strip()
        if not text:
            return ""
        try:
            output = self._dispatch(text)
        except EosInputError as exc:
            self.last_failed = True
            output = str(exc)
        self.device.record(self.user, "command", text, not self.last_failed)
        return output + "\n" if output else ""

    def _dispatch(self, text: str) -> str:
        command, _, pipe = text.partition("|")
        words = command.split()
        if words and "show".startswith(words[0].lower()) and len(words[0]) >= 2:
            return self._show(words[1:], pipe.strip())
        if pipe:
            raise EosInputError(f"{INVALID} (at token {len(words)}: '|')")
        if not self.stack:
            return self._exec(words)
        return self._config(words)

    def _interfaces(self, token: str) -> list[str] | None:
        return parse_interfaces(token, self.device.ports)

    def _exec(self, words: list[str]) -> str:
        found = match(EXEC_RULES, words, self._interfaces)
        if found.action in PRIVILEGED and not self.privileged:
            raise EosInputError(f"{INVALID} (privileged mode required)")
        return getattr(self, f"_x_{found.action}")(found)

    def _config(self, words: list[str]) -> str:
        """Try the current mode, then each parent mode (EOS falls back to enclosing modes), then exec."""
        first_error: EosInputError | None = None
        for depth in range(len(self.stack), 0, -1):
            try:
                found = match(self._rules(self.stack[depth - 1].kind), words, self._interfaces)
            except EosInputError as exc:
                first_error = first_error or exc
                continue
            del self.stack[depth:]
            return getattr(self, f"_c_{found.action}")(found) or ""
        try:  # EOS also accepts privileged exec commands (configure session, write, ...) here
            found = match(EXEC_RULES, words, self._interfaces)
        except EosInputError:
            assert first_error is not None
            raise first_error from None
        return getattr(self, f"_x_{found.action}")(found)

    def _rules(self, kind: str) -> list[Rule]:
        common = CONFIG_COMMON + (SESSION_ONLY if self.session else [])
        specific = {
            "config": GLOBAL_RULES,
            "if": BLOCK_RULES + INTERFACE_RULES,
            "profile": BLOCK_RULES,
            "txq": TXQ_RULES,
        }[kind]
        return common + specific

    # -- exec-mode actions ------------------------------------------------------------------------
    def _x_enable(self, m: Matched) -> str:
        self.privileged = True
        return ""

    def _x_disable(self, m: Matched) -> str:
        self.privileged = False
        return ""

    def _x_logout(self, m: Matched) -> str:
        self.closed = True
        return ""

    def _x_width(self, m: Matched) -> str:
        return f"Width set to {m.values[0]} columns."

    def _x_length(self, m: Matched) -> str:
        return "Pagination disabled." if m.values[0] == 0 else f"Pagination set to {m.values[0]} lines."

    def _x_configure(self, m: Matched) -> str:
        self.stack = [Frame("config", "", [])]
        return ""

    def _x_session(self, m: Matched) -> str:
        name = m.values[0] if m.values else f"session{len(self.device.sessions) + 1}"
        if self.session is not None and self.session != name:
            raise EosInputError(f"% Cannot enter session {name} while in session {self.session}")
        if name not in self.device.sessions:
            self.device.sessions[name] = {"config": copy.deepcopy(self.device.running)}
        self.session = name
        self.stack = [Frame("config", "", [])]
        return ""

    def _x_save(self, m: Matched) -> str:
        self.device.startup = copy.deepcopy(self.device.running)
        return "Copy completed successfully."

    def _x_clear_pfc(self, m: Matched) -> str:
        self.device.counters.clear(self.device.ports, ("pfc_rx", "pfc_tx"))
        return ""

    def _x_clear_all(self, m: Matched) -> str:
        self.device.counters.clear(self.device.ports)
        return ""

    # -- config-mode actions ----------------------------------------------------------------------
    def _leave(self) -> None:
        self.stack = []
        self.session = None

    def _c_exit(self, m: Matched) -> None:
        self.stack.pop()
        if not self.stack:
            self.session = None

    def _c_end(self, m: Matched) -> None:
        self._leave()

    def _c_commit(self, m: Matched) -> None:
        assert self.session is not None
        self.device.running = self.device.sessions.pop(self.session)["config"]
        self._leave()

    def _c_abort(self, m: Matched) -> None:
        assert self.session is not None
        del self.device.sessions[self.session]
        self._leave()

    def _c_interface(self, m: Matched) -> None:
        ports = m.values[0]
        label = short_name(ports[0])
        if len(ports) > 1:  # EOS shows a range as its first port and the last number: Et1-4, Et1/1-4
            label += "-" + re.findall(r"\d+", ports[-1])[-1]
        self.stack[1:] = [Frame("if", f"if-{label}", [("interfaces", p) for p in ports])]

    def _c_profile(self, m: Matched) -> None:
        name = m.values[0]
        self.tree()["qos_profiles"].setdefault(name, {})
        self.stack[1:] = [Frame("profile", f"qos-profile-{name}", [("qos_profiles", name)])]

    def _c_no_profile(self, m: Matched) -> None:
        self.tree()["qos_profiles"].pop(m.values[0], None)

    def _c_dscp_map(self, m: Matched) -> None:
        for dscp in m.values[0]:
            self.tree()["qos"]["dscp_map"][str(dscp)] = m.values[1]

    def _c_no_dscp_map(self, m: Matched) -> None:
        dscp_map = self.tree()["qos"]["dscp_map"]
        for dscp in m.values[0]:
            if dscp_map.get(str(dscp)) == m.values[1]:
                del dscp_map[str(dscp)]

    def _c_non_ect(self, m: Matched) -> None:
        self.tree()["qos"]["allow_non_ect"] = True

    def _c_no_non_ect(self, m: Matched) -> None:
        self.tree()["qos"].pop("allow_non_ect", None)

    def _c_wd_default(self, m: Matched) -> None:
        self.tree()["pfc_watchdog"][m.values[0]] = m.values[1]

    def _c_no_wd_default(self, m: Matched) -> None:
        self.tree()["pfc_watchdog"].pop(m.values[0], None)

    def _c_wd_action(self, m: Matched) -> None:
        self.tree()["pfc_watchdog"]["action"] = m.values[0]

    def _c_no_wd_action(self, m: Matched) -> None:
        self.tree()["pfc_watchdog"].pop("action", None)

    def _c_hostname(self, m: Matched) -> None:
        self.tree()["hostname"] = m.values[0]

    # block (interface / qos profile) settings
    def _set(self, key: tuple[str, ...], value: Any) -> None:
        for path in self.stack[-1].paths:
            if value is None:
                block = get_path(self.tree(), path)
                if block is not None:
                    delete_path(block, key)
            else:
                set_path(self.tree(), path + key, value)

    def _c_trust(self, m: Matched) -> None:
        self._set(("trust",), m.values[0])

    def _c_no_trust(self, m: Matched) -> None:
        self._set(("trust",), None)

    def _c_pfc_on(self, m: Matched) -> None:
        self._set(("pfc",), "on")

    def _c_no_pfc(self, m: Matched) -> None:
        self._set(("pfc",), None)

    def _c_pfc_priority(self, m: Matched) -> None:
        self._set(("pfc_priorities", str(m.values[0])), m.values[1])

    def _c_no_pfc_priority(self, m: Matched) -> None:
        self._set(("pfc_priorities", str(m.values[0])), None)

    def _c_pfc_wd(self, m: Matched) -> None:
        self._set(("pfc_watchdog",), True)

    def _c_no_pfc_wd(self, m: Matched) -> None:
        self._set(("pfc_watchdog",), None)

    def _c_txq(self, m: Matched) -> None:
        kind, number = m.values
        if kind == "uc-tx-queue" and self.device.voq:
            raise EosInputError("% Invalid input (at token 0: 'uc-tx-queue')")
        frame = self.stack[-1]
        for path in frame.paths:
            queue = self.tree()
            for key in (*path, "tx_queues", str(number)):
                queue = queue.setdefault(key, {})
            if "kind" not in queue:  # a new queue block: EOS tx-queues are strict until `no priority`
                queue.setdefault("priority", "strict")
            queue["kind"] = kind
        label = f"{'uc-txq' if kind == 'uc-tx-queue' else 'txq'}-{number}"
        self.stack.append(Frame("txq", label, [(*p, "tx_queues", str(number)) for p in frame.paths]))

    def _c_no_txq(self, m: Matched) -> None:
        self._set(("tx_queues", str(m.values[1])), None)

    def _c_mtu(self, m: Matched) -> None:
        self._set(("mtu",), m.values[0])

    def _c_no_mtu(self, m: Matched) -> None:
        self._set(("mtu",), None)

    def _c_speed(self, m: Matched) -> None:
        # `speed 100g-4`, `speed 400g-8`, `speed auto` (Arista's interface speed command; the lanes
        # suffix optional): the mock's ports take the rates of a 400G port.
        token = m.values[0]
        if token != "auto" and parse_speed_gbps(token) is None:
            raise EosInputError(f"% Invalid input (at token 1: '{token}')")
        self._set(("speed",), token)

    def _c_no_speed(self, m: Matched) -> None:
        self._set(("speed",), None)

    def _c_service_profile(self, m: Matched) -> None:
        self._set(("service_profile",), m.values[0])

    def _c_no_service_profile(self, m: Matched) -> None:
        self._set(("service_profile",), None)

    def _c_description(self, m: Matched) -> None:
        self._set(("description",), m.values[0])

    def _c_no_description(self, m: Matched) -> None:
        self._set(("description",), None)

    def _c_shutdown(self, m: Matched) -> None:
        self._set(("shutdown",), True)

    def _c_no_shutdown(self, m: Matched) -> None:
        self._set(("shutdown",), None)

    # tx-queue settings
    def _c_bw(self, m: Matched) -> None:
        self._set(("bandwidth_percent",), m.values[0])

    def _c_no_bw(self, m: Matched) -> None:
        self._set(("bandwidth_percent",), None)

    def _c_bw_guaranteed(self, m: Matched) -> None:
        self._set(("bandwidth_guaranteed",), m.values[0])

    def _c_no_bw_guaranteed(self, m: Matched) -> None:
        self._set(("bandwidth_guaranteed",), None)

    def _c_strict(self, m: Matched) -> None:
        self._set(("priority",), "strict")

    def _c_no_strict(self, m: Matched) -> None:
        self._set(("priority",), None)

    def _ecn(self, m: Matched, optional: tuple[str, ...]) -> None:
        low, low_unit, high, high_unit, *rest = m.values
        if low * UNIT_BYTES[low_unit] > high * UNIT_BYTES[high_unit]:
            raise EosInputError("% Minimum threshold must be less than or equal to maximum threshold")
        ecn: dict[str, Any] = {"min": low, "min_unit": low_unit, "max": high, "max_unit": high_unit}
        ecn.update(zip(optional, rest, strict=True))
        self._set(("ecn",), ecn)

    def _c_ecn(self, m: Matched) -> None:
        self._ecn(m, ())

    def _c_ecn_p(self, m: Matched) -> None:
        self._ecn(m, ("probability",))

    def _c_ecn_w(self, m: Matched) -> None:
        self._ecn(m, ("weight",))

    def _c_ecn_pw(self, m: Matched) -> None:
        self._ecn(m, ("probability", "weight"))

    def _c_no_ecn(self, m: Matched) -> None:
        self._set(("ecn",), None)

    def _c_ecn_count(self, m: Matched) -> None:
        self._set(("ecn_count",), True)

    def _c_no_ecn_count(self, m: Matched) -> None:
        self._set(("ecn_count",), None)

    def _show(self, words: list[str], pipe: str) -> str:
        return run_show(self.device, self.session, self.privileged, words, pipe)
