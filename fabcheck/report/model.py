"""The result model every reporter reads, and the one exit-code policy of `validate` and `analyze`.

A run is a list of subjects: the nodes (hosts, switches, subnet managers) or input files that were
judged, each with its findings. A finding's own `subject` names the part of the node it is about (a
NIC, a port, a GPU). Reporters only read this model; runners only build it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from fabcheck.checks.model import Finding, Status, verdict
from fabcheck.parsers.topo import TopoMatrix

T = TypeVar("T")


class NodeKind(str, Enum):
    HOST = "host"
    SWITCH = "switch"
    SM = "sm"  # an InfiniBand subnet manager
    IB_SWITCH = "ib_switch"  # an InfiniBand switch, read in-band by the ib stage
    FILE = "file"  # a recorded output judged offline (`fabcheck analyze`)


# Exit codes, the same for `fabcheck validate` and `fabcheck analyze` (and documented in both --help).
EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_CHECKED = 3

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_PASS}  everything checked passes
  {EXIT_FAIL}  a check failed
  {EXIT_BAD_INPUT}  usage error, invalid intent or inventory, or an input that cannot be read (this
     outranks 1 and 3: what was asked was not all judged)
  {EXIT_NOT_CHECKED}  nothing failed, but something could not be checked (an error is never a pass)
"""

# Failures first, then what could not be checked, then what was not applicable, then passes.
SEVERITY: dict[Status, int] = {Status.FAIL: 0, Status.ERROR: 1, Status.SKIP: 2, Status.PASS: 3}


def by_severity(items: Iterable[T], status_of: Callable[[T], Status]) -> list[T]:
    """Stable sort, failures first: items of one status keep their order (inventory, check order)."""
    return sorted(items, key=lambda item: SEVERITY[status_of(item)])


@dataclass(frozen=True)
class Affinity:
    """What the GPU-NIC picture of a host is drawn from: its parsed `nvidia-smi topo -m` and the rails
    of its desired state (GPU index -> NIC; empty: each GPU is judged against its nearest NICs)."""

    topo: TopoMatrix
    rails: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subject:
    """One judged node or input file.

    `label` says what it is beside its name (the analyze KIND of a file: `topo`); `facts` are extra
    JSON fields of its report line (analyze facts); `input_error` marks an input that could not be read
    at all (exit 2); `affinity` feeds the HTML GPU-NIC picture.
    """

    name: str
    kind: NodeKind
    findings: tuple[Finding, ...]
    label: str = ""
    facts: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    input_error: bool = False
    affinity: Affinity | None = None

    @property
    def verdict(self) -> Status:
        return verdict(self.findings)

    def count(self, status: Status) -> int:
        return sum(f.status is status for f in self.findings)


@dataclass(frozen=True)
class LinkEnds:
    """Both ends of one cabled link: a host NIC and the switch port it is cabled to."""

    host: str
    nic: str
    switch: str
    port: str

    @property
    def host_end(self) -> str:
        return f"{self.host}:{self.nic}"

    @property
    def switch_end(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class LinkSetting:
    """One setting as each end of a link holds it (`pfc priority`: `3` on the NIC, `3` on the port)."""

    name: str
    host_value: str
    switch_value: str


@dataclass(frozen=True)
class LinkDetail:
    """Optional per-link detail for the link-coherence table; the verdict still comes from findings."""

    ends: LinkEnds
    settings: tuple[LinkSetting, ...] = ()


class Figure(Protocol):
    """A picture a gate stage adds to the HTML report (a pair-bandwidth heatmap, a busbw curve)."""

    @property
    def title(self) -> str: ...  # read-only: the figures are frozen dataclasses

    def svg(self) -> str:
        """Self-contained SVG markup: no script, nothing fetched."""
        ...


@dataclass(frozen=True)
class Run:
    """One `validate` or `analyze` run: what was judged, in the order it was asked for."""

    command: str  # "validate" or "analyze": the report's title
    subjects: tuple[Subject, ...]
    links: tuple[LinkDetail, ...] = ()
    notes: tuple[str, ...] = ()  # said beside the results, e.g. which nodes this version does not check
    started_at: str = ""  # ISO 8601 local time, seconds (JUnit `timestamp`); "" when not recorded
    elapsed_s: float = 0.0  # wall time of the whole run
    figures: tuple[Figure, ...] = ()  # drawn by the HTML reporter, in this order

    @property
    def verdict(self) -> Status:
        return verdict(f for s in self.subjects for f in s.findings)

    def findings(self) -> Iterable[tuple[Subject, Finding]]:
        return ((s, f) for s in self.subjects for f in s.findings)

    def count(self, status: Status) -> int:
        return sum(s.count(status) for s in self.subjects)

    def subjects_with(self, status: Status) -> int:
        return sum(s.verdict is status for s in self.subjects)

    @property
    def noun(self) -> str:
        """What the subjects are, for summaries: `host(s)`, `file(s)`, or `node(s)` when mixed."""
        kinds = {s.kind for s in self.subjects}
        return _NOUNS[kinds.pop()] if len(kinds) == 1 else "node(s)"


_NOUNS = {
    NodeKind.HOST: "host(s)",
    NodeKind.SWITCH: "switch(es)",
    NodeKind.SM: "subnet manager(s)",
    NodeKind.IB_SWITCH: "IB switch(es)",
    NodeKind.FILE: "file(s)",
}


def exit_code(run: Run) -> int:
    """The policy in EXIT_CODES_HELP: unreadable input 2, else any fail 1, else any error 3, else 0.

    A run with nothing judged at all is 3: an empty gate is never a pass.
    """
    if any(s.input_error for s in run.subjects):
        return EXIT_BAD_INPUT
    return {Status.PASS: EXIT_PASS, Status.FAIL: EXIT_FAIL}.get(run.verdict, EXIT_NOT_CHECKED)


def subjects_by_severity(subjects: Sequence[Subject]) -> list[Subject]:
    return by_severity(subjects, lambda s: s.verdict)
