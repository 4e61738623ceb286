"""The lab supervisor: a small daemon that owns every node process and the switch server.

`fabcheck lab up` starts it and returns; the supervisor stays the parent of each node's ``unshare``
(which blocks SIGTERM, so only its parent can reap it promptly) and of the switch server. On SIGTERM it
kills them all, reaps them and exits. It writes pids.json so that `down` can also clean a lab whose
supervisor died.

Usage: python -m fabcheck_lab.supervisor --run-dir RUN_DIR
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from fabcheck_lab import nodes, procs
from fabcheck_lab.state import LabPaths, LabPids, LabState, ProcessRef, write_atomic

SPAWN_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGHUP)  # Python ignores some of these


class _Stop(Exception):
    """Raised from the SIGTERM handler to leave the reaping loop."""


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} supervisor: {message}", flush=True)


def _spawn(argv: list[str], log_file: Path) -> int:
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log_file), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions, setsigdef=SPAWN_DEFAULT_SIGNALS)


def _ref(pid: int) -> ProcessRef:
    return ProcessRef(pid=pid, start=procs.start_time(pid))


def _server_argv(module: str, paths: LabPaths) -> list[str]:
    return [sys.executable, "-m", module, "--run-dir", str(paths.run_dir)]


def start_all(paths: LabPaths, state: LabState, started: LabPids) -> None:
    """Start the servers and every host node, recording each in started as it goes
    (so a SIGTERM halfway through still stops whatever already runs)."""
    if state.switch_nodes():
        argv = _server_argv("fabcheck_lab.mockswitch", paths)
        started.switch_server = _ref(_spawn(argv, paths.run_dir / "switches" / "server.log"))
    if state.host_nodes() and not state.slow_tools:
        argv = _server_argv("fabcheck_lab.mockhost.toolserver", paths)
        started.tool_server = _ref(_spawn(argv, paths.run_dir / "toolserver.log"))
    if state.host_nodes() and state.rtt_ms > 0:
        started.delay_proxy = _ref(
            _spawn(_server_argv("fabcheck_lab.delay", paths), paths.run_dir / "delay.log")
        )
    for node in state.host_nodes():
        argv = nodes.launch_argv(paths, node, state.state_mount)
        started.nodes[node.name] = _ref(_spawn(argv, paths.node_root(node.name) / "node.log"))


def _reap_for(seconds: float) -> bool:
    """Reap children for up to seconds; True once none is left."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            time.sleep(0.02)
    return False


def stop_children(started: LabPids) -> None:
    # unshare blocks SIGTERM; SIGKILL makes it kill the node's PID 1 (--kill-child), ending the namespace.
    procs.send([ref.pid for ref in started.nodes.values()], signal.SIGKILL)
    server = [ref.pid for ref in started.servers().values()]
    procs.send(server, signal.SIGTERM)
    if not _reap_for(5.0):
        procs.send(server, signal.SIGKILL)
        _reap_for(2.0)


def _on_term(_signum: int, _frame: object) -> None:
    raise _Stop


def supervise(paths: LabPaths) -> int:
    state = LabState.from_json(paths.state_file.read_text())
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    started = LabPids(supervisor=_ref(os.getpid()))
    try:
        # Recorded before anything starts: `up` can then tell a supervisor that died from a slow one.
        write_atomic(paths.pids_file, started.to_json())
        start_all(paths, state, started)
        write_atomic(paths.pids_file, started.to_json())
        _log(f"started {len(started.nodes)} nodes")
        while True:
            pid, status = os.waitpid(-1, 0)
            _log(f"{started.name_of(pid)} exited ({os.waitstatus_to_exitcode(status)})")
    except ChildProcessError:
        _log("every child has exited")
        return 0
    except _Stop:
        _log("stopping the lab")
        stop_children(started)
        return 0


def daemonize(log_file: Path) -> None:
    """Detach: the caller's child exits at once, the grandchild (own session, parent init) carries on."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(null)
    os.chdir("/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fabcheck_lab.supervisor")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--foreground", action="store_true", help="do not detach (for debugging)")
    args = parser.parse_args(argv)
    state = LabState.from_json((args.run_dir / "lab.json").read_text())
    paths = LabPaths(project=Path(state.project), run_dir=args.run_dir)
    if not args.foreground:
        daemonize(paths.supervisor_log)
    return supervise(paths)


if __name__ == "__main__":
    sys.exit(main())
