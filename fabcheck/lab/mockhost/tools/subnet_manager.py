"""Mock OpenSM service (``systemctl ... opensm``), its daemon, and ``sminfo``.

A started opensm is a real background process listening on the node's address at SM_PORT. ``sminfo``
polls the node and its peers there and elects the master like OpenSM does: highest ``sm_priority``,
ties broken by the lowest port GUID.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from .common import Node, ToolError, err, out

SM_PORT = 18750
UNIT_NAMES = {"opensm", "opensm.service", "opensmd", "opensmd.service"}
SM_STATES = {3: "SMINFO_MASTER", 2: "SMINFO_STANDBY"}


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


def daemon(node: Node) -> int:
    """Background opensm: answer identity queries until SIGTERM."""
    identity = sm_identity(node)
    server = socket.create_server((node.address, SM_PORT), reuse_port=False)
    state = service_state(node)
    state.update(pid=os.getpid(), started=time.time())
    node.save("opensm.json", state)
    (node.state / "opensm.log").write_text("Entering MASTER state\nSUBNET UP\n")

    def stop(_signum: int, _frame: Any) -> None:
        raise SystemExit(0)

    def reload(_signum: int, _frame: Any) -> None:
        identity.update(sm_identity(node))

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, reload)
    while True:
        conn, _ = server.accept()
        with conn:
            started = service_state(node).get("started", time.time())
            reply = dict(identity, activity=int((time.time() - started) * 10) + 1)
            conn.sendall((json.dumps(reply) + "\n").encode())


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
    deadline = time.time() + 3
    while time.time() < deadline:
        if proc.poll() is not None:
            raise ToolError(
                "Job for opensm.service failed because the control process exited with error code.\n", 1
            )
        if service_state(node).get("pid") == proc.pid and query_sm(node.address):
            return
        time.sleep(0.02)
    raise ToolError("Job for opensm.service failed because a timeout was exceeded.\n", 1)


def stop(node: Node) -> None:
    pid = running_pid(node)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 3
        while time.time() < deadline and running_pid(node):
            time.sleep(0.02)
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


def query_sm(address: str) -> dict[str, Any] | None:
    try:
        with socket.create_connection((address, SM_PORT), timeout=0.5) as conn:
            data = conn.makefile().readline()
    except OSError:
        return None
    try:
        return dict(json.loads(data), address=address)
    except ValueError:
        return None


def sminfo(node: Node, args: list[str]) -> int:
    addresses = [node.address, *node.info.get("peers", {}).values()]
    sms = [sm for sm in (query_sm(a) for a in addresses) if sm]
    if not sms or not node.rdma_nics() or node.link_layer(node.rdma_nics()[0]) != "InfiniBand":
        pid = os.getpid()
        raise ToolError(
            f"ibwarn: [{pid}] _do_madrpc: recv failed: Connection timed out\n"
            f"ibwarn: [{pid}] mad_rpc: _do_madrpc failed; dport (Lid 0)\n"
            "sminfo: iberror: failed: query\n",
            255,
        )
    master = min(sms, key=lambda sm: (-sm["priority"], sm["guid"]))
    chosen = master
    if args:
        wanted = int(args[0], 0)
        chosen = next((sm for sm in sms if sm["lid"] == wanted), None)
        if chosen is None:
            raise ToolError("sminfo: iberror: failed: query\n", 255)
    state = 3 if chosen is master else 2
    out(
        f"sminfo: sm lid {chosen['lid']} sm guid 0x{chosen['guid']:016x}, activity count "
        f"{chosen['activity']} priority {chosen['priority']} state {state} {SM_STATES[state]}\n"
    )
    return 0


def dispatcher_path() -> str:
    """The zip application itself (tools are symlinks to it)."""
    return os.path.realpath(sys.argv[0])
