"""The gate's switch stage: one read-only session per planned switch (fabcheck.gate.switches), judged
against the desired state the plan holds. A switch without a usable login is an error for it alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fabcheck.checks.switch import SwitchEvidence, check_switch
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.errors import FabcheckError
from fabcheck.gate.stages import StageContext, StageOutcome
from fabcheck.gate.switches import SwitchResult, collect_switches, switch_login
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry
from fabcheck.switch.connect import SwitchLogin


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
