"""Offline analyzers: one recorded output -> facts + findings + verdict. Pure: callers do the reading."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fabcheck.checks.counters import (
    LosslessWant,
    check_counters,
    check_rdma_counters,
    counter_deltas,
    lossless_want,
)
from fabcheck.checks.evidence import deselect, unjudged
from fabcheck.checks.host.firmware import check_fwmanager_query
from fabcheck.checks.model import Finding, errored, verdict
from fabcheck.checks.nccl_log import check_nccl_log
from fabcheck.checks.nccl_tests import check_nccl_tests, floor_facts
from fabcheck.checks.perftest import check_perftest
from fabcheck.checks.topo import check_topo
from fabcheck.desired.nic import desired_host
from fabcheck.errors import ParseError
from fabcheck.intent.model import FabricIntent
from fabcheck.intent.nvlink import NvlinkPlan
from fabcheck.parsers import nccl_log, nccl_tests, perftest, topo
from fabcheck.parsers.ethtool_stats import UNNAMED, parse_ethtool_stats
from fabcheck.parsers.hw_counters import parse_hw_counters
from fabcheck.parsers.mlxfwmanager import parse_mlxfwmanager

SCOPE_FABRIC = "fabric"
SCOPE_NODE = "node"
SCOPES = (SCOPE_FABRIC, SCOPE_NODE)


@dataclass(frozen=True)
class Options:
    """Per-run overrides for facts the output itself cannot tell."""

    line_rate_gbps: float | None = None
    # Checks the user left out (--skip-check): reported as skipped, so they neither fail nor block a pass.
    excluded_checks: tuple[str, ...] = ()
    # Which hosts form one NVLink domain (--nvlink-domain NAME=HOST,HOST, or the -i inventory's
    # nvlink_domains groups); a host in none is a domain of its own (fabcheck.intent.nvlink).
    nvlink_domains: NvlinkPlan = field(default_factory=NvlinkPlan)
    # nccl-tests: "fabric" judges a table as proof of the network (a table inside one NVLink domain is not
    # judged); "node" (--scope node) judges such a table against the NVLink floor, as an NVLink proof.
    scope: str = SCOPE_FABRIC

    def nvlink_domain_of(self, host: str) -> str:
        """The NVLink domain `host` belongs to: its group's name, or the host's own name. Logs print
        gethostname(), often the short name, where the inventory may hold the FQDN (or the reverse):
        a name matches a member whose first label is the same."""
        found = self.nvlink_domains.domain_of(host)
        if found.declared:
            return found.name
        short = host.split(".", 1)[0]
        for domain in self.nvlink_domains.domains:
            if any(member.split(".", 1)[0] == short for member in domain.hosts):
                return domain.name
        return found.name


@dataclass(frozen=True)
class Analysis:
    source: str
    kind: str
    facts: dict[str, Any]
    findings: tuple[Finding, ...]

    @property
    def verdict(self) -> str:
        return verdict(self.findings).value

    @property
    def not_judged(self) -> list[str]:
        """Applicable checks that found no evidence: why a run with nothing failed is `error`."""
        return unjudged(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.source,
            "kind": self.kind,
            **self.facts,
            "not_judged": self.not_judged,
            "verdict": self.verdict,
            "findings": [f.to_json() for f in self.findings],
        }


def _topo(lines: Iterable[str], source: str, intent: FabricIntent, _: Options) -> Analysis:
    matrix = topo.parse_topo("".join(lines), source)
    facts = topo.topo_facts(matrix)
    return Analysis(source, "topo", facts, tuple(check_topo(matrix, intent)))


def _nccl_log(lines: Iterable[str], source: str, intent: FabricIntent, options: Options) -> Analysis:
    # Logs can be many GB: stream the pieces (lines or larger chunks) through the parser.
    parser = nccl_log.NcclLogParser(source)
    for piece in lines:
        parser.feed_chunk(piece)
    summary = parser.result()
    facts = nccl_log.nccl_log_facts(summary)
    facts["error_details"] = [
        {
            "line": e.line,
            "host": e.host,
            "rank": e.rank,
            "status": e.status,
            "vendor_err": e.vendor_err,
            "message": e.message,
        }
        for e in summary.errors
    ]
    facts["ranks"] = [
        {"host": r.host, "rank": r.rank, "network": r.network, "gdr": r.gdr} for r in summary.ranks
    ]
    facts["init_complete"] = summary.init_complete
    facts["failed_plugins"] = list(summary.failed_plugins)
    findings = check_nccl_log(summary, intent, options.nvlink_domain_of)
    return Analysis(source, "nccl-log", facts, tuple(findings))


def _perftest(lines: Iterable[str], source: str, intent: FabricIntent, options: Options) -> Analysis:
    run = perftest.parse_perftest("".join(lines), source)
    facts = perftest.perftest_facts(run)
    facts["table"] = perftest.perftest_rows(run)
    facts["error_details"] = [
        {"line": e.line, "message": e.message, "status": e.status, "syndrome": e.syndrome} for e in run.errors
    ]
    return Analysis(source, "perftest", facts, tuple(check_perftest(run, intent, options.line_rate_gbps)))


def _nccl_tests(lines: Iterable[str], source: str, intent: FabricIntent, options: Options) -> Analysis:
    run = nccl_tests.parse_nccl_tests("".join(lines), source)
    facts = nccl_tests.nccl_tests_facts(run)
    facts["table"] = nccl_tests.nccl_tests_rows(run)
    facts.update(floor_facts(run, intent, options.nvlink_domain_of))
    findings = check_nccl_tests(run, intent, options.nvlink_domain_of, options.scope == SCOPE_NODE)
    return Analysis(source, "nccl-tests", facts, tuple(findings))


def _mlxfwmanager(lines: Iterable[str], source: str, intent: FabricIntent, _: Options) -> Analysis:
    devices = parse_mlxfwmanager("".join(lines), source)
    facts: dict[str, Any] = {
        "devices": [
            {
                "index": d.index,
                "device_type": d.device_type,
                "part_number": d.part_number,
                "psid": d.psid,
                "pci_device": d.pci_device,
                "fw_current": d.fw_current,
                "fw_available": d.fw_available,
                "status": d.status,
            }
            for d in devices
        ]
    }
    findings = check_fwmanager_query(devices, tuple(intent.nic_firmware))
    return Analysis(source, "mlxfwmanager", facts, tuple(findings))


AnalyzerFn = Callable[[Iterable[str], str, FabricIntent, Options], Analysis]
ANALYZERS: dict[str, AnalyzerFn] = {
    "topo": _topo,
    "nccl-log": _nccl_log,
    "perftest": _perftest,
    "nccl-tests": _nccl_tests,
    "mlxfwmanager": _mlxfwmanager,
}


# Kinds judged from two captures of the same thing, before and after a load.
PAIR_KINDS = ("counters",)


def analyze_counters(
    before: tuple[str, str], after: tuple[str, str], intent: FabricIntent, host: str | None = None
) -> Analysis:
    """Two `ethtool -S` captures ((name, text) each) -> lossless verdict per interface in both; or two
    RDMA hw_counters captures (`grep -H '' .../hw_counters/*`, `rdma statistic show`, `show_counters`)
    -> retransmissions and CNP answers per port. ParseError for a capture that is neither."""
    want = lossless_want(desired_host(intent, host or "-").template)
    try:
        first = parse_ethtool_stats(before[1], before[0])
    except ParseError as ethtool_error:
        try:
            hw_first = parse_hw_counters(before[1], before[0])
        except ParseError:
            raise ethtool_error from None
        return _analyze_hw_counters(before, hw_first, after, want)
    second = parse_ethtool_stats(after[1], after[0])
    findings: list[Finding] = []
    interfaces: dict[str, dict[str, int]] = {}
    for name in dict.fromkeys([*first, *second]):
        shown = name or "(unnamed)"
        if name not in first or name not in second:
            missing = before[0] if name not in first else after[0]
            findings.append(
                errored(
                    "counters.readable",
                    shown,
                    "the interface in both captures",
                    f"not in {missing}",
                    "capture the same interfaces before and after",
                )
            )
            continue
        old, new = first[name].counters, second[name].counters
        findings += check_counters(shown, old, new, want)
        deltas, _ = counter_deltas(old, new)
        interfaces[shown] = {k: v for k, v in deltas.items() if v}
    facts: dict[str, Any] = {
        "before": before[0],
        "after": after[0],
        "lossless_priority": want.priority,
        "congestion_control": want.congestion_control,
        "interfaces": interfaces,
        "unnamed": UNNAMED in first,
    }
    return Analysis(f"{before[0]} -> {after[0]}", "counters", facts, tuple(findings))


def _analyze_hw_counters(
    before: tuple[str, str], first: dict[str, dict[str, int]], after: tuple[str, str], want: LosslessWant
) -> Analysis:
    second = parse_hw_counters(after[1], after[0])
    findings: list[Finding] = []
    ports: dict[str, dict[str, int]] = {}
    for port in dict.fromkeys([*first, *second]):
        if port not in first or port not in second:
            missing = before[0] if port not in first else after[0]
            findings.append(
                errored(
                    "counters.readable",
                    port,
                    "the port in both captures",
                    f"not in {missing}",
                    "capture the same RDMA ports before and after",
                )
            )
            continue
        findings += check_rdma_counters(port, first[port], second[port], want)
        deltas, _ = counter_deltas(first[port], second[port])
        ports[port] = {k: v for k, v in deltas.items() if v}
    facts: dict[str, Any] = {
        "before": before[0],
        "after": after[0],
        "format": "hw_counters",
        "congestion_control": want.congestion_control,
        "ports": ports,
    }
    return Analysis(f"{before[0]} -> {after[0]}", "counters", facts, tuple(findings))


def analyze(
    kind: str, lines: Iterable[str], source: str, intent: FabricIntent, options: Options | None = None
) -> Analysis:
    """Parse one output of `kind` and judge it. Raises ParseError on unreadable input.

    `lines` are consecutive pieces of the text (lines with their newlines, or larger chunks).
    A result holding a number that is not finite is refused too: such a number is unreadable
    evidence, and it has no strict JSON form.
    """
    options = options or Options()
    result = ANALYZERS[kind](lines, source, intent, options)
    bad = _non_finite_path(result.facts, kind)
    if bad is not None:
        raise ParseError(f"{bad} is not a finite number", source=source)
    return with_selection(result, options.excluded_checks)


def with_selection(result: Analysis, excluded: tuple[str, ...]) -> Analysis:
    """The user's check selection applied: left-out checks become skips (fabcheck.checks.evidence)."""
    if not excluded:
        return result
    return Analysis(result.source, result.kind, result.facts, deselect(result.findings, excluded))


def _non_finite_path(value: Any, path: str) -> str | None:
    """The JSON path of the first float that is nan or infinite, else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite_path(item, f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]")
        if found is not None:
            return found
    return None
