"""The NIC's PFC storm prevention (`ethtool --get-tunable NETDEV pfc-prevention-tout`): the NIC stops
sending pauses after `lossless.pfc_storm_prevention_ms` of a stalled receive path (0: never), so a stuck
host cannot freeze its switch port and spread the pause upstream. Role roce_host (tag pfc) sets it.

The whole check: the probe is collect.host's `pfc_storm` line, its parser parsers.ethtool_tunable, and this
module; fabcheck.checks.host lists the declaration."""

from __future__ import annotations

from fabcheck.checks.declare import ROCE
from fabcheck.checks.host.evidence import HostEvidence, unreadable_error
from fabcheck.checks.host.judges import HostCheck, cmd, per_netdev
from fabcheck.checks.model import Finding, failed, passed
from fabcheck.checks.roles import HOST_QOS_ROLE
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost, DesiredNic

PFC_STORM_PREVENTION = "host.pfc_storm_prevention"


def check_pfc_storm_prevention(
    nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic
) -> list[Finding]:
    want = desired.pfc_storm_prevention_ms
    assert want is not None  # the declaration skips the check when the desired state leaves it alone
    expected = _storm_text(want)
    have = evidence.record(probes.PFC_STORM, netdev)
    if isinstance(have, Unreadable):
        return [unreadable_error(PFC_STORM_PREVENTION, nic, expected, have)]
    actual = _storm_text(have)
    if have == want:
        return [passed(PFC_STORM_PREVENTION, nic, expected, actual)]
    command = cmd("ethtool", "--set-tunable", netdev, "pfc-prevention-tout", str(want))
    return [failed(PFC_STORM_PREVENTION, nic, expected, actual, PFC_STORM_PREVENTION_CHECK.fix(command))]


def _storm_text(ms: int) -> str:
    return "pfc-prevention-tout 0 (storm prevention off)" if ms == 0 else f"pfc-prevention-tout {ms} ms"


def _manages_storm_prevention(desired: DesiredHost) -> str | None:
    if desired.template.pfc_storm_prevention_ms is not None:
        return None
    return (
        "no PFC storm prevention to judge: fabric_intent.lossless.pfc is false or "
        "lossless.pfc_storm_prevention_ms is null"
    )


PFC_STORM_PREVENTION_CHECK = HostCheck(
    PFC_STORM_PREVENTION,
    "host",
    "nic",
    (probes.PFC_STORM,),
    "`pfc-prevention-tout` == `lossless.pfc_storm_prevention_ms` (0: off; skip without PFC or when null)",
    HOST_QOS_ROLE,
    "pfc",
    per_netdev(PFC_STORM_PREVENTION, check_pfc_storm_prevention),
    kinds=ROCE,
    applies=_manages_storm_prevention,
)
