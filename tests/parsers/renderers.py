"""Host tool outputs rendered from parser records, for tests only: each function prints a record back in
the layout of its tool (tabs, trailing spaces and all), so round-trip and check tests build outputs from
typed records instead of hand-typed text. Kept out of the product: fabcheck only reads these tools.

The layouts are those the parsers read (fabcheck/parsers/<tool>.py); the round-trip tests in
tests/parsers/test_<tool>.py pin each renderer against the real captures of tests/data/real/.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fabcheck.parsers.ibstat import UNKNOWN, IbstatCa, IbstatPort, IbstatusPort
from fabcheck.parsers.ibv_devinfo import (
    MTU_CODES,
    NO_DEVICES,
    PHYS_STATE_CODES,
    PORT_STATE_CODES,
    SPEED_CODES,
    TRANSPORT_CODES,
    WIDTH_CODES,
    IbvDevice,
    IbvPort,
)
from fabcheck.parsers.mlnx_qos import DCBX_TEXT, DSCP_PER_LINE, LLDPAD_WARNING, PRIORITIES, MlnxQos
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.show_gids import GidEntry

# -- mlnx_qos -i IF --------------------------------------------------------------------------------


def render_mlnx_qos(qos: MlnxQos, *, show_default_priority: bool = True) -> str:
    """The report as ``mlnx_qos -i IF`` prints it (real tabs and trailing spaces).

    ``show_default_priority=False`` gives the older layout without the ``default priority:`` section.
    Raises ValueError for a record the tool cannot print (dscp2prio shown under pcp trust).
    """
    if qos.dscp2prio_shown and qos.trust not in (None, "dscp"):
        raise ValueError("mlnx_qos prints dscp2prio only when the trust state is dscp")
    out: list[str] = []
    if qos.lldpad_warning:
        out += [LLDPAD_WARNING, ""]
    if qos.dcbx_mode is not None:
        out.append(f"DCBX mode: {DCBX_TEXT[qos.dcbx_mode]}")
    if qos.trust is not None:
        out.append(f"Priority trust state: {qos.trust}")
    if qos.dscp2prio_shown:
        out.append("dscp2prio mapping:")
        out += _render_dscp2prio(qos.dscp2prio)
    if show_default_priority:
        out.append("default priority:")
        out += [f"\tprio:{prio}" for prio in qos.default_priorities]
    if qos.buffer_sizes is not None:
        suffix = "" if qos.max_buffer_size is None else f"max_buffer_size={qos.max_buffer_size}"
        out.append("Receive buffer size (bytes): " + "".join(f"{b}," for b in qos.buffer_sizes) + suffix)
    if qos.cable_len is not None:
        out.append(f"Cable len: {qos.cable_len}")
    out += _render_pfc_table(qos)
    for tc, cfg in sorted(qos.tcs.items()):
        tsa = f"ets, bw: {cfg.bw_percent}%" if cfg.tsa == "ets" else cfg.tsa
        out.append(f"tc: {tc} ratelimit: {cfg.ratelimit}, tsa: {tsa}")
        out += [f"\t priority:  {prio}" for prio in cfg.priorities]
    return "\n".join(out) + "\n"


def _render_dscp2prio(dscp2prio: Mapping[int, int]) -> list[str]:
    by_prio: dict[int, list[int]] = {}
    for dscp, prio in dscp2prio.items():
        by_prio.setdefault(prio, []).append(dscp)
    out = []
    for prio in sorted(by_prio):
        values = by_prio[prio]
        for start in range(0, len(values), DSCP_PER_LINE):
            chunk = values[start : start + DSCP_PER_LINE]
            out.append(f"\tprio:{prio} dscp:" + "".join(f"{d:02d}," for d in chunk))
    return out


def _render_pfc_table(qos: MlnxQos) -> list[str]:
    enabled = "".join(f"{int(p in qos.pfc_enabled)}   " for p in PRIORITIES)
    out = ["PFC configuration:", "\tpriority    0   1   2   3   4   5   6   7", f"\tenabled     {enabled}"]
    if qos.pfc_buffer is not None:
        out.append("\tbuffer      " + "".join(f"{b}   " for b in qos.pfc_buffer))
    return out


# -- rdma link -------------------------------------------------------------------------------------
_PRINT_ORDER = ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index")


def render_rdma_link(links: tuple[RdmaLink, ...] | list[RdmaLink]) -> str:
    """The links as iproute2 ``rdma link`` prints them (``-d`` fields when the record has them).

    A link with ``ifindex`` is printed in the pre-4.19 layout, the only text layout that shows it.
    """
    out: list[str] = []
    for link in links:
        # Only iproute2 before 4.19 showed the device index, as "IDX/PORT: DEV/PORT:".
        prefix = "link " if link.ifindex is None else f"{link.ifindex}/{link.port}: "
        words = [prefix + link.name + ("" if link.ifindex is None else ":")]
        for key in _PRINT_ORDER:
            value = getattr(link, key)
            if value is not None:
                words.append(f"{key} {value}")
        out.append(" ".join(words) + " ")  # the tool ends every field with a space
        if link.caps is not None:
            out.append(f"    caps: <{', '.join(link.caps)}>")
    return "\n".join(out) + ("\n" if out else "")


def render_rdma_link_json(links: tuple[RdmaLink, ...] | list[RdmaLink]) -> str:
    """The links as ``rdma -j link`` prints them (one JSON line)."""
    items = []
    for link in links:
        item: dict[str, Any] = {"ifindex": link.ifindex, "ifname": link.dev, "port": link.port}
        for key in _PRINT_ORDER:
            item[key] = getattr(link, key)
        if link.caps is not None:
            item["caps"] = list(link.caps)
        items.append({key: value for key, value in item.items() if value is not None})
    return json.dumps(items, separators=(",", ":")) + "\n"


# -- ibv_devinfo -----------------------------------------------------------------------------------


def render_ibv_devinfo(devices: tuple[IbvDevice, ...] | list[IbvDevice]) -> str:
    """The devices as ``ibv_devinfo`` prints them (tabs as in rdma-core).

    Ports that carry ``-v`` fields are printed with the ``-v`` port lines the record holds
    (gid_tbl_len, active_width, active_speed, phys_state, GIDs); device capability lists are not kept.
    """
    if not devices:
        return NO_DEVICES + "\n"
    return "".join(_render_ibv_device(device) for device in devices)


def _render_ibv_device(device: IbvDevice) -> str:
    out = [
        f"hca_id:\t{device.hca_id}",
        f"\ttransport:\t\t\t{device.transport} ({TRANSPORT_CODES[device.transport]})",
    ]
    if device.fw_ver is not None:
        out.append(f"\tfw_ver:\t\t\t\t{device.fw_ver}")
    out += [
        f"\tnode_guid:\t\t\t{device.node_guid}",
        f"\tsys_image_guid:\t\t\t{device.sys_image_guid}",
        f"\tvendor_id:\t\t\t0x{device.vendor_id:04x}",
        f"\tvendor_part_id:\t\t\t{device.vendor_part_id}",
    ]
    if device.hw_ver is not None:
        out.append(f"\thw_ver:\t\t\t\t{device.hw_ver}")
    if device.board_id is not None:
        out.append(f"\tboard_id:\t\t\t{device.board_id}")
    out.append(f"\tphys_port_cnt:\t\t\t{device.phys_port_cnt}")
    for port in device.ports:
        out += _render_ibv_port(port)
    return "\n".join(out) + "\n"


def _render_ibv_port(port: IbvPort) -> list[str]:
    out = [
        f"\t\tport:\t{port.number}",
        f"\t\t\tstate:\t\t\t{port.state} ({PORT_STATE_CODES[port.state]})",
        f"\t\t\tmax_mtu:\t\t{port.max_mtu} ({MTU_CODES[port.max_mtu]})",
        f"\t\t\tactive_mtu:\t\t{port.active_mtu} ({MTU_CODES[port.active_mtu]})",
        f"\t\t\tsm_lid:\t\t\t{port.sm_lid}",
        f"\t\t\tport_lid:\t\t{port.port_lid}",
        f"\t\t\tport_lmc:\t\t0x{port.port_lmc:02x}",
        f"\t\t\tlink_layer:\t\t{port.link_layer}",
    ]
    if port.gid_tbl_len is not None:
        out.append(f"\t\t\tgid_tbl_len:\t\t{port.gid_tbl_len}")
    if port.active_width is not None:
        out.append(f"\t\t\tactive_width:\t\t{port.active_width} ({WIDTH_CODES[port.active_width]})")
    if port.active_speed is not None:
        out.append(f"\t\t\tactive_speed:\t\t{port.active_speed} ({SPEED_CODES[port.active_speed]})")
    if port.phys_state is not None:
        out.append(f"\t\t\tphys_state:\t\t{port.phys_state} ({PHYS_STATE_CODES[port.phys_state]})")
    for number, gid in sorted(port.gids.items()):
        kind = "" if gid.kind is None else f", {gid.kind}"
        out.append(f"\t\t\tGID[{number:3d}]:\t\t{gid.gid}{kind}")
    out.append("")
    return out


# -- show_gids -------------------------------------------------------------------------------------
HEADER = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
RULE = "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"


def render_show_gids(entries: tuple[GidEntry, ...] | list[GidEntry]) -> str:
    """The table as ``show_gids`` prints it (tabs, two spaces after the IPv4, ``n_gids_found=N``)."""
    out = [HEADER, RULE]
    for entry in entries:
        version = entry.version or ""
        netdev = entry.netdev or ""
        middle = f"{entry.ipv4}  " if entry.ipv4 is not None else "\t"
        out.append(f"{entry.dev}\t{entry.port}\t{entry.index}\t{entry.gid}\t{middle}\t{version}\t{netdev}")
    out.append(f"n_gids_found={len(entries)}")
    return "\n".join(out) + "\n"


# -- ibstat and ibstatus ---------------------------------------------------------------------------


def render_ibstat(cas: tuple[IbstatCa, ...] | list[IbstatCa]) -> str:
    """The CAs as ``ibstat`` prints them (tabs as in infiniband-diags)."""
    out: list[str] = []
    for ca in cas:
        if ca.ca_type is None:
            out += _render_single_port(ca)
            continue
        out += [
            f"{ca.node_type} '{ca.name}'",
            f"\t{ca.node_type} type: {ca.ca_type}",
            f"\tNumber of ports: {ca.num_ports}",
            f"\tFirmware version: {ca.fw_version}",
            f"\tHardware version: {ca.hw_version}",
            f"\tNode GUID: {ca.node_guid}",
            f"\tSystem image GUID: {ca.sys_image_guid}",
        ]
        for port in ca.ports:
            out += _render_ibstat_port(port)
    return "\n".join(out) + "\n"


def _render_single_port(ca: IbstatCa) -> list[str]:
    """The ``ibstat CA PORT`` layout: no CA header, port lines unindented."""
    if len(ca.ports) != 1:
        raise ValueError("a CA without header fields must hold exactly one port (ibstat CA PORT)")
    return [f"{ca.node_type}: '{ca.name}'"] + [line.lstrip("\t") for line in _render_ibstat_port(ca.ports[0])]


def _render_rate(port: IbstatPort) -> str:
    if port.fdr10:
        return f"{port.rate} (FDR10)"
    return "2.5" if port.rate == 2.5 else str(port.rate)


def _render_ibstat_port(port: IbstatPort) -> list[str]:
    return [
        f"\tPort {port.number}:",
        f"\t\tState: {port.state}",
        f"\t\tPhysical state: {port.physical_state}",
        f"\t\tRate: {_render_rate(port)}",
        f"\t\tBase lid: {port.base_lid}",
        f"\t\tLMC: {port.lmc}",
        f"\t\tSM lid: {port.sm_lid}",
        f"\t\tCapability mask: 0x{port.capability_mask:08x}",
        f"\t\tPort GUID: {port.port_guid}",
        f"\t\tLink layer: {port.link_layer}",
    ]


def render_ibstatus(ports: tuple[IbstatusPort, ...] | list[IbstatusPort]) -> str:
    """The ports as the ``ibstatus`` script prints them (None prints as ``unknown``)."""
    out: list[str] = []
    for port in ports:
        out += [
            f"Infiniband device '{port.device}' port {port.port} status:",
            f"\tdefault gid:\t {_shown(port.default_gid)}",
            f"\tbase lid:\t {_shown(None if port.base_lid is None else hex(port.base_lid))}",
            f"\tsm lid:\t\t {_shown(None if port.sm_lid is None else hex(port.sm_lid))}",
            f"\tstate:\t\t {_coded(port.state, port.state_code)}",
            f"\tphys state:\t {_coded(port.phys_state, port.phys_state_code)}",
            f"\trate:\t\t {_shown(port.rate_text)}",
            f"\tlink_layer:\t {_shown(port.link_layer)}",
            "",
        ]
    return "\n".join(out) + ("\n" if out else "")


def _shown(value: str | None) -> str:
    return UNKNOWN if value is None else value


def _coded(name: str | None, code: int | None) -> str:
    return UNKNOWN if name is None or code is None else f"{code}: {name}"
