"""The gate's switch stage: one read-only session per planned switch (fabcheck.collect.switch), at
most `concurrency` open at once, judged against the desired state the plan holds.

A switch that cannot be reached, or whose session dies, is an ERROR for that switch's checks only;
the others finish. A switch without a usable login is an error for it alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fabcheck.checks.model import Finding
from fabcheck.checks.switch import SwitchEvidence, check_switch
from fabcheck.collect.probes import Collected, Output
from fabcheck.collect.switch import Connect, collect_switch, switch_login
from fabcheck.collect.switch_probes import PROBES, provided
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.errors import FabcheckError
from fabcheck.gate.stages import StageContext, StageOutcome
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.report.model import NodeKind
from fabcheck.switch.connect import SwitchLogin
from fabcheck.switch.connect import connect as netmiko_connect

DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True)
class SwitchResult:
    switch: str
    evidence: SwitchEvidence
    outputs: tuple[Output, ...]  # every raw output with the probe that produced it (snapshots)
    findings: tuple[Finding, ...]

    @property
    def node(self) -> str:
        return self.switch

    @property
    def kind(self) -> NodeKind:
        return NodeKind.SWITCH


def collect_switches(
    desired: Mapping[str, DesiredSwitch],
    logins: Mapping[str, SwitchLogin],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    connect: Connect = netmiko_connect,
    switches: Sequence[str] | None = None,
    ends_at: float | None = None,
) -> list[SwitchResult]:
    """Read and judge the switches (`desired`'s, or those of `switches`), at most `concurrency`
    sessions open at once; with `ends_at` (the run's deadline, on time.monotonic()) every read ends by
    it, and a switch not read by then is an error naming the command it was at."""
    if concurrency < 1:
        raise FabcheckError(f"concurrency {concurrency}: expected at least 1")
    names = list(switches) if switches is not None else list(desired)
    missing = [name for name in names if name not in logins]
    if missing:
        raise FabcheckError(f"no login for switch(es) {', '.join(missing)}")
    with ThreadPoolExecutor(max_workers=min(concurrency, max(1, len(names)))) as pool:
        futures = [pool.submit(judge_switch, logins[name], desired[name], connect, ends_at) for name in names]
        return [future.result() for future in futures]


def judge_switch(
    login: SwitchLogin,
    desired: DesiredSwitch,
    connect: Connect = netmiko_connect,
    ends_at: float | None = None,
) -> SwitchResult:
    """One session to the switch, its probes, then the pure checks. Whatever goes wrong reading it is an
    error for this switch only."""
    ports = [port.port for port in desired.ports]
    try:
        evidence, outputs = read_switch(login, desired.platform, ports, connect, ends_at)
    except FabcheckError:
        raise
    except Exception as err:  # one switch must never take the run down
        why = f"fabcheck failed reading this switch: {type(err).__name__}: {str(err)[:200]}"
        if login.password:
            why = why.replace(login.password, "<redacted>")
        evidence, outputs = (
            SwitchEvidence(desired.name, desired.platform, {}, frozenset(), unreachable=why),
            (),
        )
    return SwitchResult(desired.name, evidence, outputs, tuple(check_switch(evidence, desired)))


def read_switch(
    login: SwitchLogin,
    platform: str,
    ports: Sequence[str],
    connect: Connect = netmiko_connect,
    ends_at: float | None = None,
) -> tuple[SwitchEvidence, tuple[Output, ...]]:
    probes = PROBES.get(platform)
    if probes is None:
        raise FabcheckError(f"switch {login.name}: no gate probes for platform {platform!r}")
    collected = collect_switch(login, platform, probes, ports, connect, ends_at)
    if isinstance(collected, str):
        return SwitchEvidence(login.name, platform, {}, provided(platform), unreachable=collected), ()
    return evidence_of(login.name, platform, collected), tuple(collected.outputs)


def evidence_of(switch: str, platform: str, collected: Collected) -> SwitchEvidence:
    """What the checks read of one switch: its records, and for each failed probe what it withheld."""
    missing = tuple(
        (error.provides, error.port, f"`{error.command}`: {error.reason}") for error in collected.errors
    )
    return SwitchEvidence(switch, platform, dict(collected.records), provided(platform), missing)


@dataclass(frozen=True)
class SwitchStage:
    name: str = "switch"
    requires: tuple[str, ...] = ()
    by_default: bool = True
    traffic: bool = False

    def claims(self, entry: HostEntry, fabric: Fabric) -> bool:
        return any(switch.name == entry.name for switch in fabric.switches)

    def run(self, context: StageContext) -> StageOutcome:
        """Switches whose login resolves are read; one without a usable login is an error for it alone."""
        plan = context.plan
        login_of: Callable[[HostEntry, Fabric], SwitchLogin] = context.reads.switch_login or inventory_login
        logins: dict[str, SwitchLogin] = {}
        refused: dict[str, str] = {}
        for name in plan.switches:
            try:
                logins[name] = login_of(context.inventory.host(name), plan.fabric)
            except FabcheckError as err:
                refused[name] = str(err)
        connect = context.reads.switch_connect
        read = (
            collect_switches(
                plan.desired.switches,
                logins,
                concurrency=context.concurrency,
                switches=list(logins),
                ends_at=context.ends_at,
                **({} if connect is None else {"connect": connect}),
            )
            if logins
            else []
        )
        by_name = {r.switch: r for r in read}
        results = tuple(
            by_name[name] if name in by_name else _refused(plan.desired.switches[name], refused[name])
            for name in plan.switches
        )
        return StageOutcome(self.name, results)


def inventory_login(entry: HostEntry, fabric: Fabric) -> SwitchLogin:
    return switch_login(fabric.switch(entry.name), entry.variables)


def _refused(desired: DesiredSwitch, reason: str) -> SwitchResult:
    """A switch without a usable login is judged as an unreachable one: every check an error."""
    why = f"no login ({reason}); give it credentials as the switch_qos role gets them"
    evidence = SwitchEvidence(desired.name, desired.platform, {}, frozenset(), unreachable=why)
    return SwitchResult(desired.name, evidence, (), tuple(check_switch(evidence, desired)))


STAGE = SwitchStage()
