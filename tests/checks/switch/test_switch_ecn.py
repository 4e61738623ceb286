"""switch.ecn (fabcheck.checks.switch.ecn): ECN off fails every port, a pfc_only intent expects ECN
off, thresholds pass only the hardware's rounding up (EcnInputs), and thresholds in another unit
cannot be judged."""

from __future__ import annotations

import pytest
from switchjudged import EXPECTED_SKIPS, PORTS, SWITCHES, desired, judged, not_passing, replayed

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Status
from fabcheck.checks.switch import SwitchEvidence, check_switch
from fabcheck.parsers.switch_records import EcnQueues, QueueEcn


@pytest.mark.parametrize("name", SWITCHES)
def test_switch_ecn_off_fails_ecn_on_every_port_only(name: str) -> None:
    ports = {f"{name}:{port}" for port in PORTS[SWITCHES[name]]}
    skips = {(check, "skip", name) for check in EXPECTED_SKIPS[name]}
    findings = judged("switch-ecn-off", name)
    assert not_passing(findings) == {(checks.ECN, "fail", port) for port in ports} | skips
    ecn = next(f for f in findings if f.check == checks.ECN and f.status is Status.FAIL)
    assert ecn.actual == "ECN off on traffic class 3" and "--tags ecn" in ecn.hint


def test_pfc_only_intent_expects_ecn_off_and_fails_a_marking_queue() -> None:
    intent = {
        "congestion_control": "pfc_only",
        "ecn": {"enabled": False},
        "dcqcn": {"rp_enable": False, "np_enable": False},
    }
    findings = [f for f in judged("converged", "leaf02", intent) if f.check == checks.ECN]
    assert {f.status for f in findings} == {Status.FAIL}
    assert findings[0].expected == "ECN off on traffic class 3"


@pytest.mark.parametrize(
    ("minimum", "maximum", "status"),
    [
        (150_000, 1_500_000, Status.PASS),
        (150_528, 1_502_208, Status.PASS),  # Spectrum cells (the mock's port view)
        (159_744, 1_500_000, Status.PASS),  # 156 KB on Spectrum-4/5
        (149_999, 1_500_000, Status.FAIL),
        (170_000, 1_500_000, Status.FAIL),
        (150_000, 1_700_000, Status.FAIL),
    ],
)
def test_ecn_thresholds_allow_hardware_rounding_up_only(minimum: int, maximum: int, status: Status) -> None:
    full = replayed("converged", "leaf03")
    queues = tuple(QueueEcn(tc, tc == 3, minimum, maximum, 100) for tc in range(8))
    records = dict(full.records) | {(EcnQueues, "Ethernet1"): EcnQueues(queues)}
    evidence = SwitchEvidence("leaf03", "eos", records, full.provided)
    ecn = next(
        f
        for f in check_switch(evidence, desired("leaf03"))
        if f.subject == "leaf03:Ethernet1" and f.check == checks.ECN
    )
    assert ecn.status is status


def test_ecn_in_segments_cannot_be_judged_and_is_an_error() -> None:
    full = replayed("converged", "leaf03")
    queues = tuple(QueueEcn(tc, tc == 3, None, None, 100, "segments") for tc in range(8))
    records = dict(full.records) | {(EcnQueues, "Ethernet2"): EcnQueues(queues)}
    findings = check_switch(SwitchEvidence("leaf03", "eos", records, full.provided), desired("leaf03"))
    assert (
        next(f for f in findings if f.subject == "leaf03:Ethernet2" and f.check == checks.ECN).status
        is Status.ERROR
    )
