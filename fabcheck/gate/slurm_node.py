"""`fabcheck node-check --slurm`: drain this node when its host checks fail, resume it once they pass,
and only ever undo what fabcheck did.

Slurm sources (SchedMD/slurm@284c3b95f08a2dc2478499837b03355e1b9c5c75):
- `scontrol show node NAME` prints `State=<BASE>[+FLAG...]` (src/common/slurm_protocol_defs.c
  node_states / node_state_flags) and, when there is one, a `Reason=<text> [<user>@<time>]` line
  (src/api/node_info.c slurm_sprint_node_table); a reason with newlines continues on indented lines.
- Slurm's accounting keeps a node event's reason in a `tinytext` column (255 bytes,
  src/plugins/accounting_storage/mysql/accounting_storage_mysql.c event_table_fields): fabcheck's
  reason is cut to REASON_BYTES so `sacctmgr show event` keeps all of it, and is one line.
- HealthCheckProgram runs as root with SLURMD_NODENAME set, and must do its own
  `scontrol update NodeName=... State=drain Reason=...` (doc/man/man5/slurm.conf.5).

The rules: a failing node is drained with the first failure as its reason (`fabcheck: <check> <part>:
<actual>`); a passing node is resumed only when it is drained with a reason fabcheck wrote (starting
REASON_PREFIX); a node drained for another reason, down, failing, in maintenance, rebooting, powered
down or not responding is never touched; a node that could not be judged is left as it is.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from fabcheck.checks.model import Finding, Status
from fabcheck.errors import FabcheckError

REASON_PREFIX = "fabcheck:"
REASON_BYTES = 255
# One scontrol call. node-check --slurm makes two (show, update) after a collection of at most 41 s with
# the defaults: 41 + 2 x 8 = 57 s, with a margin for start-up and judging (under a second), stays under
# the 60 s after which slurmd kills a HealthCheckProgram.
SCONTROL_TIMEOUT_S = 8.0
# Base states (node_states) in which fabcheck may drain or resume: the node is up and Slurm schedules it.
RUNNING_BASES = frozenset({"IDLE", "ALLOCATED", "MIXED"})
# Flags (node_state_flags) that mean someone or something else owns the node's state.
HANDS_OFF_FLAGS = frozenset(
    {
        "FAIL",
        "MAINTENANCE",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "POWER_DOWN",
        "POWER_UP",
        "POWERED_DOWN",
        "POWERING_UP",
        "POWERING_DOWN",
        "INVALID_REG",
        "NOT_RESPONDING",
    }
)


class SlurmError(FabcheckError):
    """scontrol could not be run or answered something that is not a node record."""


@dataclass(frozen=True)
class SlurmNode:
    """What `scontrol show node` says of one node: its base state, flags and reason (without Slurm's
    trailing `[user@time]`)."""

    name: str
    base: str
    flags: frozenset[str]
    reason: str

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.flags

    @property
    def fabcheck_reason(self) -> bool:
        return self.reason.startswith(REASON_PREFIX)

    @property
    def state(self) -> str:
        return "+".join([self.base, *sorted(self.flags)])


def parse_show_node(text: str, node: str) -> SlurmNode:
    """Pure: `scontrol show node NODE` output -> SlurmNode; SlurmError when it is not that node's record."""
    lines = text.splitlines()
    words = [word for line in lines for word in line.split()]
    if f"NodeName={node}" not in words:
        raise SlurmError(f"`scontrol show node {node}` printed no NodeName={node}: {text.strip()[:200]!r}")
    state = next((word.split("=", 1)[1] for word in words if word.startswith("State=")), None)
    if not state:
        raise SlurmError(f"`scontrol show node {node}` printed no State=: {text.strip()[:200]!r}")
    base, *flags = state.split("+")
    return SlurmNode(node, base.upper(), frozenset(flag.upper() for flag in flags), _reason(lines))


def _reason(lines: Sequence[str]) -> str:
    """The first line of Reason= without its ` [user@time]` suffix (node_info.c adds it to line one)."""
    for line in lines:
        text = line.strip()
        if text.startswith("Reason="):
            reason = text.removeprefix("Reason=")
            if reason.endswith("]") and " [" in reason:
                reason = reason[: reason.rindex(" [")]
            return reason
    return ""


def drain_reason(findings: Sequence[Finding]) -> str | None:
    """Pure: the reason a person reads in `sinfo -R`: the first failing finding as `fabcheck: <check>
    <part>: <actual>`, `(+N more)` when there are others, one line, at most REASON_BYTES bytes. None
    when nothing failed."""
    failing = [f for f in findings if f.status is Status.FAIL]
    if not failing:
        return None
    first = failing[0]
    part = first.where.part if first.where is not None and first.where.part else first.subject
    more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
    text = " ".join(f"{REASON_PREFIX} {first.check} {part}: {first.actual}".split())
    return _cut(text, REASON_BYTES - len(more.encode())) + more


def _cut(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "..."


@dataclass(frozen=True)
class SlurmAction:
    """What node-check does to its node: "drain", "resume" or "none", and why, in words."""

    kind: str
    why: str
    reason: str = ""

    def argv(self, scontrol: str, node: str) -> list[str]:
        """The scontrol command line of a drain or resume (argv words: the reason is one word)."""
        if self.kind == "drain":
            return [scontrol, "update", f"NodeName={node}", "State=DRAIN", f"Reason={self.reason}"]
        if self.kind == "resume":
            return [scontrol, "update", f"NodeName={node}", "State=RESUME"]
        raise ValueError(f"no scontrol command for action {self.kind!r}")


def decide(node: SlurmNode, verdict: Status, reason: str | None) -> SlurmAction:
    """Pure: the rules of the module docstring."""
    if node.base not in RUNNING_BASES:
        return SlurmAction("none", f"{node.name} is {node.state}: fabcheck leaves that state alone")
    owned = sorted(node.flags & HANDS_OFF_FLAGS)
    if owned:
        return SlurmAction("none", f"{node.name} is {node.state} ({', '.join(owned)}): left alone")
    if node.drained and not node.fabcheck_reason:
        return SlurmAction("none", f"{node.name} is drained for another reason ({node.reason!r}): left alone")
    if verdict is Status.FAIL and reason is not None:
        if node.drained and node.reason == reason:
            return SlurmAction("none", f"{node.name} is already drained by fabcheck for this reason")
        return SlurmAction("drain", f"draining {node.name}: {reason}", reason)
    if verdict is Status.PASS:
        if node.drained:
            return SlurmAction(
                "resume", f"resuming {node.name}: every host check passes ({node.reason!r} cleared)"
            )
        return SlurmAction("none", f"{node.name} passes and is not drained by fabcheck")
    return SlurmAction("none", f"{node.name} could not be judged: its Slurm state is left as it is")


def scontrol_run(argv: list[str]) -> str:
    """One scontrol call, bounded; its stdout. SlurmError naming the command when it cannot run or fails."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SCONTROL_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise SlurmError(
            f"--slurm needs Slurm's {argv[0]} on this node's PATH and found none: run node-check without "
            "--slurm, or install the Slurm client the node's slurmd came with"
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{' '.join(argv[:4])}` gave no answer in {SCONTROL_TIMEOUT_S:g} s") from None
    except OSError as err:
        raise SlurmError(f"cannot run {argv[0]}: {err.strerror or err}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[:300]
        raise SlurmError(f"`{' '.join(argv[:4])}` failed (exit {done.returncode}): {said}")
    return done.stdout


def act_on_node(
    node: str, verdict: Status, findings: Sequence[Finding], scontrol: str = "scontrol"
) -> SlurmAction:
    """Read the node's Slurm state, decide, and run the drain or resume; the action taken."""
    shown = parse_show_node(scontrol_run([scontrol, "show", "node", node]), node)
    action = decide(shown, verdict, drain_reason(findings))
    if action.kind != "none":
        scontrol_run(action.argv(scontrol, node))
    return action
