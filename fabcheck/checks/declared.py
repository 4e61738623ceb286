"""Every check the gate declares, in one list, in the order the stages run them: what the catalog
(fabcheck.gate.catalog: the docs' tables, `--checks`/`--skip`, the pytest plugin) reads."""

from __future__ import annotations

from typing import Any

from fabcheck.checks import host, ib, incast, link, link_health, nccl_ranks, perftest, sm, switch
from fabcheck.checks.as_planned import IB_AS_PLANNED_CHECK, LINK_AS_PLANNED_CHECK
from fabcheck.checks.declare import Check
from fabcheck.checks.uplinks import SWITCH_LLDP_CHECK

DECLARED: tuple[Check[Any], ...] = (
    *host.HOST_CHECK_DECLS,
    *host.FLEET_CHECK_DECLS,
    *switch.SWITCH_CHECKS,
    *link.LINK_CHECK_DECLS,
    *link_health.LINK_HEALTH_CHECK_DECLS,
    SWITCH_LLDP_CHECK,
    LINK_AS_PLANNED_CHECK,
    *sm.SM_CHECK_DECLS,
    *ib.IB_CHECK_DECLS,
    IB_AS_PLANNED_CHECK,
    *nccl_ranks.NCCL_CHECK_DECLS,
    *perftest.PAIR_CHECK_DECLS,
    *incast.CHECK_DECLS,
)
