"""The `fabcheck` command line: sub-commands register themselves; errors become exit codes."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import os
import resource
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from fabcheck import __version__
from fabcheck.errors import FabcheckError

DESCRIPTION = """\
Configure and prove lossless GPU fabrics (RoCEv2, InfiniBand) from one fabric intent: the
variable fabric_intent of your Ansible inventory. `ansible-playbook site.yml` configures the
hosts from it; fabcheck checks the intent, judges tool outputs against it and gates the hosts."""

EPILOG = """\
exit codes:
  0  everything checked passes
  1  a check failed; for `lab`: the lab is unhealthy
  2  usage error, invalid intent or inventory, or an input that cannot be read
  3  nothing failed, but something could not be checked (an error is never a pass)

examples:
  fabcheck intent check -i inventory/example
  fabcheck analyze nccl-log job.log -i inventory/example
  fabcheck validate -i inventory/lab
  fabcheck COMMAND --help     (the options of one command)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabcheck",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fabcheck {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Imported here so that `fabcheck --version` stays fast and one broken area cannot hide the others.
    from fabcheck.cli import analyze as analyze_cli
    from fabcheck.cli import baseline as baseline_cli
    from fabcheck.cli import bench as bench_cli
    from fabcheck.cli import intent as intent_cli
    from fabcheck.cli import node_check as node_check_cli
    from fabcheck.cli import plan as plan_cli
    from fabcheck.cli import render as render_cli
    from fabcheck.cli import report as report_cli
    from fabcheck.cli import topology as topology_cli
    from fabcheck.cli import validate as validate_cli

    intent_cli.register(sub)
    analyze_cli.register(sub)
    validate_cli.register(sub)
    render_cli.register(sub)
    register_installed_commands(sub, taken=set(sub.choices))
    baseline_cli.register(sub)
    report_cli.register(sub)
    bench_cli.register(sub)
    plan_cli.register(sub)
    topology_cli.register(sub)
    node_check_cli.register(sub)
    return parser


# Commands other distributions add: `lab` is the lab's (lab/, distribution fabcheck-lab), which the product
# never imports. Each entry point names a `register(subparsers)` function, as the product's commands have.
COMMANDS_GROUP = "fabcheck.commands"
STEP_JUDGE = "step-judge"  # internal: a node of `validate --via slurm` judging itself
LAB_MISSING = (
    "fabcheck lab needs the lab, a distribution of its own (fabcheck-lab): "
    "pip install ./lab from fabcheck's repository, or run scripts/setup there"
)


def register_installed_commands(subparsers: Any, taken: set[str]) -> None:
    """Every command of the fabcheck.commands entry points; `lab` names how to install it when absent.

    A command that cannot load becomes one that says why, so it cannot hide the others."""
    found = {ep.name: ep for ep in importlib.metadata.entry_points(group=COMMANDS_GROUP)}
    for name in sorted(found.keys() - taken):
        try:
            register = found[name].load()
        except Exception as err:  # a broken plugin of any kind: named when its command runs
            _unavailable(subparsers, name, f"fabcheck {name} could not load ({found[name].value}): {err}")
            continue
        register(subparsers)
    if "lab" not in found:
        _unavailable(subparsers, "lab", LAB_MISSING)


def _unavailable(subparsers: Any, name: str, why: str) -> None:
    command = subparsers.add_parser(name, help=f"(not installed) {why}", add_help=False)
    command.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    command.set_defaults(func=_refuse(why))


def _refuse(why: str) -> Callable[[argparse.Namespace], int]:
    def refuse(_args: argparse.Namespace) -> int:
        raise FabcheckError(why)

    return refuse


def no_core_dumps() -> None:
    """RLIMIT_CORE 0, soft and hard, for this process and every process it starts (ssh, ansible,
    the switch sessions): a core file of ours would hold decrypted vault values and switch passwords."""
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError):  # a platform without the limit: nothing to lower
        return


# A gate run keeps every finding and record until its report (~340 findings a rail8 host): at Python's
# default threshold (700 new containers) the collector walks that growing heap again and again, 22% of
# a 1,024-host merge's CPU (6.9 -> 5.3 s, bench/scale.py's snapshot replay). Cycles are still collected.
RUN_GC_THRESHOLD = (100_000, 20, 20)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Python's cyclic collector at RUN_GC_THRESHOLD for one command, as it was after it (main runs in
    process under the tests and the benchmarks)."""
    before = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def main(argv: Sequence[str] | None = None) -> int:
    no_core_dumps()
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == [STEP_JUDGE]:
        # What `validate --via slurm` runs on every node of its step: straight to it, without building
        # every command's parser (a node pays that import once per run, times the nodes).
        from fabcheck.gate import step_judge

        with fewer_collections():
            return step_judge.main(words[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with fewer_collections():
            return int(args.func(args))
    except FabcheckError as err:
        print(f"fabcheck: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as grep and friends do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit-time flush quiet
        return 141


if __name__ == "__main__":
    sys.exit(main())
