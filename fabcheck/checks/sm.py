"""Subnet-manager checks of the gate: what each SM node showed + its desired state -> findings.

Pure. A node's own SMInfo (``sminfo <its LID>``) says whether its opensm runs and in which state; the
plain ``sminfo`` says which master that node's port follows. Across the judged SM nodes the subnet must
have exactly one master: the intended one (fabric_intent.subnet_manager.sm_priorities) at its priority,
every other SM a standby at its own. A standby that is master because the intended master is not passes
its own check: the failure is reported once, on the intended master's node (sm.master).

Check ids: sm.service, sm.state, sm.master, sm.routing_engine, sm.conf, sm.partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabcheck.checks.declare import Check
from fabcheck.checks.host import Unreadable
from fabcheck.checks.model import Finding, errored, failed, passed
from fabcheck.checks.roles import SUBNET_MANAGER_ROLE
from fabcheck.desired.sm import OPENSM_DEFAULT_PRIORITY, DesiredPartition, DesiredSubnetManager
from fabcheck.parsers.opensm_conf import OpenSmConf, PartitionRule
from fabcheck.parsers.sminfo import MASTER, SM_STATES, STANDBY, SmInfo

SERVICE = "sm.service"
STATE = "sm.state"
MASTER_CHECK = "sm.master"
ROUTING_ENGINE = "sm.routing_engine"
CONF = "sm.conf"
PARTITIONS = "sm.partitions"
SM_TAG, PARTITIONS_TAG = "sm", "partitions"  # the opensm role's tags


# What OpenSM runs with for a key opensm.conf leaves out (osm_subnet.c defaults), for the keys the
# desired state writes; a missing key is judged by the value OpenSM then uses.
OPENSM_DEFAULTS = {
    "sm_priority": str(OPENSM_DEFAULT_PRIORITY),
    "lmc": "0",
    "sweep_interval": "10",
    "qos": "FALSE",
    "routing_engine": "(null)",
    "partition_config_file": "/etc/opensm/partitions.conf",
}
NULL_ENGINE = "minhop"  # routing_engine (null): OpenSM's default engine


@dataclass(frozen=True)
class NoAnswer:
    """A query that went out and that no SM answered (sminfo: iberror: failed: query)."""

    command: str
    said: str


@dataclass(frozen=True)
class SmEvidence:
    """What one round trip to an SM node showed, parsed. ``unreachable``: why nothing came back."""

    node: str
    own: SmInfo | NoAnswer | Unreadable  # `sminfo <this node's LID>`
    master: SmInfo | NoAnswer | Unreadable  # `sminfo`: the master this node's port follows
    conf: OpenSmConf | Unreadable
    partitions: tuple[PartitionRule, ...] | Unreadable | None  # None: no partitions.conf at all
    enabled: str | Unreadable  # `systemctl is-enabled` word
    active: str | Unreadable  # `systemctl is-active` word
    unreachable: str | None = None


def check_subnet(
    evidence: Sequence[SmEvidence], desired: Mapping[str, DesiredSubnetManager]
) -> dict[str, list[Finding]]:
    """Every SM check for every judged SM node, by node, in SM_CHECKS order. ``desired`` holds every
    judged node and the intended master (judged or not: its priority is the master's)."""
    masters = {e.node: e.own for e in evidence if isinstance(e.own, SmInfo) and e.own.is_master}
    by_node = {e.node: e for e in evidence}
    results: dict[str, list[Finding]] = {}
    for shown in evidence:
        wanted = desired[shown.node]
        judges_master = _judges_master(shown.node, wanted, by_node)
        if shown.unreachable is not None:
            checks = [c for c in SM_CHECKS if c != MASTER_CHECK or judges_master]
            results[shown.node] = [_unreachable(check, shown) for check in checks]
            continue
        findings = [check_service(shown), check_state(shown, wanted, list(masters), by_node)]
        if judges_master:
            intended = wanted.intended_master
            findings.append(check_master(evidence, desired[intended] if intended else None, masters))
        findings += [check_routing_engine(shown, wanted), check_conf(shown, wanted)]
        findings += check_partitions(shown, wanted)
        results[shown.node] = findings
    return results


def _judges_master(node: str, wanted: DesiredSubnetManager, by_node: Mapping[str, SmEvidence]) -> bool:
    """sm.master is reported on the intended master; with no intended master (or one this run leaves
    out) on every judged SM node."""
    intended = wanted.intended_master
    return intended is None or intended == node or intended not in by_node


# ---- service ---------------------------------------------------------------------------------------


def check_service(shown: SmEvidence) -> Finding:
    expected = "opensm enabled and active"
    for value in (shown.enabled, shown.active):
        if isinstance(value, Unreadable):
            return _error(SERVICE, "opensm service", expected, value)
    actual = f"{shown.enabled}, {shown.active}"
    if (shown.enabled, shown.active) == ("enabled", "active"):
        return passed(SERVICE, "opensm service", expected, actual)
    return failed(
        SERVICE,
        "opensm service",
        expected,
        actual,
        _fix(shown.node, SM_TAG, "enables and starts it") + "; on this node `systemctl status opensm`",
    )


# ---- SM state and the one master -----------------------------------------------------------------


def _role_of(node: str, wanted: DesiredSubnetManager) -> int:
    if wanted.intended_master is None:
        return -1  # no priorities in the intent: master or standby, the subnet decides
    return MASTER if wanted.intended_master == node else STANDBY


def check_state(
    shown: SmEvidence,
    wanted: DesiredSubnetManager,
    masters: Sequence[str],
    by_node: Mapping[str, SmEvidence],
) -> Finding:
    role = _role_of(shown.node, wanted)
    states = SM_STATES[role] if role >= 0 else f"{SM_STATES[MASTER]} or {SM_STATES[STANDBY]}"
    expected = f"{states} at priority {wanted.sm_priority}"
    own = shown.own
    if isinstance(own, Unreadable):
        return _error(STATE, "opensm", expected, own)
    hint = _fix(shown.node, SM_TAG, "writes sm_priority and (re)starts opensm")
    if isinstance(own, NoAnswer):
        return failed(
            STATE,
            "opensm",
            expected,
            f"no SM answers on this node's port (`{own.command}`: {own.said})",
            hint,
        )
    actual = own.describe()
    if own.priority != wanted.sm_priority or own.state not in (MASTER, STANDBY):
        return failed(STATE, "opensm", expected, actual, hint)
    if role < 0 or own.state == role:
        return passed(STATE, "opensm", expected, actual)
    if own.state == MASTER and masters == [shown.node] and _intended_master_down(wanted, by_node):
        return passed(
            STATE, "opensm", expected, f"{actual}: standing in, {wanted.intended_master} is not master"
        )
    return failed(STATE, "opensm", expected, actual, hint)


def _intended_master_down(wanted: DesiredSubnetManager, by_node: Mapping[str, SmEvidence]) -> bool:
    """Whether the intended master is judged and is not master (else this SM's mastership is wrong)."""
    intended = by_node.get(wanted.intended_master or "")
    return intended is not None and not (isinstance(intended.own, SmInfo) and intended.own.is_master)


def check_master(
    evidence: Sequence[SmEvidence], master: DesiredSubnetManager | None, masters: Mapping[str, SmInfo]
) -> Finding:
    """Exactly one master among the judged SMs: the intended one (``master``, None when the intent sets
    no priorities) at its priority, and the master every judged node's port follows. ``masters``: each
    judged node whose own SM is master, with what its `sminfo` showed."""
    subject = "subnet master"
    if master is None:
        expected = "exactly one master SM"
    else:
        expected = f"exactly one master SM: {master.node} at priority {master.sm_priority}"
    shown = ", ".join(f"{node} ({own.describe()})" for node, own in masters.items())
    actual = (shown or "no judged SM is master") + _views(evidence)
    target = master.node if master is not None else "subnet_managers"
    hint = _fix(target, SM_TAG, "writes each SM's sm_priority and starts opensm")
    followed = {e.master.guid for e in evidence if isinstance(e.master, SmInfo)}
    if master is not None and all(e.node != master.node for e in evidence):
        return _master_seen_from_standbys(evidence, master, list(masters), expected, actual, hint)
    as_intended = len(masters) == 1 and (master is None or list(masters) == [master.node])
    if as_intended:
        (elected,) = masters.values()
        right_priority = master is None or elected.priority == master.sm_priority
        as_intended = right_priority and followed <= {elected.guid}
    unread = [e for e in evidence if e.unreachable is not None or isinstance(e.own, Unreadable)]
    if not as_intended and (masters or not unread):
        return failed(MASTER_CHECK, subject, expected, actual, hint)
    if unread:  # one master among those read proves nothing about the SMs that could not be
        why = unread[0].unreachable or getattr(unread[0].own, "reason", "")
        return errored(MASTER_CHECK, subject, expected, f"{unread[0].node} could not be read: {why}", hint)
    return passed(MASTER_CHECK, subject, expected, actual)


def _master_seen_from_standbys(
    evidence: Sequence[SmEvidence],
    master: DesiredSubnetManager,
    masters: Sequence[str],
    expected: str,
    actual: str,
    hint: str,
) -> Finding:
    """The intended master is left out of the run (--limit): the judged SMs must be no master
    themselves, and each must follow one and the same master at the intended master's priority."""
    views = [e.master for e in evidence]
    unread = [view for view in views if isinstance(view, Unreadable)]
    seen = {(view.guid, view.priority) for view in views if isinstance(view, SmInfo)}
    left_out = f"{actual} ({master.node} is not in this run)"
    if masters or any(isinstance(view, NoAnswer) for view in views) or len(seen) > 1:
        return failed(MASTER_CHECK, "subnet master", expected, left_out, hint)
    if unread or not seen:
        return errored(MASTER_CHECK, "subnet master", expected, left_out, hint)
    if next(iter(seen))[1] != master.sm_priority:
        return failed(MASTER_CHECK, "subnet master", expected, left_out, hint)
    return passed(MASTER_CHECK, "subnet master", expected, left_out)


def _views(evidence: Sequence[SmEvidence]) -> str:
    seen = []
    for shown in evidence:
        view = shown.master
        if isinstance(view, SmInfo):
            seen.append(f"{shown.node} follows lid {view.lid} (guid 0x{view.guid:016x})")
        elif isinstance(view, NoAnswer):
            seen.append(f"{shown.node} finds no master")
    return "; " + "; ".join(seen) if seen else ""


# ---- opensm.conf ---------------------------------------------------------------------------------


def _effective(conf: OpenSmConf, key: str) -> str:
    value = conf.values.get(key, OPENSM_DEFAULTS.get(key, ""))
    return value.upper() if value.upper() in ("TRUE", "FALSE") else value


def _engines(value: str) -> str:
    return NULL_ENGINE if value in ("", "(null)") else value


def check_routing_engine(shown: SmEvidence, wanted: DesiredSubnetManager) -> Finding:
    want = wanted.conf["routing_engine"]
    expected = f"routing_engine {want}"
    subject = wanted.opensm_conf_path
    if isinstance(shown.conf, Unreadable):
        return _error(ROUTING_ENGINE, subject, expected, shown.conf)
    have = _effective(shown.conf, "routing_engine")
    actual = f"routing_engine {have}" + (" (not set)" if "routing_engine" not in shown.conf.values else "")
    if _engines(have) == _engines(want):
        return passed(ROUTING_ENGINE, subject, expected, actual)
    return failed(ROUTING_ENGINE, subject, expected, actual, _fix(shown.node, SM_TAG, "writes opensm.conf"))


def check_conf(shown: SmEvidence, wanted: DesiredSubnetManager) -> Finding:
    """Every other key the desired opensm.conf holds, at its value (a missing key: OpenSM's default)."""
    wanted_pairs = [(k, v) for k, v in wanted.conf_pairs if k != "routing_engine"]
    expected = ", ".join(f"{k} {v}" for k, v in wanted_pairs)
    subject = wanted.opensm_conf_path
    if isinstance(shown.conf, Unreadable):
        return _error(CONF, subject, expected, shown.conf)
    conf = shown.conf
    wrong = [
        f"{key} {_effective(conf, key) or '(not set)'}"
        for key, value in wanted_pairs
        if _effective(conf, key) != (value.upper() if value.upper() in ("TRUE", "FALSE") else value)
    ]
    if not wrong:
        return passed(CONF, subject, expected, "as intended")
    return failed(CONF, subject, expected, ", ".join(wrong), _fix(shown.node, SM_TAG, "writes opensm.conf"))


# ---- partitions.conf -----------------------------------------------------------------------------


def check_partitions(shown: SmEvidence, wanted: DesiredSubnetManager) -> list[Finding]:
    """One finding per intended partition, and one per rule the intent does not have."""
    rules = shown.partitions
    path = wanted.partitions_conf_path
    hint = _fix(shown.node, PARTITIONS_TAG, "writes partitions.conf and restarts opensm")
    if isinstance(rules, Unreadable):
        return [_error(PARTITIONS, path, f"{len(wanted.partitions)} partition rule(s)", rules)]
    if rules is None:
        return [
            failed(
                PARTITIONS,
                f"partition {p.name}",
                p.line,
                f"no {path}: every port full member of Default only",
                hint,
            )
            for p in wanted.partitions
        ]
    findings = []
    matched: set[int] = set()
    for partition in wanted.partitions:
        index, rule = next(((i, r) for i, r in enumerate(rules) if r.pkey == partition.pkey), (None, None))
        subject = f"partition {partition.name} 0x{partition.pkey:04x}"
        if rule is None or index is None:
            findings.append(
                failed(
                    PARTITIONS,
                    subject,
                    partition.line,
                    f"no rule for pkey 0x{partition.pkey:04x} in {path}",
                    hint,
                )
            )
            continue
        matched.add(index)
        actual = f"{path}:{rule.line}: {rule.text}"
        if _same(rule, partition):
            findings.append(passed(PARTITIONS, subject, partition.line, actual))
        else:
            findings.append(failed(PARTITIONS, subject, partition.line, actual, hint))
    for index, rule in enumerate(rules):
        if index not in matched:
            subject = f"partition {rule.name}"
            actual = f"{path}:{rule.line}: {rule.text}"
            findings.append(
                failed(PARTITIONS, subject, "no such partition (not in the intent)", actual, hint)
            )
    return findings


def _same(rule: PartitionRule, partition: DesiredPartition) -> bool:
    flags = {flag: value for flag, value in rule.flags if flag != "ipoib"}
    wanted_flags = {flag: str(value) for flag, value in partition.flag_pairs}
    return (
        rule.name == partition.name
        and rule.ipoib == partition.ipoib
        and flags == wanted_flags
        and rule.members == partition.members
    )


# ---- helpers -------------------------------------------------------------------------------------


def _fix(node: str, tag: str, what: str) -> str:
    return (
        f"role {SUBNET_MANAGER_ROLE} (tag {tag}) {what}: "
        f"`ansible-playbook site.yml --limit {node} --tags {tag}`"
    )


def _error(check: str, subject: str, expected: str, missing: Unreadable) -> Finding:
    return errored(
        check,
        subject,
        expected,
        f"could not read `{missing.command}`: {missing.reason}",
        "fix collection first (infiniband-diags installed? run as root?), then run validate again",
    )


def _unreachable(check: str, shown: SmEvidence) -> Finding:
    return errored(
        check,
        "opensm",
        "one ssh round trip to this SM node",
        shown.unreachable or "",
        "check that the node answers `ssh` with the inventory's connection variables",
    )


# ---- the declarations -----------------------------------------------------------------------------
# check_subnet runs the judges below in this order (sm.master on the intended master's node only).

IB = ("ib",)


def _sm_check(
    check_id: str, scope: str, reads: str, tag: str, summary: str, judge: Callable[..., Any]
) -> Check[Any]:
    return Check(check_id, "sm", scope, (reads,), summary, SUBNET_MANAGER_ROLE, tag, judge, kinds=IB)


SM_CHECK_DECLS: tuple[Check[Any], ...] = (
    _sm_check(
        SERVICE,
        "SM node",
        "`systemctl is-enabled/is-active opensm`",
        SM_TAG,
        "the unit enabled and active",
        check_service,
    ),
    _sm_check(
        STATE,
        "SM node",
        "`sminfo LID` of the node's own port",
        SM_TAG,
        "the intended master SMINFO_MASTER, every other SM SMINFO_STANDBY, each at its sm_priorities value",
        check_state,
    ),
    _sm_check(
        MASTER_CHECK,
        "subnet (on the intended master)",
        "`sminfo` and `sminfo LID` of every SM node",
        SM_TAG,
        "exactly one master SM, the intended one at its priority, followed by every SM node's port",
        check_master,
    ),
    _sm_check(
        ROUTING_ENGINE,
        "SM node",
        "`cat opensm.conf`",
        SM_TAG,
        "routing_engine as intended",
        check_routing_engine,
    ),
    _sm_check(
        CONF,
        "SM node",
        "`cat opensm.conf`",
        SM_TAG,
        "every other opensm.conf key the role writes",
        check_conf,
    ),
    _sm_check(
        PARTITIONS,
        "partition",
        "`cat partitions.conf`",
        PARTITIONS_TAG,
        "one rule per intended partition (pkey, name, ipoib, mtu/sl, members) and no other",
        check_partitions,
    ),
)
SM_CHECKS = tuple(check.id for check in SM_CHECK_DECLS)
