"""Lab state on disk: where a lab lives, what it is made of, which faults are active.

The run dir sits in /dev/shm (file creation there is ~50x cheaper than on ext4) and is named after the
project checkout, so two checkouts never share a lab. The git-ignored ``.lab/`` folder of the checkout
holds the lock and a pointer to the run dir.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fabcheck.errors import FabcheckError

SHM = Path("/dev/shm")
STATE_FILE = "lab.json"
PIDS_FILE = "pids.json"
HOST_PORT = 2222
SWITCH_PORT = 2201
MAX_HOST_NODES = 1250  # 127.0.1.x, 127.0.2.x, 127.0.4.x..127.0.6.x; 127.0.3.x belongs to switches
MAX_SWITCHES = 250
# The one source of the switch password: read by `up` only, which writes it to the run dir's 0600 file.
PASSWORD_ENV = "FABCHECK_LAB_SWITCH_PASSWORD"


class LabError(FabcheckError):
    """The lab cannot do what was asked (not root, missing tool, port in use, unknown node, ...)."""


def project_root() -> Path:
    """The checkout the lab belongs to: the one holding this package (lab/src/fabcheck_lab) and
    ``inventory/``; the current folder for a lab installed from a wheel."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "inventory").is_dir() and (checkout / "lab" / "pyproject.toml").is_file():
        return checkout
    return Path.cwd().resolve()


def run_dir_for(root: Path) -> Path:
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]
    return SHM / f"fabcheck-lab-{digest}"


@dataclass(frozen=True)
class LabPaths:
    """Every file the lab writes, derived from the checkout and its run dir."""

    project: Path
    run_dir: Path

    @classmethod
    def for_project(cls, project: Path) -> LabPaths:
        return cls(project=project, run_dir=run_dir_for(project))

    @property
    def marker_dir(self) -> Path:
        return self.project / ".lab"

    @property
    def lock_file(self) -> Path:
        return self.marker_dir / "lock"

    @property
    def pointer(self) -> Path:
        return self.marker_dir / "run_dir"

    @property
    def inventory(self) -> Path:
        return self.project / "inventory" / "lab" / "hosts.yml"

    @property
    def state_file(self) -> Path:
        return self.run_dir / STATE_FILE

    @property
    def pids_file(self) -> Path:
        return self.run_dir / PIDS_FILE

    @property
    def nodes_dir(self) -> Path:
        return self.run_dir / "nodes"

    @property
    def bin_dir(self) -> Path:
        return self.run_dir / "bin"

    @property
    def client_key(self) -> Path:
        return self.run_dir / "ssh" / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.run_dir / "ssh" / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.run_dir / "ssh" / "ssh_config"

    @property
    def control_dir(self) -> Path:
        return self.run_dir / "cp"

    @property
    def switch_password(self) -> Path:
        return self.run_dir / "switch_password"

    @property
    def supervisor_log(self) -> Path:
        return self.run_dir / "supervisor.log"

    def node_root(self, name: str) -> Path:
        return self.nodes_dir / name


@dataclass(frozen=True)
class NodeRecord:
    """One lab node. kind "host" has its own namespaces and sshd; kind "switch" lives in the switch server."""

    name: str
    kind: str
    profile: str  # host profile (rail8, pcie, ib, sm) or switch platform (nvue, sonic, eos)
    group: str  # inventory group
    index: int
    address: str
    port: int
    username: str = "root"
    ports: tuple[str, ...] = ()  # switch front-panel ports


@dataclass(frozen=True)
class ActiveFault:
    fault: str
    node: str


@dataclass
class LabState:
    project: str
    run_dir: str
    profile: str
    hosts: int
    switches: int
    net: str
    nodes: list[NodeRecord]
    state_mount: str = "/var/lib/fabcheck-mock"  # where nodes see MockNodePaths.state
    faults: list[ActiveFault] = field(default_factory=list)
    rtt_ms: float = 0.0  # round-trip delay controller <-> host nodes (delay.py), 0 for none
    slow_tools: str = ""  # why the mock tools run an interpreter per call ("" when the tool server runs them)
    complete: bool = False  # set last by `up`, once every access file is written
    # `up --plan FILE`: the fabric plan (fabcheck.fabricplan.planfile JSON) the nodes and cables follow.
    plan: dict[str, Any] | None = None

    @property
    def shape(self) -> tuple[str, int, int, str, float, str]:
        """What `up` was asked for; a second `up` with the same shape is a no-op."""
        planned = "" if self.plan is None else json.dumps(self.plan, sort_keys=True)
        return (self.profile, self.hosts, self.switches, self.net, self.rtt_ms, planned)

    def node(self, name: str) -> NodeRecord:
        for record in self.nodes:
            if record.name == name:
                return record
        valid = ", ".join(n.name for n in self.nodes)
        raise LabError(f"unknown node {name!r}; lab nodes: {valid}")

    def host_nodes(self) -> list[NodeRecord]:
        return [n for n in self.nodes if n.kind == "host"]

    def switch_nodes(self) -> list[NodeRecord]:
        return [n for n in self.nodes if n.kind == "switch"]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> LabState:
        raw = json.loads(text)
        raw["nodes"] = [NodeRecord(**{**n, "ports": tuple(n.get("ports", ()))}) for n in raw["nodes"]]
        raw["faults"] = [ActiveFault(**f) for f in raw.get("faults", [])]
        return cls(**raw)


def save_state(paths: LabPaths, state: LabState) -> None:
    write_atomic(paths.state_file, state.to_json())


def load_state(paths: LabPaths) -> LabState | None:
    """The recorded lab, or None when there is none (or its run dir vanished, e.g. after a reboot)."""
    try:
        return LabState.from_json(paths.state_file.read_text())
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError) as err:
        raise LabError(f"{paths.state_file} is damaged ({err}); run `fabcheck lab down` to clean up") from err


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


@contextlib.contextmanager
def lab_lock(paths: LabPaths) -> Iterator[None]:
    """Serialise lab commands of one checkout (up, down, inject, heal)."""
    paths.marker_dir.mkdir(exist_ok=True)
    with open(paths.lock_file, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class ProcessRef:
    """A pid plus its kernel start time, so a recycled pid is never mistaken for ours."""

    pid: int
    start: int | None


@dataclass
class LabPids:
    """What the supervisor started (pids.json): enough for `down` to clean up without the supervisor."""

    supervisor: ProcessRef
    switch_server: ProcessRef | None = None
    nodes: dict[str, ProcessRef] = field(default_factory=dict)
    tool_server: ProcessRef | None = None
    delay_proxy: ProcessRef | None = None

    def servers(self) -> dict[str, ProcessRef]:
        """The lab's server processes by what they are (not the nodes)."""
        named = {"switch server": self.switch_server, "tool server": self.tool_server}
        named["delay proxy"] = self.delay_proxy
        return {name: ref for name, ref in named.items() if ref is not None}

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> LabPids:
        raw = json.loads(text)

        def optional(key: str) -> ProcessRef | None:
            return ProcessRef(**raw[key]) if raw.get(key) else None

        return cls(
            supervisor=ProcessRef(**raw["supervisor"]),
            switch_server=optional("switch_server"),
            nodes={name: ProcessRef(**ref) for name, ref in raw.get("nodes", {}).items()},
            tool_server=optional("tool_server"),
            delay_proxy=optional("delay_proxy"),
        )

    def name_of(self, pid: int) -> str:
        for name, ref in self.nodes.items():
            if ref.pid == pid:
                return f"node {name}"
        for name, ref in self.servers().items():
            if ref.pid == pid:
                return name
        return f"pid {pid}"


def load_pids(paths: LabPaths) -> LabPids | None:
    try:
        return LabPids.from_json(paths.pids_file.read_text())
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError):
        return None  # half-written by a crashing supervisor: `down` falls back to scanning /proc


def log_tail(path: Path, lines: int = 5) -> str:
    """The last lines of a daemon's log on one line, for an error that says why it did not start."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"
