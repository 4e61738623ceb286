"""`fabcheck validate --via slurm`: the collection script runs on every selected node as ONE `srun` step.

On a Slurm cluster the controller need not reach each node itself: slurmctld allocates the nodes,
srun starts one task per node through Slurm's own tree fan-out, and the step's time limit bounds it
there. fabcheck builds that one step (`--nodelist` of the inventory hosts' Slurm node names, an
inventory variable `slurm_node_name` defaulting to the inventory name, `--ntasks-per-node=1`) and judges
what comes back centrally with the same parsers and checks as the other backends.

How each node's bundle comes back: srun's own I/O forwarding with `--label` (every stdout line
prefixed with its task id), not per-task `--output` files. `--output=...%N` files are written by
slurmstepd on each compute node, so the controller sees them only through a shared file system;
labelled stdout reaches srun on the controller on any cluster, and it arrives as each node prints, so a
node's bundle is judged as soon as its script says `complete` (streaming: only the bundles still
in flight are held as text). Each task first prints one header line with its Slurm node name
(SLURMD_NODENAME), so the task ids need no guess at Slurm's task placement.

A node Slurm cannot run on (down, drained, failing, not in the partition or the allocation) is an
error for that node naming Slurm's state and reason, read from `sinfo` before the step: it is left
out of the step, so one bad node never holds up the others. Inside an allocation (SLURM_JOB_ID set)
the step runs in it (`--overlap`, so it may share the allocation with the job's own steps).
"""

from __future__ import annotations

import math
import os
import re
import secrets
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabcheck.collect import ssh
from fabcheck.collect.host import COLLECT_SCRIPT, HostCollection
from fabcheck.collect.script import COMPLETE, LAUNCHER, MARK, split_sections
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.record import StepRecords
from fabcheck.errors import UsageError
from fabcheck.intent.loader import HostEntry

NODE_VAR = "slurm_node_name"  # inventory variable: the host's Slurm node name (default: its name)
# Slurm node names as slurm.conf's NodeName takes them; hostlist syntax ([],) is never one name.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
OPTION_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+@-]{0,127}")
# `--label` prefixes each line with the task id, right-aligned: " 3: text" (srun(1), --label).
NODE_COMMAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}|/[A-Za-z0-9._+/-]{1,1023}")
# Inventory host names a judging node is told (its record's host); any other host sends raw output.
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
LABELLED = re.compile(r"^\s*(\d+): ?(.*)$", re.S)
HEADER = "<<<fabcheck-slurm"
EVERY_SECTION = "*"  # a judging node's forward list that sends every raw section with its findings
JUDGED_SECTION = "fabcheck.judged"  # the one section a node that judged itself prints
STEP_JUDGE_SAYS = "fabcheck step-judge: "  # how a node that could not judge itself says why (stderr)
SINFO_FORMAT = "%N|%T|%P|%E"  # node, long state, partition (default one marked *), reason
CLIENT_TIMEOUT_S = 30.0  # one sinfo/scontrol call (Slurm's own MessageTimeout is 10 s)
START_GRACE_S = 30.0  # allocation and launch of the step, on top of the collection's own limit
AFTERWORD_WAIT_S = 5.0  # how long the afterword waits for srun's stderr once every bundle is in
TAIL_LINES = 20  # srun's stderr kept per task and for the step: enough for the reason, bounded
# States (sinfo %T, without its flag suffixes) in which slurmctld starts no new step on the node.
NOT_RUNNABLE = ("down", "drain", "fail", "future", "maint", "inval", "unknown", "power", "reboot", "no_resp")

# The task's wrapper. $1 = token, $2 = the node's fabcheck command, $3 = the controller's code
# fingerprint, $4 = the forward list; then NODE=PRIORITY=RECORD=HOST entries (RECORD: the index of the
# node's record template, - for none), `--`, the templates, `--` and the launcher's own words: LAUNCHER,
# host limit, script, tool limit, counter window. Names and records arrive as data, compared, never
# evaluated. A node with a template and the controller's fabcheck judges itself (`fabcheck step-judge`,
# fabcheck.gate.step_judge); one that cannot (exit 75: no such fabcheck, another build, a bad record)
# runs the raw collection, as does a node without a template, or whose fabcheck fails in any other way (an
# older fabcheck without step-judge, a venv whose interpreter the node lacks, a crash): it printed nothing.
# --export=NONE leaves PATH out of the task's environment: sh has a default but exports none, and
# `timeout` would then search only /bin:/usr/bin. The node's PATH is exported, as an ssh login has one.
_WRAPPER = r"""
PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}; export PATH
token=$1 fab=$2 fingerprint=$3 forward=$4
shift 4
prio= record=- host=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
    "$SLURMD_NODENAME="*)
        entry=${1#"$SLURMD_NODENAME="}
        prio=${entry%%=*} entry=${entry#*=}
        record=${entry%%=*} host=${entry#*=};;
    esac
    shift
done
shift
template= at=0
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    [ "$at" != "$record" ] || template=$1
    at=$((at + 1))
    shift
done
shift
printf '%s %s node %s>>>\n' '<<<fabcheck-slurm' "$token" "$SLURMD_NODENAME"
[ -n "$prio" ] || { echo "fabcheck: node $SLURMD_NODENAME has no priority in the step" >&2; exit 2; }
if [ -n "$template" ] && command -v "$fab" >/dev/null 2>&1; then
    "$fab" step-judge "$token" "$host" "$fingerprint" "$forward" "$template" "$2" "$4" "$5" </dev/null
    judged=$?
    case $judged in
    0|124|137|143) exit "$judged";;  # judged, or stopped by a time limit: no time for another round
    75) ;;
    *) echo "fabcheck step-judge: $fab failed on the node (exit $judged): sending the raw output" >&2;;
    esac
elif [ -n "$template" ]; then
    echo "fabcheck step-judge: no $fab on the node's PATH: sending the raw collection" >&2
fi
exec sh -c "$1" fabcheck-collect "$2" "$3" fabcheck-collect "$token" "$prio" "$4" "$5"
"""


@dataclass(frozen=True)
class SlurmOptions:
    """Where the step is allocated (passed through to srun) and which clients run it."""

    partition: str | None = None
    account: str | None = None
    reservation: str | None = None
    srun: str = "srun"
    sinfo: str = "sinfo"
    scontrol: str = "scontrol"
    node_fabcheck: str = "fabcheck"  # the command each node judges itself with (--node-fabcheck)

    def __post_init__(self) -> None:
        if not NODE_COMMAND.fullmatch(self.node_fabcheck):
            raise UsageError(
                f"--node-fabcheck {self.node_fabcheck!r}: expected a command name or an absolute path "
                "(letters, digits, /._+-)"
            )
        for option, value in (
            ("--partition", self.partition),
            ("--account", self.account),
            ("--reservation", self.reservation),
        ):
            if value is not None and not OPTION_VALUE.fullmatch(value):
                raise UsageError(f"{option} {value!r}: expected a Slurm name (letters, digits, ._:+@-)")


@dataclass(frozen=True)
class NodeState:
    """One node as sinfo shows it: its state and reason, the partitions it is in."""

    state: str
    reason: str
    partitions: tuple[str, ...]
    default_partition: str | None = None


def node_name(entry: HostEntry) -> str:
    """The host's Slurm node name: `slurm_node_name`, else the inventory name. UsageError if not one."""
    value = entry.variables.get(NODE_VAR, entry.name)
    if not isinstance(value, str) or not NODE_NAME.fullmatch(value):
        raise UsageError(
            f"host {entry.name}: {NODE_VAR} {value!r} is not a Slurm node name (letters, digits, ._-; "
            "one name, no hostlist brackets)"
        )
    return value


def parse_sinfo(text: str) -> dict[str, NodeState]:
    """Pure: `sinfo --noheader --Node --format=%N|%T|%P|%E` -> node -> its state. sinfo prints a node
    once per partition; the default partition is marked with a trailing '*'."""
    nodes: dict[str, NodeState] = {}
    for line in text.splitlines():
        fields = line.split("|", 3)
        if len(fields) != 4 or not fields[0].strip():
            continue
        name, state, partition, reason = (field.strip() for field in fields)
        default = partition[:-1] if partition.endswith("*") else None
        partition = partition.rstrip("*")
        known = nodes.get(name)
        partitions = (*known.partitions, partition) if known else (partition,)
        reason = "" if reason == "none" else reason
        nodes[name] = NodeState(
            state, reason, partitions, default or (known.default_partition if known else None)
        )
    return nodes


def default_partition_of(nodes: Mapping[str, NodeState]) -> str | None:
    return next((n.default_partition for n in nodes.values() if n.default_partition), None)


def why_not_runnable(
    name: str,
    state: NodeState | None,
    partition: str | None,
    default_partition: str | None,
    allocation: frozenset[str] | None,
    job_id: str | None,
) -> str | None:
    """Pure: why Slurm cannot run the step on this node (None: it can), in Slurm's own words."""
    if state is None:
        return f"Slurm does not know node {name} (not in sinfo; set {NODE_VAR} to its Slurm node name)"
    if allocation is not None:
        if name not in allocation:
            return f"node {name} is not in the allocation of job {job_id} (SLURM_JOB_NODELIST)"
    else:
        wanted = partition or default_partition
        if wanted is not None and wanted not in state.partitions:
            which = "partition" if partition else "default partition"
            return f"node {name} is not in the {which} {wanted} (it is in {', '.join(state.partitions)})"
    base = state.state.lower().rstrip("*~#!%$@^-")
    if state.state.endswith("*") or any(word in base for word in NOT_RUNNABLE):
        reason = f", reason: {state.reason}" if state.reason else ""
        return f"Slurm cannot run on node {name}: state {state.state}{reason} (sinfo)"
    return None


@dataclass(frozen=True)
class NodeJudging:
    """What lets each node judge itself (fabcheck.gate.step_judge): the plan's records as templates, the
    probes whose raw sections still come back, and the controller's code fingerprint."""

    records: StepRecords
    forward: str
    fingerprint: str


def step_argv(
    nodes: Sequence[str],
    priorities: Mapping[str, int],
    token: str,
    limits: TimeLimits,
    options: SlurmOptions,
    inside_allocation: bool,
    judging: NodeJudging | None = None,
    hosts: Mapping[str, str] | None = None,
) -> list[str]:
    """The one srun step: one task per node, labelled stdout, the controller's environment left out.
    `hosts`: node -> its inventory host, whose record (in `judging`) the node judges itself against."""
    minutes = max(1, math.ceil(limits.client_s / 60))
    where = (
        ["--overlap"]
        if inside_allocation
        else [
            *([f"--partition={options.partition}"] if options.partition else []),
            *([f"--account={options.account}"] if options.account else []),
            *([f"--reservation={options.reservation}"] if options.reservation else []),
            # The gate reports nodes it cannot have now: it never queues behind another job.
            f"--immediate={max(1, limits.ssh_connect_timeout)}",
        ]
    )
    records = judging.records if judging is not None else StepRecords((), {})
    entries = []
    for node in nodes:
        host = (hosts or {}).get(node, "")
        at = records.index.get(host) if HOST_NAME.fullmatch(host) else None
        entries.append(
            f"{node}={priorities[node]}={'-' if at is None else at}={host if at is not None else ''}"
        )
    return [
        options.srun,
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(nodes)}",
        *where,
        f"--time={minutes}",
        "--job-name=fabcheck-validate",
        "--label",
        "--no-kill",  # a node failing mid-step takes only its own bundle down
        "--kill-on-bad-exit=0",
        # As over ssh: the node's own environment, not the controller's (a venv PATH, locale, ...).
        "--export=NONE",
        "--input=none",
        "/bin/sh",
        "-c",
        _WRAPPER,
        "fabcheck-slurm",
        token,
        options.node_fabcheck,
        judging.fingerprint if judging is not None else "-",
        judging.forward if judging is not None else EVERY_SECTION,
        *entries,
        "--",
        *records.templates,
        "--",
        LAUNCHER,
        str(limits.host_s),
        COLLECT_SCRIPT,
        str(limits.tool_s),
        str(limits.counter_window_s),
    ]


class StepOutput:
    """Pure: srun's labelled stdout, line by line, into one bundle per node as each completes.

    Only tasks still printing are held as text; a completed bundle is handed to `done` at once."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.header = re.compile(rf"{re.escape(HEADER)} {token} node (\S+)>>>")
        self.complete_line = f"{MARK} {token} {COMPLETE}>>>"
        self.node_of: dict[int, str] = {}
        self.lines: dict[int, list[str]] = {}
        self.finished: set[int] = set()

    def feed(self, line: str) -> tuple[str, str] | None:
        """One line of srun's stdout; (node, its whole output) when this line completed a node."""
        # str.partition, not LABELLED: this runs for every line of every node (~1,800 a rail8 host).
        label, colon, text = line.partition(":")
        label = label.strip()
        if not colon or not label.isdigit():
            return None  # srun's own words on stdout carry no task: nothing of a bundle
        task = int(label)
        text = text[1:] if text.startswith(" ") else text
        text = text[:-1] if text.endswith("\n") else text
        lines = self.lines.get(task)
        if lines is not None:
            lines.append(text + "\n")
            if text == self.complete_line:
                self.finished.add(task)
                return self.node_of[task], "".join(self.lines.pop(task))
            return None
        if task in self.finished:
            return None
        if task not in self.node_of:
            header = self.header.fullmatch(text)
            if header is not None:
                self.node_of[task] = header.group(1)
                self.lines[task] = []
        return None

    def unfinished(self) -> dict[str, str]:
        """Node -> what it printed, for every task that started but never completed."""
        return {self.node_of[task]: "".join(lines) for task, lines in self.lines.items()}


def stderr_of_tasks(lines: Iterable[str]) -> tuple[dict[int, deque[str]], deque[str]]:
    """Pure: srun's stderr split into each task's own lines ("3: ...") and srun's ("srun: ...")."""
    tasks: dict[int, deque[str]] = {}
    step: deque[str] = deque(maxlen=TAIL_LINES)
    for line in lines:
        labelled = LABELLED.match(line.rstrip("\n"))
        if labelled is not None:
            tasks.setdefault(int(labelled.group(1)), deque(maxlen=TAIL_LINES)).append(labelled.group(2))
        elif line.strip():
            step.append(line.strip())
    return tasks, step


def srun_said_about(node: str, step: Iterable[str]) -> str:
    """srun's lines naming this node, else its last lines: the reason a user needs."""
    lines = list(step)
    own = [line for line in lines if re.search(rf"(^|\W){re.escape(node)}(\W|$)", line)]
    return ssh.ssh_said("\n".join(own or lines))


class SlurmStep:
    """A collect.backends.BatchCollector: `start` (the gate's reader, with every host at its plan's
    priority and the run's limits cut to the deadline), else the first call, starts the one srun step
    for every node; each call returns its node's bundle as soon as the node completed (or the step
    ended)."""

    def __init__(
        self,
        hosts: Sequence[HostEntry],
        priorities: Mapping[str, int],
        limits: TimeLimits,
        options: SlurmOptions | None = None,
        environ: Mapping[str, str] | None = None,
        judging: NodeJudging | None = None,
    ) -> None:
        self.options = options or SlurmOptions()
        self.judging = judging
        self.environ = dict(os.environ if environ is None else environ)
        self.limits = limits
        # Each host's lossless priority as the gate's plan holds it (GatePlan.host_priorities).
        self.priorities = {entry.name: priorities[entry.name] for entry in hosts}
        self.names = {entry.name: node_name(entry) for entry in hosts}
        self.job_id = self.environ.get("SLURM_JOB_ID") or None
        self._lock = threading.Lock()
        self._started = False
        self._ready: dict[str, threading.Event] = {name: threading.Event() for name in self.names}
        self._bundles: dict[str, HostCollection] = {}
        self.argv: list[str] = []
        # Nodes given a record, those that judged themselves, and why each other one sent raw output.
        self.judging_nodes: set[str] = set()
        self.judged_nodes: set[str] = set()
        self.raw_reasons: dict[str, str] = {}
        self._thread: threading.Thread | None = None

    def start(self, priorities: Mapping[str, int], limits: TimeLimits) -> None:
        """Start the step for these hosts (the gate's reader: the plan's priorities, the run's limits cut
        to its deadline); the calls then wait for each host's bundle."""
        with self._lock:
            if self._started:
                return
            self.priorities = {name: priorities[name] for name in self.names if name in priorities}
            self.names = {name: node for name, node in self.names.items() if name in self.priorities}
            self._ready = {name: ready for name, ready in self._ready.items() if name in self.names}
            self.limits = limits
        self._start()

    def _start(self) -> None:
        with self._lock:
            if not self._started:
                self._started = True
                self._thread = threading.Thread(target=self._run, name="fabcheck-srun", daemon=True)
                self._thread.start()

    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        self._start()
        ready = self._ready.get(target.name)
        if ready is None:
            return HostCollection(target.name, {}, False, "--via slurm: host not in the step", priority)
        ready.wait()
        with self._lock:
            return self._bundles.pop(target.name)  # handed over once: the stage keeps what it needs

    # -- the step ---------------------------------------------------------------------------------

    def _deliver(self, collection: HostCollection) -> None:
        with self._lock:
            if self._ready[collection.host].is_set():
                return
            self._bundles[collection.host] = collection
        self._ready[collection.host].set()

    def _error_all(self, hosts: Iterable[str], error: str, expired: str | None = None) -> None:
        for host in hosts:
            self._deliver(HostCollection(host, {}, False, error, self.priorities[host], expired))

    def _run(self) -> None:
        try:
            self._run_step()
        except _SlurmUnanswered as err:
            self._error_all(self.names, f"--via slurm: Slurm did not say which nodes can run the step: {err}")
        except Exception as err:  # every waiting host must hear why, never hang
            self._error_all(self.names, f"--via slurm: {type(err).__name__}: {err}"[:400])
        finally:
            self._error_all(self.names, "--via slurm: the step ended without this node's output")

    def _run_step(self) -> None:
        hosts_of: dict[str, list[str]] = {}
        for host, node in self.names.items():
            hosts_of.setdefault(node, []).append(host)
        runnable = self._runnable(hosts_of)
        if not runnable:
            return
        token = secrets.token_hex(8)
        priorities = {node: self.priorities[hosts_of[node][0]] for node in runnable}
        judged_hosts = {node: hosts_of[node][0] for node in runnable if len(hosts_of[node]) == 1}
        if self.judging is not None:
            index = self.judging.records.index
            self.judging_nodes = {node for node, host in judged_hosts.items() if host in index}
        self.argv = step_argv(
            runnable,
            priorities,
            token,
            self.limits,
            self.options,
            self.job_id is not None,
            self.judging,
            judged_hosts,
        )
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=self.environ,
                start_new_session=True,  # our signals reach srun alone, never the caller's terminal
            )
        except OSError as err:
            hosts = [h for node in runnable for h in hosts_of[node]]
            self._error_all(hosts, f"--via slurm: cannot run {self.options.srun}: {err.strerror or err}")
            return
        stderr_lines: list[str] = []
        reader = threading.Thread(target=_drain, args=(process.stderr, stderr_lines), daemon=True)
        reader.start()
        stopped = threading.Event()
        timer = threading.Timer(self.limits.client_s + START_GRACE_S, _stop, args=(process, stopped))
        timer.start()
        output = StepOutput(token)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                done = output.feed(line)
                if done is not None:
                    self._bundle(hosts_of, done[0], done[1], token, complete=True)
            rc = process.wait()
        finally:
            timer.cancel()
            reader.join(timeout=5)
        timed_out = stopped.is_set() or _expired(stderr_lines)
        tasks, step = stderr_of_tasks(stderr_lines)
        task_of = {node: task for task, node in output.node_of.items()}
        for node in sorted(self.judging_nodes - self.judged_nodes):
            why = [line for line in tasks.get(task_of.get(node, -1), ()) if line.startswith(STEP_JUDGE_SAYS)]
            self.raw_reasons[node] = why[-1].removeprefix(STEP_JUDGE_SAYS) if why else "no answer"
        for node, text in output.unfinished().items():
            said = ssh.ssh_said("\n".join(tasks.get(task_of[node], ())))
            self._bundle(hosts_of, node, text, token, complete=False, rc=rc, said=said, timed_out=timed_out)
        for node in runnable:
            if node in task_of:
                continue
            said = srun_said_about(node, step) or f"srun exit {rc}"
            expired = ssh.COMMAND if timed_out else None
            self._error_all(
                hosts_of[node], f"--via slurm: the step gave nothing of node {node}: {said}", expired
            )

    def _bundle(
        self,
        hosts_of: Mapping[str, list[str]],
        node: str,
        text: str,
        token: str,
        *,
        complete: bool,
        rc: int | None = None,
        said: str = "",
        timed_out: bool = False,
    ) -> None:
        parsed = split_sections(text, token)
        for host in hosts_of.get(node, ()):
            priority = self.priorities[host]
            if complete and parsed.complete:
                if JUDGED_SECTION in parsed.sections:
                    self.judged_nodes.add(node)
                self._deliver(HostCollection(host, parsed.sections, True, None, priority))
            elif timed_out:
                error = f"--via slurm: command timeout: the step's time limit ended node {node}'s collection"
                self._deliver(HostCollection(host, parsed.sections, False, error, priority, ssh.COMMAND))
            else:
                error = f"--via slurm: the collection on node {node} ended early (srun exit {rc})" + (
                    f": {said}" if said else ""
                )
                self._deliver(HostCollection(host, parsed.sections, False, error, priority))

    def _runnable(self, hosts_of: Mapping[str, list[str]]) -> list[str]:
        """The nodes the step may run on; every other node's hosts get Slurm's reason as their error."""
        states = self._sinfo()
        allocation = self._allocation() if self.job_id else None
        default = default_partition_of(states)
        runnable = []
        for node, hosts in hosts_of.items():
            why = why_not_runnable(
                node, states.get(node), self.options.partition, default, allocation, self.job_id
            )
            if why is None:
                runnable.append(node)
            else:
                self._error_all(hosts, f"--via slurm: {why}")
        return runnable

    def _client(self, argv: list[str]) -> str:
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                env=self.environ,
                timeout=CLIENT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise _SlurmUnanswered(
                f"`{' '.join(argv[:3])} ...` did not answer in {CLIENT_TIMEOUT_S:g} s"
            ) from None
        except OSError as err:
            raise _SlurmUnanswered(f"cannot run {argv[0]}: {err.strerror or err}") from None
        if done.returncode != 0:
            said = ssh.ssh_said(done.stderr or done.stdout) or f"exit {done.returncode}"
            raise _SlurmUnanswered(f"{argv[0]} failed: {said}")
        return done.stdout

    def _sinfo(self) -> dict[str, NodeState]:
        return parse_sinfo(
            self._client([self.options.sinfo, "--noheader", "--Node", f"--format={SINFO_FORMAT}"])
        )

    def _allocation(self) -> frozenset[str]:
        nodelist = self.environ.get("SLURM_JOB_NODELIST") or self.environ.get("SLURM_NODELIST") or ""
        if not nodelist:
            return frozenset()
        shown = self._client([self.options.scontrol, "show", "hostnames", nodelist])
        return frozenset(line.strip() for line in shown.splitlines() if line.strip())

    def afterword(self) -> list[str]:
        """After the step: how many nodes judged themselves, and why the others sent raw output (the
        controller judged those: the findings are the same, the controller's CPU is not)."""
        if self.judging is None:
            return []
        if self._thread is not None:  # the reasons are read from srun's stderr once the step ended
            self._thread.join(timeout=AFTERWORD_WAIT_S)
            if self._thread.is_alive():
                for node in self.judging_nodes - self.judged_nodes:
                    self.raw_reasons.setdefault(node, "the step had not ended: its words unknown")
        judged, given = len(self.judged_nodes), len(self.judging_nodes)
        lines = [f"--via slurm: {judged} of {given} nodes judged themselves"]
        untold = sorted(set(self.names) - set(self.judging.records.index))
        if untold:
            more = f" and {len(untold) - 5} more" if len(untold) > 5 else ""
            lines.append(
                f"--via slurm: {len(untold)} host(s) got no record in the step (the records' templates "
                f"would not fit srun's command line) and sent raw output: {', '.join(untold[:5])}{more}"
            )
        by_reason: dict[str, list[str]] = {}
        for node, reason in self.raw_reasons.items():
            by_reason.setdefault(reason, []).append(node)
        for reason, nodes in sorted(by_reason.items(), key=lambda item: -len(item[1])):
            named = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
            lines.append(f"--via slurm: raw output, judged here, from {named}: {reason}")
        return lines


class _SlurmUnanswered(Exception):
    """A Slurm client could not tell the node states: every node's error says why."""


def _drain(stream: Iterable[str] | None, into: list[str]) -> None:
    tail: deque[str] = deque(maxlen=50 * TAIL_LINES)  # srun's stderr is small; bounded anyway
    for line in stream or ():
        tail.append(line)
    into.extend(tail)


def _stop(process: subprocess.Popen[str], stopped: threading.Event) -> None:
    """The step outlived its limit: srun cancels the step on SIGTERM (and its tasks with it)."""
    if process.poll() is None:
        stopped.set()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _expired(stderr_lines: Sequence[str]) -> bool:
    return any("DUE TO TIME LIMIT" in line for line in stderr_lines)
