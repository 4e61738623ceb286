"""`fabcheck analyze KIND FILE...`: judge outputs a user pasted, against the intent or the default one."""

from __future__ import annotations

import argparse
import io
import math
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from types import MappingProxyType
from typing import TextIO

from fabcheck.analyze import (
    ANALYZERS,
    PAIR_KINDS,
    SCOPE_FABRIC,
    SCOPES,
    Analysis,
    Options,
    analyze,
    analyze_counters,
    with_selection,
)
from fabcheck.checks.model import errored
from fabcheck.errors import ParseError, UsageError
from fabcheck.intent.fabric import fabric_of
from fabcheck.intent.loader import Inventory, load_inventory
from fabcheck.intent.model import FabricIntent, default_intent
from fabcheck.intent.nvlink import NvlinkDomain, NvlinkPlan
from fabcheck.report.model import EXIT_CODES_HELP, NodeKind, Run, Subject
from fabcheck.report.outputs import add_output_arguments, check_report_paths, emit

READ_CHUNK_CHARS = 1 << 20
BINARY_SNIFF_CHARS = 4096
BINARY_REPLACED_SHARE = 0.1  # undecodable bytes in the first 4 KiB beyond which it is not a text log


# -- the report of an analyze run: one subject per file ----------------------------------------

INPUT_CHECK = "input.readable"


def analysis_subject(analysis: Analysis) -> Subject:
    """One analyzed file as a subject of the report."""
    return Subject(
        analysis.source,
        NodeKind.FILE,
        tuple(analysis.findings),
        label=analysis.kind,
        facts=MappingProxyType({**analysis.facts, "not_judged": analysis.not_judged}),
    )


def unreadable_subject(source: str, kind: str, expected: str, message: str, line: int | None) -> Subject:
    """A file that could not be read as `kind` at all: one error finding, and exit 2 for the run."""
    where = source if line is None else f"{source}:{line}"
    finding = errored(
        INPUT_CHECK,
        where,
        expected,
        message,
        f"give `fabcheck analyze {kind}` a file that holds {expected}",
    )
    facts = {"parse_error": True, "line": line, "error": message}
    return Subject(
        source, NodeKind.FILE, (finding,), label=kind, facts=MappingProxyType(facts), input_error=True
    )


def analyze_run(subjects: Iterable[Subject]) -> Run:
    return Run("analyze", tuple(subjects))


class BinaryInputError(ValueError):
    """The input is not text (an archive, a core dump, random bytes)."""


# What each KIND reads: the tool whose output the files must hold (help text and error messages).
KIND_EXPECTS: dict[str, str] = {
    "topo": "the output of `nvidia-smi topo -m`",
    "nccl-log": "an NCCL log of a job run with NCCL_DEBUG=INFO (lines with 'NCCL INFO')",
    "perftest": "perftest output, client or server (ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat)",
    "nccl-tests": "the output of an nccl-tests binary (all_reduce_perf, all_gather_perf, ...)",
    "counters": "two `ethtool -S IF` captures, BEFORE and AFTER a load (one or more interfaces each)",
    "mlxfwmanager": "the output of `mlxfwmanager --query` (or mlxup's query) of one host",
}

EPILOG = (
    "kinds:\n"
    + "".join(f"  {kind:<12} {KIND_EXPECTS[kind]}\n" for kind in sorted(KIND_EXPECTS))
    + f"""
Pasted output is fine: shell prompts, scheduler prefixes, timestamps, ANSI colour.

{EXIT_CODES_HELP}
examples:
  fabcheck analyze topo topo.txt -i inventory/example --host gpu01
  fabcheck analyze perftest ib_write_bw.txt --line-rate-gbps 400 --json
  fabcheck analyze topo gpu*/topo.txt --junit-xml topo.xml --html topo.html
  fabcheck analyze counters before.txt after.txt -i inventory/example
  fabcheck analyze nccl-tests sendrecv.txt --nvlink-domain rack1=gpu01,gpu02 --nvlink-domain rack2=gpu03,gpu04
  fabcheck analyze nccl-tests all_reduce-1node.txt --scope node
"""
)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "analyze",
        help="judge recorded tool output against the fabric intent",
        description="Judge recorded tool output against the fabric intent (or the default one).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "kind", choices=sorted([*ANALYZERS, *PAIR_KINDS]), metavar="KIND", help="what the files hold (below)"
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="files to analyze ('-' reads standard input)"
    )
    parser.add_argument(
        "-i", "--inventory", help="inventory with the fabric intent (default: canonical recipe)"
    )
    parser.add_argument("--host", help="inventory host whose intent (rails) applies")
    parser.add_argument(
        "--line-rate-gbps",
        type=positive_gbps,
        metavar="GBPS",
        help="perftest: NIC line rate in Gb/s, above 0 (default: the intent's link.speed_gbps)",
    )
    parser.add_argument(
        "--skip-check",
        action="append",
        default=[],
        metavar="CHECK",
        help="leave a check out (its name, e.g. nccl.link_layer, or a prefix ending in '.'); repeatable. "
        "Otherwise a check that applies but finds no evidence makes the verdict error ('not judged', exit 3)",
    )
    parser.add_argument(
        "--nvlink-domain",
        action="append",
        default=[],
        type=nvlink_domain,
        metavar="NAME=HOST,HOST",
        help="these hosts form one NVLink domain (a rack's trays); repeatable. A host in none is a domain "
        "of its own",
    )
    parser.add_argument(
        "--scope",
        choices=SCOPES,
        default=SCOPE_FABRIC,
        help="nccl-tests: 'fabric' (default) judges a run as proof of the network, and a run whose ranks "
        "are all in one host or NVLink domain is not judged (exit 3); 'node' judges such a run against "
        "the NVLink floor, as an NVLink proof",
    )
    add_output_arguments(parser, json_help="one JSON object per file, one per line")
    parser.set_defaults(func=run)


def nvlink_domain(text: str) -> NvlinkDomain:
    """argparse type: 'NAME=HOST,HOST' -> one declared NVLink domain (its IMEX addresses: the names)."""
    name, sep, members = text.partition("=")
    hosts = tuple(h.strip() for h in members.split(",") if h.strip())
    if not sep or not name.strip() or not hosts:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=HOST,HOST (a domain name and its hosts), e.g. rack1=gpu01,gpu02"
        )
    if len(set(hosts)) != len(hosts):
        twice = sorted({h for h in hosts if hosts.count(h) > 1})
        raise argparse.ArgumentTypeError(f"{text!r}: {', '.join(twice)} named twice in one domain")
    return NvlinkDomain(name.strip(), hosts, hosts)


def nvlink_plan(declared: Iterable[NvlinkDomain]) -> NvlinkPlan:
    """The domains given, refusing a domain name or a host given twice (one host, one NVLink domain)."""
    domains: list[NvlinkDomain] = []
    owner: dict[str, str] = {}
    for domain in declared:
        if any(d.name == domain.name for d in domains):
            raise UsageError(f"NVLink domain {domain.name!r} given twice; expected each domain once")
        for host in domain.hosts:
            if host in owner:
                raise UsageError(
                    f"host {host!r} is in NVLink domains {owner[host]!r} and {domain.name!r}; expected one "
                    "domain per host"
                )
            owner[host] = domain.name
        domains.append(domain)
    return NvlinkPlan(tuple(domains))


def positive_gbps(text: str) -> float:
    """argparse type: a finite line rate above zero (0 or less would make every floor pass)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected Gb/s above 0, e.g. 400"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0; expected Gb/s above 0, e.g. 400")
    return value


def run(args: argparse.Namespace) -> int:
    check_report_paths(args)
    inventory = load_inventory(args.inventory) if args.inventory else None
    intent = _intent(args, inventory)
    options = Options(
        line_rate_gbps=args.line_rate_gbps,
        excluded_checks=tuple(args.skip_check),
        nvlink_domains=nvlink_plan([*_inventory_domains(args.kind, inventory), *args.nvlink_domain]),
        scope=args.scope,
    )
    expected = f"expected {KIND_EXPECTS.get(args.kind, args.kind)}"
    if args.kind in PAIR_KINDS:
        return emit(analyze_run([_counters(args, intent, expected)]), args)
    subjects: list[Subject] = []  # in file order, unreadable files included
    for name in args.files:
        try:
            subjects.append(analysis_subject(analyze(args.kind, _lines(name), name, intent, options)))
        except ParseError as err:
            # str(err) starts with the file name again: the message alone keeps the path printed once.
            why = f"cannot read it as {args.kind}: {err.message}; {expected}"
            subjects.append(_unreadable(args, name, why, line=err.line))
        except BinaryInputError:
            subjects.append(_unreadable(args, name, f"binary data, not text; {expected}"))
        except IsADirectoryError:
            subjects.append(_unreadable(args, name, f"is a directory; {expected} in a file"))
        except NotRegularFileError as err:
            subjects.append(_unreadable(args, name, _not_regular(err, expected)))
        except OSError as err:
            subjects.append(_unreadable(args, name, f"cannot open: {err.strerror or err}; {expected}"))
    return emit(analyze_run(subjects), args)


def _counters(args: argparse.Namespace, intent: FabricIntent, expected: str) -> Subject:
    """BEFORE and AFTER judged together: one subject, or the first capture that cannot be read."""
    if len(args.files) != 2:
        raise UsageError(f"counters takes two files, BEFORE and AFTER; got {len(args.files)}")
    texts = []
    for name in args.files:
        try:
            texts.append((name, "".join(_lines(name))))
        except BinaryInputError:
            return _unreadable(args, name, f"binary data, not text; {expected}")
        except IsADirectoryError:
            return _unreadable(args, name, f"is a directory; {expected} in a file")
        except NotRegularFileError as err:
            return _unreadable(args, name, _not_regular(err, expected))
        except OSError as err:
            return _unreadable(args, name, f"cannot open: {err.strerror or err}; {expected}")
    try:
        result = analyze_counters(texts[0], texts[1], intent, args.host)
        return analysis_subject(with_selection(result, tuple(args.skip_check)))
    except ParseError as err:
        return _unreadable(args, err.source, f"cannot read it as ethtool -S: {err.message}", line=err.line)


def _intent(args: argparse.Namespace, inventory: Inventory | None) -> FabricIntent:
    if inventory is None:
        if args.host:
            raise UsageError("--host needs an inventory; expected -i INVENTORY with that host")
        return default_intent()
    return inventory.host(args.host).intent if args.host else inventory.intent


# The analyzers that place ranks in NVLink domains (pair classes, busbw floors).
DOMAIN_KINDS = ("nccl-tests", "nccl-log")


def _inventory_domains(kind: str, inventory: Inventory | None) -> tuple[NvlinkDomain, ...]:
    """The -i inventory's NVLink domains (child groups of nvlink_domains), for the kinds that use them;
    an inventory whose domains are wrong (a host in two) is refused as `intent check` refuses it."""
    if inventory is None or kind not in DOMAIN_KINDS:
        return ()
    return fabric_of(inventory).nvlink.domains


def _lines(name: str) -> Iterator[str]:
    if name == "-":
        raw = getattr(sys.stdin, "buffer", None)
        # Undecodable bytes become U+FFFD, as for files, whatever the locale's stdin error mode is.
        if raw is None:  # a replaced sys.stdin (tests, embedding) is already text
            yield from _pieces(sys.stdin, name)
            return
        stream = io.TextIOWrapper(raw, "utf-8", errors="replace", newline="")
        try:
            yield from _pieces(stream, name)
        finally:
            stream.detach()  # closing the wrapper would close the process's stdin
        return
    with _open_regular(name) as handle:
        yield from _pieces(handle, name)


class NotRegularFileError(OSError):
    """A FIFO, socket or device named as an input file: reading it could block forever."""


_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device"}


def _open_regular(name: str) -> TextIO:
    """The file opened for reading, checked on the open descriptor (no race with a swapped path):
    O_NONBLOCK lets a FIFO without a writer open at once, so it is refused instead of waited on."""
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(name)  # reported in file order with the others
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise NotRegularFileError(0, kind, name)
        os.set_blocking(fd, True)
        return open(fd, encoding="utf-8", errors="replace", newline="", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _not_regular(err: NotRegularFileError, expected: str) -> str:
    return f"is {err.strerror}, not a regular file; {expected} in a file (for a pipe, give '-' as FILE)"


def _pieces(handle: TextIO, name: str) -> Iterator[str]:
    """Logs are streamed in 1 MiB pieces so a multi-GB NCCL log never sits in memory."""
    first = True
    while piece := handle.read(READ_CHUNK_CHARS):
        if first and _looks_binary(piece[:BINARY_SNIFF_CHARS]):
            raise BinaryInputError(name)
        first = False
        yield piece


def _looks_binary(head: str) -> bool:
    return "\0" in head or head.count("\ufffd") > BINARY_REPLACED_SHARE * len(head)


def _unreadable(args: argparse.Namespace, name: str, message: str, line: int | None = None) -> Subject:
    """Report an input that could not be read: one line on stderr now, a subject in file order."""
    where = name if line is None else f"{name}:{line}"
    print(f"fabcheck: {where}: {message}", file=sys.stderr)
    return unreadable_subject(name, args.kind, KIND_EXPECTS.get(args.kind, args.kind), message, line)
