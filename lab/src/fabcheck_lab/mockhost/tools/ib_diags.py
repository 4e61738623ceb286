"""Mock infiniband-diags: ibnetdiscover, iblinkinfo, ibqueryerrors, saquery, vendstat and perfquery.

Every node reads the lab's one fabric (`ib_fabric.json` in its state folder, written on every host node by
fabcheck_lab.ib_lab at `up`, inject and heal) and prints it through fabcheck_lab.ib_fabric's renderers
(rdma-core infiniband-diags@691953d8d502f54088f776c5ba2aeed0a5ac945d formats). The tools answer only from
a node with an InfiniBand port on a subnet with a running SM (the lab's mock opensm), which assigns the
LIDs they address; without one the mock refuses every tool (a real ibnetdiscover would still discover by
directed route, with LID 0: not modelled).
"""

from __future__ import annotations

import getopt
import time
from collections.abc import Callable, Mapping
from typing import Any

from . import subnet_manager
from .common import Node, ToolError, err, getopt_message, out

try:  # inside a node: the tools' zip application ships the lab's fabric model beside them (prepare.py)
    from . import ib_fabric  # type: ignore[attr-defined, unused-ignore]
except ImportError:  # in the controller's process (tool server, tests): the lab's own module
    from fabcheck_lab import ib_fabric

STATE_FILE = "ib_fabric.json"
FAILED = 255  # ibexit(): exit(-1)
TOOLS = ("ibnetdiscover", "iblinkinfo", "ibqueryerrors", "saquery", "vendstat", "perfquery")
# Options each tool takes here (getopt): the common -C CA -P PORT, and what the stage sends.
OPTIONS = {
    "ibnetdiscover": ("C:P:p", []),
    "iblinkinfo": ("C:P:", ["line"]),
    "ibqueryerrors": ("C:P:", ["threshold-file="]),
    "saquery": ("C:P:", []),
    "vendstat": ("C:P:N", []),
    "perfquery": ("C:P:x", []),
}


def effective(document: Mapping[str, Any]) -> Any:
    """The fabric as the nodes show it now: the factory one with every active fault applied in order,
    plus the error sources of healed faults (stopped, they keep what they counted)."""
    fabric = ib_fabric.from_json(document["fabric"])
    for fault, switch, since in document.get("faults", []):
        fabric = ib_fabric.with_fault(fabric, fault, switch, since)
    healed = ib_fabric.from_json({**document["fabric"], "errors": document.get("counted", [])}).errors
    return ib_fabric.Fabric(
        fabric.switches, fabric.hcas, fabric.cables, (*healed, *fabric.errors), fabric.sa_port_guids
    )


def subnet_up(node: Node) -> bool:
    return subnet_manager.subnet_manager_runs(node)


def failed(tool: str, message: str) -> ToolError:
    """ibexit's line (stdout), exit -1."""
    return ToolError(f"{tool}: iberror: failed: {message}\n", FAILED, stdout=True)


def refuse(node: Node, tool: str, message: str, ca: str | None, port: int) -> ToolError:
    """libibumad's warning on stderr, then ibexit's line (ibdiag_common.c ibexit prints it on stdout)."""
    err(f"ibwarn: [{node.process_id()}] mad_rpc_open_port: can't open UMAD port ({ca or '(null)'}:{port})\n")
    return ToolError(f"{tool}: iberror: failed: {message}\n", FAILED, stdout=True)


def fabric_for(node: Node, tool: str, ca: str | None, port: int) -> Any:
    """The fabric as this node reads it through its port, or the tool's failure."""
    document = node.load(STATE_FILE)
    nics = [n for n in node.rdma_nics() if node.link_layer(n) == "InfiniBand"]
    chosen = next((n for n in nics if n["name"] == ca), None) if ca else (nics[0] if nics else None)
    if chosen is None or port != 1:
        raise refuse(node, tool, f"Failed to open port; {ca or '(null)'}:{port}", ca, port)
    # No modelled fabric (an ib lab without --switches), no SM, or this HCA's cable unplugged.
    fabric = None if document is None else effective(document)
    key = f"{node.hostname}/{chosen['name']}"
    if fabric is None or not subnet_up(node) or not any(key in (c.a.node, c.b.node) for c in fabric.cables):
        raise ToolError(f"{tool}: iberror: failed: discover failed\n\n", FAILED, stdout=True)
    return fabric


def tool(name: str) -> Callable[[Node, list[str]], int]:
    return lambda node, args: main(node, name, args)


def main(node: Node, tool: str, args: list[str]) -> int:
    short, long = OPTIONS[tool]
    try:
        options, rest = getopt.gnu_getopt(args, short, long)
    except getopt.GetoptError as exc:  # getopt's complaint, then ibdiag_show_usage(): exit(2)
        raise ToolError(f"{getopt_message(tool, exc)}\nUsage: {tool} [options]\n", 2) from None
    given = dict(options)
    ca = given.get("-C")
    try:
        port = int(given.get("-P", "1"), 0)
    except ValueError:
        raise ToolError(f"{tool}: iberror: failed: bad port {given['-P']!r}\n", FAILED, stdout=True) from None
    fabric = fabric_for(node, tool, ca, port)
    if tool == "ibnetdiscover":
        if "-p" not in given:
            raise ToolError("ibnetdiscover: the mock prints the ports report only (-p)\n", FAILED)
        out(ib_fabric.render_ibnetdiscover_ports(fabric))
        return 0
    if tool == "iblinkinfo":
        if "--line" not in given:
            raise ToolError("iblinkinfo: the mock prints the one-line form only (--line)\n", FAILED)
        out(ib_fabric.render_iblinkinfo_line(fabric))
        return 0
    if tool == "ibqueryerrors":
        return ibqueryerrors(node, fabric, given.get("--threshold-file"))
    if tool == "saquery":
        if rest:
            raise ToolError("saquery: the mock answers NodeRecords (no arguments) only\n", FAILED)
        out(ib_fabric.render_saquery_nodes(fabric))
        return 0
    if tool == "vendstat":
        return vendstat(fabric, "-N" in given, rest)
    return perfquery(node, fabric, "-x" in given, rest)


def ibqueryerrors(node: Node, fabric: Any, threshold_file: str | None) -> int:
    """Only an existing threshold file (the stage's empty one: every threshold 0) is modelled."""
    if threshold_file is None:
        raise ToolError("ibqueryerrors: the mock needs --threshold-file (every threshold 0)\n", FAILED)
    try:
        with open(threshold_file) as handle:
            lines = [x.strip() for x in handle if x.strip() and not x.startswith("#")]
    except OSError:
        raise ToolError("ibqueryerrors: the mock needs a readable --threshold-file\n", FAILED) from None
    if lines:
        raise ToolError("ibqueryerrors: the mock models an empty threshold file only\n", FAILED)
    text, status = ib_fabric.render_ibqueryerrors(fabric, time.time())
    out(text)
    return int(status)


def vendstat(fabric: Any, general: bool, rest: list[str]) -> int:
    if not general:
        raise failed("vendstat", "at least one of -N and -w must be specified")
    if len(rest) != 1:
        raise ToolError("vendstat: the mock needs one LID\n", FAILED)
    try:
        lid = int(rest[0], 0)
    except ValueError:
        raise failed("vendstat", f"can't resolve destination port {rest[0]}") from None
    switch = next((s for s in fabric.switches if s.lid == lid), None)
    if switch is None:  # a CA's PMA does not answer the Mellanox vendor class (or no such LID)
        raise failed("vendstat", "classportinfo query")
    out(ib_fabric.render_vendstat_general(switch))
    return 0


def perfquery(node: Node, fabric: Any, extended: bool, rest: list[str]) -> int:
    if not extended or len(rest) != 2:
        raise ToolError("perfquery: the mock answers `perfquery -x <lid> <port>` only\n", FAILED)
    try:
        lid, port = int(rest[0], 0), int(rest[1], 0)
    except ValueError:
        raise failed("perfquery", f"can't resolve destination port {rest[0]}") from None
    up_since = (node.state / STATE_FILE).stat().st_mtime
    text = ib_fabric.render_perfquery_extended(fabric, lid, port, time.time(), time.time() - up_since)
    if text is None:
        raise failed("perfquery", f"perfquery: lid {lid} port {port}: query failed")
    out(text)
    return 0
