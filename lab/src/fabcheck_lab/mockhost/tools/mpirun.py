"""``fabcheck-mpirun``: a small lab launcher for multi-node mock nccl-tests when no real mpirun exists.

``fabcheck-mpirun -np N -H h1,h2 [-x VAR[=VAL]]... CMD ARGS`` starts N processes, block-distributed
over the hosts (``host:slots`` honoured), one ssh per host (``FABCHECK_MPI_SSH``, default
``ssh -o BatchMode=yes``; the local host runs without ssh). Every process gets OpenMPI-style rank
variables plus ``FABCHECK_MPI_ROOT``/``FABCHECK_MPI_PORT`` where process 0 gathers the others.
"""

from __future__ import annotations

import os
import random
import shlex
import socket
import subprocess
import sys
from typing import Any

from .common import Node, ToolError, out

USAGE = "Usage: fabcheck-mpirun [-np N] -H host[:slots][,host...] [-x VAR[=VALUE]]... CMD [ARGS...]\n"
IGNORED_WITH_VALUE = {"--bind-to", "--map-by", "--hostfile", "-hostfile", "--rankfile", "-npernode"}
LOCAL_FLAG = "--fabcheck-local"


def parse(args: list[str]) -> tuple[int, list[tuple[str, int]], dict[str, str], list[str]]:
    nprocs, hosts, exports = 0, [], {}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        flag = args[i]
        value = args[i + 1] if i + 1 < len(args) else None
        if flag in ("-np", "-n", "--np"):
            nprocs, i = int(value or "0"), i + 2
        elif flag in ("-H", "--host", "-host"):
            hosts, i = parse_hosts(value or ""), i + 2
        elif flag in ("-x",):
            name, _, val = (value or "").partition("=")
            exports[name] = val if _ else os.environ.get(name, "")
            i += 2
        elif flag == "--mca" or flag == "-mca":
            i += 3
        elif flag in IGNORED_WITH_VALUE:
            i += 2
        elif flag == "--":
            i += 1
            break
        else:
            i += 1  # flags without value (--allow-run-as-root, --oversubscribe, ...)
    command = args[i:]
    if not hosts or not command:
        raise ToolError(USAGE, 1)
    if nprocs == 0:
        nprocs = sum(slots for _, slots in hosts)
    return nprocs, hosts, exports, command


def parse_hosts(text: str) -> list[tuple[str, int]]:
    hosts = []
    for item in text.split(","):
        name, _, slots = item.partition(":")
        if name:
            hosts.append((name, int(slots) if slots.isdigit() else 0))
    return hosts


def placement(nprocs: int, hosts: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """(host, first process rank, process count) per host, filling hosts in order."""
    default = -(-nprocs // len(hosts))
    plan, first = [], 0
    for name, slots in hosts:
        count = min(slots or default, nprocs - first)
        if count > 0:
            plan.append((name, first, count))
            first += count
    if first < nprocs:
        raise ToolError(
            f"There are not enough slots available in the system to satisfy the {nprocs} slots\n"
            "that were requested by the application.\n",
            1,
        )
    return plan


def address_of(node: Node | None, host: str, ssh: list[str]) -> str:
    """Where the ranks reach `host`: the node's peer table, else ssh's own config, else DNS."""
    if node is not None:
        if host == node.hostname:
            return node.address
        peers: dict[str, Any] = node.info.get("peers", {})
        if host in peers:
            return str(peers[host])
    resolved = ssh_hostname(ssh, host)
    if resolved:
        return resolved
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def ssh_hostname(ssh: list[str], host: str) -> str | None:
    """The HostName ssh would connect to (``ssh -G``), e.g. from the lab's ssh_config."""
    try:
        shown = subprocess.run([*ssh, "-G", host], capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return None
    for line in shown.stdout.splitlines() if shown.returncode == 0 else []:
        key, _, value = line.partition(" ")
        if key == "hostname" and value != host:
            return value.strip()
    return None


def is_local(node: Node | None, host: str) -> bool:
    return node is not None and host in (node.hostname, node.address)


def launch(node: Node | None, args: list[str]) -> int:
    nprocs, hosts, exports, command = parse(args)
    plan = placement(nprocs, hosts)
    ssh = shlex.split(os.environ.get("FABCHECK_MPI_SSH", "ssh -o BatchMode=yes"))
    exports["FABCHECK_MPI_ROOT"] = address_of(node, plan[0][0], ssh)
    exports["FABCHECK_MPI_PORT"] = str(random.randrange(20000, 40000))
    procs = []
    for host, first, count in plan:
        inner = ["fabcheck-mpirun", LOCAL_FLAG, str(first), str(count), str(nprocs), "--", *command]
        env_words = [f"{k}={v}" for k, v in exports.items()]
        if is_local(node, host):
            argv = [sys.executable, "-IS", os.path.abspath(sys.argv[0]), *inner[1:]]
            procs.append(subprocess.Popen(argv, env={**os.environ, **exports}, stdout=subprocess.PIPE))
        else:
            remote = shlex.join(["env", *env_words, *inner])
            procs.append(subprocess.Popen([*ssh, host, remote], stdout=subprocess.PIPE))
    return collect(procs)


def collect(procs: list[subprocess.Popen[bytes]]) -> int:
    code = 0
    for proc in procs:
        data, _ = proc.communicate()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        code = max(code, proc.returncode)
    return code


def run_local(args: list[str]) -> int:
    """Start this host's processes with their rank variables and print their output in rank order."""
    first, count, nprocs = (int(a) for a in args[:3])
    command = args[4:] if args[3:4] == ["--"] else args[3:]
    procs = []
    for local in range(count):
        env = dict(os.environ)
        env.update(
            OMPI_COMM_WORLD_RANK=str(first + local),
            OMPI_COMM_WORLD_SIZE=str(nprocs),
            OMPI_COMM_WORLD_LOCAL_RANK=str(local),
            OMPI_COMM_WORLD_LOCAL_SIZE=str(count),
        )
        try:
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE))
        except OSError as exc:
            raise ToolError(f"fabcheck-mpirun: cannot start {command[0]}: {exc.strerror}\n", 1) from None
    return collect(procs)


def main(node: Node | None, args: list[str]) -> int:
    if args[:1] == [LOCAL_FLAG]:
        return run_local(args[1:])
    if not args or args[0] in ("-h", "--help"):
        out(USAGE)
        return 0
    return launch(node, args)
