"""What one gate run judges, decided before anything connects: the nodes each selected stage claims,
narrowed by an Ansible --limit pattern, and the desired state of every planned node, derived ONCE here.

Every stage reads the desired state from the plan (`GatePlan.desired`); no stage, check or reporter
calls fabcheck.desired again for a node the plan holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fabcheck.desired.ib import DesiredIbFabric, desired_ib_fabric
from fabcheck.desired.nccl import DesiredNcclHost, desired_nccl_host
from fabcheck.desired.nic import DesiredHost, DesiredNic, desired_host
from fabcheck.desired.nvlink import DesiredNvlinkHost, desired_nvlink
from fabcheck.desired.perftest import DesiredPerftest, desired_perftest
from fabcheck.desired.sm import DesiredSubnetManager, desired_subnet_manager
from fabcheck.desired.switch import DesiredSwitch, desired_switch
from fabcheck.errors import UsageError
from fabcheck.gate.stages import Stage, all_stages, default_stage_names, stage_names
from fabcheck.intent.fabric import GPU_HOSTS, SUBNET_MANAGERS, Fabric, fabric_of
from fabcheck.intent.loader import HostEntry, Inventory


@dataclass(frozen=True)
class GateDesired:
    """The desired state of every planned node, by name; `nics` by (host, NIC) for every cabled NIC of
    a planned host (a NIC outside the rails gets the host's shared settings, as the role sets it);
    `perftest` each planned host's rails and bandwidth floors for the perftest and incast stages, `nccl`
    what each planned host's ranks must show."""

    hosts: Mapping[str, DesiredHost] = field(default_factory=lambda: MappingProxyType({}))
    nics: Mapping[tuple[str, str], DesiredNic] = field(default_factory=lambda: MappingProxyType({}))
    switches: Mapping[str, DesiredSwitch] = field(default_factory=lambda: MappingProxyType({}))
    perftest: Mapping[str, DesiredPerftest] = field(default_factory=lambda: MappingProxyType({}))
    nccl: Mapping[str, DesiredNcclHost] = field(default_factory=lambda: MappingProxyType({}))
    # The subnet-manager nodes the sm stage claims, and the intended master the checks judge against
    # even when --limit leaves it out.
    subnet_managers: Mapping[str, DesiredSubnetManager] = field(default_factory=lambda: MappingProxyType({}))
    # Every switch --limit leaves in, against the whole cabling map: the incast stage reads its leaves
    # itself, whether or not the switch stage runs.
    leaves: Mapping[str, DesiredSwitch] = field(default_factory=lambda: MappingProxyType({}))
    # The planned InfiniBand fabric the ib stage judges (None: no IB switch in the inventory).
    ib_fabric: DesiredIbFabric | None = None
    # Each planned GPU host's NVLink domain: its GPUs, links, IMEX/fabric manager, and which peers it must
    # reach over NVLink (fabcheck.desired.nvlink); the NCCL checks take each rank pair's class from it.
    nvlink: Mapping[str, DesiredNvlinkHost] = field(default_factory=lambda: MappingProxyType({}))

    def nic(self, host: str, device: str) -> DesiredNic:
        """A planned host's NIC: its cabled or rail record, else the host's shared settings."""
        known = self.nics.get((host, device))
        if known is not None:
            return known
        desired = self.hosts[host]
        found = next((n for n in desired.nics if n.device == device), None)
        return found or dataclasses.replace(desired.template, device=device)


@dataclass(frozen=True)
class GatePlan:
    """What one run judges: GPU hosts, switches and the cables between them; and what it leaves out."""

    hosts: tuple[HostEntry, ...]
    switches: tuple[str, ...]
    fabric: Fabric  # narrowed to the planned switches and the cables with both ends planned
    cabled: frozenset[tuple[str, str]]  # (host, NIC) of every cable in the inventory, planned or not
    not_checked: tuple[HostEntry, ...]  # nodes no selected stage judges
    stages: tuple[str, ...] = ("host", "switch", "link")  # the stages this run executes, in run order
    chosen: tuple[HostEntry, ...] = ()  # every node --limit selected (a stage picks its own)
    desired: GateDesired = field(default_factory=GateDesired)
    whole: Fabric = field(default_factory=lambda: Fabric((), ()))  # the inventory's, not narrowed
    # Seconds between the two readings of every node's wire counters (--counter-window; 0: one reading,
    # lifetime totals). The desired state of every planned node holds it too.
    counter_window_s: int = 0

    def host_priorities(self) -> dict[str, int]:
        """The lossless priority each planned host's collection reads (its desired ECN priority), by host:
        what every host backend hands the collection script, a batch backend (--via ansible|slurm) too."""
        return {entry.name: self.desired.hosts[entry.name].template.ecn_priority for entry in self.hosts}

    def selected(self) -> tuple[Stage, ...]:
        """The Stage of every name in `stages`, in run order."""
        wanted = set(self.stages)
        return tuple(stage for stage in all_stages() if stage.name in wanted)


def plan_gate(
    inventory: Inventory,
    limit: str | None = None,
    stages: Sequence[str] | None = None,
    counter_window_s: int = 0,
) -> GatePlan:
    """Nodes of the inventory narrowed by an Ansible --limit pattern, by the stages that claim them, with
    the counter window (--counter-window) in their desired state. UsageError when nothing of what the
    stages judge is left, or a stage runs without one it reads."""
    stages = tuple(default_stage_names() if stages is None else stages)
    known = stage_names()
    unknown = [stage for stage in stages if stage not in known]
    if unknown:
        raise UsageError(f"unknown stage(s) {', '.join(unknown)}: expected some of {', '.join(known)}")
    selected = tuple(stage for stage in all_stages() if stage.name in stages)
    for stage in selected:
        missing = [need for need in stage.requires if need not in stages]
        if missing:
            needs = ", ".join(missing)
            raise UsageError(f"stage {stage.name} reads the results of {needs}: add it to --stages")
    fabric = fabric_of(inventory)
    chosen = limited_hosts(inventory, limit)
    names = {entry.name for entry in chosen}
    claimed = {stage.name: [e for e in chosen if stage.claims(e, fabric)] for stage in selected}
    hosts = tuple(claimed.get("host", ()))
    switches = tuple(e.name for e in claimed.get("switch", ()))
    judged = {e.name for entries in claimed.values() for e in entries}
    rest = tuple(h for h in chosen if h.name not in judged and not _is_switch(h, fabric))
    links = (
        tuple(link for link in fabric.links if link.host in names and link.switch in names)
        if "link" in stages
        else ()
    )
    # The IB plan stays whole: the ib stage reads the whole fabric from one node, whatever --limit says.
    # So do the NVLink domains: a planned host's peers over NVLink are its whole domain's.
    switch_links = (
        tuple(c for c in fabric.switch_links if c.a_switch in switches and c.b_switch in switches)
        if "link" in stages
        else ()
    )
    narrowed = Fabric(
        tuple(s for s in fabric.switches if s.name in switches),
        links,
        fabric.ib,
        fabric.nvlink,
        switch_links,
    )
    if not judged:
        scope = "" if limit is None else f" matching --limit {limit!r}"
        raise UsageError(f"no GPU host (group {GPU_HOSTS}) or switch{scope} to check in {inventory.source}")
    cabled = frozenset((link.host, link.nic) for link in fabric.links)
    ordered = tuple(stage.name for stage in selected)
    leaves = [s.name for s in fabric.switches if s.name in names] if "incast" in stages else []
    desired = desired_of(inventory, hosts, fabric, narrowed, claimed.get("sm", ()), leaves, counter_window_s)
    return GatePlan(
        hosts, switches, narrowed, cabled, rest, ordered, tuple(chosen), desired, fabric, counter_window_s
    )


def desired_of(
    inventory: Inventory,
    hosts: Sequence[HostEntry],
    fabric: Fabric,
    planned: Fabric | None = None,
    subnet_managers: Sequence[HostEntry] = (),
    leaves: Sequence[str] = (),
    counter_window_s: int = 0,
) -> GateDesired:
    """Pure: the desired state of the planned hosts, of every cabled NIC of theirs in `fabric`, of
    the switches of `planned` (the fabric narrowed to the run: a switch is judged on its planned ports),
    and of the whole IB fabric of `fabric` (None without IB switches)."""
    window = counter_window_s
    by_host = {entry.name: desired_host(entry.intent, entry.name, window) for entry in hosts}
    empty = GateDesired(MappingProxyType(by_host))
    nics = {
        (link.host, link.nic): empty.nic(link.host, link.nic) for link in fabric.links if link.host in by_host
    }
    planned = fabric if planned is None else planned
    switches = {s.name: desired_switch(inventory.intent, planned, s.name, window) for s in planned.switches}
    floors = {entry.name: desired_perftest(entry.intent, entry.name) for entry in hosts}
    ranks = {entry.name: desired_nccl_host(entry.intent, entry.name) for entry in hosts}
    return GateDesired(
        MappingProxyType(by_host),
        MappingProxyType(nics),
        MappingProxyType(switches),
        MappingProxyType(floors),
        MappingProxyType(ranks),
        MappingProxyType(_subnet_managers(subnet_managers)),
        MappingProxyType({name: desired_switch(inventory.intent, fabric, name, window) for name in leaves}),
        desired_ib_fabric(
            inventory.intent,
            fabric.ib,
            subnet_managers=[entry.name for entry in inventory.group(SUBNET_MANAGERS)],
            gpu_hosts=[entry.name for entry in inventory.group(GPU_HOSTS)],
            counter_window_s=window,
        ),
        MappingProxyType(
            desired_nvlink(
                {entry.name: entry.intent.nvlink for entry in inventory.group(GPU_HOSTS)},
                fabric.nvlink,
                by_host,
            )
        ),
    )


def _subnet_managers(nodes: Sequence[HostEntry]) -> dict[str, DesiredSubnetManager]:
    """Each SM node's desired state, and the intended master's from the first node's intent."""
    desired = {entry.name: desired_subnet_manager(entry.intent, entry.name) for entry in nodes}
    master = nodes[0].intent.subnet_manager.intended_master if nodes else None
    if master is not None and master not in desired:
        desired[master] = desired_subnet_manager(nodes[0].intent, master)
    return desired


def _is_switch(entry: HostEntry, fabric: Fabric) -> bool:
    return any(s.name == entry.name for s in fabric.switches)


def limited_hosts(inventory: Inventory, limit: str | None) -> list[HostEntry]:
    """Every host of the inventory, or those an Ansible --limit pattern selects (UsageError when the
    pattern is empty or matches nothing)."""
    if limit is None:
        return list(inventory.hosts)
    if not limit.strip():
        raise UsageError("--limit is empty: give host names, groups or patterns, or leave --limit out")
    manager = inventory.manager
    if manager is None:
        raise UsageError(f"--limit needs the inventory loaded through ansible-core ({inventory.source})")
    try:
        manager.subset(limit)
        names = {host.name for host in manager.get_hosts("all")}
    except Exception as err:  # ansible reports bad patterns and missing @files with its own types
        raise UsageError(f"--limit {limit!r}: {err}") from None
    finally:
        manager.subset(None)
    if not names:
        known = ", ".join(h.name for h in inventory.hosts) or "none"
        raise UsageError(f"--limit {limit!r} matches no host in {inventory.source} (hosts: {known})")
    return [h for h in inventory.hosts if h.name in names]
