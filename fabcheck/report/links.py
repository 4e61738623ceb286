"""The link-coherence table: one row per cabled link (host NIC, switch port), the settings each end
holds, and the verdict of the `link.*` findings about that link.

Input: the run's findings whose check starts with `link.`, plus optional per-link detail (both ends and
each setting at both ends). A finding belongs to a link when its subject names one of the link's ends
as `host:nic` or `switch:port`. A link with detail but no finding is `error` (nothing judged it, never
a pass); a finding that names no detailed link gets a row of its own, keyed by its subject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from fabcheck.checks.model import Finding, Status, verdict
from fabcheck.report.model import LinkDetail, LinkEnds, LinkSetting, Run, by_severity

LINK_CHECK_PREFIX = "link."


@dataclass(frozen=True)
class LinkRow:
    link: str  # what the row is about, as a reader names it
    host_end: str  # "gpu01:mlx5_0", "" when only the finding's subject is known
    switch_end: str
    settings: tuple[LinkSetting, ...]
    findings: tuple[Finding, ...]

    @property
    def verdict(self) -> Status:
        return verdict(self.findings)

    def setting(self, name: str) -> LinkSetting | None:
        return next((s for s in self.settings if s.name == name), None)


def link_findings(run: Run) -> list[Finding]:
    """Every `link.*` finding once, even when a runner filed it under both ends' nodes."""
    return list(dict.fromkeys(f for _, f in run.findings() if f.check.startswith(LINK_CHECK_PREFIX)))


def link_rows(findings: Iterable[Finding], details: Iterable[LinkDetail] = ()) -> list[LinkRow]:
    """Rows failures first; links of one verdict keep the order of the details, then of the findings.
    A finding given twice (filed under both ends' nodes) counts once."""
    findings = list(dict.fromkeys(findings))
    rows: list[LinkRow] = []
    claimed: set[int] = set()
    # Findings that name their ends as fields are looked up by end; only the others (an analyzer's, an
    # older snapshot's) are matched by the ends their subject names, so a fleet's table stays linear.
    by_end: dict[str, list[int]] = {}
    by_subject: list[int] = []
    for index, finding in enumerate(findings):
        where = finding.where
        if where is not None and where.peer:
            for end in (f"{where.node}:{where.part}", where.peer):
                by_end.setdefault(end, []).append(index)
        else:
            by_subject.append(index)
    for detail in details:
        ends = detail.ends
        named = {*by_end.get(ends.host_end, ()), *by_end.get(ends.switch_end, ())}
        named |= {i for i in by_subject if _names(findings[i].subject, ends.host_end, ends.switch_end)}
        mine = sorted(named)
        claimed.update(mine)
        rows.append(
            LinkRow(
                f"{ends.host_end} - {ends.switch_end}",
                ends.host_end,
                ends.switch_end,
                detail.settings,
                tuple(findings[i] for i in mine),
            )
        )
    loose: dict[str, list[Finding]] = {}
    for index, finding in enumerate(findings):
        if index not in claimed:
            loose.setdefault(finding.subject, []).append(finding)
    rows += [LinkRow(subject, "", "", (), tuple(items)) for subject, items in loose.items()]
    return by_severity(rows, lambda row: row.verdict)


def setting_names(rows: Iterable[LinkRow]) -> list[str]:
    """The settings shown as columns, in the order the details first name them."""
    return list(dict.fromkeys(s.name for row in rows for s in row.settings))


def details_of(findings: Iterable[Finding]) -> tuple[LinkDetail, ...]:
    """One link record per cable the `link.*` findings name by their Where (host NIC and switch port),
    in the order the findings first name it."""
    ends: dict[tuple[str, str, str, str], None] = {}
    for finding in findings:
        where = finding.where
        if not finding.check.startswith(LINK_CHECK_PREFIX) or where is None or ":" not in where.peer:
            continue
        switch, port = where.peer.split(":", 1)
        ends.setdefault((where.node, where.part, switch, port), None)
    return tuple(LinkDetail(LinkEnds(*key)) for key in ends)


def _names(subject: str, *ends: str) -> bool:
    return any(re.search(rf"(?<![\w.:-]){re.escape(end)}(?![\w.:-])", subject) for end in ends)


@dataclass(frozen=True)
class LinkTable:
    """The table as plain cells, the same columns for every reporter."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    verdicts: tuple[Status, ...]  # one per row


def link_table(rows: Iterable[LinkRow]) -> LinkTable:
    rows = list(rows)
    names = setting_names(rows)
    header = ["host NIC", "switch port"]
    for name in names:
        header += [f"{name} (NIC)", f"{name} (port)"]
    header += ["verdict", "checks not passed"]
    body = []
    for row in rows:
        cells = [row.host_end or row.link, row.switch_end or "-"]
        for name in names:
            setting = row.setting(name)
            cells += [setting.host_value, setting.switch_value] if setting else ["-", "-"]
        cells += [row.verdict.value, _not_passed(row)]
        body.append(tuple(cells))
    return LinkTable(tuple(header), tuple(body), tuple(row.verdict for row in rows))


def _not_passed(row: LinkRow) -> str:
    if not row.findings:
        return "no link check judged this link"
    bad = [
        f for f in by_severity(row.findings, lambda f: f.status) if f.status in (Status.FAIL, Status.ERROR)
    ]
    return "; ".join(_said(f) for f in bad) or "-"


def _said(finding: Finding) -> str:
    text = f"{finding.check}: expected {finding.expected}, actual {finding.actual}"
    return f"{text} ({finding.hint})" if finding.hint else text
