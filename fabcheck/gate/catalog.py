"""Every check the gate declares, in one list: the docs' check tables, `--checks`/`--skip` and the check list
are derived from it, never written down a second time.

The entries come from one list of declarations, fabcheck.checks.declared.DECLARED (each a
fabcheck.checks.declare.Check): host and fleet checks (their commands from
fabcheck.collect.host.HOST_PROBES), switch checks (the show commands from fabcheck.collect.switch_probes),
link, subnet-manager and InfiniBand fabric checks; the nccl, perftest and incast checks are declared
there too and selected by their stage's prefix.

    python -m fabcheck.gate.catalog --markdown host    # the host check table of docs/checks/host.md
    python -m fabcheck.gate.catalog --markdown switch  # the switch and link check table
    python -m fabcheck.gate.catalog --markdown ib      # the InfiniBand fabric table of docs/checks/ib.md
    python -m fabcheck.gate.catalog                    # one id a line
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from fabcheck.checks import link_health, switch
from fabcheck.checks.declare import Check
from fabcheck.checks.declared import DECLARED
from fabcheck.checks.host import pcie as host_pcie
from fabcheck.checks.host import wire as host_wire
from fabcheck.checks.host.firmware import NIC_FIRMWARE_CHECK, NIC_FW_CONFIG_CHECK
from fabcheck.checks.host.gpu import GPUDIRECT_CHECK
from fabcheck.checks.host.gpu_health import GPU_HEALTH_CHECK
from fabcheck.checks.host.nvlink import HOST_CHECKS as NVLINK_HOST_CHECKS
from fabcheck.checks.host.nvlink import NVLINK_FABRIC_CHECK
from fabcheck.checks.ib import IB_CHECK_DECLS
from fabcheck.checks.model import Finding
from fabcheck.checks.roles import SWITCH_QOS_ROLE
from fabcheck.checks.switch import wire as switch_wire
from fabcheck.collect.host import PROBES_BY_NAME
from fabcheck.collect.switch_probes import PROBES as SWITCH_PROBES
from fabcheck.collect.switch_probes import provided
from fabcheck.errors import UsageError
from fabcheck.gate.stages import all_stages

HOST_TABLE, SWITCH_TABLE = "host", "switch"
_PER = {"host": "host", "nic": "rail NIC", "port": "port", "gpu": "GPU", "boot file": "boot file"}


@dataclass(frozen=True)
class Entry:
    """One declared check as the documentation and the selection see it."""

    id: str
    stage: str  # host, switch or link (fleet checks run in the host stage, after every host is read)
    per: str  # what one finding judges
    applies: str  # when it applies
    reads: str  # the commands or probes it reads
    fixed_by: str  # the role and tag that set it
    summary: str


def _fixed_by(role: str | None, tag: str | None) -> str:
    if role is None:
        return "no role (command in the hint)"
    return f"`{role}`" + (f" tag `{tag}`" if tag else "")


def _host_applies(kinds: Sequence[str], modes: Sequence[str] | None) -> str:
    text = "/".join(kinds)
    return text + (f"; {'/'.join(modes)}" if modes else "")


def _host_entries(checks: Sequence[Check[Any]]) -> list[Entry]:
    entries = []
    for check in checks:
        modes = check.modes if check.stage == "host" else None
        per = _PER[check.scope] + ("" if check.stage == "host" else ", across the hosts")
        reads = ", ".join(f"`{PROBES_BY_NAME[name].command}`" for name in check.reads)
        entries.append(
            Entry(
                check.id,
                "host",
                per,
                _host_applies(check.kinds, modes),
                reads,
                WIRE_FIXED_BY if check in host_wire.CHECKS else _fixed_by(check.role, check.tag),
                check.summary,
            )
        )
    return entries


def _switch_entries(checks: Sequence[switch.SwitchCheck]) -> list[Entry]:
    entries = []
    for check in checks:
        assert check.judge is not None  # switch_check gives every switch check its judge
        probes = [
            f"`{probe.name}`"
            for table in SWITCH_PROBES.values()
            for probe in table
            if check.judge.needs in probe.provides
        ]
        entries.append(
            Entry(
                check.id,
                "switch",
                "port (switch-wide where the platform keeps one)",
                "every switch platform"
                if all(check.judge.needs in provided(p) for p in SWITCH_PROBES)
                else "platforms that show it",
                ", ".join(probes) or "no platform's views yet",
                WIRE_FIXED_BY if check in switch_wire.CHECKS else _fixed_by(SWITCH_QOS_ROLE, check.tag),
                check.summary,
            )
        )
    return entries


def _link_entries(checks: Sequence[Check[Any]]) -> list[Entry]:
    entries = []
    for check in checks:
        fixed = (
            f"`{check.role}` / `{SWITCH_QOS_ROLE}` tag `{check.tag}`"
            if check.role and check.tag
            else WIRE_FIXED_BY
            if check in link_health.LINK_HEALTH_CHECK_DECLS
            else "the cabling or fabric_links"
        )
        entries.append(
            Entry(
                check.id,
                "link",
                check.scope,
                "/".join(check.kinds),
                ", ".join(check.reads),
                fixed,
                check.summary,
            )
        )
    return entries


def _sm_entries(checks: Sequence[Check[Any]]) -> list[Entry]:
    return [
        Entry(
            check.id,
            "sm",
            check.scope,
            "/".join(check.kinds),
            ", ".join(check.reads),
            _fixed_by(check.role, check.tag),
            check.summary,
        )
        for check in checks
    ]


# The ib checks' hints name the cable, the port's config or the firmware image: no role sets them.
IB_FIXED_BY = "no role: the hint names the cable, the port config, the node description or the image"


def _ib_entries(checks: Sequence[Check[Any]]) -> list[Entry]:
    return [
        Entry(
            check.id,
            "ib",
            check.scope,
            "/".join(check.kinds),
            ", ".join(check.reads),
            IB_FIXED_BY,
            check.summary,
        )
        for check in checks
    ]


# How each stage's declarations read in the catalog; fleet checks are the host stage's.
_ENTRIES: dict[str, Callable[[Sequence[Check[Any]]], list[Entry]]] = {
    "host": _host_entries,
    "switch": _switch_entries,
    "link": _link_entries,
    "sm": _sm_entries,
    "ib": _ib_entries,
}
_STAGE_OF = {"fleet": "host"}


@cache
def catalog() -> tuple[Entry, ...]:
    """Every declared check of the stages listed one by one (host, switch, link, sm, ib), in declaration
    order; the traffic stages' checks (nccl, perftest, incast) are selected by their stage's prefix."""
    entries: list[Entry] = []
    for stage, build in _ENTRIES.items():
        entries += build([c for c in DECLARED if _STAGE_OF.get(c.stage, c.stage) == stage])
    return tuple(entries)


@cache
def stage_namespaces() -> tuple[str, ...]:
    """Plugged stages whose checks the catalog does not list one by one: each owns the ids
    `<stage>.*` (nccl.rank_transport, perftest.host), selectable by that prefix."""
    listed = {entry.stage for entry in catalog()}
    return tuple(stage.name for stage in all_stages() if stage.name not in listed)


def _namespaced(pattern: str) -> bool:
    head = pattern.split(".", 1)[0]
    return head in stage_namespaces() and (pattern == head or pattern.startswith(head + "."))


def selectable(check_id: str) -> bool:
    """Whether --checks/--skip may drop findings of this id; a stage that could not run never is."""
    return not check_id.endswith(".stage") and (check_id in known_ids() or _namespaced(check_id))


@cache
def known_ids() -> tuple[str, ...]:
    return tuple(entry.id for entry in catalog())


# ---- selection -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Which declared checks a run reports: `--checks` patterns (None: all) minus `--skip` patterns.

    Findings of ids outside the catalog (a host that could not be collected, a stage that could not
    run) are always kept: a node that could not be read is an error whatever was selected."""

    chosen: tuple[str, ...] | None = None
    skipped: tuple[str, ...] = ()

    def keeps(self, check_id: str) -> bool:
        if not selectable(check_id):
            return True
        if self.chosen is not None and not _matches(check_id, self.chosen):
            return False
        return not _matches(check_id, self.skipped)

    def filter(self, findings: Iterable[Finding]) -> tuple[Finding, ...]:
        return tuple(finding for finding in findings if self.keeps(finding.check))


EVERY_CHECK = Selection()


def _matches(check_id: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(check_id, pattern) for pattern in patterns)


def patterns(text: str, option: str) -> tuple[str, ...]:
    """A comma list of check ids or globs (`host.*`); UsageError naming every pattern that matches no
    declared check, and the known ids."""
    words = tuple(dict.fromkeys(word.strip() for word in text.split(",") if word.strip()))
    known = known_ids()
    unknown = [
        word
        for word in words
        if not any(fnmatch.fnmatchcase(k, word) for k in known) and not _namespaced(word)
    ]
    if not words or unknown:
        what = "names no check" if not words else f"{', '.join(map(repr, unknown))} matches no check"
        stages = "".join(f", {name}.*" for name in stage_namespaces())
        raise UsageError(f"{option} {text!r}: {what}; known checks: {', '.join(known)}{stages}")
    return words


def selection(checks: str | None, skip: str | None) -> Selection:
    """`--checks` and `--skip` as given on the command line (None: not given)."""
    chosen = None if checks is None else patterns(checks, "--checks")
    skipped = () if skip is None else patterns(skip, "--skip")
    return Selection(chosen, skipped)


# ---- documentation -------------------------------------------------------------------------------


def markdown(stages: Sequence[str], only: Sequence[str] | None = None) -> str:
    """The docs' check table (docs/checks/) for the given stages, one row per declared check (`only`:
    these ids alone)."""
    rows = [
        "| check | per | applies | reads | fixed by | expected (from the intent) |",
        "|---|---|---|---|---|---|",
    ]
    for entry in catalog():
        if entry.stage in stages and (only is None or entry.id in only):
            cells = (f"`{entry.id}`", entry.per, entry.applies, entry.reads, entry.fixed_by, entry.summary)
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


TABLES = {HOST_TABLE: ("host",), SWITCH_TABLE: ("switch", "link"), "sm": ("sm",), "ib": ("ib",)}
# docs/checks/wire.md: the wire checks of every stage (fabcheck.checks.wire's judges).
WIRE_TABLE = "wire"
_WIRE_CHECKS: tuple[Check[Any], ...] = (
    *host_wire.CHECKS,
    *switch_wire.CHECKS,
    *link_health.LINK_HEALTH_CHECK_DECLS,
)
WIRE_CHECK_IDS = tuple(check.id for check in _WIRE_CHECKS)
WIRE_FIXED_BY = "no role: the hint names what to clean, reseat or replace"
# docs/checks/bus.md: the checks of the bus between each GPU and its rail NIC (issue 36): PCIe, GPUDirect,
# NIC firmware, GPU health. Each family appends its checks' declarations here.
BUS_TABLE = "bus"
_BUS_CHECKS: tuple[Check[Any], ...] = (
    *host_pcie.CHECKS,
    GPUDIRECT_CHECK,
    NIC_FIRMWARE_CHECK,
    NIC_FW_CONFIG_CHECK,
    GPU_HEALTH_CHECK,
)
BUS_CHECK_IDS = tuple(check.id for check in _BUS_CHECKS)
# docs/checks/ib.md: the InfiniBand fabric between the hosts (issue 37), judged by the ib stage.
IB_TABLE = "ib"
IB_CHECK_IDS = tuple(check.id for check in IB_CHECK_DECLS)
# docs/checks/nvlink.md: each GPU host's NVLink domain (issue 38): links, fabric registration, IMEX, FM.
NVLINK_TABLE = "nvlink"
NVLINK_CHECK_IDS = tuple(check.id for check in (*NVLINK_HOST_CHECKS, NVLINK_FABRIC_CHECK))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabcheck.gate.catalog", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--markdown",
        choices=sorted([*TABLES, WIRE_TABLE, BUS_TABLE, NVLINK_TABLE]),
        help="print the docs' check table of these stages",
    )
    args = parser.parse_args(argv)
    if args.markdown == WIRE_TABLE:
        sys.stdout.write(markdown(("host", "switch", "link"), WIRE_CHECK_IDS))
    elif args.markdown == BUS_TABLE:
        sys.stdout.write(markdown(("host",), BUS_CHECK_IDS))
    elif args.markdown == NVLINK_TABLE:
        sys.stdout.write(markdown(("host",), NVLINK_CHECK_IDS))
    elif args.markdown:
        sys.stdout.write(markdown(TABLES[args.markdown]))
    else:
        sys.stdout.write("".join(f"{check_id}\n" for check_id in known_ids()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
