"""Mock OpenSM service (``systemctl ... opensm``), its daemon, and ``sminfo``.

A started opensm is a real background process listening on the node's address at SM_PORT, running with
the opensm.conf it read when it started (or on SIGHUP). Each daemon derives its own state the way
OpenSM's SM election does: it polls the other SMs it can reach and is MASTER when no other has a higher
``sm_priority`` (ties: the lowest port GUID wins), else STANDBY. ``sminfo`` reports the state a daemon
itself derives: the master's, or that of the SM at the LID it is given.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from .common import Node, ToolError, err, out

SM_PORT = 18750
CONNECT_TIMEOUT_S = 2.0
# systemd's DefaultTimeoutStartSec/DefaultTimeoutStopSec: a loaded CI machine can take seconds to start
# a Python daemon, and a shorter mock deadline failed the opensm role there while real systemd waits.
START_TIMEOUT_S = STOP_TIMEOUT_S = 90.0
UNIT_NAMES = {"opensm", "opensm.service", "opensmd", "opensmd.service"}
SM_STATES = {3: "SMINFO_MASTER", 2: "SMINFO_STANDBY"}
MASTER, STANDBY = 3, 2
IDENTITY_REQUEST, INFO_REQUEST = "ID", "INFO"  # a daemon's identity alone / with the state it derives


def read_opensm_conf(node: Node) -> dict[str, str]:
    path = node.etc / "opensm" / "opensm.conf"
    conf: dict[str, str] = {}
    if path.exists():
        for raw in path.read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            if line and " " in line:
                key, value = line.split(None, 1)
                conf[key] = value.strip()
    return conf


def sm_identity(node: Node) -> dict[str, Any]:
    conf = read_opensm_conf(node)
    nics = node.rdma_nics()
    if not nics:
        raise ToolError("opensm: no local InfiniBand port found\n", 1)
    guid = int(conf.get("guid", "0x0"), 16)
    port_guid = int(nics[0]["port_guid"], 16)
    return {
        "guid": guid or port_guid,
        "priority": int(conf.get("sm_priority", "0")),
        "lid": int(node.port_value(nics[0], "lid") or "0x0", 16),
    }


def service_state(node: Node) -> dict[str, Any]:
    return node.load("opensm.json", {"enabled": False, "pid": 0, "started": 0.0})


def running_pid(node: Node) -> int:
    pid = int(service_state(node).get("pid", 0))
    if pid <= 0:
        return 0
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        return pid
    return pid


def elected(identities: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenSM's election among SMs: the highest priority, ties to the lowest port GUID."""
    return min(identities, key=lambda sm: (-sm["priority"], sm["guid"]))


def derived_state(node: Node, identity: dict[str, Any]) -> int:
    """MASTER when this SM wins against every other SM it reaches, else STANDBY."""
    others = [sm for sm in (query_sm(a, IDENTITY_REQUEST) for a in peer_addresses(node)) if sm]
    return MASTER if elected([identity, *others]) is identity else STANDBY


def peer_addresses(node: Node) -> list[str]:
    return [a for a in node.info.get("peers", {}).values() if a != node.address]


def startup_log(node: Node, identity: dict[str, Any]) -> str:
    """The lines of opensm.log that say what it loaded and which state it entered."""
    options = "".join(
        f"Loading Cached Option:{key} = {value}\n" for key, value in read_opensm_conf(node).items()
    )
    entered = "MASTER" if derived_state(node, identity) == MASTER else "STANDBY"
    return f"{options}Entering {entered} state\n" + ("SUBNET UP\n" if entered == "MASTER" else "")


def daemon(node: Node) -> int:
    """Background opensm: answer identity and state queries until SIGTERM."""
    identity = sm_identity(node)
    server = socket.create_server((node.address, SM_PORT), reuse_port=False)
    state = service_state(node)
    state.update(pid=os.getpid(), started=time.time())
    node.save("opensm.json", state)
    (node.state / "opensm.log").write_text(startup_log(node, identity))

    def stop(_signum: int, _frame: Any) -> None:
        raise SystemExit(0)

    def reload(_signum: int, _frame: Any) -> None:
        identity.update(sm_identity(node))

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, reload)
    while True:
        conn, _ = server.accept()
        # One thread per query: answering INFO polls the other SMs, which may be polling this one.
        threading.Thread(target=answer, args=(node, conn, identity), daemon=True).start()


def answer(node: Node, conn: socket.socket, identity: dict[str, Any]) -> None:
    with conn:
        conn.settimeout(5.0)
        try:
            request = conn.makefile().readline().strip()
            started = service_state(node).get("started", time.time())
            reply = dict(identity, activity=int((time.time() - started) * 10) + 1)
            if request == INFO_REQUEST:
                reply["state"] = derived_state(node, reply)
            conn.sendall((json.dumps(reply) + "\n").encode())
        except OSError:
            return


def start(node: Node, dispatcher: str) -> None:
    if running_pid(node):
        return
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-IS", dispatcher, "fabcheck-mock-opensm"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ToolError(
                "Job for opensm.service failed because the control process exited with error code.\n", 1
            )
        if service_state(node).get("pid") == proc.pid and query_sm(node.address, IDENTITY_REQUEST):
            return
        time.sleep(0.02)
    proc.kill()
    raise ToolError("Job for opensm.service failed because a timeout was exceeded.\n", 1)


def stop(node: Node) -> None:
    pid = running_pid(node)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline and running_pid(node):
            time.sleep(0.02)
        if running_pid(node):
            os.kill(pid, signal.SIGKILL)  # what systemd does when the stop timeout passes
    state = service_state(node)
    state["pid"] = 0
    node.save("opensm.json", state)


def set_enabled(node: Node, enabled: bool) -> None:
    state = service_state(node)
    state["enabled"] = enabled
    node.save("opensm.json", state)
    link = "/etc/systemd/system/multi-user.target.wants/opensm.service"
    if enabled:
        err(f"Created symlink {link} \u2192 /lib/systemd/system/opensm.service.\n")
    else:
        err(f'Removed "{link}".\n')


def show(node: Node, properties: list[str]) -> str:
    pid = running_pid(node)
    values = {
        "Id": "opensm.service",
        "Names": "opensm.service",
        "Description": "OpenSM InfiniBand subnet manager",
        "LoadState": "loaded",
        "ActiveState": "active" if pid else "inactive",
        "SubState": "running" if pid else "dead",
        "UnitFileState": "enabled" if service_state(node).get("enabled") else "disabled",
        "MainPID": str(pid),
        "ExecMainPID": str(pid),
        "FragmentPath": "/lib/systemd/system/opensm.service",
    }
    keys = properties or list(values)
    return "".join(f"{k}={values.get(k, '')}\n" for k in keys)


def status_text(node: Node) -> str:
    pid = running_pid(node)
    enabled = "enabled" if service_state(node).get("enabled") else "disabled"
    active = "active (running)" if pid else "inactive (dead)"
    text = (
        "\u25cf opensm.service - OpenSM InfiniBand subnet manager\n"
        f"     Loaded: loaded (/lib/systemd/system/opensm.service; {enabled}; preset: enabled)\n"
        f"     Active: {active}\n"
    )
    return text + (f"   Main PID: {pid} (opensm)\n" if pid else "")


def unit_missing(unit: str, verb: str) -> ToolError:
    name = unit if "." in unit else unit + ".service"
    if verb in ("is-active",):
        return ToolError("inactive\n", 3, stdout=True)
    if verb == "is-enabled":
        return ToolError(f"Failed to get unit file state for {name}: No such file or directory\n", 1)
    return ToolError(f"Failed to {verb} {name}: Unit {name} not found.\n", 5)


def systemctl(node: Node, args: list[str], dispatcher: str) -> int:
    properties = [a.split("=", 1)[1] for a in args if a.startswith("--property=")]
    words = [a for a in args if not a.startswith("-")]
    if "-p" in args:
        properties.append(args[args.index("-p") + 1])
        words = [w for w in words if w not in properties]
    if not words:
        raise ToolError("systemctl: a command is required on a lab node\n", 1)
    verb, units = words[0], words[1:]
    if verb == "daemon-reload":
        return 0
    if not units:
        raise ToolError("Too few arguments.\n", 1)
    unit = units[0]
    if unit not in UNIT_NAMES or node.info.get("profile") != "sm":
        if verb == "show":
            out(f"Id={unit}\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n")
            return 0
        raise unit_missing(unit, verb)
    return opensm_verb(node, verb, properties, dispatcher)


def opensm_verb(node: Node, verb: str, properties: list[str], dispatcher: str) -> int:
    if verb == "start":
        start(node, dispatcher)
    elif verb == "stop":
        stop(node)
    elif verb in ("restart", "reload-or-restart", "try-restart"):
        stop(node)
        start(node, dispatcher)
    elif verb == "reload":
        pid = running_pid(node)
        if pid:
            os.kill(pid, signal.SIGHUP)
    elif verb in ("enable", "disable"):
        set_enabled(node, verb == "enable")
    elif verb == "is-active":
        active = bool(running_pid(node))
        out("active\n" if active else "inactive\n")
        return 0 if active else 3
    elif verb == "is-enabled":
        enabled = bool(service_state(node).get("enabled"))
        out("enabled\n" if enabled else "disabled\n")
        return 0 if enabled else 1
    elif verb == "status":
        out(status_text(node))
        return 0 if running_pid(node) else 3
    elif verb == "show":
        out(show(node, properties))
    else:
        raise ToolError(f"Unknown command verb {verb}.\n", 1)
    return 0


def query_sm(address: str, request: str) -> dict[str, Any] | None:
    try:
        with socket.create_connection((address, SM_PORT), timeout=5.0) as conn:
            conn.sendall(f"{request}\n".encode())
            data = conn.makefile().readline()
    except OSError:
        return None
    try:
        return dict(json.loads(data), address=address)
    except ValueError:
        return None


def subnet_manager_runs(node: Node) -> bool:
    """Whether an opensm of the subnet listens (this node's or a peer's). The election makes one of the
    running SMs master, so this is whether the subnet has a master. A connect alone answers it: a
    refused one is immediate, and a stopped daemon's socket still accepts (its ports keep their state)."""
    for address in [node.address, *peer_addresses(node)]:
        try:
            with socket.create_connection((address, SM_PORT), timeout=CONNECT_TIMEOUT_S):
                return True
        except OSError:
            continue
    return False


def sminfo(node: Node, args: list[str]) -> int:
    addresses = [node.address, *peer_addresses(node)]
    sms = [sm for sm in (query_sm(a, INFO_REQUEST) for a in addresses) if sm]
    if not sms or not node.rdma_nics() or node.link_layer(node.rdma_nics()[0]) != "InfiniBand":
        pid = os.getpid()
        raise ToolError(
            f"ibwarn: [{pid}] _do_madrpc: recv failed: Connection timed out\n"
            f"ibwarn: [{pid}] mad_rpc: _do_madrpc failed; dport (Lid 0)\n"
            "sminfo: iberror: failed: query\n",
            255,
        )
    # Without a LID, sminfo asks the master: the SM that itself says it is (the best, should two say so).
    masters = [sm for sm in sms if sm["state"] == MASTER]
    chosen: dict[str, Any] | None = elected(masters) if masters else None
    if args:
        wanted = int(args[0], 0)
        chosen = next((sm for sm in sms if sm["lid"] == wanted), None)
    if chosen is None:
        raise ToolError("sminfo: iberror: failed: query\n", 255)
    state = chosen["state"]
    out(
        f"sminfo: sm lid {chosen['lid']} sm guid 0x{chosen['guid']:016x}, activity count "
        f"{chosen['activity']} priority {chosen['priority']} state {state} {SM_STATES[state]}\n"
    )
    return 0


def dispatcher_path() -> str:
    """The zip application itself (tools are symlinks to it)."""
    return os.path.realpath(sys.argv[0])
