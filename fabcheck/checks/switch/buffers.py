"""Buffers (role switch_qos, tag buffers): on SONiC the profiles a push binds to the lossless
priority groups and egress queues of the ports with PFC, on NVUE the shared buffer's lossless pool."""

from __future__ import annotations

from collections.abc import Sequence

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import FieldCheck
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, switch_check
from fabcheck.checks.switch.pfc import needs_pfc
from fabcheck.desired.switch import SONIC_DYNAMIC_LOSSLESS_PROFILE, DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import BufferBinding, BufferProfiles, TrafficPools

BUFFERS = "switch.buffers"
LOSSLESS_POOL = "switch.lossless_pool"


def _buffers_text(groups: Sequence[tuple[str, str]], queues: Sequence[tuple[str, str]]) -> str:
    shown = [f"PG {span} {profile}" for span, profile in groups] or ["no lossless PG"]
    shown += [f"queue {span} {profile}" for span, profile in queues] or ["no lossless queue bound"]
    return ", ".join(shown)


def _want_buffers(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    groups = [(str(group), profile) for group, profile in d.priority_group_buffers(p)] if p else []
    queues = [(str(queue), profile) for queue, profile in d.queue_buffers(p)] if p else []
    return _buffers_text(groups, queues)


def _judge_buffers(
    r: BufferProfiles,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _inputs: Inputs,
) -> Verdict:
    """What a push binds on a port with PFC, and nothing else: its lossless priority groups (a group
    bound to the dynamic lossless profile, or one the intent makes lossless, whatever it holds) and
    the binding of each lossless egress queue (the range holding it, e.g. stock 3-4). The lossy
    queues' bindings (q_lossy_profile on the dynamic model) are the switch's own and not judged."""
    if p is None:
        return Status.ERROR, "buffer profiles shown for the switch, not for a port"
    wanted = {str(group): profile for group, profile in d.priority_group_buffers(p)}
    lossless = {group for group, _profile in d.priority_group_buffers(p)}

    def owned(binding: BufferBinding) -> bool:
        return binding.profile == SONIC_DYNAMIC_LOSSLESS_PROFILE or bool(lossless & set(binding.members))

    groups = [(b.span, b.profile) for b in r.priority_groups if owned(b)]
    ok = dict(groups) == wanted
    queues: list[tuple[str, str]] = []
    for queue, profile in d.queue_buffers(p):
        holders = [b for b in r.queues if queue in b.members]
        queues += [(b.span, b.profile) for b in holders if (b.span, b.profile) not in queues]
        ok = ok and [b.profile for b in holders] == [profile]
    if not queues and d.queue_buffers(p):
        queues = [(str(queue), "unbound") for queue, _profile in d.queue_buffers(p)]
    return (Status.PASS if ok else Status.FAIL), _buffers_text(groups, queues)


def _want_pools(d: DesiredSwitch, _p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return ", ".join(f"{pool} {share} %" for pool, share in d.traffic_pools.items())


def _judge_pools(
    r: TrafficPools,
    _port: str | None,
    d: DesiredSwitch,
    _p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _i: Inputs,
) -> Verdict:
    have = r.mapping
    shown = {pool: have.get(pool) for pool in d.traffic_pools}
    text = ", ".join(f"{pool} {'unset' if share is None else f'{share} %'}" for pool, share in shown.items())
    return (Status.PASS if shown == d.traffic_pools else Status.FAIL), text


BUFFERS_CHECK = switch_check(
    BUFFERS,
    "buffers",
    "buffer profiles of the lossless priority groups and egress queues of the ports with PFC",
    SwitchJudge(
        BufferProfiles,
        _want_buffers,
        _judge_buffers,
        ports=lambda port: bool(port.pfc_priorities),  # a port without PFC keeps its buffers
        not_shown="fabcheck binds no per-port buffer profiles on this platform",
    ),
    NO_INPUTS,
)
LOSSLESS_POOL_CHECK = switch_check(
    LOSSLESS_POOL,
    "buffers",
    "the shared buffer's lossless pool PFC needs",
    SwitchJudge(
        TrafficPools,
        _want_pools,
        _judge_pools,
        not_shown="fabcheck splits no shared buffer into pools on this platform",
    ),
    NO_INPUTS,
    applies=needs_pfc,
)

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "qos traffic-pool <pool> memory-percent", LOSSLESS_POOL),
    FieldCheck("sonic", "BUFFER_PG|<port>|<pg> profile", BUFFERS),
    FieldCheck("sonic", "BUFFER_QUEUE|<port>|<queues> profile", BUFFERS),
)
