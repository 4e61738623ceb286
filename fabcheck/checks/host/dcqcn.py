"""Host checks of DCQCN on the NIC: how it marks the CNPs it sends, how often it may send them, and
the reaction-point parameters the intent sets."""

from __future__ import annotations

from fabcheck.checks.declare import ROCE
from fabcheck.checks.host.evidence import HostEvidence, unreadable_error
from fabcheck.checks.host.judges import HostCheck, echo, per_netdev
from fabcheck.checks.model import Finding, failed, passed
from fabcheck.checks.roles import HOST_QOS_ROLE
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable, section_command
from fabcheck.desired.nic import ECN_FILES, DesiredHost, DesiredNic, ecn_file

CNP = "host.cnp"
MIN_TIME_BETWEEN_CNPS = "host.min_time_between_cnps"
RP_PARAMS = "host.rp_params"

DCQCN_MODES = ("dcqcn", "ecn_only")  # the modes that run the notification and reaction points


def check_cnp(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    data = evidence.netdev(netdev)
    want = {"cnp_dscp": desired.cnp_dscp, "cnp_priority": desired.cnp_priority}
    shown = {value: ECN_FILES[value].rsplit("/", 1)[1] for value in want}  # as the NIC names its files
    expected = " ".join(f"{shown[k]}={v}" for k, v in want.items())
    have = {"cnp_dscp": data.cnp_dscp, "cnp_priority": data.cnp_prio}
    for value in have.values():
        if isinstance(value, Unreadable):
            return [unreadable_error(CNP, nic, expected, value)]
    actual = " ".join(f"{shown[k]}={v}" for k, v in have.items())
    commands = [echo(v, ecn_file(k, netdev)) for k, v in want.items() if have[k] != v]
    if not commands:
        return [passed(CNP, nic, expected, actual)]
    return [failed(CNP, nic, expected, actual, CNP_CHECK.fix("; ".join(commands)))]


def check_min_time_between_cnps(
    nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic
) -> list[Finding]:
    want = desired.min_time_between_cnps
    expected = f"min_time_between_cnps {want} us"
    value = evidence.record(probes.MIN_TIME_BETWEEN_CNPS, netdev)
    if isinstance(value, Unreadable):
        return [unreadable_error(MIN_TIME_BETWEEN_CNPS, nic, expected, value)]
    actual = f"min_time_between_cnps {value} us"
    if value == want:
        return [passed(MIN_TIME_BETWEEN_CNPS, nic, expected, actual)]
    command = echo(want, ecn_file("min_time_between_cnps", netdev))
    return [failed(MIN_TIME_BETWEEN_CNPS, nic, expected, actual, MIN_TIME_BETWEEN_CNPS_CHECK.fix(command))]


def check_rp_params(nic: str, netdev: str, evidence: HostEvidence, desired: DesiredNic) -> list[Finding]:
    """The DCQCN reaction-point parameters the intent sets (dcqcn.rp_params), each as written."""
    wanted = desired.rp_params
    expected = " ".join(f"{key}={value}" for key, value in sorted(wanted.items()))
    listing = evidence.record(probes.ROCE_RP, netdev)
    if isinstance(listing, Unreadable):
        return [unreadable_error(RP_PARAMS, nic, expected, listing)]
    absent = sorted(key for key in wanted if key not in listing)
    if absent:
        folder = ECN_FILES["rp_params"]
        reason = "the NIC shows no " + ", ".join(f"{folder}/{key}" for key in absent)
        command = section_command(f"{probes.ROCE_RP}:{netdev}", evidence.priority)
        return [unreadable_error(RP_PARAMS, nic, expected, Unreadable(command, reason))]
    actual = " ".join(f"{key}={listing[key]}" for key in sorted(wanted))
    wrong = sorted(key for key, value in wanted.items() if listing[key] != value)
    if not wrong:
        return [passed(RP_PARAMS, nic, expected, actual)]
    commands = "; ".join(echo(wanted[key], f"{ecn_file('rp_params', netdev)}/{key}") for key in wrong)
    return [failed(RP_PARAMS, nic, expected, actual, RP_PARAMS_CHECK.fix(commands))]


def _sets_rp_params(desired: DesiredHost) -> str | None:
    return (
        None if desired.template.rp_params else "fabric_intent.dcqcn.rp_params is empty: the role writes none"
    )


CNP_CHECK = HostCheck(
    CNP,
    "host",
    "nic",
    (probes.CNP_DSCP, probes.CNP_PRIO),
    "`cnp_dscp` == `cnp.dscp`, `cnp_802p_prio` == `cnp.priority`",
    HOST_QOS_ROLE,
    "ecn",
    per_netdev(CNP, check_cnp),
    kinds=ROCE,
)
MIN_TIME_BETWEEN_CNPS_CHECK = HostCheck(
    MIN_TIME_BETWEEN_CNPS,
    "host",
    "nic",
    (probes.MIN_TIME_BETWEEN_CNPS,),
    "`roce_np/min_time_between_cnps` == `dcqcn.min_time_between_cnps`",
    HOST_QOS_ROLE,
    "ecn",
    per_netdev(MIN_TIME_BETWEEN_CNPS, check_min_time_between_cnps),
    kinds=ROCE,
    modes=DCQCN_MODES,
)
RP_PARAMS_CHECK = HostCheck(
    RP_PARAMS,
    "host",
    "nic",
    (probes.ROCE_RP,),
    "each `dcqcn.rp_params` entry in `roce_rp/<name>` (skip when the intent sets none)",
    HOST_QOS_ROLE,
    "ecn",
    per_netdev(RP_PARAMS, check_rp_params),
    kinds=ROCE,
    modes=DCQCN_MODES,
    applies=_sets_rp_params,
)
