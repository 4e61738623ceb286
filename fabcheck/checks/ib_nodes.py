"""The InfiniBand checks of the fabric's nodes (issue 37), pure: ib.guids (saquery's NodeRecords: no
GUID or LID twice, none 0, every planned node description shown by one node) and ib.firmware (each
switch's `vendstat -N` firmware as pinned per device id, else one version per device id). The cable
checks and check_ib_fabric are fabcheck.checks.ib's.

ib.guids follows rdma-core's ibidsverify.pl (infiniband-diags/scripts/ibidsverify.pl): a port GUID
under two LIDs, a LID under two port GUIDs, LID 0 and GUID 0 are errors. A port GUID that two records
claim is reported on the record that disagrees with the discovery (`ibnetdiscover -p` shows the port
GUID each node description has), or on every claimant when the discovery cannot tell them apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.checks.host import Unreadable
from fabcheck.checks.model import Finding, Where, errored, failed, passed
from fabcheck.desired.ib import DesiredIbFabric
from fabcheck.intent.ib_fabric import TIERS
from fabcheck.parsers.ib_records import IbNodeRecord, IbSwitchFirmware, IbTopology

GUIDS = "ib.guids"
FIRMWARE = "ib.firmware"
ZERO_GUID = "0x" + "0" * 16
SWITCH_TYPE = "Switch"  # saquery's node_type of a switch (libibmad ib_get_node_type_str)
HOST_RANK = len(TIERS)  # hosts rank after every switch tier: a finding goes to the switch end
UNKNOWN_RANK = HOST_RANK + 1

DESCRIPTION_HINT = (
    "a host HCA's description is rdma-ndd's (`systemctl enable --now rdma-ndd`, ib_fabric.host_description); "
    "a switch's is its system name (ib_node_description in the inventory must match it)"
)


@dataclass(frozen=True)
class NodeNames:
    """Planned node descriptions -> inventory node (and HCA for a host), and how to name a port."""

    nodes: Mapping[str, tuple[str, str | None]]  # description -> (node, HCA or None for a switch)
    ranks: Mapping[str, int]  # description -> tier index (hosts after every switch tier)

    @staticmethod
    def of(desired: DesiredIbFabric) -> NodeNames:
        nodes: dict[str, tuple[str, str | None]] = {}
        ranks: dict[str, int] = {}
        for description, (host, nic) in desired.host_descriptions.items():
            nodes[description] = (host, nic)
            ranks[description] = HOST_RANK
        for switch in desired.switches:
            nodes[switch.description] = (switch.name, None)
            ranks[switch.description] = TIERS.index(switch.tier) if switch.tier in TIERS else HOST_RANK
        return NodeNames(nodes, ranks)

    def node_of(self, description: str) -> tuple[str, str | None] | None:
        return self.nodes.get(description)

    def rank(self, description: str) -> int:
        return self.ranks.get(description, UNKNOWN_RANK)

    def end_label(self, description: str, port: int) -> str:
        """`leaf01/17`, `gpu01/mlx5_0` (port 1 of the HCA), or the description as shown when unplanned."""
        node = self.nodes.get(description)
        if node is None:
            return f"{description!r}/{port}"
        if node[1] is None:
            return f"{node[0]}/{port}"
        return f"{node[0]}/{node[1]}" + ("" if port == 1 else f"/{port}")


# ---- ib.guids -------------------------------------------------------------------------------------


def _discovered_guids(topology: IbTopology | Unreadable) -> dict[str, set[str]]:
    """Description -> the GUIDs the discovery shows for it (a CA's port GUIDs, a switch's port-0 GUID)."""
    if isinstance(topology, Unreadable):
        return {}
    found: dict[str, set[str]] = {}
    for line in topology.ports:  # not .ends(): its sort is not needed here
        found.setdefault(line.local.description, set()).add(line.local.guid)
        if line.peer is not None:
            found.setdefault(line.peer.description, set()).add(line.peer.guid)
    return found


def _id_problems(
    records: tuple[IbNodeRecord, ...], discovered: Mapping[str, set[str]]
) -> dict[int, list[str]]:
    """Record index -> what is wrong with its LID and GUIDs."""
    problems: dict[int, list[str]] = {}
    lids_of: dict[str, set[int]] = {}
    guids_of: dict[int, set[str]] = {}
    for record in records:
        lids_of.setdefault(record.port_guid, set()).add(record.lid)
        guids_of.setdefault(record.lid, set()).add(record.port_guid)
    for index, record in enumerate(records):
        mine = problems.setdefault(index, [])
        if record.lid == 0:
            mine.append("LID 0 (the SM assigned it none)")
        if ZERO_GUID in (record.port_guid, record.node_guid):
            mine.append("GUID 0")
        if len(guids_of[record.lid]) > 1 and record.lid != 0:
            others = sorted(guids_of[record.lid] - {record.port_guid})
            mine.append(f"LID {record.lid} also held by port GUID {', '.join(others)}")
    for guid, lids in lids_of.items():
        if len(lids) < 2 or guid == ZERO_GUID:
            continue
        claim = [i for i, r in enumerate(records) if r.port_guid == guid]
        agree = [i for i in claim if guid in discovered.get(records[i].description, set())]
        odd = [i for i in claim if i not in agree] if 0 < len(agree) < len(claim) else claim
        for index in odd:
            others = sorted(f"LID {records[i].lid} ({records[i].description!r})" for i in claim if i != index)
            problems[index].append(f"port GUID {guid} also under {', '.join(others)}")
    return problems


def check_guids(
    nodes: tuple[IbNodeRecord, ...] | Unreadable,
    desired: DesiredIbFabric,
    names: NodeNames,
    topology: IbTopology | Unreadable | None = None,
) -> list[tuple[str, Finding]]:
    """One finding per planned switch and host HCA, and one per unplanned record with a bad id."""
    planned = [(s.description, s.name, None) for s in desired.switches] + [
        (description, host, nic) for description, (host, nic) in desired.host_descriptions.items()
    ]
    expected = "its node description shown by one node, with a unique non-zero GUID and LID"
    if isinstance(nodes, Unreadable):
        why = f"`{nodes.command}`: {nodes.reason}"
        hint = "rerun; the reader must reach the SA (`saquery`)"
        return [
            (
                node,
                with_where(errored(GUIDS, _subject(node, nic), expected, why, hint), Where(node, nic or "")),
            )
            for _, node, nic in planned
        ]
    problems = _id_problems(nodes, _discovered_guids(topology) if topology is not None else {})
    by_description: dict[str, list[int]] = {}
    for index, record in enumerate(nodes):
        by_description.setdefault(record.description, []).append(index)
    out: list[tuple[str, Finding]] = []
    for description, node, nic in planned:
        indexes = by_description.get(description, [])
        subject, where = _subject(node, nic), Where(node, nic or "")
        node_guids = sorted({nodes[i].node_guid for i in indexes})
        if not node_guids:
            actual = f"no node shows the description {description!r}"
            out.append((node, with_where(failed(GUIDS, subject, expected, actual, DESCRIPTION_HINT), where)))
            continue
        wrong = [p for i in indexes for p in problems[i]]
        if len(node_guids) > 1:
            wrong.insert(0, f"{description!r} shown by {len(node_guids)} nodes: {', '.join(node_guids)}")
        ids = ", ".join(sorted({f"GUID {nodes[i].port_guid} LID {nodes[i].lid}" for i in indexes}))
        if wrong:
            hint = (
                "give each node its own description; " + DESCRIPTION_HINT
                if len(node_guids) > 1
                else "a GUID is burnt in the firmware (`flint -d <dev> q` shows it); a LID 0 or a LID held "
                "twice: the SM's assignment (`sminfo`, the opensm log, opensm's guid2lid file)"
            )
            out.append((node, with_where(failed(GUIDS, subject, expected, "; ".join(wrong), hint), where)))
        else:
            out.append((node, with_where(passed(GUIDS, subject, expected, ids), where)))
    planned_descriptions = {description for description, _, _ in planned}
    for index, record in enumerate(nodes):
        if record.description in planned_descriptions or not problems[index]:
            continue
        actual = "; ".join(problems[index])
        finding = failed(
            GUIDS,
            f"{record.description!r} (LID {record.lid})",
            expected,
            actual + " (a node the plan does not name)",
            "find the node by its GUID (`ibnetdiscover -p`); its GUID is in its firmware, its LID the SM's",
        )
        out.append((desired.reader, with_where(finding, Where(desired.reader))))
    return out


def _subject(node: str, nic: str | None) -> str:
    return node if nic is None else f"{node}/{nic}"


# ---- ib.firmware ----------------------------------------------------------------------------------


def switch_lids(
    topology: IbTopology | Unreadable, nodes: tuple[IbNodeRecord, ...] | Unreadable, desired: DesiredIbFabric
) -> dict[str, int | None]:
    """Each planned switch's LID: as the discovery shows its description (a switch's ports all show its
    LID), else its SA record; None when neither shows it once."""
    seen: dict[str, set[int]] = {}
    if not isinstance(topology, Unreadable):
        for line in topology.ports:
            for end in (line.local, line.peer):
                if end is not None and end.kind == "SW":
                    seen.setdefault(end.description, set()).add(end.lid)
    if not isinstance(nodes, Unreadable):
        for record in nodes:
            if record.node_type == SWITCH_TYPE and record.description not in seen:
                seen.setdefault(f"sa:{record.description}", set()).add(record.lid)
    out: dict[str, int | None] = {}
    for switch in desired.switches:
        lids = seen.get(switch.description) or seen.get(f"sa:{switch.description}") or set()
        out[switch.name] = next(iter(lids)) if len(lids) == 1 else None
    return out


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def check_firmware(
    firmware: Mapping[int, IbSwitchFirmware | Unreadable],
    lids: Mapping[str, int | None],
    nodes: tuple[IbNodeRecord, ...] | Unreadable,
    desired: DesiredIbFabric,
) -> list[tuple[str, Finding]]:
    """One finding per planned switch: its firmware as pinned for its device id, else the version most
    switches of its device id run."""
    sa_device = {} if isinstance(nodes, Unreadable) else {r.lid: r.device_id for r in nodes}
    read: dict[str, tuple[int | None, IbSwitchFirmware]] = {}
    out: list[tuple[str, Finding]] = []
    pins = ", ".join(f"0x{device:x}: {version}" for device, version in sorted(desired.firmware.items()))
    for switch in desired.switches:
        lid = lids.get(switch.name)
        shown = firmware.get(lid) if lid is not None else None
        expected = f"the pinned version ({pins})" if pins else "one version per device id across the switches"
        why = (
            "not discovered once (no LID to query): see ib.topology and ib.guids"
            if lid is None
            else "no `vendstat -N` reading for its LID"
            if shown is None
            else f"`{shown.command}`: {shown.reason}"
            if isinstance(shown, Unreadable)
            else "vendstat showed no fw_version"
            if shown.fw_version is None
            else ""
        )
        if why or shown is None or isinstance(shown, Unreadable):
            finding = errored(
                FIRMWARE,
                switch.name,
                expected,
                why,
                "rerun; the reader queries each switch LID with `vendstat -N`",
            )
            out.append((switch.name, with_where(finding, Where(switch.name))))
            continue
        device = shown.device_id if shown.device_id is not None else sa_device.get(shown.lid)
        read[switch.name] = (device, shown)
    fleet: dict[int | None, Counter[tuple[int, ...]]] = {}
    for device, shown in read.values():
        fleet.setdefault(device, Counter())[_version(shown.fw_version or "")] += 1
    for name, (device, shown) in read.items():
        out.append(
            (name, with_where(_judge_firmware(name, device, shown, fleet, read, desired), Where(name)))
        )
    order = {switch.name: i for i, switch in enumerate(desired.switches)}
    return sorted(out, key=lambda item: order.get(item[0], len(order)))


def _judge_firmware(
    name: str,
    device: int | None,
    shown: IbSwitchFirmware,
    fleet: Mapping[int | None, Counter[tuple[int, ...]]],
    read: Mapping[str, tuple[int | None, IbSwitchFirmware]],
    desired: DesiredIbFabric,
) -> Finding:
    version = shown.fw_version or ""
    device_text = "device id not shown" if device is None else f"device id 0x{device:x}"
    actual = f"{version} ({device_text}" + (f", PSID {shown.psid})" if shown.psid else ")")
    burn = (
        f"burn the image in-band from the reader (`flint -d lid-{shown.lid} -i <image>.bin burn`, MFT) or "
        "with `mlxfwmanager` on the switch, then reboot the switch"
    )
    pinned = desired.firmware.get(device) if device is not None else None
    if pinned is not None:
        expected = f"{pinned} (ib_fabric.firmware pins it for device id 0x{device:x})"
        if _version(version) == _version(pinned):
            return passed(FIRMWARE, name, expected, actual)
        return failed(FIRMWARE, name, expected, actual, burn.replace("the image", f"{pinned}"))
    counts = fleet[device]
    ranked = counts.most_common()
    expected = f"one version across the {sum(counts.values())} switches of {device_text}"
    if len(ranked) == 1:
        return passed(FIRMWARE, name, expected, actual)
    spread = "; ".join(
        f"{other_version or '?'} on {other}"
        for other, (other_device, other_shown) in read.items()
        if other_device == device
        for other_version in [other_shown.fw_version]
    )
    top = ranked[0]
    if ranked[1][1] < top[1] and _version(version) == top[0]:
        return passed(FIRMWARE, name, expected, actual + f" (as most; the odd ones fail: {spread})")
    most = ".".join(str(part) for part in top[0])
    said = (
        f"{actual}, most run {most}"
        if ranked[1][1] < top[1]
        else f"{actual}; no version shared by most: {spread}"
    )
    return failed(
        FIRMWARE, name, expected, said, burn + "; or pin the intended version in ib_fabric.firmware"
    )


def with_where(finding: Finding, where: Where) -> Finding:
    """The finding placed at `where`. Not dataclasses.replace: it was a third of the judging time at
    32,768 cables."""
    f = finding
    return Finding(f.check, f.status, f.subject, f.expected, f.actual, f.hint, where, f.measure)
