"""``numactl``: the NUMA policy runner of a lab node, over the node's modelled NUMA nodes.

The machine under the lab has one NUMA node, so the real numactl would refuse ``--cpunodebind=1``
that a two-socket GPU server takes for granted. This one knows the node's topology (the NUMA nodes
its GPUs, NICs and CPU lists sit on), refuses a node the host does not have the way libnuma does, and
then runs the command in place (exec), with the binding it was given in FABCHECK_MOCK_NUMA so that a
mock tool under it can tell how it was placed. ``--hardware`` and ``--show`` print the real layouts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from .common import Node, ToolError, out

BINDING_ENV = "FABCHECK_MOCK_NUMA"  # "cpunodebind=N;membind=M" as this numactl set it
NODE_MEMORY_MB = 1031891  # what one socket of the modelled server shows as its size
USAGE = (
    "usage: numactl [--all | -a] [--balancing | -b] [--interleave= | -i <nodes>]\n"
    "               [--preferred= | -p <node>] [--physcpubind= | -C <cpus>]\n"
    "               [--cpunodebind= | -N <nodes>] [--membind= | -m <nodes>]\n"
    "               [--localalloc | -l] command args ...\n"
    "       numactl [--show | -s]\n"
    "       numactl [--hardware | -H]\n"
)
# Options that take a value, long name -> short letter, and the policy they set.
VALUED = {"interleave": "i", "preferred": "p", "physcpubind": "C", "cpunodebind": "N", "membind": "m"}
SHORT_VALUED = {letter: name for name, letter in VALUED.items()}
FLAGS = {"hardware": "H", "show": "s", "localalloc": "l", "all": "a", "balancing": "b"}
SHORT_FLAGS = {letter: name for name, letter in FLAGS.items()}
NODE_LISTS = ("interleave", "preferred", "cpunodebind", "membind")


def numa_nodes(topology: dict[str, Any]) -> dict[int, str]:
    """NUMA node -> its CPU list, from the node's modelled topology."""
    affinity = topology.get("cpu_affinity") or {}
    nodes = {int(node): cpus for node, cpus in affinity.items()}
    for device in (*topology.get("gpus", []), *topology.get("nics", [])):
        nodes.setdefault(int(device.get("numa", 0)), "")
    return dict(sorted(nodes.items())) or {0: "0"}


def expand(ranges: str) -> list[int]:
    """'0-2,7' -> [0, 1, 2, 7]; ValueError when it is not such a list."""
    values: list[int] = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        values += range(int(first), int(last or first) + 1)
    return values


def usage_error(message: str = "") -> ToolError:
    return ToolError(f"{message}{USAGE}", 1)


def parse(args: list[str]) -> tuple[dict[str, str], set[str], list[str]]:
    """(valued options, flags, command) as numactl reads them: options first, then the command."""
    valued: dict[str, str] = {}
    flags: set[str] = set()
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
        else:  # -N1 or -N 1
            name, has_value, value = SHORT_VALUED.get(arg[1:2], SHORT_FLAGS.get(arg[1:2], arg)), "", arg[2:]
        if name in VALUED:
            if not has_value and not value:
                i += 1
                if i >= len(args):
                    raise usage_error(f"numactl: option '{arg}' requires an argument\n")
                value = args[i]
            valued[name] = value
        elif name in FLAGS:
            flags.add(name)
        else:
            raise usage_error(f"numactl: unrecognized option '{arg}'\n")
        i += 1
    return valued, flags, args[i:]


def check_nodes(valued: dict[str, str], known: Iterable[int]) -> None:
    have = set(known)
    for option in NODE_LISTS:
        if option not in valued:
            continue
        text = valued[option]
        try:
            wanted = expand(text) if text != "all" else sorted(have)
        except ValueError:
            raise usage_error(f"libnuma: Warning: node argument {text} is out of range\n\n") from None
        for node in wanted:
            if node not in have:
                raise usage_error(f"libnuma: Warning: node argument {node} is out of range\n\n")


def hardware(nodes: dict[int, str]) -> str:
    ids = list(nodes)
    span = f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else f"{ids[0]}"
    lines = [f"available: {len(ids)} nodes ({span})"]
    for node, cpus in nodes.items():
        lines.append(f"node {node} cpus: {' '.join(str(c) for c in expand(cpus)) if cpus else ''}".rstrip())
        lines.append(f"node {node} size: {NODE_MEMORY_MB} MB")
        lines.append(f"node {node} free: {NODE_MEMORY_MB * 9 // 10} MB")
    lines.append("node distances:")
    lines.append("node " + "".join(f"{n:>4}" for n in ids) + " ")
    for a in ids:
        lines.append(f"{a:>3}: " + "".join(f"{10 if a == b else 21:>4}" for b in ids) + " ")
    return "\n".join(lines) + "\n"


def show(nodes: dict[int, str]) -> str:
    ids = " ".join(str(n) for n in nodes)
    cpus = " ".join(str(c) for cpus in nodes.values() for c in (expand(cpus) if cpus else []))
    return (
        "policy: default\npreferred node: current\n"
        f"physcpubind: {cpus}\ncpubind: {ids}\nnodebind: {ids}\nmembind: {ids}\n"
    )


def main(node: Node, args: list[str]) -> int:
    valued, flags, command = parse(args)
    nodes = numa_nodes(node.topology)
    if "hardware" in flags:
        out(hardware(nodes))
        return 0
    if "show" in flags and not command:
        out(show(nodes))
        return 0
    check_nodes(valued, nodes)
    if not command:
        raise usage_error()
    binding = ";".join(f"{name}={valued[name]}" for name in ("cpunodebind", "membind") if name in valued)
    os.environ[BINDING_ENV] = binding
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        raise ToolError(f"numactl: execution of `{command[0]}': {exc.strerror}\n", 1) from None
    return 1  # not reached: exec replaced this process
