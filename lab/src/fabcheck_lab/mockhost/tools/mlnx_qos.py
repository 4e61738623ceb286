"""Mock ``mlnx_qos``: per-interface DCB state (trust, DSCP map, PFC, ETS, buffers) with the real layout.

Like the real tool (optparse based), every call that sets something prints the resulting state;
``-F`` is silent. State lives in ``qos/<netdev>.json``.
"""

from __future__ import annotations

import optparse
from typing import Any

from .common import Node, ToolError, out

TSA_VALUES = ("strict", "ets", "vendor")
AUTO_BUFFERS_LOSSY = [262016, 0, 0, 0, 0, 0, 0, 0]
AUTO_BUFFERS_LOSSLESS = [130944, 130944, 0, 0, 0, 0, 0, 0]
MAX_BUFFER_SIZE = 262016


def factory_state() -> dict[str, Any]:
    """mlx5 defaults after driver load: trust pcp, PFC off, prio0->tc1, prio1->tc0, vendor TSA."""
    return {
        "dcbx": "os",
        "trust": "pcp",
        "dscp_user": [],
        "pfc": [0] * 8,
        "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7],
        "tsa": ["vendor"] * 8,
        "tcbw": [0] * 8,
        "cable_len": 7,
        "buffer_manual": False,
        "buffer_size": list(AUTO_BUFFERS_LOSSY),
        "prio2buffer": [0] * 8,
        "max_buffer_size": MAX_BUFFER_SIZE,
    }


class QosParser(optparse.OptionParser):
    def error(self, msg: str) -> None:  # type: ignore[override]
        raise ToolError(self.get_usage() + f"\nmlnx_qos: error: {msg}\n", 2)


def build_parser() -> QosParser:
    parser = QosParser(prog="mlnx_qos", usage="%prog -i <interface> [options]", add_help_option=True)
    add = parser.add_option
    add("-i", "--interface", dest="intf", help="Interface name")
    add("-a", dest="show_all", action="store_true", help="Show all interface's TCs")
    add("-f", "--pfc", dest="pfc", help="Set PFC enabled priorities, e.g. 0,0,0,1,0,0,0,0")
    add("-F", "--specific_pfc", dest="specific_pfc", help="Like --pfc, 'x' keeps a priority; silent")
    add("-p", "--prio_tc", dest="prio_tc", help="Priority to TC map, 8 values")
    add("-s", "--tsa", dest="tsa", help="Transmission algorithm per TC: strict, ets, vendor")
    add("-t", "--tcbw", dest="tcbw", help="ETS bandwidth per TC in percent")
    add("-d", "--dcbx", dest="dcbx", help="DCBX mode: os or fw")
    add("--trust", dest="trust", help="Priority trust state: pcp or dscp")
    add("--dscp2prio", dest="dscp2prio", action="append", help="set,DSCP,PRIO | del,DSCP,PRIO | flush")
    add("--cable_len", dest="cable_len", help="Cable length in meters")
    add("--prio2buffer", dest="prio2buffer", help="Priority to receive buffer map, 8 values")
    add("--buffer_size", dest="buffer_size", help="Receive buffer sizes in bytes, 8 values")
    return parser


def int_list(text: str, name: str, low: int, high: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ToolError(f"Invalid {name} value: {text}\n", 1) from None
    if len(values) != 8 or any(not low <= v <= high for v in values):
        raise ToolError(f"Invalid {name} value: {text} (expected 8 values in {low}..{high})\n", 1)
    return values


def apply_specific_pfc(state: dict[str, Any], text: str) -> None:
    cells = text.split(",")
    if len(cells) != 8 or any(c not in ("0", "1", "x") for c in cells):
        raise ToolError(f"Invalid pfc value: {text}\n", 1)
    state["pfc"] = [state["pfc"][i] if c == "x" else int(c) for i, c in enumerate(cells)]


def apply_dscp2prio(state: dict[str, Any], actions: list[str]) -> None:
    for action in actions:
        parts = action.split(",")
        if parts == ["flush"]:
            state["dscp_user"] = []
            state["trust"] = "pcp"
            continue
        if len(parts) != 3 or parts[0] not in ("set", "del"):
            raise ToolError(f"Invalid dscp2prio value: {action}\n", 1)
        try:
            dscp, prio = int(parts[1]), int(parts[2])
        except ValueError:
            raise ToolError(f"Invalid dscp2prio value: {action}\n", 1) from None
        if not (0 <= dscp <= 63 and 0 <= prio <= 7):
            raise ToolError(f"Invalid dscp2prio value: {action} (dscp 0..63, prio 0..7)\n", 1)
        entries = [e for e in state["dscp_user"] if e[0] != dscp]
        if parts[0] == "set":
            entries.append([dscp, prio])
            state["trust"] = "dscp"
        elif len(entries) == len(state["dscp_user"]):
            raise ToolError(f"dscp2prio entry {dscp},{prio} does not exist\n", 1)
        elif not entries:
            state["trust"] = "pcp"
        state["dscp_user"] = entries


def validate_ets(state: dict[str, Any]) -> None:
    ets_sum = sum(bw for bw, tsa in zip(state["tcbw"], state["tsa"], strict=True) if tsa == "ets")
    if "ets" in state["tsa"] and ets_sum != 100:
        raise ToolError(f"Bad bandwidth: sum of ETS TCs bandwidth must be 100, got {ets_sum}\n", 1)
    for tc, (bw, tsa) in enumerate(zip(state["tcbw"], state["tsa"], strict=True)):
        if tsa != "ets" and bw != 0:
            raise ToolError(f"Bad bandwidth: TC {tc} is {tsa}, its bandwidth must be 0\n", 1)


def apply_buffers(state: dict[str, Any], opts: optparse.Values) -> None:
    if opts.prio2buffer is not None:
        state["prio2buffer"] = int_list(opts.prio2buffer, "prio2buffer", 0, 7)
        state["buffer_manual"] = True
    if opts.buffer_size is not None:
        sizes = int_list(opts.buffer_size, "buffer_size", 0, state["max_buffer_size"])
        if sum(sizes) > state["max_buffer_size"]:
            raise ToolError(f"Total buffer size exceeds max_buffer_size={state['max_buffer_size']}\n", 1)
        state["buffer_size"] = sizes
        state["buffer_manual"] = True
    if not state["buffer_manual"]:
        # The driver re-plans receive buffers when PFC changes: lossless priorities get buffer 1.
        state["prio2buffer"] = [1 if on else 0 for on in state["pfc"]]
        lossless = any(state["pfc"])
        state["buffer_size"] = list(AUTO_BUFFERS_LOSSLESS if lossless else AUTO_BUFFERS_LOSSY)


def apply(state: dict[str, Any], opts: optparse.Values) -> None:
    if opts.trust is not None and opts.dscp2prio:
        raise ToolError("Error: --trust and --dscp2prio can't be used in the same command\n", 1)
    if opts.dcbx is not None:
        if opts.dcbx not in ("os", "fw"):
            raise ToolError(f"Invalid dcbx mode: {opts.dcbx} (os or fw)\n", 1)
        state["dcbx"] = opts.dcbx
    if opts.trust is not None:
        if opts.trust not in ("pcp", "dscp"):
            raise ToolError(f"Invalid trust state: {opts.trust} (pcp or dscp)\n", 1)
        state["trust"] = opts.trust
    if opts.dscp2prio:
        apply_dscp2prio(state, opts.dscp2prio)
    if opts.pfc is not None:
        state["pfc"] = int_list(opts.pfc, "pfc", 0, 1)
    if opts.specific_pfc is not None:
        apply_specific_pfc(state, opts.specific_pfc)
    if opts.prio_tc is not None:
        state["prio_tc"] = int_list(opts.prio_tc, "prio_tc", 0, 7)
    if opts.tsa is not None:
        tsa = opts.tsa.split(",")
        if len(tsa) != 8 or any(t not in TSA_VALUES for t in tsa):
            raise ToolError(f"Invalid tsa value: {opts.tsa} (8 of strict, ets, vendor)\n", 1)
        state["tsa"] = tsa
    if opts.tcbw is not None:
        state["tcbw"] = int_list(opts.tcbw, "tcbw", 0, 100)
    if opts.tsa is not None or opts.tcbw is not None:
        validate_ets(state)
    if opts.cable_len is not None:
        if not opts.cable_len.isdigit():
            raise ToolError(f"Invalid cable_len value: {opts.cable_len}\n", 1)
        state["cable_len"] = int(opts.cable_len)
    apply_buffers(state, opts)


def dscp_to_prio(state: dict[str, Any]) -> dict[int, int]:
    mapping = {dscp: dscp >> 3 for dscp in range(64)}
    mapping.update({d: p for d, p in state["dscp_user"]})
    return mapping


def render_dscp2prio(state: dict[str, Any]) -> list[str]:
    """User-set entries come first (the app-table order), then defaults, highest DSCP first."""
    user = [d for d, _ in state["dscp_user"]]
    order = user + [d for d in range(63, -1, -1) if d not in user]
    mapping = dscp_to_prio(state)
    lines = ["dscp2prio mapping:"]
    for prio in range(8):
        dscps = [d for d in order if mapping[d] == prio]
        for start in range(0, len(dscps), 8):
            chunk = "".join(f"{d:02d}," for d in dscps[start : start + 8])
            lines.append(f"\tprio:{prio} dscp:{chunk}")
    return lines


def render_tc(state: dict[str, Any], tc: int) -> list[str]:
    tsa = state["tsa"][tc]
    suffix = f"tsa: ets, bw: {state['tcbw'][tc]}%" if tsa == "ets" else f"tsa: {tsa}"
    lines = [f"tc: {tc} ratelimit: unlimited, {suffix}"]
    lines += [f"\t priority:  {p}" for p in range(8) if state["prio_tc"][p] == tc]
    return lines


def render(state: dict[str, Any], show_all: bool = False) -> str:
    dcbx = "OS controlled" if state["dcbx"] == "os" else "Firmware controlled"
    lines = [f"DCBX mode: {dcbx}", f"Priority trust state: {state['trust']}"]
    if state["trust"] == "dscp":
        lines += render_dscp2prio(state)
    sizes = ",".join(str(s) for s in state["buffer_size"])
    lines.append(f"Receive buffer size (bytes): {sizes},max_buffer_size={state['max_buffer_size']}")
    lines.append(f"Cable len: {state['cable_len']}")
    lines.append("PFC configuration:")
    lines.append("\tpriority    0   1   2   3   4   5   6   7")
    lines.append("\tenabled     " + "".join(f"{v:<4d}" for v in state["pfc"]))
    lines.append("\tbuffer      " + "".join(f"{v:<4d}" for v in state["prio2buffer"]))
    used = sorted(set(state["prio_tc"]))
    for tc in range(8) if show_all else used:
        lines += render_tc(state, tc)
    return "\n".join(lines) + "\n"


def load_state(node: Node, intf: str) -> dict[str, Any]:
    if not (node.sys_class / "net" / intf).is_dir():
        raise ToolError(f"Interface {intf} does not exist\n", 1)
    nic = node.nic_by_netdev(intf)
    if nic is None or nic["link_layer"] != "Ethernet":
        raise ToolError("Netlink error: Operation not supported\n", 1)
    return node.load(f"qos/{intf}.json") or factory_state()


def main(node: Node, args: list[str]) -> int:
    opts, rest = build_parser().parse_args(args)
    if rest:
        build_parser().error(f"unexpected argument: {rest[0]}")
    if not opts.intf:
        build_parser().error("interface name is required (-i)")
    state = load_state(node, opts.intf)
    setters = (
        opts.pfc,
        opts.specific_pfc,
        opts.prio_tc,
        opts.tsa,
        opts.tcbw,
        opts.dcbx,
        opts.trust,
        opts.dscp2prio,
        opts.cable_len,
        opts.prio2buffer,
        opts.buffer_size,
    )
    if any(v is not None for v in setters):
        apply(state, opts)
        node.save(f"qos/{opts.intf}.json", state)
    if opts.specific_pfc is None:
        out(render(state, bool(opts.show_all)))
    return 0
