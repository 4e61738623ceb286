"""EOS configuration as a JSON tree: defaults, `show running-config` text, and per-port QoS."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fabcheck_lab.mockswitch.device import ROCE_DSCP, PortQos

EOS_VERSION = "4.35.0F"  # the release whose running-config order the mock prints
DEFAULT_MTU = 1500
DEFAULT_TRUST = "cos"  # switched ports trust CoS until `qos trust dscp`
ECN_UNITS = ("segments", "bytes", "kbytes", "mbytes", "milliseconds")


def default_tc(dscp: int) -> int:
    """EOS default DSCP->TC: DSCP/8, with classes 0 and 1 swapped (CoS 0 rides TC1)."""
    base = dscp >> 3
    return {0: 1, 1: 0}.get(base, base)


def factory_config(hostname: str, ports: Sequence[str]) -> dict[str, Any]:
    return {
        "hostname": hostname,
        "qos": {"dscp_map": {}},
        "pfc_watchdog": {},
        "qos_profiles": {},
        "interfaces": {p: {} for p in ports},
    }


def short_name(port: str) -> str:
    return "Et" + port[len("Ethernet") :]


def parse_interfaces(token: str, ports: Sequence[str]) -> list[str] | None:
    """'Ethernet1', 'Et1-4,6', 'eth1/1' -> existing port names (None when any is unknown)."""
    m = re.fullmatch(r"(?i)(?:ethernet|eth|et|e)([\d/,\-]+)", token)
    if not m:
        return None
    names: list[str] = []
    for part in m.group(1).split(","):
        r = re.fullmatch(r"(\d+(?:/\d+)*)(?:-(\d+))?", part)
        if not r:
            return None
        if r.group(2):
            head, _, first = r.group(1).rpartition("/")
            prefix = f"{head}/" if head else ""
            names += [f"Ethernet{prefix}{n}" for n in range(int(first), int(r.group(2)) + 1)]
        else:
            names.append(f"Ethernet{r.group(1)}")
    if not names or any(n not in ports for n in names):
        return None
    return list(dict.fromkeys(names))


# -- running-config text ----------------------------------------------------------------------------


def _txq_lines(kind_num: str, q: Mapping[str, Any]) -> list[str]:
    lines = [f"   {q.get('kind', 'uc-tx-queue')} {kind_num}"]
    # The priority line first, then bandwidth, shape, random-detect (AVD PR #4579, tested on a 7280R).
    if "kind" in q and q.get("priority") != "strict":
        lines.append("      no priority")  # tx-queues are strict until `no priority` (UNVERIFIED rendering)
    if q.get("priority") == "strict":
        lines.append("      priority strict")  # shown even as the default (UNVERIFIED: EOS may omit it)
    if "bandwidth_percent" in q:
        lines.append(f"      bandwidth percent {q['bandwidth_percent']}")
    if "bandwidth_guaranteed" in q:
        lines.append(f"      bandwidth guaranteed percent {q['bandwidth_guaranteed']}")
    ecn = q.get("ecn")
    if ecn:
        tail = "".join(
            f" {k} {ecn[v]}"
            for k, v in (("max-mark-probability", "probability"), ("weight", "weight"))
            if v in ecn
        )
        lines.append(
            f"      random-detect ecn minimum-threshold {ecn['min']} {ecn['min_unit']} "
            f"maximum-threshold {ecn['max']} {ecn['max_unit']}{tail}"
        )
    if q.get("ecn_count"):
        lines.append("      random-detect ecn count")
    return lines


def block_lines(block: Mapping[str, Any]) -> list[str]:
    """Lines shared by `qos profile` and `interface` blocks, in EOS's order."""
    lines = []
    for key in ("description",):
        if key in block:
            lines.append(f"   description {block[key]}")
    if block.get("shutdown"):
        lines.append("   shutdown")
    if "mtu" in block:
        lines.append(f"   mtu {block['mtu']}")
    if "speed" in block:
        lines.append(f"   speed {block['speed']}")
    if "trust" in block:
        lines.append(f"   qos trust {block['trust']}")
    if block.get("pfc") == "on":
        lines.append("   priority-flow-control on")
    for prio, mode in sorted(block.get("pfc_priorities", {}).items()):
        lines.append(f"   priority-flow-control priority {prio} {mode}")
    if block.get("pfc_watchdog"):
        lines.append("   priority-flow-control pause watchdog")
    if "service_profile" in block:
        lines.append(f"   service-profile {block['service_profile']}")
    for num, queue in sorted(block.get("tx_queues", {}).items(), key=lambda kv: int(kv[0])):
        lines.append("   !")
        lines += _txq_lines(num, queue)
    return lines


def _global_lines(config: Mapping[str, Any]) -> list[str]:
    lines = []
    by_tc: dict[int, list[int]] = {}
    for dscp, tc in config["qos"]["dscp_map"].items():
        by_tc.setdefault(int(tc), []).append(int(dscp))
    if by_tc:
        lines += [
            f"qos map dscp {' '.join(str(d) for d in sorted(ds))} to traffic-class {tc}"
            for tc, ds in sorted(by_tc.items())
        ] + ["!"]
    if config["qos"].get("allow_non_ect"):
        lines += ["qos random-detect ecn allow non-ect", "!"]
    wd = config["pfc_watchdog"]
    wd_lines = [
        f"priority-flow-control pause watchdog default {k} {wd[k]}"
        for k in ("timeout", "recovery-time", "polling-interval")
        if k in wd
    ]
    if "action" in wd:
        wd_lines.append(f"priority-flow-control pause watchdog action {wd['action']}")
    if wd_lines:
        lines += [*wd_lines, "!"]
    return lines


def running_config_text(config: Mapping[str, Any]) -> str:
    lines = [
        "! Command: show running-config",
        f"! device: {config['hostname']} (cEOSLab, EOS-{EOS_VERSION})",
        "!",
        "no aaa root",
        "!",
        f"hostname {config['hostname']}",
        "!",
        "spanning-tree mode mstp",
        "!",
    ]
    # EOS 4.35's order (AVD's intended configs; pyavd 6.4.0): qos profiles (their PFC lines before the
    # tx-queues), interfaces, then the qos maps and the PFC watchdog defaults.
    for name, profile in sorted(config["qos_profiles"].items()):
        lines += [f"qos profile {name}", *block_lines(profile), "!"]
    for port, block in sorted(config["interfaces"].items(), key=lambda kv: _port_key(kv[0])):
        lines += [f"interface {port}", *block_lines(block), "!"]
    lines += _global_lines(config)
    lines += ["end"]
    return "\n".join(lines)


def _port_key(port: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", port)]


def sections(text: str) -> list[list[str]]:
    """Top-level blocks of a running-config (a header line plus its indented lines)."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(" ") and blocks:
            blocks[-1].append(line)
        elif line not in ("!", "end") and not line.startswith("! "):
            blocks.append([line])
    return blocks


# -- effective behaviour --------------------------------------------------------------------------


PORT_SPEED_GBPS = 400  # the mock's ports and cables: `speed auto` trains here
_SPEED = re.compile(r"(?P<gbps>10|25|40|50|100|200|400)g(?:-[1248])?", re.ASCII)


def parse_speed_gbps(token: str) -> int | None:
    match = _SPEED.fullmatch(token)
    return int(match["gbps"]) if match else None


def port_speed_gbps(config: Mapping[str, Any], port: str) -> int:
    speed = config["interfaces"].get(port, {}).get("speed", "auto")
    return parse_speed_gbps(speed) or PORT_SPEED_GBPS


def effective_block(config: Mapping[str, Any], port: str) -> dict[str, Any]:
    """Interface settings over its service-profile's settings (the interface wins key by key)."""
    block = config["interfaces"].get(port, {})
    profile = config["qos_profiles"].get(block.get("service_profile", ""), {})
    merged = {**profile, **{k: v for k, v in block.items() if k not in ("pfc_priorities", "tx_queues")}}
    merged["pfc_priorities"] = {**profile.get("pfc_priorities", {}), **block.get("pfc_priorities", {})}
    # A tx-queue the interface configures keeps the profile's other settings of that queue: EOS applies
    # a service-profile's commands under the interface's own, command by command (an interface's
    # `uc-tx-queue 3` / `random-detect ecn ...` leaves the profile's `bandwidth percent` in force).
    queues = {q: dict(cfg) for q, cfg in profile.get("tx_queues", {}).items()}
    for queue, cfg in block.get("tx_queues", {}).items():
        queues[queue] = {**queues.get(queue, {}), **cfg}
    merged["tx_queues"] = queues
    return merged


def dscp_to_tc(config: Mapping[str, Any], dscp: int) -> int:
    return int(config["qos"]["dscp_map"].get(str(dscp), default_tc(dscp)))


def port_qos(config: Mapping[str, Any], ports: Sequence[str]) -> dict[str, PortQos]:
    out = {}
    for port in ports:
        eff = effective_block(config, port)
        trust = eff.get("trust", DEFAULT_TRUST)
        tc = dscp_to_tc(config, ROCE_DSCP) if trust == "dscp" else 1
        pfc = (
            sorted(int(p) for p, mode in eff["pfc_priorities"].items() if mode == "no-drop")
            if eff.get("pfc") == "on"
            else []
        )
        ecn = sorted(int(q) for q, cfg in eff["tx_queues"].items() if cfg.get("ecn"))
        out[port] = PortQos(
            roce_priority=tc,
            roce_queue=tc,
            pfc_priorities=tuple(pfc),
            ecn_queues=tuple(ecn),
            mtu=int(eff.get("mtu", DEFAULT_MTU)),
            trust=trust,
        )
    return out
