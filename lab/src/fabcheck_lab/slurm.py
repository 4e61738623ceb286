"""A real Slurm cluster of the lab's host nodes: Debian's munged, slurmctld and slurmd, started for real.

The controller (this machine, the lab's network namespace) runs munged and slurmctld; every host node
runs its own munged and slurmd inside the node's namespaces (entered with nsenter, as the node's root
sees the machine's /usr through its overlay). Every file is under the lab's run dir, ``RUN/slurm``:
on the controller in the real /dev/shm, in each node at the same path in the node's private /dev/shm,
so one slurm.conf serves all of them. The munge key is the lab's own, never /etc/munge/munge.key.

What the lab needs of Slurm (measured with Debian 12's 22.05.8):
  - lo-mode nodes share one network namespace, so each slurmd gets a port of its own (``Port=``);
  - the nodes show the machine's CPUs, so ``SlurmdParameters=config_overrides`` and ``CPUs=`` (one per
    GPU of the node's profile) let ``srun --ntasks-per-node=<GPUs>`` place a task per GPU;
  - no cgroups: ``proctrack/linuxproc``, ``task/none``; no CAP_SYS_RESOURCE: ``PropagateResourceLimits=NONE``;
  - the namespace needs an IPv4 address besides 127.0.0.1 (Slurm binds through getaddrinfo with
    AI_ADDRCONFIG, which counts 127.0.0.1 as none): ``.ci/lab-wrapper.sh`` adds 127.0.0.2 to lo.

Clients find the cluster through ``SLURM_CONF`` (``SlurmCluster.env``), as they would find
/etc/slurm/slurm.conf on a real cluster. The daemons listen on every address of the namespace they run
in, on SLURMCTLD_PORT and SLURMD_BASE_PORT + node index, and talk only to 127.x addresses.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fabcheck_lab import preflight, procs
from fabcheck_lab.mockhost.profiles import gpus_for
from fabcheck_lab.state import (
    LabError,
    LabPaths,
    LabState,
    NodeRecord,
    lab_lock,
    load_pids,
    load_state,
    log_tail,
)

SLURMCTLD_PORT = 16817  # away from Slurm's defaults (6817/6818), so a site's own Slurm is never met
SLURMD_BASE_PORT = 16900  # slurmd of host node i listens on SLURMD_BASE_PORT + i
CLUSTER_NAME = "fabcheck-lab"
PARTITION = "lab"
MUNGE_KEY_BYTES = 1024
MESSAGE_TIMEOUT_S = 60  # slurm.conf MessageTimeout of the lab (Slurm's default 10)
UP_TIMEOUT_S = 60.0  # every slurmd registered and idle; seconds on a loaded 2-core machine
CLIENT_TIMEOUT_S = 15.0  # one sinfo call; Slurm's own MessageTimeout is 10 s
# A node's network namespace is the controller's (lo). `--root`: the node's own / (its private /dev/shm,
# its /sys/class and its tools in /usr/local/bin), so a task sees what an ssh login to the node sees;
# without it slurmd kept the controller's / inside the node's mount namespace.
NSENTER = ("nsenter", "--mount", "--uts", "--pid", "--root", "--wd")
# Where each program is: daemons in sbin (not on a non-root PATH), clients on PATH.
DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
CLIENTS = ("srun", "sinfo")
PACKAGES = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "srun": "slurm-client",
            "sinfo": "slurm-client"}  # fmt: skip


@dataclass(frozen=True)
class SlurmFiles:
    """Every Slurm file of a lab; the same paths hold on the controller and (node-private) in each node."""

    root: Path

    @classmethod
    def of(cls, paths: LabPaths) -> SlurmFiles:
        return cls(paths.run_dir / "slurm")

    def seen_from(self, root: Path) -> SlurmFiles:
        """The same files reached through another root, e.g. a node's /proc/PID/root from the controller."""
        return SlurmFiles(root / self.root.relative_to("/"))

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def key(self) -> Path:
        return self.root / "munge.key"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munged.socket"

    @property
    def munge_pid(self) -> Path:
        return self.root / "munged.pid"

    @property
    def munge_log(self) -> Path:
        return self.root / "munged.log"

    @property
    def munge_seed(self) -> Path:
        return self.root / "munged.seed"

    @property
    def ctld_pid(self) -> Path:
        return self.root / "slurmctld.pid"

    @property
    def ctld_log(self) -> Path:
        return self.root / "slurmctld.log"

    @property
    def ctld_state(self) -> Path:
        return self.root / "ctld"

    @property
    def slurmd_pid(self) -> Path:
        return self.root / "slurmd.pid"

    @property
    def slurmd_log(self) -> Path:
        return self.root / "slurmd.log"

    @property
    def slurmd_spool(self) -> Path:
        return self.root / "spool"


@dataclass(frozen=True)
class SlurmCluster:
    conf: Path
    nodes: dict[str, str]  # node -> Slurm state as sinfo reports it ("idle", "down*", ...)
    seconds: float = 0.0
    already_up: bool = False

    @property
    def ready(self) -> bool:
        return bool(self.nodes) and all(state == "idle" for state in self.nodes.values())

    def env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a Slurm client (srun, sinfo, fabcheck's SrunLauncher) needs for this cluster."""
        return {**(os.environ if environ is None else environ), "SLURM_CONF": str(self.conf)}


def require_slurm() -> None:
    """One clear error naming every missing program and the Debian package that brings it."""
    missing = [name for name, path in DAEMONS.items() if not Path(path).exists()]
    missing += [name for name in CLIENTS if shutil.which(name) is None]
    missing += ["nsenter"] if shutil.which("nsenter") is None else []
    if missing:
        packages = sorted({PACKAGES.get(name, "util-linux") for name in missing})
        raise LabError(
            f"Slurm is not installed: missing {', '.join(missing)}; install {' '.join(packages)} "
            "(scripts/setup does, as root)"
        )


def node_cpus(node: NodeRecord) -> int:
    """What slurmd reports for a node: one CPU per GPU of its profile, so a job places a task per GPU."""
    return max(1, len(gpus_for(node.profile, node.index)))


def slurm_conf(
    files: SlurmFiles, controller: str, hosts: Sequence[NodeRecord], *, topology: bool = False
) -> str:
    """The cluster's slurm.conf: the controller on 127.0.0.1, each host node at its lab address and port;
    with `topology`, the tree plugin, which reads topology.conf beside slurm.conf (slurm.conf.5,
    TopologyPlugin)."""
    lines = [
        "# Written by fabcheck lab slurm for this lab only; `fabcheck lab slurm down` removes it.",
        f"ClusterName={CLUSTER_NAME}",
        f"SlurmctldHost={controller}(127.0.0.1)",
        f"SlurmctldPort={SLURMCTLD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={files.munge_socket}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={files.ctld_state}",
        f"SlurmctldPidFile={files.ctld_pid}",
        f"SlurmctldLogFile={files.ctld_log}",
        f"SlurmdSpoolDir={files.slurmd_spool}",
        f"SlurmdPidFile={files.slurmd_pid}",
        f"SlurmdLogFile={files.slurmd_log}",
        "SlurmdParameters=config_overrides",  # the CPUs below, not the machine's 2 that nodes see
        "ProctrackType=proctrack/linuxproc",  # no cgroup hierarchy of our own in a lab node
        "TaskPlugin=task/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "PropagateResourceLimits=NONE",  # raising a limit needs CAP_SYS_RESOURCE, which CI lacks
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "ReturnToService=2",  # a node that was DOWN and registers again is back in service
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MailProg=/bin/true",
        "KillWait=5",
        "InactiveLimit=0",
        # Every slurmd and slurmstepd of the lab shares the machine's cores with the step's tasks: at
        # 1,024 nodes on 2 cores Slurm's 10 s default lost step RPCs (slurmctld resent them).
        f"MessageTimeout={MESSAGE_TIMEOUT_S}",
    ]
    if topology:
        lines.append("TopologyPlugin=topology/tree")
    for node in hosts:
        lines.append(
            f"NodeName={node.name} NodeAddr={node.address} NodeHostname={node.name} "
            f"Port={SLURMD_BASE_PORT + node.index} CPUs={node_cpus(node)} State=UNKNOWN"
        )
    names = ",".join(node.name for node in hosts)
    lines.append(f"PartitionName={PARTITION} Nodes={names} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def controller_name(hosts: Sequence[NodeRecord]) -> str:
    """slurmctld runs only where SlurmctldHost names the machine's own (short) host name."""
    name = socket.gethostname().split(".")[0]
    if not name or any(node.name == name for node in hosts):
        raise LabError(
            f"this machine's host name {name!r} is also a lab node's: slurmctld could not tell them"
        )
    return name


# ---- up / down / status ---------------------------------------------------------------------------------


def up(paths: LabPaths, timeout_s: float = UP_TIMEOUT_S, topology: str | None = None) -> SlurmCluster:
    """Start the cluster over every host node of the running lab; return once each node is idle.

    Idempotent: a cluster already up with every node idle is left alone. Anything else of an earlier
    cluster is stopped and removed first. `topology`: a topology.conf text (`fabcheck topology
    --format slurm-tree`) for the tree plugin; the cluster is then always started afresh, as a
    TopologyPlugin change needs (slurmctld reads the plugin only at start).
    """
    began = time.monotonic()
    preflight.require_root()
    require_slurm()
    files = SlurmFiles.of(paths)
    with lab_lock(paths):
        state = _running_lab(paths)
        hosts = state.host_nodes()
        current = _cluster_status(files)
        same_nodes = current is not None and set(current.nodes) == {n.name for n in hosts}
        if current is not None and current.ready and same_nodes and topology is None:
            return SlurmCluster(files.conf, current.nodes, time.monotonic() - began, already_up=True)
        _stop(paths, files)
        try:
            _start(paths, files, hosts, topology)
            nodes = _wait_idle(paths, files, hosts, began + timeout_s)
        except BaseException:
            _stop(paths, files)
            raise
    return SlurmCluster(files.conf, nodes, time.monotonic() - began)


def down(paths: LabPaths) -> int:
    """Stop every Slurm daemon of the lab (controller and nodes) and remove its files; how many stopped."""
    files = SlurmFiles.of(paths)
    with lab_lock(paths):
        return _stop(paths, files)


def status(paths: LabPaths) -> SlurmCluster | None:
    """The cluster's nodes as slurmctld sees them, or None when the lab has no Slurm cluster."""
    return _cluster_status(SlurmFiles.of(paths))


def _running_lab(paths: LabPaths) -> LabState:
    state = load_state(paths)
    if state is None or not state.complete:
        raise LabError("no lab is up; start one with `fabcheck lab up` before `fabcheck lab slurm up`")
    if not state.host_nodes():
        raise LabError("the lab has no host nodes for slurmd")
    return state


def _node_pid(paths: LabPaths, node: str) -> int:
    """PID 1 of the node's namespaces (the child of its unshare), as this machine numbers it."""
    pids = load_pids(paths)
    ref = None if pids is None else pids.nodes.get(node)
    inner = [] if ref is None or not procs.is_running(ref.pid, ref.start) else procs.children(ref.pid)
    if not inner:
        raise LabError(f"lab node {node} is not running; `fabcheck lab status` tells which nodes answer")
    return inner[0]


def _node_root(pid: int) -> Path:
    """The node's / as the controller reaches it (root may cross into another mount namespace this way)."""
    return Path(f"/proc/{pid}/root")


def _write_common(there: SlurmFiles, conf: str, key: bytes, topology: str | None = None) -> None:
    """The files every daemon reads (config, munge key) and the daemons' state dirs."""
    # munged wants its socket's directory searchable by all (clients of any user); the rest stays private.
    # The lab's run dir (0700: it holds the lab's keys) only needs search for that: 0711, still unlistable.
    there.root.mkdir(mode=0o755, parents=True, exist_ok=True)
    there.root.chmod(0o755)
    run_dir = there.root.parent
    run_dir.chmod(run_dir.stat().st_mode & 0o7777 | 0o111)
    for directory in (there.ctld_state, there.slurmd_spool):
        directory.mkdir(mode=0o700, exist_ok=True)
    there.conf.write_text(conf)
    if topology is not None:
        (there.root / "topology.conf").write_text(topology)
    fd = os.open(there.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # munged refuses a readable key
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)


def _munged(files: SlurmFiles) -> list[str]:
    return [
        DAEMONS["munged"],
        f"--socket={files.munge_socket}",
        f"--key-file={files.key}",
        f"--pid-file={files.munge_pid}",
        f"--log-file={files.munge_log}",
        f"--seed-file={files.munge_seed}",
    ]


def _daemon(argv: Sequence[str], where: str) -> None:
    """Start a daemon that forks into the background; its first process must exit 0."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise LabError(f"{where}: `{' '.join(argv)}` did not return within {CLIENT_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
        raise LabError(f"{where}: {Path(argv[0]).name} did not start: {detail}")


def _start(
    paths: LabPaths, files: SlurmFiles, hosts: Sequence[NodeRecord], topology: str | None = None
) -> None:
    conf = slurm_conf(files, controller_name(hosts), hosts, topology=topology is not None)
    key = os.urandom(MUNGE_KEY_BYTES)
    _write_common(files, conf, key, topology)
    _daemon(_munged(files), "controller")
    _daemon([DAEMONS["slurmctld"], "-f", str(files.conf)], "controller")
    for node in hosts:
        pid = _node_pid(paths, node.name)
        _write_common(files.seen_from(_node_root(pid)), conf, key, topology)
        enter = [*NSENTER, f"--target={pid}", "--"]
        _daemon([*enter, *_munged(files)], node.name)
        _daemon([*enter, DAEMONS["slurmd"], "-f", str(files.conf), "-N", node.name], node.name)


def _sinfo(files: SlurmFiles) -> dict[str, str] | None:
    """node -> state from slurmctld, None when it does not answer."""
    argv = ["sinfo", "--noheader", "--Node", "--format=%N %T"]
    env = {**os.environ, "SLURM_CONF": str(files.conf)}
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    pairs = (line.split() for line in done.stdout.splitlines())
    return {fields[0]: fields[1] for fields in pairs if len(fields) == 2}


def _cluster_status(files: SlurmFiles) -> SlurmCluster | None:
    if not files.conf.is_file():
        return None
    nodes = _sinfo(files) if shutil.which("sinfo") else None
    return SlurmCluster(files.conf, nodes or {})


def _wait_idle(
    paths: LabPaths, files: SlurmFiles, hosts: Sequence[NodeRecord], deadline: float
) -> dict[str, str]:
    wanted = {node.name for node in hosts}
    nodes: dict[str, str] = {}
    while True:
        if not _controller_alive(files):
            raise LabError(f"slurmctld stopped: {log_tail(files.ctld_log)}")
        nodes = _sinfo(files) or {}
        if set(nodes) >= wanted and all(nodes[name] == "idle" for name in wanted):
            return {name: nodes[name] for name in sorted(wanted)}
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    waiting = [node for node in hosts if nodes.get(node.name) != "idle"]
    logs = "; ".join(
        f"{node.name} is {nodes.get(node.name, 'unknown to slurmctld')}: "
        f"{log_tail(files.seen_from(_node_root(_node_pid(paths, node.name))).slurmd_log)}"
        for node in waiting
    )
    raise LabError(f"Slurm nodes not idle in time: {logs}; slurmctld: {log_tail(files.ctld_log)}")


def _controller_alive(files: SlurmFiles) -> bool:
    try:
        pid = int(files.ctld_pid.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return True  # slurmctld writes its pid file once it runs: not yet is no failure
    return procs.is_running(pid)


def _stop(paths: LabPaths, files: SlurmFiles) -> int:
    """Stop every process naming this lab's Slurm files (munged, slurmctld, each node's munged and slurmd)
    and remove the files, on the controller and in each running node; return how many processes stopped.

    Node daemons show in this machine's /proc too: a child PID namespace is visible from its parent.
    """
    ours = procs.pids_mentioning(str(files.root))
    procs.terminate(ours, grace=5.0)
    roots = [Path("/")]
    pids = load_pids(paths)
    for ref in [] if pids is None else pids.nodes.values():
        inner = procs.children(ref.pid) if procs.is_running(ref.pid, ref.start) else []
        roots += [_node_root(inner[0])] if inner else []
    for root in roots:
        shutil.rmtree(files.seen_from(root).root, ignore_errors=True)
    return len(ours)
