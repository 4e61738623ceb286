"""switch.scheduler on NVUE judges every class the push writes in default-global (DesiredSwitch.
egress_schedule): a class no switch priority reaches left at NVUE's factory 12-13 % (DWRR over 100 %
in all, NVIDIA's QoS guide) fails, the converged mock switch passes."""

from __future__ import annotations

import dataclasses

from switchjudged import desired, replayed

from fabcheck.checks.model import Status
from fabcheck.checks.switch import SCHEDULER, SWITCH_CHECKS, run_check
from fabcheck.parsers.switch_records import QueueScheduler, Schedulers

CHECK = next(check for check in SWITCH_CHECKS if check.id == SCHEDULER)


def judged(records_change: dict[int, QueueScheduler] | None = None) -> tuple[Status, str, str]:
    evidence = replayed("converged", "leaf01")
    if records_change:
        shown = evidence.records[(Schedulers, None)]
        assert isinstance(shown, Schedulers)
        queues = tuple(records_change.get(q.traffic_class, q) for q in shown.queues)
        records = dict(evidence.records) | {(Schedulers, None): Schedulers(queues)}
        evidence = dataclasses.replace(evidence, records=records)
    (finding,) = run_check(CHECK, evidence, desired("leaf01"))
    return finding.status, finding.expected, finding.actual


def test_the_converged_switch_runs_every_class_as_written() -> None:
    status, expected, actual = judged()
    assert status is Status.PASS and expected == actual
    assert expected.count("dwrr 1 %") == 5 and expected.count("dwrr 47 %") == 2 and "TC6 strict" in expected


def test_an_unplanned_class_back_at_its_factory_share_fails() -> None:
    status, expected, actual = judged({5: QueueScheduler(5, "dwrr", 13)})
    assert status is Status.FAIL and "TC5 dwrr 1 %" in expected and "TC5 dwrr 13 %" in actual
