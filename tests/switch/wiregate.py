"""The gate's own probes of one platform, collected over a counter window from an in-process mock switch
and judged by every switch check (the wire fault tests of NVUE and SONiC share it)."""

from __future__ import annotations

from collections.abc import Callable

from fabcheck.checks.model import Finding
from fabcheck.collect.probes import Collected, ReleaseRead, collect
from fabcheck.collect.switch_probes import PROBES

WIRE_CHECKS = {"switch.link_errors", "switch.link_flaps", "switch.optics"}


def wire_gate(
    platform: str,
    handle: Callable[[str], str],
    cabled_port: str,
    window_s: float,
    release_read: ReleaseRead | None = None,
) -> tuple[set[tuple[str, str, str]], Collected]:
    """The findings that do not pass, and what was collected. The wire checks must judge `cabled_port`
    ("leaf01:swp1"): none is skipped there for want of a counter."""
    from tests.invariant.harness import NAMES, check_switch, desired_of, evidence_of, not_passing

    wanted = desired_of(platform)
    ports = [port.port for port in wanted.ports]
    collected = collect(
        handle, PROBES[platform], ports, f"mock {NAMES[platform]}", window_s, release_read=release_read
    )
    assert collected.errors == []
    findings: list[Finding] = check_switch(evidence_of(NAMES[platform], platform, collected), wanted)
    judged = {f.check for f in findings if f.subject == cabled_port and f.status.value != "skip"}
    assert judged >= WIRE_CHECKS
    return not_passing(findings), collected
