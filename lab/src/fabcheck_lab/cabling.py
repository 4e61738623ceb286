"""The lab's cabling map: which switch port each rail NIC of each lab host plugs into.

Rails are spread round-robin over the switches, host after host, so every switch carries NICs of
every host once the lab has at least as many hosts as switches, and no port is cabled twice. The map
goes into the generated inventory as each host's `fabric_links`, exactly as a user writes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from fabcheck_lab.mockhost.profiles import nics_for, rails_for

if TYPE_CHECKING:
    from fabcheck_lab.state import LabState


def ports_needed(nic_count: int, switch_count: int, minimum: int) -> int:
    """Front-panel ports each switch needs so that every rail NIC gets one."""
    if switch_count == 0:
        return 0
    return max(minimum, math.ceil(nic_count / switch_count))


def plan_links(
    host_rails: Mapping[str, Sequence[str]], switch_ports: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, str]]:
    """host -> {NIC: 'switch:port'}; raises ValueError when the switches have too few ports."""
    switches = list(switch_ports)
    if not switches:
        return {}
    next_port = dict.fromkeys(switches, 0)
    links: dict[str, dict[str, str]] = {}
    index = 0
    for host, nics in host_rails.items():
        for nic in sorted(set(nics)):
            switch = switches[index % len(switches)]
            index += 1
            ports = switch_ports[switch]
            if next_port[switch] >= len(ports):
                raise ValueError(f"switch {switch} has {len(ports)} ports, too few for the lab's rail NICs")
            links.setdefault(host, {})[nic] = f"{switch}:{ports[next_port[switch]]}"
            next_port[switch] += 1
    return links


def lab_links(state: LabState) -> dict[str, dict[str, str]]:
    """The lab's cabling map: each GPU host's rail NICs over the lab's switches (host -> NIC -> 'sw:port');
    a lab from a plan: the planned host cables."""
    if state.plan is not None:
        from fabcheck_lab.fromplan import host_links

        return host_links(state)
    gpu_hosts = [n for n in state.host_nodes() if n.group == "gpu_hosts"]
    return plan_links(
        {n.name: list(rails_for(n.profile).values()) for n in gpu_hosts},
        {n.name: n.ports for n in state.switch_nodes()},
    )


def lldp_neighbors(
    state: LabState, links: Mapping[str, Mapping[str, str]]
) -> dict[str, list[tuple[str, str, str]]]:
    """switch -> [(port, host, netdev)]: what each cabled port hears, the host's name and the NIC's
    interface name (lldpd on a host sends those with `portidsubtype ifname`)."""
    netdevs = {
        n.name: {nic["name"]: nic["netdev"] for nic in nics_for(n.profile, n.index)}
        for n in state.host_nodes()
    }
    heard: dict[str, list[tuple[str, str, str]]] = {}
    for host, nics in links.items():
        for nic, end in nics.items():
            switch, port = end.split(":", 1)
            heard.setdefault(switch, []).append((port, host, netdevs[host][nic]))
    return heard
