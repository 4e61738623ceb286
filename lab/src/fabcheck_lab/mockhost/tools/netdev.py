"""Mock ``ip`` (link queries and MTU/state changes on mock netdevs only) and ``ethtool``.

In lo mode a node shares the controller's network namespace, so anything that is not about a mock
netdev is passed to the real ``ip`` only when it cannot change the machine (show/list/get).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .common import Delegate, Node, ToolError, out
from .mlnx_qos import factory_state
from .wire import fec_text, module_text, phy_counters

REAL_IP = ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")
READ_ONLY_VERBS = {"show", "list", "lst", "get", "help"}

# ethtool -S counters in the order mlx5 prints them (subset relevant to lossless RoCE)
COUNTERS = (
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "rx_vport_rdma_unicast_packets",
    "rx_vport_rdma_unicast_bytes",
    "tx_vport_rdma_unicast_packets",
    "tx_vport_rdma_unicast_bytes",
    "rx_out_of_buffer",
    "rx_discards_phy",
    "tx_discards_phy",
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_pause_ctrl_phy",
    "tx_pause_ctrl_phy",
    *[f"{d}_prio{p}_{k}" for p in range(8) for d in ("rx", "tx") for k in ("bytes", "packets")],
    *[f"{d}_prio{p}_{k}" for p in range(8) for d in ("rx", "tx") for k in ("pause", "pause_duration")],
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "out_of_sequence",
    "packet_seq_err",
    "roce_adp_retrans",
    "link_down_events_phy",
    "rx_bits_phy",
    "rx_pcs_symbol_err_phy",
    "rx_corrected_bits_phy",
)


def load_counters(node: Node, netdev: str) -> dict[str, int]:
    stored = node.load(f"counters/{netdev}.json", {})
    return {name: int(stored.get(name, 0)) for name in COUNTERS}


def statistics_of(node: Node, netdev: str) -> dict[str, int]:
    """What `ethtool -S` prints: the traffic model's counters plus the wire model's physical ones."""
    counters = load_counters(node, netdev)
    for name, value in phy_counters(node, netdev).items():
        counters[name] = counters.get(name, 0) + value
    return counters


def add_counters(node: Node, netdev: str, deltas: dict[str, int]) -> None:
    counters = load_counters(node, netdev)
    for name, delta in deltas.items():
        counters[name] = counters.get(name, 0) + int(delta)
    node.save(f"counters/{netdev}.json", counters)


# --- ip ---------------------------------------------------------------------------------------
def link_record(node: Node, netdev: str) -> dict[str, Any]:
    up = (node.read_sys(f"net/{netdev}/operstate") or "down") == "up"
    infiniband = node.read_sys(f"net/{netdev}/type") == "32"
    flags = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"] if up else ["BROADCAST", "MULTICAST"]
    parent = node.read_sys(f"net/{netdev}/parent")  # IPoIB child interfaces name their parent
    return {
        "ifindex": node.read_sys_int(f"net/{netdev}/ifindex", 0),
        "ifname": netdev,
        **({"link": parent} if parent else {}),
        "flags": flags,
        "mtu": node.netdev_mtu(netdev),
        "qdisc": "mq",
        "operstate": "UP" if up else "DOWN",
        "linkmode": "DEFAULT",
        "group": "default",
        "txqlen": 1000 if not infiniband else 256,
        "link_type": "infiniband" if infiniband else "ether",
        "address": node.read_sys(f"net/{netdev}/address") or "",
        "broadcast": node.read_sys(f"net/{netdev}/broadcast") or "ff:ff:ff:ff:ff:ff",
    }


LOOPBACK = {
    "ifindex": 1,
    "ifname": "lo",
    "flags": ["LOOPBACK", "UP", "LOWER_UP"],
    "mtu": 65536,
    "qdisc": "noqueue",
    "operstate": "UNKNOWN",
    "linkmode": "DEFAULT",
    "group": "default",
    "txqlen": 1000,
    "link_type": "loopback",
    "address": "00:00:00:00:00:00",
    "broadcast": "00:00:00:00:00:00",
}


def link_text(rec: dict[str, Any]) -> str:
    flags = ",".join(rec["flags"])
    name = f"{rec['ifname']}@{rec['link']}" if "link" in rec else rec["ifname"]
    return (
        f"{rec['ifindex']}: {name}: <{flags}> mtu {rec['mtu']} qdisc {rec['qdisc']} state "
        f"{rec['operstate']} mode {rec['linkmode']} group {rec['group']} qlen {rec['txqlen']}\n"
        f"    link/{rec['link_type']} {rec['address']} brd {rec['broadcast']}\n"
    )


def link_brief(rec: dict[str, Any]) -> str:
    flags = ",".join(rec["flags"])
    return f"{rec['ifname']:<16} {rec['operstate']:<14} {rec['address']} <{flags}> \n"


def exec_real_ip(node: Node, args: list[str]) -> int:
    if node.served:
        raise Delegate  # the real ip must run in the node itself
    for path in REAL_IP:
        if os.path.exists(path):
            os.execv(path, [path, *args])
    raise ToolError("ip: real iproute2 not found\n", 1)


def lo_mode(node: Node) -> bool:
    return node.address.startswith("127.")


def ip_link_set(node: Node, words: list[str]) -> int:
    if words and words[0] == "dev":
        words = words[1:]
    if not words:
        raise ToolError('Not enough information: "dev" argument is required.\n', 255)
    netdev, rest = words[0], words[1:]
    if netdev not in node.netdevs():
        raise ToolError(f'Cannot find device "{netdev}"\n', 1)
    it = iter(rest)
    for word in it:
        if word == "mtu":
            value = next(it, "")
            if not value.isdigit() or not 68 <= int(value) <= 9978:
                raise ToolError(f'Error: argument "{value}" is wrong: Invalid "mtu" value\n', 255)
            node.write_sys(f"net/{netdev}/mtu", value)
        elif word in ("up", "down"):
            node.write_sys(f"net/{netdev}/operstate", word)
        else:
            raise ToolError(f'Error: either "dev" is duplicate, or "{word}" is a garbage.\n', 255)
    return 0


IPOIB_FULL_MEMBER = 0x8000


def ip_link_add_ipoib(node: Node, words: list[str]) -> int:
    """`ip link add link PARENT name NAME type ipoib pkey PKEY`: an IPoIB child, as the kernel makes one
    (full-member bit set, created down, the pkey in its broadcast address). No other link type."""
    options: dict[str, str] = {}
    it = iter(words)
    for word in it:
        if word not in ("link", "name", "type", "pkey", "mode"):
            raise ToolError(f'Error: either "dev" is duplicate, or "{word}" is a garbage.\n', 255)
        options[word] = next(it, "")
    if options.get("type") != "ipoib":
        raise ToolError("RTNETLINK answers: Operation not permitted\n", 2)
    parent, name, pkey_text = options.get("link", ""), options.get("name", ""), options.get("pkey", "")
    if parent not in node.netdevs():
        raise ToolError(f'Cannot find device "{parent}"\n', 1)
    if node.read_sys(f"net/{parent}/type") != "32":
        raise ToolError("RTNETLINK answers: Operation not supported\n", 2)
    try:
        pkey = int(pkey_text, 0)
    except ValueError:
        pkey = -1
    if not 0 <= pkey <= 0xFFFF or pkey & 0x7FFF == 0:
        raise ToolError(f'Error: argument "{pkey_text}" is wrong: pkey is invalid\n', 255)
    if not name or len(name) > 15 or "/" in name:
        raise ToolError(f'Error: argument "{name}" is wrong: "name" not a valid ifname\n', 255)
    if name in node.netdevs():
        raise ToolError("RTNETLINK answers: File exists\n", 2)
    pkey |= IPOIB_FULL_MEMBER
    _write_ipoib_child(node, parent, name, pkey, options.get("mode", "datagram"))
    return 0


def _write_ipoib_child(node: Node, parent: str, name: str, pkey: int, mode: str) -> None:
    address = (node.read_sys(f"net/{parent}/address") or "").split(":")
    broadcast = (node.read_sys(f"net/{parent}/broadcast") or "").split(":")
    children = [n for n in node.netdevs() if node.read_sys(f"net/{n}/parent") == parent]
    if len(address) == 20:  # a new queue pair number in the first 4 bytes
        qpn = int("".join(address[1:4]), 16) + len(children) + 1
        address[1:4] = [f"{(qpn >> shift) & 0xFF:02x}" for shift in (16, 8, 0)]
    if len(broadcast) == 20:  # bytes 8-9 of the broadcast GID carry the pkey
        broadcast[8:10] = [f"{pkey >> 8:02x}", f"{pkey & 0xFF:02x}"]
    values = {
        "type": "32",
        "mtu": str(node.netdev_mtu(parent)),
        "operstate": "down",
        "carrier": "1",
        "ifindex": str(max([node.read_sys_int(f"net/{n}/ifindex", 0) for n in node.netdevs()] + [1]) + 1),
        "address": ":".join(address),
        "broadcast": ":".join(broadcast),
        "pkey": f"0x{pkey:04x}",
        "parent": parent,
        "mode": mode,
    }
    directory = node.sys_class / "net" / name
    node.wrote = True  # from the first write on, the call must not be run again in the node
    try:
        directory.mkdir()
        for attribute, value in values.items():
            (directory / attribute).write_text(value + "\n")
    except OSError as exc:  # in the node itself the strict sysfs mount refuses new entries
        raise ToolError(f"RTNETLINK answers: {exc.strerror}\n", 2) from None


def ip(node: Node, args: list[str]) -> int:
    options = [a for a in args if a.startswith("-")]
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] not in ("link", "l", "li", "lin"):
        verb = words[1] if len(words) > 1 else "show"
        if lo_mode(node) and verb not in READ_ONLY_VERBS:
            raise ToolError("RTNETLINK answers: Operation not permitted\n", 2)
        return exec_real_ip(node, args)
    verb = words[1] if len(words) > 1 else "show"
    if verb == "set":
        return ip_link_set(node, words[2:])
    if verb == "add":
        return ip_link_add_ipoib(node, words[2:])
    if verb not in ("show", "list", "lst"):
        raise ToolError("RTNETLINK answers: Operation not permitted\n", 2)
    targets = [w for w in words[2:] if w != "dev"]
    records = [LOOPBACK] + [link_record(node, n) for n in node.netdevs()]
    if targets:
        records = [r for r in records if r["ifname"] == targets[0]]
        if not records:
            raise ToolError(f'Device "{targets[0]}" does not exist.\n', 1)
    if "-j" in options or "-json" in options:
        out(json.dumps(records) + "\n")
    elif any(o in ("-br", "-brief") for o in options):
        out("".join(link_brief(r) for r in records))
    else:
        out("".join(link_text(r) for r in records))
    return 0


# --- ethtool ----------------------------------------------------------------------------------
def require_netdev(node: Node, netdev: str | None) -> str:
    if not netdev:
        raise ToolError("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1)
    if netdev not in node.netdevs():
        raise ToolError(f"netlink error: no device matches name ({netdev})\n", 1)
    return netdev


def ethtool_pause(node: Node, netdev: str, settings: list[str]) -> int:
    pause = node.load("pause.json", {}).get(netdev, {"autoneg": "off", "rx": "on", "tx": "on"})
    if not settings:
        out(
            f"Pause parameters for {netdev}:\nAutonegotiate:\t{pause['autoneg']}\n"
            f"RX:\t\t{pause['rx']}\nTX:\t\t{pause['tx']}\n\n"
        )
        return 0
    if len(settings) % 2 or any(k not in ("autoneg", "rx", "tx") for k in settings[::2]):
        raise ToolError("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1)
    for key, value in zip(settings[::2], settings[1::2], strict=True):
        if value not in ("on", "off"):
            raise ToolError("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1)
        pause[key] = value
    table = node.load("pause.json", {})
    table[netdev] = pause
    node.save("pause.json", table)
    return 0


def ethtool_driver(node: Node, netdev: str) -> str:
    nic = node.nic_by_netdev(netdev) or {}
    driver = "mlx5_core" if nic.get("link_layer", "Ethernet") == "Ethernet" else "mlx5_core[ib_ipoib]"
    return (
        f"driver: {driver}\nversion: 24.04-0.6.6\n"
        f"firmware-version: {nic.get('fw', '')} ({nic.get('board_id', '')})\nexpansion-rom-version: \n"
        f"bus-info: {nic.get('pci', '')}\nsupports-statistics: yes\nsupports-test: yes\n"
        "supports-eeprom-access: no\nsupports-register-dump: no\nsupports-priv-flags: yes\n"
    )


def ethtool_link(node: Node, netdev: str) -> str:
    """The link as the netdev's sysfs `speed` has it (the kernel's one value, which ibv_devinfo's
    port rate follows too); the NIC's topology rate when sysfs has none."""
    nic = node.nic_by_netdev(netdev) or {}
    up = node.read_sys(f"net/{netdev}/operstate") == "up"
    mbps = node.read_sys_int(f"net/{netdev}/speed", int(nic.get("rate_gbps", 0)) * 1000)
    speed = f"{mbps}Mb/s" if up else "Unknown!"
    return (
        f"Settings for {netdev}:\n\tSpeed: {speed}\n\tDuplex: {'Full' if up else 'Unknown! (255)'}\n"
        f"\tAuto-negotiation: on\n\tPort: Direct Attach Copper\n\tLink detected: {'yes' if up else 'no'}\n"
    )


# PFC storm prevention (`--get-tunable`/`--set-tunable IF pfc-prevention-tout`), kept with the NIC's
# mlnx_qos state (qos/IF.json) so a driver reset brings back the factory value. The printed lines and
# the errors are ethtool's (print_tunable, perror) and mlx5's ranges: see fabcheck/parsers/ethtool_tunable.py.
STORM_TUNABLE = "pfc-prevention-tout"
STORM_KEY = "pfc_prevention_tout"
STORM_FACTORY_MS = 8000  # what an mlx5 NIC starts at (linux 2afa609f5c97)
STORM_AUTO, STORM_AUTO_MS = 65535, 100  # PFC_STORM_PREVENTION_AUTO sets mlx5's 100 ms
STORM_MIN_MS, STORM_MAX_MS = 80, 8000
BAD_ARGS = "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n"


def storm_timeout(node: Node, netdev: str) -> int:
    value = (node.load(f"qos/{netdev}.json") or {}).get(STORM_KEY)
    return STORM_FACTORY_MS if value is None else int(value)


def _storm_supported(node: Node, netdev: str) -> bool:
    """mlx5e implements the tunable; the IPoIB netdev of an InfiniBand port has no get/set_tunable."""
    nic = node.nic_by_netdev(netdev) or {}
    return nic.get("link_layer", "Ethernet") == "Ethernet"


def ethtool_get_tunable(node: Node, netdev: str, names: list[str]) -> int:
    if not names or any(name != STORM_TUNABLE for name in names):
        raise ToolError(BAD_ARGS, 1)
    if not _storm_supported(node, netdev):
        raise ToolError(f"{STORM_TUNABLE}: Cannot get tunable\n", 255)
    out(f"{STORM_TUNABLE}: {storm_timeout(node, netdev)}\n")
    return 0


def ethtool_set_tunable(node: Node, netdev: str, settings: list[str]) -> int:
    if len(settings) != 2 or settings[0] != STORM_TUNABLE or not settings[1].isdigit():
        raise ToolError(BAD_ARGS, 1)
    wanted = int(settings[1])
    if wanted > STORM_AUTO:  # not a u16: ethtool's own argument parser refuses it
        raise ToolError(BAD_ARGS, 1)
    if not _storm_supported(node, netdev):
        raise ToolError(f"{STORM_TUNABLE}: Operation not supported\n", 255)
    value = STORM_AUTO_MS if wanted == STORM_AUTO else wanted
    if value != 0 and not STORM_MIN_MS <= value <= STORM_MAX_MS:
        raise ToolError(f"{STORM_TUNABLE}: Invalid argument\n", 255)
    state = node.load(f"qos/{netdev}.json") or factory_state()
    state[STORM_KEY] = value
    node.save(f"qos/{netdev}.json", state)
    return 0


# The Ethernet speeds (Mb/s) an mlx5 NIC accepts in `ethtool -s IF speed N` (its ethtool link modes)
# and the InfiniBand port rate text the RDMA device then shows for them.
MLX5_SPEEDS = {
    10000: "10 Gb/sec (1X QDR)",
    25000: "25 Gb/sec (1X EDR)",
    40000: "40 Gb/sec (4X QDR)",
    50000: "50 Gb/sec (1X HDR)",
    100000: "100 Gb/sec (4X EDR)",
    200000: "200 Gb/sec (4X HDR)",
    400000: "400 Gb/sec (4X NDR)",
}


def ethtool_set_speed(node: Node, netdev: str, settings: list[str]) -> int:
    """`ethtool -s IF speed N [duplex full] [autoneg on|off]`: the link retrains at N. sysfs `speed`
    (read-only to a writer: the kernel's value) and the port's `rate` change together, so ethtool,
    ibv_devinfo and ibstat agree; the NIC's topology rate follows for the traffic models."""
    pairs = dict(zip(settings[::2], settings[1::2], strict=False))
    if len(settings) % 2 or not pairs or set(pairs) - {"speed", "duplex", "autoneg"}:
        raise ToolError(BAD_ARGS, 1)
    if "speed" not in pairs:
        return 0
    if not pairs["speed"].isdigit() or int(pairs["speed"]) not in MLX5_SPEEDS:
        raise ToolError("netlink error: link settings update failed\nnetlink error: Invalid argument\n", 1)
    nic = node.nic_by_netdev(netdev) or {}
    mbps = int(pairs["speed"])
    node.write_sys(f"net/{netdev}/speed", str(mbps))
    if nic:
        node.write_sys(f"{node.port_dir(nic)}/rate", MLX5_SPEEDS[mbps])
        topology = node.load("topology.json")
        for entry in topology["nics"]:
            if entry["name"] == nic["name"]:
                entry["rate_gbps"] = mbps // 1000
        node.save("topology.json", topology)
    return 0


def ethtool(node: Node, args: list[str]) -> int:
    if not args:
        raise ToolError("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1)
    statistics = args[0] in ("-I", "--include-statistics")  # a global option, before the command
    if statistics:
        args = args[1:]
        if not args:
            raise ToolError(BAD_ARGS, 1)
    flag = args[0]
    if flag in ("-S", "--statistics"):
        netdev = require_netdev(node, args[1] if len(args) > 1 else None)
        out("NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in statistics_of(node, netdev).items()))
        return 0
    if flag == "--show-fec":
        netdev = require_netdev(node, args[1] if len(args) > 1 else None)
        if len(args) > 2:
            raise ToolError(f"ethtool: unexpected parameter '{args[2]}'\n", 1)  # netlink/fec.c nl_gfec
        out(fec_text(node, netdev, statistics))
        return 0
    if flag in ("-m", "--dump-module-eeprom", "--module-info"):
        netdev = require_netdev(node, args[1] if len(args) > 1 else None)
        if len(args) > 2:  # raw/hex/offset/length/page dumps: not served by the mock
            raise ToolError(BAD_ARGS, 1)
        out(module_text(node, netdev))
        return 0
    if flag in ("-a", "--show-pause"):
        return ethtool_pause(node, require_netdev(node, args[1] if len(args) > 1 else None), [])
    if flag in ("-A", "--pause"):
        netdev = require_netdev(node, args[1] if len(args) > 1 else None)
        return ethtool_pause(node, netdev, args[2:] or ["?"])
    if flag in ("-i", "--driver"):
        out(ethtool_driver(node, require_netdev(node, args[1] if len(args) > 1 else None)))
        return 0
    if flag in ("-s", "--change"):
        return ethtool_set_speed(node, require_netdev(node, args[1] if len(args) > 1 else None), args[2:])
    if flag == "--get-tunable":
        return ethtool_get_tunable(node, require_netdev(node, args[1] if len(args) > 1 else None), args[2:])
    if flag == "--set-tunable":
        return ethtool_set_tunable(node, require_netdev(node, args[1] if len(args) > 1 else None), args[2:])
    if not flag.startswith("-") and len(args) == 1:
        out(ethtool_link(node, require_netdev(node, flag)))
        return 0
    raise ToolError("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1)
