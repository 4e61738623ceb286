"""ECN marking (role switch_qos, tag ecn) on the lossless traffic class: on or off as the intent
runs it, its thresholds (up to the hardware's rounding above them) and probability, and every colour a
platform keeps apart (SONiC's WRED green, yellow and red) marking with the same curve."""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.checks.declare import Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck, eos_profile_and_port
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, or_unknown, switch_check
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import EcnQueues, QueueEcn

ECN = "switch.ecn"


@dataclass(frozen=True)
class EcnInputs(Inputs):
    # Spectrum programs ECN thresholds in whole buffer cells and shows the programmed value on the port:
    # 150 000 B reads 153 KB or 156 KB (Spectrum-4/5). Up to 7 % above the intent is that rounding.
    rounding_above: float = 0.07


def _want_ecn(d: DesiredSwitch, _p: DesiredSwitchPort | None, inputs: EcnInputs) -> str:
    queue = d.queue(d.lossless_traffic_class)
    tc = d.lossless_traffic_class
    if queue is None or not queue.ecn:
        return f"ECN off on traffic class {tc}"
    return (
        f"ECN on traffic class {tc}: min {queue.ecn_min_bytes} B, max {queue.ecn_max_bytes} B "
        f"(up to {inputs.rounding_above:.0%} more for hardware rounding), "
        f"probability {queue.ecn_probability} %"
    )


def _shown_ecn(q: QueueEcn) -> str:
    if not q.enabled:
        return f"ECN off on traffic class {q.traffic_class}"
    unit = "B" if q.unit == "bytes" else q.unit
    return (
        f"ECN on traffic class {q.traffic_class}: min {or_unknown(q.min_bytes)} {unit}, "
        f"max {or_unknown(q.max_bytes)} {unit}, probability {or_unknown(q.probability)} %"
    )


def _rounded_from(actual: int, wanted: int, rounding_above: float) -> bool:
    return wanted <= actual <= wanted * (1 + rounding_above)


def _judge_ecn(
    r: EcnQueues,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    inputs: EcnInputs,
) -> Verdict:
    tc = d.lossless_traffic_class
    queue = d.queue(tc)
    have = r.queue(tc) or QueueEcn(tc, False, None, None, None)
    if queue is None or not queue.ecn:
        return (Status.FAIL if have.enabled else Status.PASS), _shown_ecn(have)
    if not have.enabled:
        return Status.FAIL, _shown_ecn(have)
    if have.unit != "bytes":
        return Status.ERROR, _shown_ecn(have) + f" (thresholds in {have.unit} cannot be compared with bytes)"
    if have.min_bytes is None or have.max_bytes is None:
        return Status.ERROR, _shown_ecn(have) + " (the switch did not show its thresholds)"
    assert queue.ecn_min_bytes is not None and queue.ecn_max_bytes is not None
    ok = (
        _rounded_from(have.min_bytes, queue.ecn_min_bytes, inputs.rounding_above)
        and _rounded_from(have.max_bytes, queue.ecn_max_bytes, inputs.rounding_above)
        and (have.probability is None or have.probability == queue.ecn_probability)
    )
    # Colours a platform keeps apart (SONiC's WRED yellow and red) carry the same curve as green.
    wanted = (True, queue.ecn_min_bytes, queue.ecn_max_bytes, queue.ecn_probability)
    off = [
        _shown_colour(colour, on, low, high, chance)
        for colour, on, low, high, chance in have.colours
        if (on, low, high, chance) != wanted
    ]
    shown = _shown_ecn(have) + (f"; {'; '.join(off)}" if off else "")
    return (Status.PASS if ok and not off else Status.FAIL), shown


def _shown_colour(colour: str, on: bool, low: int | None, high: int | None, chance: int | None) -> str:
    if not on:
        return f"{colour} not marked"
    return f"{colour} min {or_unknown(low)} B, max {or_unknown(high)} B, probability {or_unknown(chance)} %"


ECN_CHECK = switch_check(
    ECN,
    "ecn",
    "ECN marking on the lossless queue",
    SwitchJudge(EcnQueues, _want_ecn, _judge_ecn),
    EcnInputs(),
)

_NVUE_ECN = "qos congestion-control default-global traffic-class <tc>"
_WRED = "WRED_PROFILE|FABCHECK_ECN_TC<tc>"

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "interface <port> qos congestion-control profile", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} min-threshold", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} max-threshold", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} probability", ECN),
    FieldCheck("nvue", f"{_NVUE_ECN} ecn", ECN),
    FieldCheck("sonic", "QUEUE|<port>|<tc> wred_profile", ECN),
    FieldCheck("sonic", f"{_WRED} ecn", ECN),
    *(
        FieldCheck("sonic", f"{_WRED} {field}", ECN)
        for colour in ("green", "yellow", "red")
        for field in (
            f"wred_{colour}_enable",
            f"{colour}_min_threshold",
            f"{colour}_max_threshold",
            f"{colour}_drop_probability",
        )
    ),
    *eos_profile_and_port("uc-tx-queue <tc> random-detect ecn", ECN),
)
