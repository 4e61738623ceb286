"""What every mock switch shares: per-port QoS summary, counters, command log, fault edits, state dump."""

from __future__ import annotations

import copy
import gc
import json
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from fabcheck_lab import wire_model
from fabcheck_lab.mockswitch.spec import MockSwitchError, SwitchSpec, write_private

# Faults every platform implements, applied to the RUNNING configuration of a live switch.
SWITCH_FAULTS: Mapping[str, str] = {
    "switch-pfc-prio": "first port runs PFC on priority 4 instead of the lossless priority 3",
    "switch-ecn-off": "ECN marking switched off on the lossless queue 3 (every port)",
    "switch-miswired": "the cables of the first two cabled ports that lead to different hosts are swapped "
    "(LLDP on each port hears the other's host NIC; never an uplink; on a spine, two leaves' uplinks, "
    "both leaves hear the swap too)",
    "switch-link-errors": "the first cabled port counts uncorrectable FEC blocks (a bad cable or optic)",
    "switch-optic-hot": "the first cabled port's module runs over its own high temperature warning",
    "uplink-swap": "two uplink cables of the switch swapped at its end (a lab from a plan: the first two "
    "up-facing ports that lead to different switches); LLDP at both ends of both cables hears the swap",
}
# Faults of the cabling, not of the configuration: they change what LLDP hears, no config edit.
CABLE_FAULTS = frozenset({"switch-miswired", "uplink-swap"})
# Faults of the wire (fabcheck_lab.wire_model): counters and module diagnostics of one port, no config edit.
WIRE_FAULTS = frozenset({"switch-link-errors", "switch-optic-hot"})
FAULT_PORT_PRIORITY = 4  # the wrong priority switch-pfc-prio moves PFC to
LOSSLESS_QUEUE = 3  # the queue switch-ecn-off strips ECN from
ROCE_DSCP = 26  # the DSCP the simulated RDMA traffic carries
LOG_LIMIT = 5000

Path_ = tuple[str, ...]


@dataclass(frozen=True)
class PortQos:
    """How one port treats the simulated RoCE traffic (uniform across platforms)."""

    roce_priority: int  # priority (PFC class) the DSCP 26 traffic is classified to
    roce_queue: int  # egress queue / traffic class it leaves on
    pfc_priorities: tuple[int, ...]  # priorities with PFC enabled
    ecn_queues: tuple[int, ...]  # queues that ECN-mark
    mtu: int
    trust: str


# pfc_* are per priority, the rest per queue (rx_*: what arrived from the port's host, by the queue it
# is classified to; tx_*: what left the port on that egress queue).
COUNTER_KINDS = (
    "pfc_rx",
    "pfc_tx",
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "drops",
    "ecn_marked",
)


class Counters:
    """Per-port, per-priority (PFC) or per-queue (the rest) counters; they move only with lab traffic.

    The hosts' mock tools spool what each flow did to the switch port it crossed (see the mock
    traffic model, lab/src/fabcheck_lab/mockhost/tools/traffic.py); the server adds those records here.
    """

    def __init__(self, ports: Iterable[str], saved: Mapping[str, Any] | None = None) -> None:
        self.ports = {p: {k: [0] * 8 for k in COUNTER_KINDS} for p in ports}
        if saved:
            for port, kinds in saved.get("ports", {}).items():
                if port in self.ports:
                    self.ports[port] = {k: list(kinds.get(k, [0] * 8)) for k in COUNTER_KINDS}

    def add(self, port: str, additions: Mapping[str, Mapping[str, int]]) -> None:
        """Add {kind: {priority or queue: n}} to one port; anything else is a MockSwitchError."""
        if port not in self.ports:
            raise MockSwitchError(f"no port {port!r}")
        if not isinstance(additions, Mapping):
            raise MockSwitchError(f"port {port}: counter additions are not a mapping")
        checked = []
        for kind, by_index in additions.items():
            if kind not in COUNTER_KINDS or not isinstance(by_index, Mapping):
                raise MockSwitchError(f"port {port}: unknown counter kind {kind!r}")
            for index, count in by_index.items():
                if not str(index).isdigit() or int(index) > 7 or not isinstance(count, int) or count < 0:
                    raise MockSwitchError(f"port {port}: bad {kind} entry {index!r}: {count!r}")
                checked.append((kind, int(index), count))
        for kind, index, count in checked:  # all or nothing: a bad record changes no counter
            self.ports[port][kind][index] += count

    def clear(self, ports: Iterable[str], kinds: Iterable[str] = COUNTER_KINDS) -> None:
        for port in ports:
            for kind in kinds:
                self.ports[port][kind] = [0] * 8

    def to_json(self) -> dict[str, Any]:
        return {"ports": self.ports}


class CliSession(ABC):
    """One interactive login: turns typed lines into output and knows its own prompt."""

    closed: bool = False

    def greeting(self) -> str:
        return ""

    @abstractmethod
    def prompt(self) -> str: ...

    @abstractmethod
    def handle(self, line: str) -> str:
        """Run one typed line; return its output ('\\n' line ends, ending with '\\n' when non-empty)."""

    @abstractmethod
    def is_config_line(self, line: str) -> bool:
        """Whether the line changes configuration (what arm_drop counts)."""

    def cancel(self) -> None:  # noqa: B027 - optional hook
        """Ctrl-C: abandon a half-typed heredoc or an unanswered question."""

    def run_once(self, command: str) -> tuple[str, int]:
        """Run a non-interactive command (ssh host 'cmd'); return (output, exit status)."""
        output = self.handle(command)
        return output, 1 if self.last_failed else 0

    last_failed: bool = False


# -- nested-dict edits shared by every platform model (configs are plain JSON trees) --------------


def get_path(tree: Mapping[str, Any], path: Path_) -> Any:
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def has_path(tree: Mapping[str, Any], path: Path_) -> bool:
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True


def set_path(tree: dict[str, Any], path: Path_, value: Any) -> None:
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def delete_path(tree: dict[str, Any], path: Path_) -> None:
    """Remove a key and prune parents left empty."""
    chain = [tree]
    for key in path[:-1]:
        nxt = chain[-1].get(key)
        if not isinstance(nxt, dict):
            return
        chain.append(nxt)
    chain[-1].pop(path[-1], None)
    for depth in range(len(path) - 2, -1, -1):
        if chain[depth + 1]:
            break
        chain[depth].pop(path[depth], None)


Edit = tuple[Path_, Any]  # value None deletes the path
_ABSENT = {"absent": True}


def _snapshot(tree: Mapping[str, Any], path: Path_) -> dict[str, Any]:
    return {"value": copy.deepcopy(get_path(tree, path))} if has_path(tree, path) else dict(_ABSENT)


def apply_edits(tree: dict[str, Any], edits: Iterable[Edit]) -> list[list[Any]]:
    """Apply edits; return [path, before, after] records that undo_edits replays in reverse (JSON-able)."""
    undo: list[list[Any]] = []
    for path, value in edits:
        before = _snapshot(tree, path)
        if value is None:
            delete_path(tree, path)
        else:
            set_path(tree, path, copy.deepcopy(value))
        undo.append([list(path), before, _snapshot(tree, path)])
    return undo


def undo_edits(tree: dict[str, Any], undo: list[list[Any]]) -> None:
    """Restore each edited path, unless someone changed it again since (then theirs stands)."""
    for path, before, after in reversed(undo):
        if _snapshot(tree, tuple(path)) != after:
            continue
        if before.get("absent"):
            delete_path(tree, tuple(path))
        else:
            set_path(tree, tuple(path), copy.deepcopy(before["value"]))


class SwitchDevice(ABC):
    """The state of one mock switch: configuration stores, counters, log and injected faults."""

    platform: ClassVar[str]

    def __init__(self, spec: SwitchSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.ports = spec.ports
        self.counters = Counters(spec.ports)
        # Each port's wire (physical counters, module diagnostics) as the lab's wire model keeps it.
        self.wire: dict[str, dict[str, Any]] = {port: wire_model.fresh_state() for port in spec.ports}
        self.log: list[dict[str, Any]] = []
        self.faults: dict[str, list[list[Any]]] = {}
        self.startup_faults: dict[str, list[list[Any]]] = {}  # the same faults' undo in startup
        self.running: dict[str, Any] = self.factory_config()
        self.startup: dict[str, Any] = copy.deepcopy(self.running)
        # Set by the server: adds the hosts' spooled traffic records to the counters (None: no lab).
        self.traffic_feed: Callable[[], None] | None = None
        # Set by the server: every switch it serves, so a cable fault at one end shows at the other.
        self.cable_peers: Mapping[str, SwitchDevice] = {}
        # Directories under /tmp that shell sessions created (the drivers' push lock lives there);
        # every session of the switch shares them, as they would share the switch's tmpfs.
        self.tmp_dirs: set[str] = set()
        # Login shells by process id, while they live: a session the client dropped is garbage at
        # once, so its pid leaves /proc as a real shell's does when SSH hangs it up.
        self.shells: weakref.WeakValueDictionary[int, CliSession] = weakref.WeakValueDictionary()
        self._next_pid = 4000

    def shell_pid(self, session: CliSession) -> int:
        """The process id of `session`'s shell (`echo $$`), assigned at first use."""
        for pid, shell in self.shells.items():
            if shell is session:
                return pid
        self._next_pid += 1
        self.shells[self._next_pid] = session
        return self._next_pid

    # -- platform hooks ---------------------------------------------------------------------------
    @abstractmethod
    def factory_config(self) -> dict[str, Any]: ...

    @abstractmethod
    def new_session(self, username: str) -> CliSession: ...

    @abstractmethod
    def port_qos(self) -> dict[str, PortQos]: ...

    @abstractmethod
    def fault_edits(self, fault: str) -> list[Edit]: ...

    def pending_json(self) -> Any:
        return {}

    def extra_json(self) -> dict[str, Any]:
        return {}

    def load_extra(self, saved: Mapping[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore platform-specific stores from a previous dump."""

    # -- shared behaviour -------------------------------------------------------------------------
    def tmp_command(self, words: Sequence[str], session: CliSession | None = None) -> str | None:
        """`mkdir`, `ls`, `rm -r` and `true` on directories under /tmp, with coreutils' messages
        (None: not one of these). The server runs every session on one event loop, so
        `mkdir` is atomic across sessions as on a real filesystem."""
        if list(words) == ["true"]:
            return ""
        if list(words) in (["echo", "$$"], ["echo", "$PPID"]) and session is not None:
            return str(self.shell_pid(session))
        if len(words) == 3 and words[:2] == ["ls", "-d"] and words[2].startswith("/proc/"):
            gc.collect()  # a dropped login may sit in a reference cycle (asyncssh's task and frames)
            pid = words[2].removeprefix("/proc/")
            shell = self.shells.get(int(pid)) if pid.isdigit() else None
            if shell is None or shell.closed:
                return f"ls: cannot access '{words[2]}': No such file or directory"
            return words[2]
        if len(words) == 2 and words[0] == "mkdir":
            path = words[1].rstrip("/")
            parent = path.rpartition("/")[0]
            if not path.startswith("/tmp/"):
                return f"mkdir: cannot create directory '{words[1]}': Permission denied"
            if path in self.tmp_dirs:
                return f"mkdir: cannot create directory '{words[1]}': File exists"
            if parent != "/tmp" and parent not in self.tmp_dirs:
                return f"mkdir: cannot create directory '{words[1]}': No such file or directory"
            self.tmp_dirs.add(path)
            return ""
        if len(words) == 2 and words[0] == "ls":
            path = words[1].rstrip("/")
            if path not in self.tmp_dirs:
                return f"ls: cannot access '{words[1]}': No such file or directory"
            return "\n".join(
                sorted(d.rpartition("/")[2] for d in self.tmp_dirs if d.rpartition("/")[0] == path)
            )
        if len(words) == 3 and words[:2] == ["rm", "-r"]:
            path = words[2].rstrip("/")
            if path not in self.tmp_dirs:
                return f"rm: cannot remove '{words[2]}': No such file or directory"
            self.tmp_dirs = {d for d in self.tmp_dirs if d != path and not d.startswith(path + "/")}
            return ""
        return None

    def lldp_neighbors(self) -> dict[str, tuple[str, str]]:
        """port -> (neighbour system, neighbour port) as LLDP hears them now, in port order: the spec's
        cabling with this switch's cable faults, and its switch neighbours' (a cable swapped at the
        other end is heard swapped at this end too)."""
        heard = {port: (system, remote) for port, system, remote in self.spec.neighbors}
        for first, other in self.swapped_ports():
            heard[first], heard[other] = heard[other], heard[first]
        original = dict(heard)
        for peer in self.cable_peers.values():
            for pair in peer.swapped_ports() if peer is not self else []:
                # Two cables swapped at the peer's end: the port that heard one of them now hears the
                # other (what the peer sends for its port: its name, or a SONiC port's alias).
                sent = {
                    peer.port_id(pair[0]): peer.port_id(pair[1]),
                    peer.port_id(pair[1]): peer.port_id(pair[0]),
                }
                for port, (system, remote) in original.items():
                    if system == peer.name and remote in sent:
                        heard[port] = (system, sent[remote])
        return {port: heard[port] for port in self.ports if port in heard}

    def swapped_ports(self) -> list[tuple[str, str]]:
        """The pairs of this switch's ports whose cables its cable faults swap: switch-miswired the
        first cabled port and the first that leads to another neighbour, uplink-swap two uplinks."""
        pairs = []
        for fault, pair in (
            ("switch-miswired", self.miswire_ports()),
            ("uplink-swap", self.uplink_swap_ports()),
        ):
            if fault in self.faults and pair is not None:
                pairs.append(pair)
        return pairs

    def miswire_ports(self) -> tuple[str, str] | None:
        """The two ports switch-miswired swaps: the first cabled port and the next that leads to another
        neighbour, among the ports that do not face the tier above (a leaf's host ports, a spine's leaf
        ports); None when they all lead to one neighbour."""
        heard = {
            port: system for port, system, _remote in self.spec.neighbors if port not in self.spec.up_ports
        }
        first = next(iter(heard), None)
        other = next((p for p in heard if first is not None and heard[p] != heard[first]), None)
        return None if first is None or other is None else (first, other)

    def uplink_swap_ports(self) -> tuple[str, str] | None:
        """The two up-facing cabled ports uplink-swap swaps: the first one and the next that leads to
        another switch (else the second); None when fewer than two up-facing ports are cabled."""
        cabled = {port: system for port, system, _remote in self.spec.neighbors}
        ups = [port for port in self.ports if port in self.spec.up_ports and port in cabled]
        if len(ups) < 2:
            return None
        other = next((port for port in ups[1:] if cabled[port] != cabled[ups[0]]), ups[1])
        return ups[0], other

    def port_id(self, port: str) -> str:
        """The LLDP port ID this switch sends on a port: its name (lldpd `portidsubtype ifname` on
        Cumulus Linux, the interface name on EOS); SONiC overrides it with the port's alias."""
        return port

    def wire_fault_port(self) -> str | None:
        """The port a wire fault hits: the first cabled one (LLDP hears a neighbour there)."""
        cabled = {port for port, _system, _remote in self.spec.neighbors}
        return next((port for port in self.ports if port in cabled), None)

    def wire_counters(self, port: str) -> dict[str, int]:
        """The port's physical counters now, in fabcheck's wire vocabulary (each platform renders them
        under its own names)."""
        return wire_model.counters_at(self.wire[port])

    def wire_faults(self, port: str) -> frozenset[str]:
        """The wire faults running on the port (a platform renders their effect on its module's DOM
        with wire_model.dom_values)."""
        return frozenset(self.wire[port].get("rates", {})) if port in self.wire else frozenset()

    def refresh_counters(self) -> None:
        """Bring the counters up to date with the lab's traffic before a show reads them."""
        if self.traffic_feed is not None:
            self.traffic_feed()

    def record(self, user: str, event: str, text: str, ok: bool = True) -> None:
        self.log.append({"time": round(time.time(), 3), "user": user, "event": event, "text": text, "ok": ok})
        del self.log[:-LOG_LIMIT]

    def inject(self, fault: str) -> None:
        if fault not in SWITCH_FAULTS:
            raise MockSwitchError(f"unknown switch fault {fault!r}; known: {sorted(SWITCH_FAULTS)}")
        if fault in self.faults:
            return
        if fault == "switch-miswired" and self.miswire_ports() is None:
            raise MockSwitchError(
                f"switch-miswired needs two cabled ports of {self.name} that lead to different neighbours"
            )
        if fault == "uplink-swap" and self.uplink_swap_ports() is None:
            raise MockSwitchError(
                f"uplink-swap needs two cabled up-facing ports on {self.name} (a leaf or spine of a lab "
                "started from a plan: `fabcheck lab up --plan FILE`)"
            )
        edits = [] if fault in CABLE_FAULTS | WIRE_FAULTS else self.fault_edits(fault)
        port = self.wire_fault_port()
        if fault in WIRE_FAULTS and port is not None:
            self.wire[port] = wire_model.start_fault(self.wire[port], fault)
        self.faults[fault] = apply_edits(self.running, edits)
        # A fault is a saved misconfiguration (it survives a reboot): the check it targets fails, not
        # switch.startup_config. An unsaved change is what a typed command without a save makes.
        self.startup_faults[fault] = apply_edits(self.startup, edits)
        self.record("lab", "fault", f"inject {fault}")

    def heal(self, fault: str | None = None) -> None:
        if fault is not None and fault not in SWITCH_FAULTS:
            raise MockSwitchError(f"unknown switch fault {fault!r}; known: {sorted(SWITCH_FAULTS)}")
        names = [fault] if fault else list(self.faults)
        for name in reversed(names):
            undo = self.faults.pop(name, None)
            if undo is not None:
                for port, state in self.wire.items():
                    self.wire[port] = wire_model.stop_fault(state, name)
                undo_edits(self.running, undo)
                undo_edits(self.startup, self.startup_faults.pop(name, []))
                self.record("lab", "fault", f"heal {name}")

    def state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "platform": self.platform,
            "running": self.running,
            "pending": self.pending_json(),
            "startup": self.startup,
            "log": self.log,
            "counters": self.counters.to_json(),
            "wire": self.wire,
            "operational": {p: asdict(q) for p, q in self.port_qos().items()},
            "faults": self.faults,
            "startup_faults": self.startup_faults,
            **self.extra_json(),
        }

    def load(self, saved: Mapping[str, Any]) -> None:
        """Resume from a previous dump of the same switch (server restart inside one lab run)."""
        if saved.get("platform") != self.platform:
            return
        self.running = saved.get("running", self.running)
        self.startup = saved.get("startup", self.startup)
        self.log = list(saved.get("log", []))
        self.faults = dict(saved.get("faults", {}))
        self.startup_faults = dict(saved.get("startup_faults", {}))
        self.counters = Counters(self.ports, saved.get("counters"))
        wire = saved.get("wire", {})
        self.wire = {port: wire.get(port) or wire_model.fresh_state() for port in self.ports}
        self.load_extra(saved)

    def dump(self, path: Path) -> None:
        write_private(path, json.dumps(self.state(), indent=1, sort_keys=False) + "\n")
