"""Mutation fuzzer for every parser and offline analyzer, seeded by the recorded corpus.

Each input is one corpus sample of the target's kind with 1 to 3 mutations: truncation, character
flips, duplicated/deleted/swapped lines, long digit runs, NUL bytes, odd unicode (non-ASCII digits,
'²', zero-width and line-separator characters), very long lines, numbers swapped for nan/inf/huge
values, '\\r' and tabs. Input ``i`` of a target depends only on (seed, target, i), so any input can
be made again from its number. For every input the target must return a result or raise ParseError;
an analyzer's JSON object (and every parser's record) must survive ``json.dumps(allow_nan=False)``
and a round trip. Reported per target: inputs, inputs per second, the slowest input with its time,
and every other exception, each saved under ``tests/data/fuzz-regressions/<target>/``.

    .venv/bin/python bench/fuzz.py --inputs 1000000 --seed 1 [--parser perftest] [--workers 2]

Exit status: 0 clean, 1 when an input crashed, gave invalid JSON or took longer than --slow-s.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import hashlib
import json
import multiprocessing
import random
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from fabcheck.analyze import analyze  # noqa: E402
from fabcheck.errors import ParseError  # noqa: E402
from fabcheck.intent.model import FabricIntent, default_intent  # noqa: E402
from fabcheck.parsers.ibstat import parse_ibstat, parse_ibstatus  # noqa: E402
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo  # noqa: E402
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos_all  # noqa: E402
from fabcheck.parsers.nccl_log import parse_nccl_log  # noqa: E402
from fabcheck.parsers.nccl_tests import parse_nccl_tests  # noqa: E402
from fabcheck.parsers.perftest import parse_perftest  # noqa: E402
from fabcheck.parsers.rdma_link import parse_rdma_link  # noqa: E402
from fabcheck.parsers.show_gids import parse_show_gids  # noqa: E402
from fabcheck.parsers.topo import parse_topo  # noqa: E402

CORPUS = REPO / "tests" / "data" / "corpus"
REGRESSIONS = REPO / "tests" / "data" / "fuzz-regressions"
MAX_WORKERS = 2  # the CI-class machine has 2 cores shared with other work
_BATCH = 2000  # inputs per worker task: small enough to spread work, big enough to amortise start-up

_intent: FabricIntent | None = None


def _default_intent() -> FabricIntent:
    global _intent
    if _intent is None:
        _intent = default_intent()
    return _intent


def _chunks(text: str, rng: random.Random) -> list[str]:
    """The analyzers read pieces; cutting at random places checks that results do not depend on it."""
    if rng.random() < 0.75:
        return [text]
    # Small pieces cost one parser call each; 13 characters already cut every line several times.
    size = rng.choice((13, 256, 4096))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _analyzer(kind: str) -> Callable[[str, random.Random], Any]:
    def run(text: str, rng: random.Random) -> Any:
        return analyze(kind, _chunks(text, rng), "<fuzz>", _default_intent()).to_json()

    return run


def _parser(parse: Callable[[str, str], Any]) -> Callable[[str, random.Random], Any]:
    def run(text: str, _: random.Random) -> Any:
        return parse(text, "<fuzz>")

    return run


@dataclass(frozen=True)
class Target:
    """What one fuzz target runs and which corpus samples seed it."""

    run: Callable[[str, random.Random], Any]
    seeds: tuple[str, ...]  # corpus globs: "folder" (every sample in it) or "folder/pattern"


TARGETS: dict[str, Target] = {
    # The four offline analyzers: parse, check, and the JSON that `analyze --json` prints.
    "analyze-topo": Target(_analyzer("topo"), ("topo",)),
    "analyze-nccl-log": Target(_analyzer("nccl-log"), ("nccl-log",)),
    "analyze-perftest": Target(_analyzer("perftest"), ("perftest", "nccl-tests")),
    "analyze-nccl-tests": Target(_analyzer("nccl-tests"), ("nccl-tests", "perftest")),
    # Every parser on its own (the NIC-state ones are what validate reads).
    "topo": Target(_parser(parse_topo), ("topo",)),
    "nccl_log": Target(_parser(lambda text, source: parse_nccl_log(text, source)), ("nccl-log",)),
    "perftest": Target(_parser(parse_perftest), ("perftest",)),
    "nccl_tests": Target(_parser(parse_nccl_tests), ("nccl-tests",)),
    # NIC-state parsers: their own tool's samples, so mutations reach past the block markers.
    "mlnx_qos": Target(_parser(parse_mlnx_qos_all), ("nic-state/mlnx_qos-*", "nic-state/spiderpool-*")),
    "ibv_devinfo": Target(_parser(parse_ibv_devinfo), ("nic-state/ibv_devinfo-*",)),
    "ibstat": Target(_parser(parse_ibstat), ("nic-state/ibstat-*", "nic-state/ibdev2netdev-ibstat-*")),
    "ibstatus": Target(_parser(parse_ibstatus), ("nic-state/ibstatus-*",)),
    "show_gids": Target(_parser(parse_show_gids), ("nic-state/show_gids-*",)),
    "rdma_link": Target(_parser(parse_rdma_link), ("nic-state/rdma-link-*",)),
}


def seed_texts(target: str) -> list[str]:
    """Every corpus sample of the target's kinds, in a stable order."""
    paths: list[Path] = []
    for seed in TARGETS[target].seeds:
        folder, _, pattern = seed.partition("/")
        paths += sorted((CORPUS / folder).glob(pattern or "*.txt"))
    return [p.read_text(encoding="utf-8") for p in paths]


# ----------------------------------------------------------------------------------- mutations

_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_ODD_DIGITS = ("٣", "۳", "५", "৪", "１", "𝟙", "²", "³", "¹", "①", "Ⅷ", "〇", "٫")
_ODD_CHARS = (*_ODD_DIGITS, "\u200b", "\u200f", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c",
              "\ufeff", "\ufffd", "e\u0301", "\U0001f600", "\x1b[31m", "\x1b[", "ß", "İ")  # fmt: skip
_NOT_FINITE = ("nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e999", "1e-400")


def _digits(rng: random.Random) -> str:
    length = rng.choice((20, 21, 40, 310, 4301, 20_000))
    return "".join(rng.choice("0123456789") for _ in range(min(length, 64))) * (length // 64 + 1)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def _truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def _flip(text: str, rng: random.Random) -> str:
    if not text:
        return rng.choice(_ODD_CHARS)
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        position = rng.randrange(len(chars))
        chars[position] = rng.choice((chr(rng.randrange(32, 127)), chr(rng.randrange(0, 32)),
                                      chr(rng.randrange(0x80, 0x3000)), rng.choice(_ODD_CHARS)))  # fmt: skip
    return "".join(chars)


def _duplicate_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    position = rng.randrange(len(lines))
    return "".join(lines[: position + 1] + [lines[position]] * rng.randint(1, 3) + lines[position + 1 :])


def _delete_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "".join(lines)


def _swap_lines(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    first, second = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[first], lines[second] = lines[second], lines[first]
    return "".join(lines)


def _swap_number(text: str, rng: random.Random, replacement: str) -> str:
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return text + replacement
    # Often the last numbers (result rows, busbw) matter most; pick anywhere, biased to the end.
    match = numbers[max(rng.randrange(len(numbers)), rng.randrange(len(numbers)))]
    return text[: match.start()] + replacement + text[match.end() :]


def _long_digits(text: str, rng: random.Random) -> str:
    return _swap_number(text, rng, _digits(rng))


def _not_finite(text: str, rng: random.Random) -> str:
    return _swap_number(text, rng, rng.choice(_NOT_FINITE))


def _odd_digit(text: str, rng: random.Random) -> str:
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return text + rng.choice(_ODD_DIGITS)
    match = rng.choice(numbers)
    position = rng.randrange(match.start(), match.end())
    return text[:position] + rng.choice(_ODD_DIGITS) + text[position + 1 :]


def _insert(text: str, rng: random.Random, piece: str) -> str:
    position = rng.randrange(len(text) + 1)
    return text[:position] + piece + text[position:]


def _nul(text: str, rng: random.Random) -> str:
    return _insert(text, rng, "\x00" * rng.choice((1, 1, 2, 100)))


def _odd_unicode(text: str, rng: random.Random) -> str:
    return _insert(text, rng, rng.choice(_ODD_CHARS))


def _long_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    position = rng.randrange(len(lines))
    # Around the parsers' 64 KiB cap (both sides) and one far beyond it.
    length = rng.choice((5_000, 40_000, 65_000, 70_000, 300_000))
    original = lines[position].rstrip("\r\n")
    choice = rng.random()
    if choice < 0.35 and original:
        unit = original + " "  # the whole line again and again
    elif choice < 0.7 and original.split():
        unit = rng.choice(original.split()) + rng.choice((" ", "\t", ""))  # one of its words, repeated
    else:
        unit = rng.choice(("a", " ", "9", ":", "\t", "[", "x:", "| ", "# ", "-", "Failed status 1:", "GPU0 "))
    long = (unit * (length // len(unit) + 1))[:length]
    lines[position] = long + "\n"
    return "".join(lines)


def _carriage_returns(text: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return text.replace("\n", "\r\n")
    return _insert(text, rng, "\r")


def _tabs(text: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return text.replace("  ", "\t")
    return _insert(text, rng, "\t" * rng.randint(1, 20))


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "truncate": _truncate,
    "flip": _flip,
    "duplicate-line": _duplicate_line,
    "delete-line": _delete_line,
    "swap-lines": _swap_lines,
    "long-digits": _long_digits,
    "not-finite": _not_finite,
    "odd-digit": _odd_digit,
    "nul": _nul,
    "odd-unicode": _odd_unicode,
    "long-line": _long_line,
    "carriage-return": _carriage_returns,
    "tabs": _tabs,
}
_MUTATION_NAMES = tuple(MUTATIONS)


def make_input(target: str, seed: int, index: int, seeds: list[str]) -> tuple[str, str, random.Random]:
    """Input ``index`` of ``target``: (text, description, the rng the target may use further)."""
    rng = random.Random(f"{seed}:{target}:{index}")
    sample = index % len(seeds)
    text = seeds[sample]
    names = [rng.choice(_MUTATION_NAMES) for _ in range(rng.randint(1, 3))]
    for name in names:
        text = MUTATIONS[name](text, rng)
    return text, f"sample {sample}, {'+'.join(names)}", rng


# ----------------------------------------------------------------------------------- checking


def _plain(value: Any) -> Any:
    """JSON form of parser records (dataclasses, tuples, mappings, enums); analyzers give dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value


def strict_json_problem(result: Any) -> str | None:
    """None when the result is strict JSON (no NaN/Infinity) and survives a round trip, else why not."""
    plain = _plain(result)
    try:
        encoded = json.dumps(plain, allow_nan=False)
    except (ValueError, TypeError) as error:
        return f"not strict JSON: {error}"
    if json.loads(encoded) != plain:
        return "JSON round trip changed the value"
    return None


@dataclass
class Problem:
    index: int
    kind: str  # exception type name, or "invalid-json"
    detail: str


@dataclass
class Stats:
    target: str
    inputs: int = 0
    seconds: float = 0.0
    slowest_s: float = 0.0
    slowest_index: int = -1
    slowest_what: str = ""
    parse_errors: int = 0
    problems: list[Problem] = field(default_factory=list)

    def merge(self, other: Stats) -> None:
        self.inputs += other.inputs
        self.seconds += other.seconds
        self.parse_errors += other.parse_errors
        self.problems += other.problems
        if other.slowest_s > self.slowest_s:
            self.slowest_s, self.slowest_index, self.slowest_what = (
                other.slowest_s,
                other.slowest_index,
                other.slowest_what,
            )


def run_one(target: str, text: str, rng: random.Random) -> tuple[str | None, str]:
    """(None, "") for a result or ParseError; else (problem kind, detail with the traceback)."""
    try:
        result = TARGETS[target].run(text, rng)
    except ParseError:
        return None, "parse-error"
    except Exception as error:
        return type(error).__name__, "".join(traceback.format_exception(error))[-4000:]
    problem = strict_json_problem(result)
    return ("invalid-json", problem) if problem else (None, "")


def run_batch(target: str, seed: int, start: int, count: int) -> Stats:
    """Worker: inputs start..start+count-1 of one target."""
    seeds = seed_texts(target)
    stats = Stats(target)
    for index in range(start, start + count):
        text, what, rng = make_input(target, seed, index, seeds)
        began = time.perf_counter()
        kind, detail = run_one(target, text, rng)
        took = time.perf_counter() - began
        stats.inputs += 1
        stats.seconds += took
        if took > stats.slowest_s:
            stats.slowest_s, stats.slowest_index, stats.slowest_what = took, index, what
        if detail == "parse-error":
            stats.parse_errors += 1
        elif kind is not None:
            stats.problems.append(Problem(index, kind, f"{what}\n{detail}"))
    return stats


def _batches(target: str, seed: int, inputs: int) -> Iterator[tuple[str, int, int, int]]:
    for start in range(0, inputs, _BATCH):
        yield target, seed, start, min(_BATCH, inputs - start)


def fuzz(
    target: str, inputs: int, seed: int, workers: int = MAX_WORKERS, progress_every: int = 0
) -> tuple[Stats, float]:
    """Run ``inputs`` inputs of one target; (merged stats, wall seconds).

    ``progress_every`` > 0 prints a line after about that many inputs, so a run cut short still
    leaves its figures so far.
    """
    total = Stats(target)
    began = time.perf_counter()
    next_report = progress_every
    if workers <= 1:
        results: Iterator[Stats] = (run_batch(*batch) for batch in _batches(target, seed, inputs))
        for stats in results:
            total.merge(stats)
    else:
        with multiprocessing.get_context("spawn").Pool(min(workers, MAX_WORKERS)) as pool:
            for stats in pool.imap_unordered(_run_batch_args, _batches(target, seed, inputs)):
                total.merge(stats)
                if progress_every and total.inputs >= next_report:
                    next_report += progress_every
                    wall = time.perf_counter() - began
                    rate = total.inputs / wall
                    line = f"{total.inputs:,} inputs, {rate:,.0f}/s, {len(total.problems)} problems"
                    print(f"  progress {target}: {line}, slowest {total.slowest_s:.3f} s", flush=True)
    return total, time.perf_counter() - began


def _run_batch_args(args: tuple[str, int, int, int]) -> Stats:
    return run_batch(*args)


def _failure_site(detail: str) -> str:
    """The innermost 'File ..., line N' of a traceback (the code that raised), else its last line."""
    frames = [line.strip() for line in detail.splitlines() if line.strip().startswith('File "')]
    return frames[-1] if frames else detail.strip().splitlines()[-1][:200]


def shrink(target: str, text: str, rng_state: object, kind: str, site: str, budget: int = 300) -> str:
    """Drop lines (then trim the longest one) while the input still fails the same way at the same site.

    Keeps regression samples small enough to read; bounded by ``budget`` runs.
    """

    def same_failure(candidate: str) -> bool:
        rng = random.Random()
        rng.setstate(rng_state)  # type: ignore[arg-type]
        got_kind, detail = run_one(target, candidate, rng)
        return got_kind == kind and (kind == "invalid-json" or _failure_site(detail) == site)

    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines) and budget > 0:
        candidate = lines[:index] + lines[index + 1 :]
        budget -= 1
        if candidate and same_failure("".join(candidate)):
            lines = candidate
        else:
            index += 1
    while lines and budget > 0:  # halve the longest line while that keeps the failure
        longest = max(range(len(lines)), key=lambda i: len(lines[i]))
        if len(lines[longest]) < 200:
            break
        line = lines[longest]
        candidate = [*lines[:longest], line[: len(line) // 2] + "\n", *lines[longest + 1 :]]
        budget -= 1
        if not same_failure("".join(candidate)):
            break
        lines = candidate
    return "".join(lines)


def save_problems(stats: Stats, seed: int, folder: Path = REGRESSIONS) -> list[Path]:
    """Write each problem input (one per distinct failure site) to folder/<target>/<kind>-<hash>.txt."""
    seeds = seed_texts(stats.target)
    saved: list[Path] = []
    sites: set[tuple[str, str]] = set()
    for problem in sorted(stats.problems, key=lambda p: p.index):
        site = (problem.kind, _failure_site(problem.detail))
        if site in sites:
            continue
        sites.add(site)
        text, _, rng = make_input(stats.target, seed, problem.index, seeds)
        text = shrink(stats.target, text, rng.getstate(), problem.kind, site[1])
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        path = folder / stats.target / f"{problem.kind}-{digest}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        saved.append(path)
    return saved


def save_slowest(stats: Stats, seed: int, folder: Path = REGRESSIONS) -> Path:
    """Keep the slowest input as a regression sample too (its test checks the result, not the time)."""
    text, _, _ = make_input(stats.target, seed, stats.slowest_index, seed_texts(stats.target))
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    path = folder / stats.target / f"slow-{digest}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return path


def report(stats: Stats, wall_s: float, slow_s: float) -> str:
    rate = stats.inputs / wall_s if wall_s > 0 else 0.0
    kinds: dict[str, int] = {}
    for problem in stats.problems:
        kinds[problem.kind] = kinds.get(problem.kind, 0) + 1
    other = sum(n for k, n in kinds.items() if k != "invalid-json")
    lines = [
        f"{stats.target}: {stats.inputs:,} inputs in {wall_s:.1f} s wall ({rate:,.0f} inputs/s), "
        f"{stats.parse_errors:,} ParseError, {other} other exceptions, {kinds.get('invalid-json', 0)} "
        f"invalid JSON, slowest {stats.slowest_s:.3f} s (input {stats.slowest_index}: {stats.slowest_what})"
        + (f"  SLOWER THAN {slow_s} s" if stats.slowest_s > slow_s else "")
    ]
    lines += [f"  {kind}: {count}" for kind, count in sorted(kinds.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per target (default 10,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--parser", action="append", choices=sorted(TARGETS), help="target (repeatable)")
    parser.add_argument("--workers", type=int, default=MAX_WORKERS, help=f"1..{MAX_WORKERS} processes")
    parser.add_argument("--slow-s", type=float, default=1.0, help="an input slower than this is a finding")
    parser.add_argument("--no-save", action="store_true", help="do not write tests/data/fuzz-regressions")
    parser.add_argument("--progress-every", type=int, default=0, help="print figures every N inputs")
    parser.add_argument("--json", action="store_true", help="also print one JSON summary line per target")
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= MAX_WORKERS:
        parser.error(f"--workers must be 1..{MAX_WORKERS}")
    clean = True
    for target in args.parser or list(TARGETS):
        stats, wall_s = fuzz(target, args.inputs, args.seed, args.workers, args.progress_every)
        print(report(stats, wall_s, args.slow_s), flush=True)
        if not args.no_save:
            for path in save_problems(stats, args.seed):
                print(f"  saved {path.relative_to(REPO)}", flush=True)
            if stats.slowest_s > args.slow_s:
                path = save_slowest(stats, args.seed)
                print(f"  saved the slowest input as {path.relative_to(REPO)}", flush=True)
        shown: set[str] = set()
        for problem in stats.problems:
            site = _failure_site(problem.detail)
            if site not in shown and len(shown) < 10:
                shown.add(site)
                what, last = problem.detail.splitlines()[0], problem.detail.strip().splitlines()[-1]
                print(f"  input {problem.index} ({what}): {site}\n    {last[:300]}", flush=True)
        if args.json:
            summary = {
                "target": target,
                "inputs": stats.inputs,
                "wall_s": round(wall_s, 3),
                "inputs_per_s": round(stats.inputs / wall_s, 1) if wall_s else None,
                "slowest_s": round(stats.slowest_s, 4),
                "slowest_input": stats.slowest_index,
                "slowest_what": stats.slowest_what,
                "parse_errors": stats.parse_errors,
                "exceptions": sum(p.kind != "invalid-json" for p in stats.problems),
                "invalid_json": sum(p.kind == "invalid-json" for p in stats.problems),
                "seed": args.seed,
            }
            print(json.dumps(summary, allow_nan=False), flush=True)
        clean &= not stats.problems and stats.slowest_s <= args.slow_s
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
