"""Mock RDMA inventory tools read from the mock /sys/class/infiniband tree.

``ibv_devinfo``, ``ibstat``, ``ibstatus``, ``show_gids``, ``ibdev2netdev`` and ``rdma link|dev``,
each with the layout of its real counterpart (rdma-core, infiniband-diags, mlnx-tools, iproute2).
"""

from __future__ import annotations

import functools
import getopt
import ipaddress
import json
import os
import weakref
from typing import Any

from .common import Node, ToolError, getopt_message, out
from .subnet_manager import INFO_REQUEST, MASTER, elected, peer_addresses, query_sm, subnet_manager_runs

STATE_WORDS = {"1": "Down", "2": "Initializing", "3": "Armed", "4": "Active"}
PHYS_WORDS = {
    "1": "Sleep",
    "2": "Polling",
    "3": "Disabled",
    "4": "PortConfigurationTraining",
    "5": "LinkUp",
    "6": "LinkErrorRecovery",
    "7": "PhyTest",
}
VERBS_STATE = {"1": "PORT_DOWN", "2": "PORT_INIT", "3": "PORT_ARMED", "4": "PORT_ACTIVE"}
VERBS_PHYS = {"1": "SLEEP", "2": "POLLING", "3": "DISABLED", "5": "LINK_UP", "6": "LINK_ERROR_RECOVERY"}
RDMA_STATE = {"1": "DOWN", "2": "INIT", "3": "ARMED", "4": "ACTIVE"}
RDMA_PHYS = {"1": "SLEEP", "2": "POLLING", "3": "DISABLED", "5": "LINK_UP", "6": "LINK_ERROR_RECOVER"}
# per-lane speed (Gb/s) of a 4X port -> (ibv speed text, enum)
LANE_SPEEDS = {100: ("100.0 Gbps", 128), 50: ("50.0 Gbps", 64), 25: ("25.0 Gbps", 32), 10: ("10.0 Gbps", 8)}


STATE_TEXT = {"1": "DOWN", "2": "INIT", "3": "ARMED", "4": "ACTIVE"}
DOWN, INIT, ACTIVE = "1", "2", "4"
DISABLED = "3"
# Whether an SM runs, asked once per tool call (a node object lives for one call).
_SUBNET_UP: weakref.WeakKeyDictionary[Node, bool] = weakref.WeakKeyDictionary()
_MASTER_LID: weakref.WeakKeyDictionary[Node, int | None] = weakref.WeakKeyDictionary()


def port_number(node: Node, nic: dict[str, Any], attr: str) -> str:
    """Leading number of a '4: ACTIVE' style sysfs value."""
    return node.port_value(nic, attr).split(":")[0].strip() or "1"


def port_states(node: Node, nic: dict[str, Any]) -> tuple[str, str]:
    """(state, physical state) numbers of port 1 as the port shows them now.

    A RoCE port whose netdev is administratively down (`ip link set DEV down`) is DOWN/Disabled, as mlx5
    reports it. An InfiniBand port with a trained link is ACTIVE only while the subnet has a master SM
    (the election makes one of the running SMs master): without one it stays INIT, as on a real fabric
    whose SM has not configured the port."""
    state, phys = port_number(node, nic, "state"), port_number(node, nic, "phys_state")
    if node.link_layer(nic) == "Ethernet":
        if (node.read_sys(f"net/{nic['netdev']}/operstate") or "up") != "up":
            return DOWN, DISABLED
        return state, phys
    if state == ACTIVE and not subnet_up(node):
        return INIT, phys
    return state, phys


def subnet_up(node: Node) -> bool:
    if node not in _SUBNET_UP:
        _SUBNET_UP[node] = subnet_manager_runs(node)
    return _SUBNET_UP[node]


def sm_lid(node: Node, nic: dict[str, Any]) -> int:
    """The port's SM LID: the master SM's LID, which the master programs into every port it brings up
    (PortInfo:MasterSMLID); the factory value while no SM runs (the port stays INIT)."""
    factory = hex_value(node, nic, "sm_lid")
    if node.link_layer(nic) != "InfiniBand" or not subnet_up(node):
        return factory
    if node not in _MASTER_LID:
        answers = [query_sm(a, INFO_REQUEST) for a in [node.address, *peer_addresses(node)]]
        masters = [sm for sm in answers if sm and sm["state"] == MASTER]
        _MASTER_LID[node] = int(elected(masters)["lid"]) if masters else None
    return factory if _MASTER_LID[node] is None else int(_MASTER_LID[node])


def rate_gbps(node: Node, nic: dict[str, Any]) -> int:
    text = node.port_value(nic, "rate")
    try:
        return int(float(text.split()[0]))
    except (IndexError, ValueError):
        return 10


def hex_value(node: Node, nic: dict[str, Any], attr: str) -> int:
    try:
        return int(node.port_value(nic, attr) or "0", 0)
    except ValueError:
        return 0


def guid_hex(colon_guid: str) -> str:
    return "0x" + colon_guid.replace(":", "")


def gid_entries(node: Node, nic: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    """(index, gid, type, ndev) for every non-empty GID of port 1, as sysfs lists them."""
    gid_dir = f"{node.port_dir(nic)}/gids"
    try:
        names = os.listdir(f"{node.sys_class}/{gid_dir}")
    except (FileNotFoundError, NotADirectoryError):
        return []
    entries = []
    for index in sorted(int(name) for name in names if name.isdigit()):
        gid = node.read_sys(f"{gid_dir}/{index}") or ""
        if gid in ("0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"):
            continue
        gid_type = node.port_value(nic, f"gid_attrs/types/{index}")
        ndev = node.port_value(nic, f"gid_attrs/ndevs/{index}")
        entries.append((index, gid, gid_type, ndev))
    return entries


def require_devices(node: Node, wanted: str | None) -> list[dict[str, Any]]:
    nics = node.rdma_nics()
    if wanted is not None:
        nics = [n for n in nics if n["name"] == wanted]
        if not nics:
            raise ToolError(f"IB device '{wanted}' wasn't found\n", 255)
    elif not nics:
        raise ToolError("No IB devices found\n", 255)
    return nics


# --- ibv_devinfo ------------------------------------------------------------------------------
DEVINFO_USAGE = """Usage: ibv_devinfo             print the ca attributes

Options:
  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)
  -i, --ib-port=<port>   use port <port> of IB device (default all ports)
  -l, --list             print only the IB devices names
  -v, --verbose          print all the attributes of the IB device(s)
"""

VERBOSE_DEVICE = [
    ("max_mr_size", "\t\t\t", "0xffffffffffffffff"),
    ("page_size_cap", "\t\t\t", "0xfffffffffffff000"),
    ("max_qp", "\t\t\t\t", "131072"),
    ("max_qp_wr", "\t\t\t", "32768"),
    ("device_cap_flags", "\t\t", "0xed721c36"),
    ("max_sge", "\t\t\t", "30"),
    ("max_sge_rd", "\t\t\t", "30"),
    ("max_cq", "\t\t\t\t", "16777216"),
    ("max_cqe", "\t\t\t", "4194303"),
    ("max_mr", "\t\t\t\t", "16777216"),
    ("max_pd", "\t\t\t\t", "8388608"),
    ("max_qp_rd_atom", "\t\t\t", "16"),
    ("max_ee_rd_atom", "\t\t\t", "0"),
    ("max_res_rd_atom", "\t\t", "2097152"),
    ("max_qp_init_rd_atom", "\t\t", "16"),
    ("max_ee_init_rd_atom", "\t\t", "0"),
    ("atomic_cap", "\t\t\t", "ATOMIC_HCA (1)"),
    ("max_ee", "\t\t\t\t", "0"),
    ("max_rdd", "\t\t\t", "0"),
    ("max_mw", "\t\t\t\t", "16777216"),
    ("max_raw_ipv6_qp", "\t\t", "0"),
    ("max_raw_ethy_qp", "\t\t", "0"),
    ("max_mcast_grp", "\t\t\t", "2097152"),
    ("max_mcast_qp_attach", "\t\t", "240"),
    ("max_total_mcast_qp_attach", "\t", "503316480"),
    ("max_ah", "\t\t\t\t", "2147483647"),
    ("max_fmr", "\t\t\t", "0"),
    ("max_srq", "\t\t\t", "8388608"),
    ("max_srq_wr", "\t\t\t", "32767"),
    ("max_srq_sge", "\t\t\t", "31"),
    ("max_pkeys", "\t\t\t", "128"),
    ("local_ca_ack_delay", "\t\t", "16"),
]


@functools.lru_cache(maxsize=4096)
def devinfo_gid_line(index: int, gid: str, gid_type: str, ethernet: bool) -> str:
    """RoCE v2 GIDs print in inet_ntop form, v1 and IB GIDs in full hex (as rdma-core does).

    Kept per argument (a pure function): the ipaddress parse was ~40% of a cached `ibv_devinfo -v`."""
    if ethernet and gid_type.startswith("RoCE v2"):
        text = f"{ipaddress.IPv6Address(gid)}, RoCE v2"
        if text.startswith("::ffff:"):
            text = "::ffff:" + str(ipaddress.IPv6Address(gid).ipv4_mapped) + ", RoCE v2"
        return f"\t\t\tGID[{index:3d}]:\t\t{text}"
    suffix = ", RoCE v1" if ethernet else ""
    return f"\t\t\tGID[{index:3d}]:\t\t{gid}{suffix}"


def devinfo_port(node: Node, nic: dict[str, Any], verbose: bool) -> list[str]:
    state, phys = port_states(node, nic)
    mtu, mtu_enum = node.active_mtu(nic)
    ethernet = node.link_layer(nic) == "Ethernet"
    lines = [
        "\t\tport:\t1",
        f"\t\t\tstate:\t\t\t{VERBS_STATE.get(state, 'invalid state')} ({state})",
        "\t\t\tmax_mtu:\t\t4096 (5)",
        f"\t\t\tactive_mtu:\t\t{mtu} ({mtu_enum})",
        f"\t\t\tsm_lid:\t\t\t{sm_lid(node, nic)}",
        f"\t\t\tport_lid:\t\t{hex_value(node, nic, 'lid')}",
        f"\t\t\tport_lmc:\t\t0x{int(node.port_value(nic, 'lid_mask_count') or 0):02x}",
        f"\t\t\tlink_layer:\t\t{'Ethernet' if ethernet else 'InfiniBand'}",
    ]
    if verbose:
        speed, speed_enum = LANE_SPEEDS.get(rate_gbps(node, nic) // 4, ("2.5 Gbps", 1))
        lines += [
            "\t\t\tmax_msg_sz:\t\t0x40000000",
            f"\t\t\tport_cap_flags:\t\t{node.port_value(nic, 'cap_mask')}",
            "\t\t\tport_cap_flags2:\t0x0000",
            f"\t\t\tmax_vl_num:\t\t{'invalid value (0)' if ethernet else '4 (3)'}",
            "\t\t\tbad_pkey_cntr:\t\t0x0",
            "\t\t\tqkey_viol_cntr:\t\t0x0",
            "\t\t\tsm_sl:\t\t\t0",
            f"\t\t\tpkey_tbl_len:\t\t{1 if ethernet else 128}",
            f"\t\t\tgid_tbl_len:\t\t{255 if ethernet else 8}",
            f"\t\t\tsubnet_timeout:\t\t{0 if ethernet else 18}",
            "\t\t\tinit_type_reply:\t0",
            "\t\t\tactive_width:\t\t4X (2)",
            f"\t\t\tactive_speed:\t\t{speed} ({speed_enum})",
            f"\t\t\tphys_state:\t\t{VERBS_PHYS.get(phys, 'invalid physical state')} ({phys})",
        ]
        lines += [devinfo_gid_line(i, g, t, ethernet) for i, g, t, _ in gid_entries(node, nic)]
    return [*lines, ""]


def devinfo_device(node: Node, nic: dict[str, Any], verbose: bool, port: int) -> list[str]:
    lines = [
        f"hca_id:\t{nic['name']}",
        "\ttransport:\t\t\tInfiniBand (0)",
        f"\tfw_ver:\t\t\t\t{nic['fw']}",
        f"\tnode_guid:\t\t\t{nic['node_guid']}",
        f"\tsys_image_guid:\t\t\t{nic['node_guid']}",
        "\tvendor_id:\t\t\t0x02c9",
        f"\tvendor_part_id:\t\t\t{nic['vendor_part_id']}",
        "\thw_ver:\t\t\t\t0x0",
        f"\tboard_id:\t\t\t{nic['board_id']}",
        "\tphys_port_cnt:\t\t\t1",
    ]
    if verbose:
        lines += [f"\t{name}:{tabs}{value}" for name, tabs, value in VERBOSE_DEVICE]
    if port in (0, 1):
        lines += devinfo_port(node, nic, verbose)
    return lines


def ibv_devinfo(node: Node, args: list[str]) -> int:
    try:
        opts, _ = getopt.gnu_getopt(args, "d:i:lv", ["ib-dev=", "ib-port=", "list", "verbose"])
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message("ibv_devinfo", exc) + "\n" + DEVINFO_USAGE, 255) from None
    wanted, port, verbose = None, 0, False
    for flag, value in opts:
        if flag in ("-l", "--list"):
            nics = node.rdma_nics()
            plural = "" if len(nics) == 1 else "s"
            out(f"{len(nics)} HCA{plural} found:\n" + "".join(f"\t{n['name']}\n" for n in nics) + "\n")
            return 0
        if flag in ("-d", "--ib-dev"):
            wanted = value
        elif flag in ("-i", "--ib-port"):
            port = int(value, 0) if value.isdigit() else -1
        else:
            verbose = True
    lines: list[str] = []
    for nic in require_devices(node, wanted):
        lines += devinfo_device(node, nic, verbose, port)
    out("\n".join(lines) + "\n")
    return 0


# --- ibstat / ibstatus ------------------------------------------------------------------------
def ibstat_port(node: Node, nic: dict[str, Any], alone: bool) -> list[str]:
    pre, hdr = ("", "") if alone else ("\t\t", "\t")
    guid = nic["port_guid"]
    state, phys = port_states(node, nic)
    return [
        f"{hdr}Port 1:",
        f"{pre}State: {STATE_WORDS.get(state, 'Unknown')}",
        f"{pre}Physical state: {PHYS_WORDS.get(phys, 'Unknown')}",
        f"{pre}Rate: {rate_gbps(node, nic)}",
        f"{pre}Base lid: {hex_value(node, nic, 'lid')}",
        f"{pre}LMC: {node.port_value(nic, 'lid_mask_count') or 0}",
        f"{pre}SM lid: {sm_lid(node, nic)}",
        f"{pre}Capability mask: {node.port_value(nic, 'cap_mask')}",
        f"{pre}Port GUID: {guid}",
        f"{pre}Link layer: {node.link_layer(nic)}",
    ]


def ibstat_ca(node: Node, nic: dict[str, Any]) -> list[str]:
    return [
        f"CA '{nic['name']}'",
        f"\tCA type: {nic['ca_type']}",
        "\tNumber of ports: 1",
        f"\tFirmware version: {nic['fw']}",
        "\tHardware version: 0",
        f"\tNode GUID: {guid_hex(nic['node_guid'])}",
        f"\tSystem image GUID: {guid_hex(nic['node_guid'])}",
        *ibstat_port(node, nic, alone=False),
    ]


def ibstat(node: Node, args: list[str]) -> int:
    try:
        opts, rest = getopt.gnu_getopt(args, "lps", ["list_of_cas", "port_list", "short"])
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message("ibstat", exc) + "\n", 255) from None
    nics = node.rdma_nics()
    flags = {f for f, _ in opts}
    if flags & {"-l", "--list_of_cas"}:
        out("".join(f"{n['name']}\n" for n in nics))
        return 0
    if flags & {"-p", "--port_list"}:
        out("".join(f"{n['port_guid']}\n" for n in nics))
        return 0
    if rest:
        nic = node.nic_by_name(rest[0])
        if nic is None:
            raise ToolError(no_device(node, rest[0]), 255)
        if len(rest) > 1:
            if rest[1] != "1":
                raise ToolError(no_device(node, rest[0]), 255)
            out("\n".join(ibstat_port(node, nic, alone=True)) + "\n")
            return 0
        nics = [nic]
    if not nics:
        raise ToolError(f"ibpanic: [{node.process_id()}] main: can't list IB device names\n", 255)
    out("".join("\n".join(ibstat_ca(node, n)) + "\n" for n in nics))
    return 0


def no_device(node: Node, name: str) -> str:
    return f"ibpanic: [{node.process_id()}] main: stat of IB device '{name}' failed\n"


def ibstatus(node: Node, args: list[str]) -> int:
    nics = node.rdma_nics()
    if args:
        nics = [n for n in nics if n["name"] == args[0]]
        if not nics:
            raise ToolError(f"ls: cannot access '/sys/class/infiniband/{args[0]}/ports': No such file\n", 2)
    blocks = []
    for nic in nics:
        gids = gid_entries(node, nic)
        default_gid = gids[0][1] if gids else "0000:0000:0000:0000:0000:0000:0000:0000"
        state, phys = port_states(node, nic)
        blocks.append(
            f"Infiniband device '{nic['name']}' port 1 status:\n"
            f"\tdefault gid:\t {default_gid}\n"
            f"\tbase lid:\t {node.port_value(nic, 'lid')}\n"
            f"\tsm lid:\t\t {sm_lid(node, nic):#x}\n"
            f"\tstate:\t\t {state}: {STATE_TEXT.get(state, 'NOP')}\n"
            f"\tphys state:\t {phys}: {PHYS_WORDS.get(phys, 'Unknown')}\n"
            f"\trate:\t\t {node.port_value(nic, 'rate')}\n"
            f"\tlink_layer:\t {node.link_layer(nic)}\n\n"
        )
    out("".join(blocks))
    return 0


# --- show_gids / ibdev2netdev -----------------------------------------------------------------
def show_gids(node: Node, args: list[str]) -> int:
    nics = node.rdma_nics()
    if args:
        nics = [n for n in nics if n["name"] == args[0]]
    lines = [
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV",
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---",
    ]
    count = 0
    for nic in nics:
        for index, gid, gid_type, ndev in gid_entries(node, nic):
            version = gid_type[gid_type.find("v") :] if "v" in gid_type else ""
            if gid.startswith("0000:"):
                raw = gid.replace(":", "")
                ipv4 = ".".join(str(int(raw[i : i + 2], 16)) for i in range(24, 32, 2))
                lines.append(f"{nic['name']}\t1\t{index}\t{gid}\t{ipv4}  \t{version}\t{ndev}")
            else:
                lines.append(f"{nic['name']}\t1\t{index}\t{gid}\t\t\t{version}\t{ndev}")
            count += 1
    lines.append(f"n_gids_found={count}")
    out("\n".join(lines) + "\n")
    return 0


def ibdev2netdev(node: Node, args: list[str]) -> int:
    lines = []
    for nic in node.rdma_nics():
        operstate = node.read_sys(f"net/{nic['netdev']}/operstate") or "down"
        word = "Up" if operstate == "up" else "Down"
        lines.append(f"{nic['name']} port 1 ==> {nic['netdev']} ({word})")
    out("".join(line + "\n" for line in lines))
    return 0


# --- rdma (iproute2) --------------------------------------------------------------------------
def rdma_link_record(node: Node, nic: dict[str, Any], index: int) -> dict[str, Any]:
    record: dict[str, Any] = {"ifindex": index, "ifname": nic["name"], "port": 1}
    if node.link_layer(nic) != "Ethernet":
        record.update(
            subnet_prefix="fe80:0000:0000:0000",
            lid=hex_value(node, nic, "lid"),
            sm_lid=sm_lid(node, nic),
            lmc=int(node.port_value(nic, "lid_mask_count") or 0),
        )
    state, phys = port_states(node, nic)
    record["state"] = RDMA_STATE.get(state, "NOP")
    record["physical_state"] = RDMA_PHYS.get(phys, "NOP")
    record["netdev"] = nic["netdev"]
    record["netdev_index"] = node.read_sys_int(f"net/{nic['netdev']}/ifindex", 0)
    return record


def rdma_link_text(record: dict[str, Any]) -> str:
    words = [f"link {record['ifname']}/{record['port']}"]
    for key in ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev"):
        if key in record:
            words.append(f"{key} {record[key]}")
    return " ".join(words)


def rdma(node: Node, args: list[str]) -> int:
    flags = {a for a in args if a.startswith("-")}
    words = [a for a in args if not a.startswith("-")]
    unknown = flags - {"-j", "-json", "--json", "-p", "-pretty", "--pretty", "-d", "-details"}
    if unknown:
        raise ToolError(f'Option "{sorted(unknown)[0]}" is unknown, try "rdma -help".\n', 255)
    as_json = bool(flags & {"-j", "-json", "--json"})
    obj = words[0] if words else "help"
    if obj not in ("link", "dev"):
        raise ToolError(f'Object "{obj}" is unknown, try "rdma help".\n', 255)
    if len(words) > 1 and words[1] not in ("show", "list"):
        raise ToolError(f'Command "{words[1]}" is unknown, try "rdma {obj} help".\n', 255)
    target = words[2] if len(words) > 2 else None
    nics = node.rdma_nics()
    if target is not None:
        nics = [n for n in nics if n["name"] == target.split("/")[0]]
        if not nics:
            raise ToolError("Wrong device name\n", 255)
    if obj == "dev":
        records = [
            {
                "ifindex": i,
                "ifname": n["name"],
                "node_type": "ca",
                "fw": n["fw"],
                "node_guid": n["node_guid"],
                "sys_image_guid": n["node_guid"],
            }
            for i, n in enumerate(nics)
        ]
        text = [
            f"{r['ifindex']}: {r['ifname']}: node_type ca fw {r['fw']} node_guid {r['node_guid']} "
            f"sys_image_guid {r['sys_image_guid']}"
            for r in records
        ]
    else:
        records = [rdma_link_record(node, n, i) for i, n in enumerate(nics)]
        text = [rdma_link_text(r) for r in records]
    if as_json:
        indent = 4 if flags & {"-p", "-pretty", "--pretty"} else None
        out(json.dumps(records, indent=indent, separators=(",", ":") if indent is None else None) + "\n")
    else:
        out("".join(line + "\n" for line in text))
    return 0
