"""switch.pfc (fabcheck.checks.switch.pfc) and switch.lossless_drops (drops) over the lab's replayed
mock switches: a port without PFC on the RoCE priority fails PFC there, and drops where the platform
shows queue drops."""

from __future__ import annotations

import pytest
from switchjudged import EXPECTED_SKIPS, FIRST_PORT, SWITCHES, judged, not_passing

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Status
from fabcheck.checks.roles import SWITCH_QOS_ROLE


@pytest.mark.parametrize("name", SWITCHES)
def test_switch_pfc_prio_fails_pfc_on_the_first_port_only(name: str) -> None:
    # A port without PFC on the RoCE priority drops that traffic: where the platform shows queue
    # drops, the drop check fails on the same port (the mock's traffic model), nothing else does.
    expected = {(checks.PFC, "fail", FIRST_PORT[name])}
    if checks.LOSSLESS_DROPS not in EXPECTED_SKIPS[name]:
        expected.add((checks.LOSSLESS_DROPS, "fail", FIRST_PORT[name]))
    skips = {(check, "skip", name) for check in EXPECTED_SKIPS[name]}
    findings = judged("switch-pfc-prio", name)
    assert not_passing(findings) == expected | skips
    pfc = next(f for f in findings if f.check == checks.PFC and f.status is Status.FAIL)
    assert pfc.expected.startswith("PFC on priorities 3, pause frames sent (tx) and honoured (rx)")
    assert pfc.actual == "PFC on priorities 4"
    assert SWITCH_QOS_ROLE in pfc.hint and f"ansible-playbook site.yml --limit {name} --tags pfc" in pfc.hint
