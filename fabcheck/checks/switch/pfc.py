"""Priority flow control (role switch_qos, tag pfc): the lossless priorities per port, both pause
directions and the headroom's cable length where the platform keeps them (NVUE's PFC profile), and on
SONiC the queue a pause stops and the priority group whose headroom sends it."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck, eos_profile_and_port
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, ids, map_drift, switch_check
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import PfcPriorities, QueueMaps

PFC = "switch.pfc"


def needs_pfc(d: DesiredSwitch) -> str | None:
    """Where a check applies only to a lossless fabric: None, or why it does not."""
    return None if d.pfc_priorities else "the intent runs no PFC (lossless.pfc false): nothing is lossless"


def _want_pfc(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    wanted = p.pfc_priorities if p else d.pfc_priorities
    if not wanted:
        return "PFC on priorities none"
    # Only NVUE's PFC profile carries a cable length (it sizes the headroom from it).
    cable = f", cable-length {d.pfc_cable_length_m} m" if d.platform == "nvue" else ""
    return f"PFC on priorities {ids(wanted)}, pause frames sent (tx) and honoured (rx){cable}"


def _judge_pfc(
    r: PfcPriorities,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    """The PFC priorities; where the switch keeps them apart (NVUE's PFC profile), a lossless
    priority also needs both directions on (PFC with tx or rx off drops) and the headroom sized for
    the intent's cable length."""
    wanted = p.pfc_priorities if p else d.pfc_priorities
    shown = [f"PFC on priorities {ids(r.priorities)}"]
    ok = set(r.priorities) == set(wanted)
    if wanted and r.priorities and r.directions_off:
        shown.append(f"{' and '.join(r.directions_off)} disabled")
        ok = False
    if wanted and r.cable_length_m is not None and r.cable_length_m != d.pfc_cable_length_m:
        shown.append(f"cable-length {r.cable_length_m} m")
        ok = False
    maps = more.get(QueueMaps)
    if maps is not None:  # SONiC: which queue a pause stops, which group's headroom sends it
        off = map_drift(
            "MAP_PFC_PRIORITY_TO_QUEUE",
            "priority",
            "queue",
            d.pfc_priority_to_queue,
            maps.pfc_priority_to_queue,
        ) + map_drift(
            "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
            "priority",
            "priority group",
            d.pfc_priority_to_priority_group,
            maps.pfc_priority_to_priority_group,
        )
        if off:
            return Status.FAIL, f"{', '.join(shown)}; {'; '.join(off)}"
    return (Status.PASS if ok else Status.FAIL), ", ".join(shown)


PFC_CHECK = switch_check(
    PFC,
    "pfc",
    "PFC priorities per port (SONiC: and the queue and priority group each priority maps to)",
    SwitchJudge(PfcPriorities, _want_pfc, _judge_pfc, also=(QueueMaps,)),
    NO_INPUTS,
)

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "qos pfc default-global switch-priority <p>", PFC),
    # PFC with either direction off is not lossless; a cable length off the intent's mis-sizes headroom
    FieldCheck("nvue", "qos pfc default-global tx", PFC),
    FieldCheck("nvue", "qos pfc default-global rx", PFC),
    FieldCheck("nvue", "qos pfc default-global cable-length", PFC),
    FieldCheck("nvue", "interface <port> qos pfc profile", PFC),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfc_enable", PFC),
    FieldCheck("sonic", "MAP_PFC_PRIORITY_TO_QUEUE|FABCHECK <p>", PFC),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfc_to_queue_map", PFC),
    FieldCheck("sonic", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|FABCHECK <p>", PFC),
    FieldCheck("sonic", "PORT_QOS_MAP|<port> pfc_to_pg_map", PFC),
    *eos_profile_and_port("priority-flow-control", PFC),
    *eos_profile_and_port("priority-flow-control priority <p>", PFC),
)
