"""Bring a lab up, take it down, tell how it is doing."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabcheck.fabricplan.planfile import plan_from_json
from fabcheck_lab import fromplan, net, nodes, preflight, procs
from fabcheck_lab.assemble import assemble
from fabcheck_lab.delay import READY_FILE as DELAY_READY
from fabcheck_lab.inventory import write_access_files
from fabcheck_lab.mockhost.layout import MOCK_STATE_MOUNT
from fabcheck_lab.mockhost.toolserver import READY_FILE as TOOL_SERVER_READY
from fabcheck_lab.mockswitch.spec import known_hosts_path, ready_path
from fabcheck_lab.state import (
    LabError,
    LabPaths,
    LabPids,
    LabState,
    NodeRecord,
    lab_lock,
    load_pids,
    load_state,
    log_tail,
    save_state,
    write_atomic,
)

DEFAULT_HOSTS = 4
DEFAULT_SWITCHES = {"roce": 2, "ib": 0, "nvl": 2}
NETWORK_MODES = ("lo",)
SUPERVISOR_START_S = 10.0  # it only has to import and record its pid
MAX_RTT_MS = 1000.0
# `up` reports its progress through on_stage(name), in this order (tests kill `up` at each one).
UP_STAGES = ("run dir", "state", "supervisor", "ready", "known_hosts", "ssh_config", "inventory", "complete")
Stage = Callable[[str], None]


def _no_stage(_name: str) -> None:
    """The default progress callback: nothing to report."""


@dataclass(frozen=True)
class UpResult:
    state: LabState
    already_up: bool
    seconds: float


@dataclass(frozen=True)
class DownResult:
    found: bool  # was there anything to remove
    stopped: int  # processes ended
    seconds: float
    leftovers: list[str] = field(default_factory=list)  # what could not be removed


@dataclass(frozen=True)
class NodeHealth:
    node: NodeRecord
    answers: bool
    faults: tuple[str, ...]


@dataclass(frozen=True)
class LabStatus:
    state: LabState
    supervisor_alive: bool
    nodes: list[NodeHealth]

    @property
    def healthy(self) -> bool:
        """Supervisor alive and every node answers, except nodes that were taken down on purpose."""
        return self.supervisor_alive and all(h.answers or "down" in h.faults for h in self.nodes)


def new_state(
    paths: LabPaths,
    profile: str,
    hosts: int,
    switches: int | None,
    network: str,
    rtt_ms: float = 0.0,
    plan: dict[str, Any] | None = None,
) -> LabState:
    """The lab `up` builds; with a plan (fromplan.load_plan) its nodes and cables are the plan's."""
    if network not in NETWORK_MODES:
        raise LabError(f"unknown network mode {network!r}; modes: {', '.join(NETWORK_MODES)}")
    if not 0.0 <= rtt_ms <= MAX_RTT_MS:
        raise LabError(f"--rtt-ms {rtt_ms}: out of range, allowed: 0..{MAX_RTT_MS:.0f}")
    if plan is not None:
        planned = plan_from_json(plan, "the plan")
        return LabState(
            project=str(paths.project),
            run_dir=str(paths.run_dir),
            profile=planned.input.fabric,
            hosts=len(planned.nodes),
            switches=len(planned.switches),
            net=network,
            nodes=fromplan.plan_nodes(planned),
            state_mount=MOCK_STATE_MOUNT,
            rtt_ms=float(rtt_ms),
            plan=plan,
        )
    if switches is None:
        switches = DEFAULT_SWITCHES.get(profile, 0)
    return LabState(
        project=str(paths.project),
        run_dir=str(paths.run_dir),
        profile=profile,
        hosts=hosts,
        switches=switches,
        net=network,
        nodes=nodes.plan_nodes(profile, hosts, switches),
        state_mount=MOCK_STATE_MOUNT,
        rtt_ms=float(rtt_ms),
    )


# ---- up -------------------------------------------------------------------------------------------


def up(
    paths: LabPaths,
    *,
    profile: str = "roce",
    hosts: int = DEFAULT_HOSTS,
    switches: int | None = None,
    network: str = "lo",
    rtt_ms: float = 0.0,
    on_stage: Stage = _no_stage,
    plan: dict[str, Any] | None = None,
) -> UpResult:
    """Start the lab and return once every node answers SSH and the switch server is ready.

    Idempotent: the same complete lab already up is left alone. A lab that is partly dead, or whose
    `up` never finished (killed before its access files were all written), is cleaned and rebuilt.
    """
    began = time.monotonic()
    wanted = new_state(paths, profile, hosts, switches, network, rtt_ms, plan)
    preflight.require_root()
    with lab_lock(paths):
        current = load_state(paths)
        if current is not None and is_complete(paths, current):
            report = inspect(paths, current)
            if report.healthy and current.shape == wanted.shape:
                return UpResult(current, already_up=True, seconds=time.monotonic() - began)
            if report.healthy:
                raise LabError(f"a different lab is up ({_describe(current)}); run `fabcheck lab down` first")
        _remove_everything(paths)
        preflight.check_machine(_listeners(wanted))
        try:
            _start(paths, wanted, on_stage)
        except BaseException:
            _remove_everything(paths)
            raise
    return UpResult(wanted, already_up=False, seconds=time.monotonic() - began)


def is_complete(paths: LabPaths, state: LabState) -> bool:
    """`up` finished this lab: it said so last, and the access files it wrote before are all there."""
    return state.complete and all(p.is_file() for p in (paths.known_hosts, paths.ssh_config, paths.inventory))


def _listeners(state: LabState) -> list[tuple[str, int]]:
    """Every address:port the lab will listen on (sshd behind the delay proxy has a port of its own)."""
    found = [(n.address, n.port) for n in state.nodes]
    if state.rtt_ms > 0:
        found += [(n.address, nodes.sshd_port(n, state.rtt_ms)) for n in state.host_nodes()]
    return found


def _describe(state: LabState) -> str:
    delay = f", RTT {state.rtt_ms:g} ms" if state.rtt_ms else ""
    planned = " from a plan" if state.plan is not None else ""
    return f"profile {state.profile}{planned}, {state.hosts} hosts, {state.switches} switches{delay}"


def _start(paths: LabPaths, state: LabState, on_stage: Stage) -> None:
    paths.marker_dir.mkdir(exist_ok=True)
    write_atomic(paths.pointer, f"{paths.run_dir}\n")
    known_hosts = assemble(paths, state)
    on_stage("run dir")
    save_state(paths, state)
    on_stage("state")
    _spawn_supervisor(paths)
    on_stage("supervisor")
    _wait_ready(paths, state, timeout=30.0 + 0.1 * len(state.nodes))
    on_stage("ready")
    if state.switch_nodes():
        known_hosts += _switch_known_hosts(paths)
    write_access_files(paths, state, known_hosts, on_stage)
    state.complete = True  # last: a lab without this mark is rebuilt by the next `up`
    save_state(paths, state)
    on_stage("complete")


def _switch_known_hosts(paths: LabPaths) -> list[str]:
    source = known_hosts_path(paths.run_dir)
    try:
        return source.read_text().splitlines()
    except OSError as err:
        raise LabError(f"the mock switch server is ready but wrote no {source.name}: {err.strerror}") from err


def _spawn_supervisor(paths: LabPaths) -> None:
    argv = [sys.executable, "-m", "fabcheck_lab.supervisor", "--run-dir", str(paths.run_dir)]
    # The supervisor forks into the background; this first process exits at once and is reaped here.
    result = subprocess.run(argv, capture_output=True, text=True, check=False, start_new_session=True)
    if result.returncode != 0:
        raise LabError(f"the lab supervisor did not start: {result.stderr.strip()}")


def _wait_ready(paths: LabPaths, state: LabState, timeout: float) -> None:
    began = time.monotonic()
    deadline = began + timeout
    pending = {(n.address, n.port): n for n in state.host_nodes()}
    while True:
        pids = load_pids(paths)
        if pids is None and time.monotonic() - began > SUPERVISOR_START_S:
            raise LabError(f"the lab supervisor did not start: {log_tail(paths.supervisor_log)}")
        _check_alive(paths, state, pids, pending.values())
        answered = nodes.probe_banners(pending, timeout=_probe_timeout(state, 0.5))
        pending = {target: node for target, node in pending.items() if not answered[target]}
        servers = _servers_pending(paths, state)
        if not pending and not servers:
            return
        if time.monotonic() > deadline:
            waiting = [n.name for n in pending.values()] + servers
            raise LabError(
                f"lab did not come up within {timeout:.0f} s; still waiting for: {', '.join(waiting)}"
            )
        time.sleep(0.05)


def _servers_pending(paths: LabPaths, state: LabState) -> list[str]:
    """The lab's servers that have not said they are ready yet."""
    expected = {
        "switch server": bool(state.switch_nodes()) and not ready_path(paths.run_dir).exists(),
        "tool server": bool(state.host_nodes()) and not state.slow_tools,
        "delay proxy": bool(state.host_nodes()) and state.rtt_ms > 0,
    }
    expected["tool server"] &= not (paths.run_dir / TOOL_SERVER_READY).exists()
    expected["delay proxy"] &= not (paths.run_dir / DELAY_READY).exists()
    return [name for name, waiting in expected.items() if waiting]


def _check_alive(
    paths: LabPaths, state: LabState, pids: LabPids | None, waiting: Iterable[NodeRecord]
) -> None:
    if pids is None:
        return  # the supervisor has not recorded itself yet
    # The most specific failure first: a supervisor whose children all died exits too.
    for node in waiting:
        ref = pids.nodes.get(node.name)
        if ref is not None and not procs.is_running(ref.pid):
            log = paths.node_root(node.name) / "node.log"
            raise LabError(f"lab node {node.name} failed to start: {log_tail(log)}")
    logs = {
        "switch server": paths.run_dir / "switches" / "server.log",
        "tool server": paths.run_dir / "toolserver.log",
        "delay proxy": paths.run_dir / "delay.log",
    }
    for name, ref in pids.servers().items():
        if not procs.is_running(ref.pid):
            raise LabError(f"the lab's {name} failed to start: {log_tail(logs[name])}")
    if not procs.is_running(pids.supervisor.pid, pids.supervisor.start):
        raise LabError(f"the lab supervisor died: {log_tail(paths.supervisor_log)}")


# ---- status ---------------------------------------------------------------------------------------


def _probe_timeout(state: LabState, base_s: float) -> float:
    """A banner behind the delay proxy comes 1.5 RTT late (handshake, then half a round trip)."""
    return base_s + 2.0 * state.rtt_ms / 1000.0


def inspect(paths: LabPaths, state: LabState) -> LabStatus:
    pids = load_pids(paths)
    supervisor_alive = pids is not None and procs.is_running(pids.supervisor.pid, pids.supervisor.start)
    targets = ((n.address, n.port) for n in state.nodes)
    answers = nodes.probe_banners(targets, timeout=_probe_timeout(state, 1.0))
    health = [
        NodeHealth(
            node=n,
            answers=answers[(n.address, n.port)],
            faults=tuple(f.fault for f in state.faults if f.node == n.name),
        )
        for n in state.nodes
    ]
    return LabStatus(state=state, supervisor_alive=supervisor_alive, nodes=health)


def status(paths: LabPaths) -> LabStatus | None:
    state = load_state(paths)
    return None if state is None else inspect(paths, state)


# ---- down -----------------------------------------------------------------------------------------


def down(paths: LabPaths) -> DownResult:
    """Remove every process, qdisc, mount and file of the lab; works on a crashed or half-built lab."""
    began = time.monotonic()
    with lab_lock(paths):
        found = paths.run_dir.exists() or paths.inventory.exists() or paths.pointer.exists()
        stopped, leftovers = _remove_everything(paths)
    with contextlib.suppress(OSError):
        paths.lock_file.unlink()
        paths.marker_dir.rmdir()
    return DownResult(found=found or stopped > 0, stopped=stopped, seconds=time.monotonic() - began,
                      leftovers=leftovers)  # fmt: skip


def _run_dirs(paths: LabPaths) -> list[Path]:
    """The computed run dir and, if different, the one the pointer names (e.g. an older checkout path)."""
    found = [paths.run_dir]
    with contextlib.suppress(OSError):
        pointed = Path(paths.pointer.read_text().strip())
        if pointed != paths.run_dir and pointed.name.startswith("fabcheck-lab-"):
            found.append(pointed)
    return found


def _remove_everything(paths: LabPaths) -> tuple[int, list[str]]:
    stopped = 0
    leftovers: list[str] = []
    # The tc tree on lo is shared by the network namespace: only a lab that exists may remove it.
    had_lab = paths.pointer.exists() or any(run_dir.exists() for run_dir in _run_dirs(paths))
    for run_dir in _run_dirs(paths):
        count, alive = _stop_processes(LabPaths(paths.project, run_dir))
        stopped += count
        leftovers += [f"process {pid}: {procs.command_line(pid)[:80]}" for pid in alive]
        leftovers += _unmount_under(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        if run_dir.exists():
            leftovers.append(f"directory {run_dir}")
    if had_lab:
        net.remove_tree()
    for path in (paths.inventory, paths.pointer):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return stopped, leftovers


def _ancestors() -> set[int]:
    chain: set[int] = set()
    pid = procs.parent_pid(os.getpid())
    while pid and pid not in chain:
        chain.add(pid)
        pid = procs.parent_pid(pid)
    return chain


def _stop_processes(paths: LabPaths) -> tuple[int, list[int]]:
    """Stop the supervisor (it ends its children), then anything of this lab that is still running."""
    pids = load_pids(paths)
    refs = [] if pids is None else [pids.supervisor, *pids.nodes.values()]
    refs += [] if pids is None else list(pids.servers().values())
    ours = {ref.pid for ref in refs if procs.is_running(ref.pid, ref.start)}
    if pids is not None and pids.supervisor.pid in ours:
        procs.send([pids.supervisor.pid], signal.SIGTERM)  # it kills and reaps its children itself
        procs.wait_gone([pids.supervisor.pid], 8.0)
    node_refs = [] if pids is None else list(pids.nodes.values())
    nodes_left = [ref.pid for ref in node_refs if procs.is_running(ref.pid, ref.start)]
    # unshare ignores SIGTERM; SIGKILL is safe for it (the kernel then kills the whole node namespace).
    procs.send(nodes_left, signal.SIGKILL)
    spare = _ancestors()
    others = [pid for pid in procs.pids_mentioning(str(paths.run_dir)) if pid not in spare]
    procs.send(others, signal.SIGCONT)  # a node stopped by the `down` fault cannot act on SIGTERM
    alive = procs.terminate(others) + procs.wait_gone(nodes_left, 5.0)
    return len(ours | set(others)), alive


def _unmount_under(run_dir: Path) -> list[str]:
    """Mounts of this namespace below the run dir (none in normal use): detach them."""
    prefix = str(run_dir)
    failed: list[str] = []
    with open("/proc/self/mounts") as mounts:
        targets = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for target in sorted(targets, key=len, reverse=True):
        result = subprocess.run(["umount", "-l", target], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            failed.append(f"mount {target}")
    return failed
