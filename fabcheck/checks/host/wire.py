"""The wire at each rail NIC (docs/checks/wire.md): its netdev's error, FEC and BER counters over the
counter window (host.link_errors: `ethtool -S` *_phy counters, `ethtool -I --show-fec`, mlxlink where
installed), its link-down events (host.link_flaps) and its module's diagnostics against the module's own
thresholds (host.optics: `ethtool -m`). The judges are fabcheck.checks.wire's, shared with the switch
ports and link.health; the limits are the intent's link_health, carried by the desired host.

Counters, not settings: no role sets them; a failure's hint says what to clean, reseat or replace. A
NIC that exposes none of a check's counters, or whose module has no diagnostics (a DAC), is a named skip.
"""

from __future__ import annotations

from collections.abc import Callable

from fabcheck.checks.declare import NO_INPUTS, ROCE, Inputs
from fabcheck.checks.host.evidence import HostEvidence, WireEvidence
from fabcheck.checks.host.judges import HostCheck, HostJudge, host_check, per_netdev
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.wire import Judged, judge_errors, judge_flaps, judge_optics, optics_expected
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import DesiredHost, DesiredNic
from fabcheck.intent.model import FabricIntent, LinkHealth

LINK_ERRORS = "host.link_errors"
LINK_FLAPS = "host.link_flaps"
OPTICS = "host.optics"

WireJudge = Callable[[WireEvidence, LinkHealth, str], Judged]  # a netdev's wire, the limits, its name


def _counters(judge: Callable[..., Judged]) -> WireJudge:
    return lambda wire, limits, end: judge(wire.counters, limits, end)


def _optics(wire: WireEvidence, limits: LinkHealth, end: str) -> Judged:
    if wire.no_module:
        assert isinstance(wire.optics, Unreadable)  # no_module: an Unreadable of that reason
        reason = f"{end} has no module EEPROM to read: {wire.optics.reason}"
        return Judged(Status.SKIP, optics_expected(limits), reason)
    return judge_optics(wire.optics, limits, end)


def per_wire(check_id: str, judge: WireJudge) -> HostJudge[Inputs]:
    """A judge of the wire of every rail NIC's netdev (judges.per_netdev walks the NICs; a NIC without
    a netdev is an ERROR there)."""

    def run(
        evidence: HostEvidence, desired: DesiredHost, intent: FabricIntent, inputs: Inputs
    ) -> list[Finding]:
        def one(nic: str, netdev: str, shown: HostEvidence, _nic: DesiredNic) -> list[Finding]:
            judged = judge(shown.wire(netdev), desired.link_health, f"{desired.host}:{nic} ({netdev})")
            return [Finding(check_id, judged.status, nic, judged.expected, judged.actual, judged.hint)]

        return per_netdev(check_id, one)(evidence, desired, intent, inputs)

    return run


SUMMARY_ERRORS = (
    "over the counter window: CRC, symbol errors and physical discards within `link_health`, no "
    "uncorrectable FEC block, pre-FEC BER <= `link_health.max_pre_fec_ber` (window 0: a named skip)"
)
SUMMARY_FLAPS = (
    "no link-down event inside the counter window; lifetime link-down events <= `link_health.flaps_allowed`"
)
SUMMARY_OPTICS = (
    "every `ethtool -m` reading within the module's own thresholds; RX power >= low alarm + "
    "`link_health.optics_rx_margin_db`; temperature <= high warning - `optics_temperature_margin_c` "
    "(no DOM, a DAC: a named skip)"
)
COUNTER_READS = (probes.LINK_STATS, probes.FEC, probes.MLXLINK)


def _wire_check(check_id: str, reads: tuple[str, ...], summary: str, judge: WireJudge) -> HostCheck:
    """A RoCE NIC check of no role and no inputs over `reads`: `judge` on every rail NIC's wire."""
    return host_check(
        check_id, "nic", reads, summary, None, None, per_wire(check_id, judge), NO_INPUTS, kinds=ROCE
    )


LINK_ERRORS_CHECK = _wire_check(LINK_ERRORS, COUNTER_READS, SUMMARY_ERRORS, _counters(judge_errors))
LINK_FLAPS_CHECK = _wire_check(LINK_FLAPS, COUNTER_READS, SUMMARY_FLAPS, _counters(judge_flaps))
OPTICS_CHECK = _wire_check(OPTICS, (probes.MODULE,), SUMMARY_OPTICS, _optics)
CHECKS: tuple[HostCheck, ...] = (LINK_ERRORS_CHECK, LINK_FLAPS_CHECK, OPTICS_CHECK)
