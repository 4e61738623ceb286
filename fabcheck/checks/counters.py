"""Lossless semantics of NIC counters read before and after traffic (`ethtool -S` twice).

Pure: two snapshots of one interface + what the intent wants -> findings. On the lossless priority
nothing may be dropped or arrive out of sequence; with DCQCN the congestion control must have engaged
(ECN marks or CNPs moved); pause frames belong on the lossless priority only, never as global pause.
A counter that went backwards (a reset between the snapshots) or that the capture lacks makes the
check that needs it an error, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabcheck.checks.evidence import not_judged
from fabcheck.checks.model import Finding, errored, failed, passed, skipped
from fabcheck.desired.nic import PRIORITY_COUNT, DesiredNic
from fabcheck.parsers.hw_counters import CONGESTION_COUNTERS, RETRANSMIT_COUNTERS

ROLE_HINT = "role roce_host"
ECN_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled")
SEQUENCE_COUNTERS = ("out_of_sequence", "packet_seq_err")
GLOBAL_PAUSE = ("rx_pause_ctrl_phy", "tx_pause_ctrl_phy")
RETRANSMITS = ("roce_adp_retrans", "roce_slow_restart", "local_ack_timeout_err")


@dataclass(frozen=True)
class LosslessWant:
    """What the intent says about the traffic between the snapshots."""

    priority: int  # the lossless priority
    congestion_control: bool  # DCQCN on the NICs (NP or RP enabled): marks or CNPs must move


def lossless_want(nic: DesiredNic) -> LosslessWant:
    """From the NIC's desired record: its lossless priority, and whether DCQCN runs on it."""
    return LosslessWant(nic.ecn_priority, nic.np_enable or nic.rp_enable)


def counter_deltas(
    before: Mapping[str, int], after: Mapping[str, int]
) -> tuple[dict[str, int], tuple[str, ...]]:
    """after - before for every counter in both, and the names that went backwards."""
    deltas: dict[str, int] = {}
    backwards: list[str] = []
    for name, value in after.items():
        if name not in before:
            continue
        if value < before[name]:
            backwards.append(name)
        else:
            deltas[name] = value - before[name]
    return deltas, tuple(backwards)


def drop_counters(priority: int, names: Iterable[str]) -> tuple[str, ...]:
    """The drop counters of the lossless class this capture has: per priority where the driver counts
    them so, else the port-wide physical and buffer discards."""
    present = set(names)
    per_priority = f"rx_prio{priority}_discards"
    if per_priority in present:
        return (per_priority, *(n for n in ("rx_out_of_buffer",) if n in present))
    return tuple(n for n in ("rx_discards_phy", "rx_out_of_buffer", "tx_discards_phy") if n in present)


def check_counters(
    interface: str, before: Mapping[str, int], after: Mapping[str, int], want: LosslessWant
) -> list[Finding]:
    deltas, backwards = counter_deltas(before, after)
    if backwards:
        shown = ", ".join(backwards[:4])
        return [
            errored(
                "counters.readable",
                interface,
                "counters only grow between the two snapshots",
                f"{len(backwards)} went backwards ({shown}): reset between the snapshots",
                "take both snapshots without a reboot, driver reload or counter reset between them",
            )
        ]
    p = want.priority
    moved = deltas.get(f"rx_prio{p}_packets", 0) + deltas.get(f"tx_prio{p}_packets", 0)
    if f"rx_prio{p}_packets" not in deltas and f"tx_prio{p}_packets" not in deltas:
        return [_missing("counters.lossless_traffic", interface, (f"rx_prio{p}_packets",))]
    if moved == 0:
        return [
            not_judged(
                "counters.lossless_traffic",
                interface,
                f"traffic on the lossless priority {p} between the snapshots",
                f"no packet on priority {p}: nothing lossless to judge",
                "snapshot before and after the load (e.g. an incast); if RoCE traffic ran, it is not "
                f"on priority {p}: check trust and the DSCP map ({ROLE_HINT})",
            )
        ]
    findings = [
        passed("counters.lossless_traffic", interface, f"traffic on priority {p}", f"{moved} packets")
    ]
    findings.append(_drops(interface, deltas, p))
    findings.append(_sequence(interface, deltas, p))
    findings.append(_congestion(interface, deltas, want))
    findings.append(_pauses(interface, deltas, p))
    return findings


def _drops(interface: str, deltas: Mapping[str, int], priority: int) -> Finding:
    names = drop_counters(priority, deltas)
    if not names:
        return _missing(
            "counters.lossless_drops", interface, ("rx_discards_phy", f"rx_prio{priority}_discards")
        )
    dropped = {n: deltas[n] for n in names if deltas[n]}
    expected = f"no drop on the lossless class ({', '.join(names)})"
    if not dropped:
        return passed("counters.lossless_drops", interface, expected, "0 dropped")
    return failed(
        "counters.lossless_drops",
        interface,
        expected,
        _listed(dropped),
        f"PFC does not hold priority {priority} on this path: check PFC on this NIC ({ROLE_HINT}, tag pfc) "
        "and on its switch port (role switch_qos, tag pfc)",
    )


def _sequence(interface: str, deltas: Mapping[str, int], priority: int) -> Finding:
    names = [n for n in SEQUENCE_COUNTERS if n in deltas]
    if not names:
        return _missing("counters.out_of_sequence", interface, SEQUENCE_COUNTERS)
    late = {n: deltas[n] for n in names if deltas[n]}
    expected = "no RoCE packet out of sequence (a lossless fabric never needs go-back-N)"
    if not late:
        return passed("counters.out_of_sequence", interface, expected, "0")
    retransmits = {n: deltas[n] for n in RETRANSMITS if deltas.get(n)}
    also = f"; retransmits {_listed(retransmits)}" if retransmits else ""
    return failed(
        "counters.out_of_sequence",
        interface,
        expected,
        _listed(late) + also,
        f"packets of priority {priority} were lost on the way: PFC is off at one hop of this path",
    )


def _congestion(interface: str, deltas: Mapping[str, int], want: LosslessWant) -> Finding:
    if not want.congestion_control:
        return skipped("counters.congestion", interface, "the intent runs no DCQCN (pfc_only)")
    names = [n for n in ECN_COUNTERS if n in deltas]
    if not names:
        return _missing("counters.congestion", interface, ECN_COUNTERS)
    engaged = {n: deltas[n] for n in names if deltas[n]}
    expected = "DCQCN engaged under load: ECN marks or CNPs > 0"
    if engaged:
        return passed("counters.congestion", interface, expected, _listed(engaged))
    return failed(
        "counters.congestion",
        interface,
        expected,
        f"{', '.join(names)} all 0",
        "no ECN mark reached this NIC: check ECN marking on the switch queue (role switch_qos, tag ecn) "
        f"and DCQCN on the NICs ({ROLE_HINT}, tag ecn)",
    )


def _pauses(interface: str, deltas: Mapping[str, int], priority: int) -> Finding:
    others = {
        f"{d}_prio{q}_pause": deltas[f"{d}_prio{q}_pause"]
        for q in range(PRIORITY_COUNT)
        if q != priority
        for d in ("rx", "tx")
        if deltas.get(f"{d}_prio{q}_pause")
    }
    global_pause = {n: deltas[n] for n in GLOBAL_PAUSE if deltas.get(n)}
    lossless = sum(deltas.get(f"{d}_prio{priority}_pause", 0) for d in ("rx", "tx"))
    expected = f"pause frames on priority {priority} only, no global pause"
    if others or global_pause:
        return failed(
            "counters.pause",
            interface,
            expected,
            _listed({**others, **global_pause}),
            f"PFC runs on a priority other than {priority}, or link-level pause is on: "
            f"`mlnx_qos -i {interface} --pfc` and `ethtool -A {interface} rx off tx off` ({ROLE_HINT})",
        )
    return passed("counters.pause", interface, expected, f"{lossless} pause frames on priority {priority}")


def _missing(check: str, interface: str, names: Sequence[str]) -> Finding:
    return not_judged(
        check,
        interface,
        f"counter(s) {', '.join(names)} in both snapshots",
        "not in the capture",
        "capture the full `ethtool -S IF` (mlx5 also keeps RoCE counters in "
        "/sys/class/infiniband/DEV/ports/1/hw_counters)",
    )


def _listed(values: Mapping[str, int]) -> str:
    return ", ".join(f"{name} +{value}" for name, value in values.items())


# ---- RDMA hw_counters of a port (/sys/class/infiniband/DEV/ports/N/hw_counters), two snapshots.
RDMA_RETRANSMIT = "counters.rdma_retransmit"
RDMA_CONGESTION = "counters.rdma_congestion"


def check_rdma_counters(
    port: str, before: Mapping[str, int], after: Mapping[str, int], want: LosslessWant
) -> list[Finding]:
    """A lossless port's RDMA counters between two snapshots: no sequence error or ack timeout (nothing
    was lost), and with DCQCN an NP that answers ECN-marked packets with CNPs."""
    deltas, backwards = counter_deltas(before, after)
    if backwards:
        return [
            errored(
                "counters.readable",
                port,
                "counters only grow between the two snapshots",
                f"{len(backwards)} went backwards ({', '.join(backwards[:4])}): reset between the snapshots",
                "take both snapshots without a reboot, driver reload or counter reset between them",
            )
        ]
    return [_rdma_retransmit(port, deltas), _rdma_congestion(port, deltas, want)]


def _rdma_retransmit(port: str, deltas: Mapping[str, int]) -> Finding:
    names = [n for n in RETRANSMIT_COUNTERS if n in deltas]
    expected = "no out_of_sequence, packet_seq_err or local_ack_timeout_err (a lossless fabric loses nothing)"
    if not names:
        return not_judged(
            RDMA_RETRANSMIT,
            port,
            expected,
            f"none of {', '.join(RETRANSMIT_COUNTERS)} in both snapshots",
            "capture the whole hw_counters directory of the port",
        )
    lost = {n: deltas[n] for n in names if deltas[n]}
    if not lost:
        return passed(RDMA_RETRANSMIT, port, expected, f"{', '.join(names)} +0")
    return failed(
        RDMA_RETRANSMIT,
        port,
        expected,
        _listed(lost),
        "RoCE packets were lost and retransmitted (go-back-N): PFC is off or on the wrong priority at one "
        f"hop of this path ({ROLE_HINT}, tag pfc; role switch_qos, tag pfc)",
    )


def _rdma_congestion(port: str, deltas: Mapping[str, int], want: LosslessWant) -> Finding:
    if not want.congestion_control:
        return skipped(RDMA_CONGESTION, port, "the intent runs no DCQCN (pfc_only)")
    expected = "ECN-marked RoCE packets answered with CNPs (np_cnp_sent > 0 when np_ecn_marked > 0)"
    if not all(n in deltas for n in ("np_ecn_marked_roce_packets", "np_cnp_sent")):
        return not_judged(
            RDMA_CONGESTION,
            port,
            expected,
            "np_ecn_marked_roce_packets or np_cnp_sent not in both snapshots",
            "capture the whole hw_counters directory of the port",
        )
    shown = _listed({n: deltas[n] for n in CONGESTION_COUNTERS if n in deltas})
    if deltas["np_ecn_marked_roce_packets"] and not deltas["np_cnp_sent"]:
        return failed(
            RDMA_CONGESTION,
            port,
            expected,
            shown,
            "the notification point ignores ECN marks: enable roce_np on the lossless priority "
            f"({ROLE_HINT}, tag ecn)",
        )
    return passed(RDMA_CONGESTION, port, expected, shown)
