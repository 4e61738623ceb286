"""Parser for ``nvidia-smi -q`` (text): each GPU's health as host.gpu_health judges it.

The text is an indented tree: a GPU block opens with ``GPU 00000000:18:00.0`` at column 0, a section
with a bare name (``ECC Errors``), a value with ``Name<spaces>: value``; each level indents four
spaces. ``-q -d PAGE_RETIREMENT`` (and the other ``-d`` displays) print the same tree with fewer
sections, and read the same way. A GPU's index is its position in the output (nvidia-smi lists GPUs
in PCI bus order, its default index order), its bus id the header's.

Values read (real samples: tests/data/real/host/INDEX.tsv):
- ``Persistence Mode``: Enabled / Disabled.
- ``ECC Errors > Volatile``: the uncorrectable counters since the driver loaded: ``DRAM Uncorrectable``
  and ``SRAM Uncorrectable`` (drivers up to 5xx on A100), or ``SRAM Uncorrectable Parity`` and
  ``SRAM Uncorrectable SEC-DED`` (535 and later).
- ``Remapped Rows``: ``Pending`` (a remap waits for a GPU reset) and ``Remapping Failure Occurred``.
- ``Retired Pages``: ``Pending Page Blacklist`` (a page waits for a reset to be retired; GPUs before
  Ampere, which have no row remapper).
- ``Fabric``: the GPU's NVLink fabric registration (parsers/nvlink_records.GpuFabric): ``State``,
  ``Status``, ``CliqueId``, ``ClusterUUID``, ``Health > Summary`` and ``Health > Bandwidth`` (real samples:
  tests/data/real/nvlink/INDEX.tsv). A GPU without the section (drivers before it) has fabric None; a
  section of ``N/A`` values (no NVLink fabric) is a GpuFabric of Nones.
``N/A`` (the GPU does not support it, or ECC is off) and a value the output does not show are None:
the check tells "not shown" from "no".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.bus_records import bdf_of
from fabcheck.parsers.nvlink_records import GpuFabric

INDENT = 4
NOT_AVAILABLE = "N/A"
_GPU_HEADER = re.compile(r"^GPU (?P<bus>\S+)\s*$")
# "Name<spaces>: value": the key ends at the first colon after a space that ends the line or is
# followed by one (the value may be empty or hold colons: "Bus Id : 00000000:18:00.0"). The
# lookbehind starts a match only at the start of a space run, which keeps the search linear.
_KEY_END = re.compile(r"(?<=\S)\s+:(?= |$)")

_COUNT = re.compile(r"[0-9]{1,12}")  # an error counter (a longer "count" is damage, never a number)
_CLIQUE_ID = re.compile(r"[0-9]{1,10}")  # nvmlGpuFabricInfo cliqueId is an unsigned int
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
FABRIC = "Fabric"
VOLATILE = ("ECC Errors", "Volatile")
# The volatile uncorrectable counters, by the names the drivers print (the module docstring).
UNCORRECTABLE_COUNTERS = (
    "DRAM Uncorrectable",
    "SRAM Uncorrectable",
    "SRAM Uncorrectable Parity",
    "SRAM Uncorrectable SEC-DED",
)
PENDING_PAGE_KEYS = ("Pending Page Blacklist", "Pending Page Retirement")


@dataclass(frozen=True)
class GpuQuery:
    """One GPU of ``nvidia-smi -q``: the values host.gpu_health reads (None: not shown, or N/A)."""

    index: int  # its position in the output
    bus_id: str  # dddd:bb:dd.f (bus_records.bdf_of)
    name: str | None = None  # Product Name
    persistence_mode: bool | None = None
    ecc_enabled: bool | None = None  # ECC Mode > Current
    # counter name -> count since the driver loaded (ECC Errors > Volatile), N/A ones left out
    volatile_uncorrectable: Mapping[str, int] = field(default_factory=dict)
    remap_pending: bool | None = None  # Remapped Rows > Pending
    remap_failure: bool | None = None  # Remapped Rows > Remapping Failure Occurred
    retirement_pending: bool | None = None  # Retired Pages > Pending Page Blacklist
    fabric: GpuFabric | None = None  # the "Fabric" section (None: the driver prints none)

    @property
    def uncorrectable_total(self) -> int:
        return sum(self.volatile_uncorrectable.values())


@dataclass(frozen=True)
class SmiQuery:
    """The whole ``nvidia-smi -q`` output: the header's driver version and every GPU in order."""

    driver_version: str | None
    gpus: tuple[GpuQuery, ...]


def parse_nvidia_smi_q(text: str, source: str = "<text>") -> SmiQuery:
    """Every GPU block of the output, in order. An output with no GPU block, a GPU header whose bus id
    is no PCI address, or a value line outside any GPU that is not the header's, raises ParseError."""
    header: dict[str, str] = {}
    blocks: list[tuple[str, dict[tuple[str, ...], str]]] = []
    path: list[str] = []
    for number, raw in enumerate(split_checked_lines(text, source, "nvidia-smi -q"), start=1):
        line = raw.rstrip("\r")
        if not line.strip() or line.startswith("====="):
            continue
        gpu = _GPU_HEADER.match(line)
        if gpu:
            bus = bdf_of(gpu["bus"])
            if bus is None:
                raise ParseError(f"GPU header without a PCI bus id: {line!r}", source=source, line=number)
            blocks.append((bus, {}))
            path = []
            continue
        depth = (len(line) - len(line.lstrip(" "))) // INDENT
        found = _key_value(line.strip())
        if not blocks:  # the header: Timestamp, Driver Version, ... (sections of newer drivers skipped)
            if depth == 0 and found is not None:
                header[found[0]] = found[1]
            continue
        if depth == 0:
            raise ParseError(f"unindented line inside a GPU block: {line!r}", source=source, line=number)
        path = path[: depth - 1]
        if found is None:  # a section: its name opens the next level
            path.append(line.strip())
            continue
        key = (*path, found[0])
        blocks[-1][1][key] = found[1]
    if not blocks:
        raise ParseError("no GPU block (`GPU <bus id>` line) in the output", source=source)
    gpus = tuple(_gpu(index, bus, values, source) for index, (bus, values) in enumerate(blocks))
    return SmiQuery(header.get("Driver Version"), gpus)


def _key_value(line: str) -> tuple[str, str] | None:
    """(key, value) of a "Name<spaces>: value" line (stripped), None for a section name."""
    end = _KEY_END.search(line)
    if end is None:
        return None
    return line[: end.start()], line[end.end() :].strip()


def _gpu(index: int, bus: str, values: Mapping[tuple[str, ...], str], source: str) -> GpuQuery:
    def shown(*key: str) -> str | None:
        value = values.get(key)
        return None if value is None or value == NOT_AVAILABLE else value

    counters: dict[str, int] = {}
    for name in UNCORRECTABLE_COUNTERS:
        value = shown(*VOLATILE, name)
        if value is None:
            continue
        if not _COUNT.fullmatch(value):
            raise ParseError(f"GPU {bus}: {name} is {value!r}, not a count", source=source)
        counters[name] = int(value)
    # Volta and older: `Volatile > Double Bit > Total` (the uncorrectable errors of every memory); no
    # public capture of it is cited here (docs/checks/bus.md: unverified)
    double_bit = shown(*VOLATILE, "Double Bit", "Total")
    if double_bit is not None:
        if not _COUNT.fullmatch(double_bit):
            raise ParseError(f"GPU {bus}: Double Bit Total is {double_bit!r}, not a count", source=source)
        counters["Double Bit"] = int(double_bit)
    pending_page = next(
        (value for key in PENDING_PAGE_KEYS if (value := shown("Retired Pages", key)) is not None), None
    )
    return GpuQuery(
        index=index,
        bus_id=bus,
        name=shown("Product Name"),
        persistence_mode=_flag(shown("Persistence Mode"), "Enabled", "Disabled"),
        # "Ecc Mode" in older drivers
        ecc_enabled=_flag(
            shown("ECC Mode", "Current") or shown("Ecc Mode", "Current"), "Enabled", "Disabled"
        ),
        volatile_uncorrectable=MappingProxyType(counters),
        remap_pending=_flag(shown("Remapped Rows", "Pending"), "Yes", "No"),
        remap_failure=_flag(shown("Remapped Rows", "Remapping Failure Occurred"), "Yes", "No"),
        retirement_pending=_flag(pending_page, "Yes", "No"),
        fabric=_fabric(bus, values, shown, source),
    )


def _fabric(
    bus: str, values: Mapping[tuple[str, ...], str], shown: Callable[..., str | None], source: str
) -> GpuFabric | None:
    """The GPU's "Fabric" section; None when the output shows none (its values N/A -> None)."""
    if not any(key[0] == FABRIC for key in values):
        return None
    clique = shown(FABRIC, "CliqueId")
    if clique is not None and not _CLIQUE_ID.fullmatch(clique):
        raise ParseError(f"GPU {bus}: Fabric CliqueId is {clique!r}, not a clique number", source=source)
    uuid = shown(FABRIC, "ClusterUUID")
    if uuid is not None and not _UUID.fullmatch(uuid):
        raise ParseError(f"GPU {bus}: Fabric ClusterUUID is {uuid!r}, not a UUID", source=source)
    return GpuFabric(
        state=shown(FABRIC, "State"),
        status=shown(FABRIC, "Status"),
        clique_id=None if clique is None else int(clique),
        cluster_uuid=None if uuid is None else uuid.lower(),
        health_summary=shown(FABRIC, "Health", "Summary"),
        bandwidth=shown(FABRIC, "Health", "Bandwidth"),
    )


def _flag(value: str | None, yes: str, no: str) -> bool | None:
    if value == yes:
        return True
    if value == no:
        return False
    return None
