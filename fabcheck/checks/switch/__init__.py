"""Switch checks of the gate: what a switch shows (platform-neutral records) + its desired state -> findings.

Pure. Each check is declared once (fabcheck.checks.declare.Check, through judges.switch_check) in the
module of its concern, beside its judge and the owned-field rows of the settings it judges:
classification (trust, DSCP map, priority map, queue maps; tag dscp), pfc, ecn, scheduler, watchdog
(state and settings), ports (MTU, port speed), buffers (SONiC buffer profiles, NVUE's lossless pool),
drops (the lossless queue during the run), startup (the saved config holds what runs) and wire
(errors, flaps and optics of each cabled port, docs/checks/wire.md). This module
lists the checks in the order the gate runs them and docs/checks/switch.md shows them (SWITCH_CHECKS), and the
owned-field rows in the table's order (FIELD_CHECKS). judges.py holds the judge shape (SwitchJudge,
generic over the record it reads) and the run of one check on one switch (run_check): a record a port
has is judged per port, a switch-wide one once for the switch, a record that could not be read is an
ERROR naming the probe, and a check the platform cannot answer, or one the intent makes moot, a SKIP
with the reason.

Adding a switch check (say it judges a new setting on SONiC, NVUE and EOS):

1. The record: a frozen dataclass in fabcheck.parsers.switch_records, read by each platform's parser
   (fabcheck.parsers.switch_sonic / switch_nvue / switch_eos) from an output with a real sample cited
   in tests/data/real/<platform>/INDEX.tsv, and the probe that yields it in
   fabcheck.collect.switch_probes (its `provides`).
2. The desired value, derived once in fabcheck.desired.switch (DesiredSwitch), which the templates
   under templates/<platform>/ only spell.
3. The check, in the module of its concern here (a new module if no concern fits): its id constant,
   `_want_<x>(desired, port, inputs) -> str`, `_judge_<x>(record, port, desired, desired_port, more,
   inputs) -> Verdict` taking the record typed, and `<X>_CHECK = switch_check(id, tag, summary,
   SwitchJudge(<Record>, _want_<x>, _judge_<x>, ...), inputs)`; its thresholds, if any, an Inputs
   dataclass with documented defaults (ecn.EcnInputs). Then its FieldCheck rows in the module's
   FIELDS, one per key a push writes for it (tests/invariant/test_written_fields.py names any missing).
4. Here: `<X>_CHECK` in SWITCH_CHECKS where it runs, and the module's FIELDS in FIELD_CHECKS if the
   module is new. The catalog and `--checks`/`--skip` follow; `scripts/gen_docs` regenerates the check
   and owned-field tables of docs/checks/switch.md (tests/docs/test_generated.py fails until it has).
5. The lab's mock switches (mockswitch) show and refuse what the real platforms do; the tests:
   tests/checks/switch/test_switch_<concern>.py for the verdicts, tests/parsers for the readers,
   tests/invariant/test_switch_fields.py drifts each owned field alone (its rows come from FIELDS).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from fabcheck.checks.model import Finding
from fabcheck.checks.switch import (
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
from fabcheck.checks.switch.buffers import BUFFERS, BUFFERS_CHECK, LOSSLESS_POOL, LOSSLESS_POOL_CHECK
from fabcheck.checks.switch.classification import (
    DSCP_MAP,
    DSCP_MAP_CHECK,
    PRIORITY_MAP,
    PRIORITY_MAP_CHECK,
    QUEUE_MAP,
    QUEUE_MAP_CHECK,
    TRUST,
    TRUST_CHECK,
)
from fabcheck.checks.switch.drops import LOSSLESS_DROPS, LOSSLESS_DROPS_CHECK
from fabcheck.checks.switch.ecn import ECN, ECN_CHECK, EcnInputs
from fabcheck.checks.switch.evidence import SwitchEvidence
from fabcheck.checks.switch.fields import (
    NOT_DECLARED,
    FieldCheck,
    OwnedField,
    derive_owned_fields,
    owned_fields_table,
)
from fabcheck.checks.switch.judges import (
    SCOPE,
    MoreRecords,
    SwitchCheck,
    SwitchJudge,
    Verdict,
    fix_hint,
    run_check,
    switch_check,
)
from fabcheck.checks.switch.pfc import PFC, PFC_CHECK
from fabcheck.checks.switch.ports import MTU, MTU_CHECK, PORT_SPEED, PORT_SPEED_CHECK
from fabcheck.checks.switch.scheduler import SCHEDULER, SCHEDULER_CHECK
from fabcheck.checks.switch.startup import STARTUP_CONFIG, STARTUP_CONFIG_CHECK, STARTUP_LAG_SHOWN
from fabcheck.checks.switch.watchdog import (
    WATCHDOG,
    WATCHDOG_CHECK,
    WATCHDOG_SETTINGS,
    WATCHDOG_SETTINGS_CHECK,
)
from fabcheck.checks.switch.wire import LINK_ERRORS, LINK_FLAPS, OPTICS
from fabcheck.desired.switch import DesiredSwitch

# The order the gate runs them, the docs' check table and every report lists them.
SWITCH_CHECKS: tuple[SwitchCheck, ...] = (
    TRUST_CHECK,
    DSCP_MAP_CHECK,
    PRIORITY_MAP_CHECK,
    QUEUE_MAP_CHECK,
    PFC_CHECK,
    ECN_CHECK,
    SCHEDULER_CHECK,
    WATCHDOG_CHECK,
    WATCHDOG_SETTINGS_CHECK,
    MTU_CHECK,
    BUFFERS_CHECK,
    PORT_SPEED_CHECK,
    LOSSLESS_POOL_CHECK,
    LOSSLESS_DROPS_CHECK,
    STARTUP_CONFIG_CHECK,
    *wire.CHECKS,
)
SWITCH_CHECK_IDS = tuple(check.id for check in SWITCH_CHECKS)

# One declaration per key a push writes (derived from the renders: fabcheck.switch.owned), by concern;
# the owned-field table shows them by platform in this order.
FIELD_CHECKS: tuple[FieldCheck, ...] = (
    *classification.FIELDS,
    *pfc.FIELDS,
    *ecn.FIELDS,
    *scheduler.FIELDS,
    *watchdog.FIELDS,
    *ports.FIELDS,
    *buffers.FIELDS,
    *drops.FIELDS,
    *startup.FIELDS,
    *wire.FIELDS,
)


@functools.cache
def owned_fields() -> tuple[OwnedField, ...]:
    """The owned-field table, derived: every key the reference renders and the drivers write, with its
    check from FIELD_CHECKS (none: NOT_DECLARED), by platform in FIELD_CHECKS order, the undeclared last."""
    return derive_owned_fields(FIELD_CHECKS)


def __getattr__(name: str) -> object:
    # OWNED_FIELDS is derived from renders on first use, not at import (the gate never needs it).
    if name == "OWNED_FIELDS":
        return owned_fields()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def owned_fields_markdown(tests: Mapping[tuple[str, str], str]) -> str:
    """docs/checks/switch.md's owned-field table: each field, its concern tag, its check and the test
    that drifts it (`tests` maps (platform, field) to a test id)."""
    return owned_fields_table(owned_fields(), {check.id: check.tag for check in SWITCH_CHECKS}, tests)


def check_switch(evidence: SwitchEvidence, desired: DesiredSwitch) -> list[Finding]:
    """Every declared check on one switch, in SWITCH_CHECKS order."""
    findings: list[Finding] = []
    for check in SWITCH_CHECKS:
        findings += run_check(check, evidence, desired)
    return findings


__all__ = [
    "BUFFERS",
    "DSCP_MAP",
    "ECN",
    "FIELD_CHECKS",
    "LINK_ERRORS",
    "LINK_FLAPS",
    "LOSSLESS_DROPS",
    "LOSSLESS_POOL",
    "MTU",
    "NOT_DECLARED",
    "OPTICS",
    "PFC",
    "PORT_SPEED",
    "PRIORITY_MAP",
    "QUEUE_MAP",
    "SCHEDULER",
    "SCOPE",
    "STARTUP_CONFIG",
    "STARTUP_LAG_SHOWN",
    "SWITCH_CHECKS",
    "SWITCH_CHECK_IDS",
    "TRUST",
    "WATCHDOG",
    "WATCHDOG_SETTINGS",
    "EcnInputs",
    "FieldCheck",
    "MoreRecords",
    "OwnedField",
    "SwitchCheck",
    "SwitchEvidence",
    "SwitchJudge",
    "Verdict",
    "check_switch",
    "fix_hint",
    "owned_fields",
    "owned_fields_markdown",
    "run_check",
    "switch_check",
]
