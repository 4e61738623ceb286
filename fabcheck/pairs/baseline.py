"""Layer 3: a stored baseline of every link's perftest bandwidth, and drift against it.

The file is JSON a user can commit next to the inventory (sorted keys, one link per entry, the last
HISTORY_LIMIT samples of each). It is replaced atomically: written to a temporary file in the same
folder, flushed and fsynced, then renamed over the old one, so a crash in the middle of a record leaves
the previous baseline whole.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fabcheck.checks.perftest import DRIFT_INPUTS
from fabcheck.errors import UsageError
from fabcheck.pairs.rounds import Endpoint
from fabcheck.pairs.verdict import Measurement

FORMAT = "fabcheck perftest baseline 1"
FILE_NAME = "perftest-baseline.json"
HISTORY_LIMIT = 20


@dataclass(frozen=True)
class Sample:
    at: str  # UTC, ISO 8601
    gbps: float


@dataclass(frozen=True)
class Baseline:
    links: Mapping[str, tuple[Sample, ...]]

    def reference(self, link: str) -> float | None:
        """The link's median over its history (one odd sample cannot move it)."""
        samples = self.links.get(link)
        return statistics.median(s.gbps for s in samples) if samples else None

    def to_json(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "links": {
                link: [{"at": s.at, "gbps": round(s.gbps, 3)} for s in samples]
                for link, samples in sorted(self.links.items())
            },
        }


@dataclass(frozen=True)
class Drift:
    link: str
    gbps: float
    reference: float
    samples: int

    @property
    def drop(self) -> float:
        return 1 - self.gbps / self.reference if self.reference > 0 else 0.0

    @property
    def drifted(self) -> bool:
        return self.drop > DRIFT_INPUTS.max_drop


def link_name(key: tuple[Endpoint, Endpoint]) -> str:
    return f"{key[0]}<->{key[1]}"


def default_path(inventory_source: str | os.PathLike[str]) -> Path:
    """Beside the inventory, never inside an inventory folder: Ansible parses every file of a folder
    given as inventory (a JSON baseline there becomes bogus groups and warnings on every run).
    `-i inventory/prod` (or a file in it) -> inventory/prod.perftest-baseline.json; a lone `-i hosts.yml`
    -> hosts.perftest-baseline.json next to it."""
    source = Path(inventory_source)
    folder = source if source.is_dir() else source.parent
    if source.is_dir() or any((folder / vars_dir).is_dir() for vars_dir in ("group_vars", "host_vars")):
        # A folder inventory, or a file in one (its group_vars show the folder is used whole too).
        folder = folder.resolve()
        return folder.parent / f"{folder.name}.{FILE_NAME}"
    return source.parent / f"{source.stem}.{FILE_NAME}"


EXPECTED = "the JSON perftest baseline `fabcheck baseline record` writes"


def load_baseline(path: Path) -> Baseline | None:
    """None when there is no file yet; UsageError naming the file and key when it is not a baseline."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as err:
        raise UsageError(f"{path}: cannot read the perftest baseline: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: binary data, not text; expected {EXPECTED}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{path}:{err.lineno}: not JSON: {err.msg}; expected {EXPECTED}") from None
    except RecursionError:  # json.loads recurses once per [ or {
        raise UsageError(f"{path}: JSON nested too deep to read; expected {EXPECTED}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path}: key 'format' must be {FORMAT!r}: not a fabcheck perftest baseline")
    links = data.get("links")
    if not isinstance(links, dict):
        raise UsageError(f"{path}: key 'links' must be an object of link -> samples")
    return Baseline({link: _samples(path, link, samples) for link, samples in links.items()})


def _samples(path: Path, link: str, samples: object) -> tuple[Sample, ...]:
    if not isinstance(samples, list):
        raise UsageError(f"{path}: links.{link} must be a list of samples")
    read = []
    for index, sample in enumerate(samples):
        gbps = sample.get("gbps") if isinstance(sample, dict) else None
        at = sample.get("at") if isinstance(sample, dict) else None
        if (
            not isinstance(gbps, (int, float))
            or isinstance(gbps, bool)
            or not gbps > 0
            or not isinstance(at, str)
        ):
            raise UsageError(f"{path}: links.{link}[{index}] must be {{'at': time, 'gbps': number > 0}}")
        read.append(Sample(at, float(gbps)))
    return tuple(read)


def recorded(baseline: Baseline | None, measurements: Iterable[Measurement], at: str) -> Baseline:
    """Pure: the baseline with one new sample per measured link, each history cut to HISTORY_LIMIT."""
    links = dict(baseline.links) if baseline else {}
    for m in measurements:
        if m.gbps is None:
            continue
        name = link_name(m.pair.key)
        links[name] = (*links.get(name, ()), Sample(at, m.gbps))[-HISTORY_LIMIT:]
    return Baseline(links)


def drifts(baseline: Baseline, measurements: Iterable[Measurement]) -> list[Drift]:
    """Every measured link the baseline knows, against its recorded median."""
    found = []
    for m in measurements:
        name = link_name(m.pair.key)
        reference = baseline.reference(name)
        if m.gbps is not None and reference is not None:
            found.append(Drift(name, m.gbps, reference, len(baseline.links[name])))
    return found


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Replace the file atomically (tmp + fsync + rename + fsync of the folder)."""
    folder = path.resolve().parent
    text = json.dumps(baseline.to_json(), indent=1, sort_keys=True) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
