"""The switch wing's shape (fabcheck.checks.switch): SWITCH_CHECKS in the order the gate ran them
when they lived in one module, each check declared in the module of its concern with the owned-field
rows of what it judges, each judge taking the record type it declares, and no module grown into a
god file again."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from fabcheck.checks import switch
from fabcheck.checks.switch import (
    FIELD_CHECKS,
    SWITCH_CHECK_IDS,
    SWITCH_CHECKS,
    buffers,
    classification,
    drops,
    ecn,
    pfc,
    ports,
    scheduler,
    startup,
    watchdog,
    wire,
)
from fabcheck.switch.concerns import CONCERNS as PUSH_CONCERNS
from fabcheck.switch.concerns import WHOLE_SWITCH_TAGS

# The ids in run order as fabcheck/checks/switch.py (1,027 lines, e19db92) declared them: findings,
# reports and the docs' check table keep this order.
RUN_ORDER_BEFORE_THE_SPLIT = (
    "switch.trust",
    "switch.dscp_map",
    "switch.priority_map",
    "switch.queue_map",
    "switch.pfc",
    "switch.ecn",
    "switch.scheduler",
    "switch.watchdog",
    "switch.watchdog_settings",
    "switch.mtu",
    "switch.buffers",
    "switch.port_speed",
    "switch.lossless_pool",
    "switch.lossless_drops",
    "switch.startup_config",
)
# Issue 35 appends the wire checks (counters and diagnostics, judged last).
WIRE_CHECKS = ("switch.link_errors", "switch.link_flaps", "switch.optics")
CONCERNS = (classification, pfc, ecn, scheduler, watchdog, ports, buffers, drops, startup, wire)
# The role switch_qos tag (a concern the push files settings under) that fixes each module's checks;
# None: no fabcheck role sets it (the port speed).
TAGS = {
    classification: {"dscp"},
    pfc: {"pfc"},
    ecn: {"ecn"},
    scheduler: {"scheduler"},
    watchdog: {"watchdog"},
    ports: {"mtu", None},
    buffers: {"buffers"},
    drops: {"pfc"},  # a lossless class that drops lacks PFC on its path
    startup: {"switch"},  # the save of a whole push
    wire: {None},  # counters and diagnostics: the cabling, no role
}


def declared_in(module: object) -> set[str]:
    return {value.id for value in vars(module).values() if value in SWITCH_CHECKS}


def test_switch_checks_keep_the_run_order_and_ids_of_the_single_module() -> None:
    assert SWITCH_CHECK_IDS == RUN_ORDER_BEFORE_THE_SPLIT + WIRE_CHECKS
    assert len(set(SWITCH_CHECK_IDS)) == len(SWITCH_CHECK_IDS)


def test_every_check_is_declared_in_exactly_one_concern_module() -> None:
    owners = [declared_in(module) for module in CONCERNS]
    assert sorted(check for owned in owners for check in owned) == sorted(SWITCH_CHECK_IDS)


@pytest.mark.parametrize("module", CONCERNS, ids=lambda module: module.__name__.rsplit(".", 1)[1])
def test_a_concern_module_declares_the_owned_fields_of_its_own_checks_only(module: object) -> None:
    rows = vars(module)["FIELDS"]
    assert {row.check for row in rows} <= declared_in(module)
    assert set(rows) <= set(FIELD_CHECKS)


@pytest.mark.parametrize("module", CONCERNS, ids=lambda module: module.__name__.rsplit(".", 1)[1])
def test_a_concern_modules_checks_are_fixed_by_its_push_concern(module: object) -> None:
    tags = {check.tag for check in SWITCH_CHECKS if check.id in declared_in(module)}
    assert tags == TAGS[module]
    assert tags - {None} <= set(PUSH_CONCERNS) | set(WHOLE_SWITCH_TAGS)


def test_field_checks_hold_every_concern_row_once() -> None:
    rows = [row for module in CONCERNS for row in vars(module)["FIELDS"]]
    assert sorted(rows, key=repr) == sorted(FIELD_CHECKS, key=repr)
    assert len({(row.platform, row.field) for row in FIELD_CHECKS}) == len(FIELD_CHECKS)


@pytest.mark.parametrize("check", SWITCH_CHECKS, ids=lambda check: check.id)
def test_each_judge_takes_the_record_type_it_declares(check: switch.SwitchCheck) -> None:
    assert check.judge is not None
    verdict = check.judge.verdict
    record = next(iter(inspect.signature(verdict).parameters))
    assert typing.get_type_hints(verdict)[record] is check.judge.needs
    assert check.reads[0] == check.judge.needs.__name__


def test_the_package_replaced_the_single_module_and_no_module_outgrows_its_concern() -> None:
    package = Path(switch.__file__).parent
    assert not (package.parent / "switch.py").exists()
    sizes = {path.name: len(path.read_text().splitlines()) for path in package.glob("*.py")}
    assert max(sizes.values()) <= 350, sizes
