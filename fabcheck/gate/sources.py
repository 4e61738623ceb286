"""Where the gate reads its nodes from: the command-line flags and the collector they choose.

Hosts: the native ssh round trip (default), a pytest-testinfra backend (`--backend`, `--hosts URL,...`),
one Ansible play (`--via ansible`), one Slurm step (`--via slurm`, `--partition`, `--account`,
`--reservation`), or a snapshot (`--from-snapshot DIR`, which replays switches too).
`--save-snapshot DIR` records whatever was read. Exactly one source per run; the choice is checked
before anything connects.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fabcheck.collect.backends import Collector
from fabcheck.collect.backends import ansible as via_ansible
from fabcheck.collect.backends import slurm as via_slurm
from fabcheck.collect.backends import testinfra as backends
from fabcheck.collect.ssh import ConnectionVarError, SshTarget, TimeLimits
from fabcheck.collect.switch import Connect
from fabcheck.errors import UsageError
from fabcheck.gate import node_check, snapshot
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.plan import GatePlan
from fabcheck.gate.stages import Reads
from fabcheck.intent.fabric import Fabric
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.switch.connect import SwitchLogin

VIA = ("ssh", "ansible", "slurm")
SLURM_OPTIONS = ("partition", "account", "reservation")


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where hosts are read from (one round trip per host in every case)")
    group.add_argument(
        "--backend",
        choices=backends.BACKENDS,
        default=backends.NATIVE,
        help="native: fabcheck's own OpenSSH round trip (default); the others are pytest-testinfra "
        "backends, each host's URL built from its inventory connection variables",
    )
    group.add_argument(
        "--hosts",
        type=_urls,
        metavar="URL,...",
        help="testinfra URLs for some or all GPU hosts, as testinfra users write them "
        "(ssh://root@gpu01:22, paramiko://gpu02, ansible://gpu03?ansible_inventory=inv, local://, "
        "docker://name); a URL names its host by inventory name, ansible_host or ansible_host:port",
    )
    group.add_argument(
        "--via",
        choices=VIA,
        default="ssh",
        help="ansible: run the collection on every host through one Ansible play (ansible-runner, "
        "with your inventory, ansible.cfg, forks and ssh settings); slurm: as ONE srun step, a task per "
        f"node (Slurm node name: inventory variable {via_slurm.NODE_VAR}, default the host's name; "
        "inside an allocation, SLURM_JOB_ID set, in it); ssh: one connection per host (default)",
    )
    for option in SLURM_OPTIONS:
        group.add_argument(
            f"--{option}",
            metavar="NAME",
            help=f"--via slurm: srun --{option}=NAME for the step's allocation (not inside an allocation)",
        )
    group.add_argument(
        "--node-fabcheck",
        metavar="COMMAND",
        default=via_slurm.SlurmOptions.node_fabcheck,
        help="--via slurm: the fabcheck each node judges itself with, a name on the node's PATH or an "
        "absolute path (default: fabcheck, as the fabcheck_node role links it); a node without it, or "
        "with another build, sends its raw output and the controller judges it",
    )
    group.add_argument(
        "--save-snapshot",
        type=Path,
        metavar="DIR",
        help="record every raw output with the probe that produced it into DIR",
    )
    group.add_argument(
        "--from-snapshot",
        type=Path,
        metavar="DIR",
        help="judge the outputs recorded in DIR again, offline (no connection to any node)",
    )


def _urls(text: str) -> tuple[str, ...]:
    try:
        return backends.parse_urls(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


@dataclass
class Source:
    """What run_gate reads hosts and switches through, and what to do with the result afterwards."""

    collector: Collector | None = None
    connect: Connect | None = None
    login_of: Callable[[HostEntry, Fabric], SwitchLogin] | None = None
    # Where run_gate keeps the stages' reads (a Recording), or serves them from (a snapshot's Replay).
    tape: snapshot.Recording | None = None
    save_to: Path | None = None
    notes: list[str] = field(default_factory=list)

    def reads(self, on_host_done: Callable[[HostResult], None] = lambda _result: None) -> Reads:
        """How run_gate reaches the hosts and switches through this source."""
        return Reads(self.collector, self.connect, self.login_of, on_host_done)

    def finish(self) -> None:
        """After the run: --save-snapshot writes what it read."""
        if self.tape is not None and self.save_to is not None:
            self.tape.save(self.save_to)

    def afterword(self) -> list[str]:
        """What the source says after the run (--via slurm: the nodes that judged themselves)."""
        return self.collector.afterword() if isinstance(self.collector, via_slurm.SlurmStep) else []


def choose_source(
    args: argparse.Namespace, inventory: Inventory, plan: GatePlan, limits: TimeLimits
) -> Source:
    """The source the flags name, for the nodes of the plan (a batch backend reads each host at the
    priority the plan holds for it). UsageError when they contradict each other."""
    replaying = args.from_snapshot is not None
    testinfra = args.backend != backends.NATIVE or args.hosts
    if replaying and (testinfra or args.via != "ssh" or args.save_snapshot):
        raise UsageError(
            "--from-snapshot reads no node: leave out --backend, --hosts, --via, --save-snapshot"
        )
    if args.via in ("ansible", "slurm") and testinfra:
        raise UsageError(f"--via {args.via} reaches hosts itself: leave out --backend and --hosts")
    given = [f"--{option}" for option in SLURM_OPTIONS if getattr(args, option, None)]
    if (
        getattr(args, "node_fabcheck", via_slurm.SlurmOptions.node_fabcheck)
        != via_slurm.SlurmOptions.node_fabcheck
    ):
        given.append("--node-fabcheck")
    if given and args.via != "slurm":
        raise UsageError(f"{', '.join(given)} allocate a Slurm step: only with --via slurm")
    if replaying:
        # The snapshot's manifest is read now; each node's file when the reader replays it.
        return Source(login_of=snapshot.replay_login, tape=snapshot.replay(args.from_snapshot))
    source = Source(collector=_live_collector(args, inventory, plan, limits), save_to=args.save_snapshot)
    # Raw reads are kept only for a run that uses them (--save-snapshot writes them, --extra-checks
    # shares them): otherwise each node's raw output is dropped once judged, so memory stays per node.
    if args.save_snapshot is not None or getattr(args, "extra_checks", None) is not None:
        source.tape = snapshot.Recording()
    return source


def _live_collector(
    args: argparse.Namespace, inventory: Inventory, plan: GatePlan, limits: TimeLimits
) -> Collector | None:
    hosts = plan.hosts
    if args.via == "ansible":  # the play runs when the gate's reader starts it (a BatchCollector)
        return via_ansible.AnsiblePlay(inventory.source)
    if args.via == "slurm":
        return _slurm_step(args, plan, limits)
    if args.backend == backends.NATIVE and not args.hosts:
        return None
    urls = backends.assign_urls(args.hosts or (), reachable_targets(hosts))
    return backends.TestinfraCollector(args.backend, urls, inventory.source)


def _slurm_step(args: argparse.Namespace, plan: GatePlan, limits: TimeLimits) -> Collector:
    """One srun step for every host, each node judging itself against the plan's record (where it can);
    the gate's reader starts it (a BatchCollector) with the limits cut to the run's deadline."""
    options = via_slurm.SlurmOptions(
        partition=getattr(args, "partition", None),
        account=getattr(args, "account", None),
        reservation=getattr(args, "reservation", None),
        node_fabcheck=getattr(args, "node_fabcheck", via_slurm.SlurmOptions.node_fabcheck),
    )
    inside = os.environ.get("SLURM_JOB_ID")
    given = [f"--{option}" for option in SLURM_OPTIONS if getattr(args, option, None)]
    if inside and given:
        raise UsageError(
            f"inside allocation {inside} (SLURM_JOB_ID) the step runs in it: leave out {', '.join(given)}"
        )
    # --metrics, --html (the GPU-NIC picture) and --extra-checks read the host evidence, and a snapshot
    # keeps the raw reads to judge again: every raw section comes back with the findings.
    read_later = any(
        getattr(args, flag, None) is not None for flag in ("metrics", "html", "extra_checks", "save_snapshot")
    )
    judging = node_check.node_judging(plan, every_section=read_later)
    return via_slurm.SlurmStep(plan.hosts, plan.host_priorities(), limits, options, judging=judging)


def reachable_targets(hosts: Sequence[HostEntry]) -> list[SshTarget]:
    """The ssh targets of the hosts whose connection variables fabcheck can use (the others are
    reported by the host stage itself)."""
    targets = []
    for entry in hosts:
        try:
            targets.append(SshTarget.from_host_vars(entry.name, entry.variables))
        except ConnectionVarError:
            continue
    return targets
