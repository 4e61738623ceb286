"""Which incasts the stage runs: per leaf switch (or, with no switch in the inventory, per rail) one
victim NIC and up to `fan_in` sender NICs of other hosts on that same leaf. Pure and deterministic.

The victim rotates: the i-th leaf (sorted by name) takes the i-th of its hosts (inventory order,
wrapping), so with a few hosts over several leaves every host is a victim somewhere. The victim NIC is
the host's first NIC on the leaf (sorted). Senders are taken one NIC per other host in turn (the hosts
after the victim first, each host's NIC on the victim's rail before its others), so a capped fan-in
still spreads over as many hosts as it can. A NIC never sends to its own host: that traffic would not
cross the switch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.errors import UsageError
from fabcheck.intent.fabric import Link
from fabcheck.pairs.rounds import Endpoint, Pair

FAN_IN_VARIABLE = "incast_fan_in"
DEFAULT_FAN_IN = 8  # 8:1 fills any leaf egress queue within microseconds; more only loads the hosts
MAX_FAN_IN = 64
DURATION_VARIABLE = "incast_duration_s"
DEFAULT_DURATION_S = 2  # ib_write_bw -D: long enough for PFC and DCQCN to settle, short for a gate
MAX_DURATION_S = 60


@dataclass(frozen=True)
class Incast:
    """N senders writing into one victim NIC at once (ib_write_bw: each sender is a client of its own
    server on the victim)."""

    where: str  # the leaf's name, or "rail mlx5_0" when the inventory has no switch
    switch: str | None
    victim: Endpoint
    senders: tuple[Endpoint, ...]
    port_pairs: tuple[tuple[Endpoint, str], ...] = ()  # each end's switch port (none without switches)

    @property
    def ends(self) -> tuple[Endpoint, ...]:
        return (self.victim, *self.senders)

    @property
    def pairs(self) -> tuple[Pair, ...]:
        return tuple(Pair(self.victim, sender) for sender in self.senders)

    def port_of(self, end: Endpoint) -> str | None:
        return dict(self.port_pairs).get(end)


@dataclass(frozen=True)
class IncastPlan:
    incasts: tuple[Incast, ...]
    left_out: tuple[str, ...]  # groups that could not hold an incast, and why (for the notes)


def plan_by_leaf(hosts: Sequence[str], links: Sequence[Link], fan_in: int) -> IncastPlan:
    """One incast per switch that carries NICs of at least two of `hosts` (in that order)."""
    order = {host: i for i, host in enumerate(hosts)}
    by_switch: dict[str, dict[str, list[str]]] = {}
    ports: dict[Endpoint, str] = {}
    for link in links:
        if link.host in order:
            by_switch.setdefault(link.switch, {}).setdefault(link.host, []).append(link.nic)
            ports[Endpoint(link.host, link.nic)] = link.port
    incasts, left_out = [], []
    for index, switch in enumerate(sorted(by_switch)):
        members = {h: sorted(by_switch[switch][h]) for h in sorted(by_switch[switch], key=order.__getitem__)}
        incast = _incast(switch, switch, members, index, fan_in)
        if incast is None:
            left_out.append(f"{switch}: only {', '.join(members)} has NICs there, no sender for an incast")
            continue
        port_pairs = tuple((end, ports[end]) for end in incast.ends)
        incasts.append(Incast(incast.where, switch, incast.victim, incast.senders, port_pairs))
    return IncastPlan(tuple(incasts), tuple(left_out))


def plan_by_rail(host_nics: Mapping[str, Sequence[str]], fan_in: int) -> IncastPlan:
    """Without switches: one incast per rail NIC name that at least two hosts have."""
    rails = sorted({nic for nics in host_nics.values() for nic in nics})
    incasts, left_out = [], []
    for index, rail in enumerate(rails):
        members = {host: [rail] for host, nics in host_nics.items() if rail in nics}
        incast = _incast(f"rail {rail}", None, members, index, fan_in)
        if incast is None:
            left_out.append(f"rail {rail}: only {', '.join(members)} has it, no sender for an incast")
            continue
        incasts.append(incast)
    return IncastPlan(tuple(incasts), tuple(left_out))


def _incast(
    where: str, switch: str | None, members: Mapping[str, Sequence[str]], index: int, fan_in: int
) -> Incast | None:
    hosts = list(members)
    if len(hosts) < 2:
        return None
    start = index % len(hosts)
    victim = Endpoint(hosts[start], members[hosts[start]][0])
    others = hosts[start + 1 :] + hosts[:start]
    # Each sender host's NICs, the victim's rail first: taken one per host per turn.
    queues = [
        [nic for nic in members[h] if nic == victim.nic] + [n for n in members[h] if n != victim.nic]
        for h in others
    ]
    senders: list[Endpoint] = []
    for turn in range(max(len(q) for q in queues)):
        for host, nics in zip(others, queues, strict=True):
            if turn < len(nics) and len(senders) < fan_in:
                senders.append(Endpoint(host, nics[turn]))
    return Incast(where, switch, victim, tuple(senders))


def bounded_int(variables: Mapping[str, Any], name: str, default: int, highest: int) -> int:
    """An inventory variable that must be a whole number in 1..highest (bool is not a number here)."""
    value = variables.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= highest:
        raise UsageError(f"inventory variable {name}={value!r}: expected a whole number from 1 to {highest}")
    return value
