"""Parser for ``nvidia-smi nvlink -s`` (``--status``): each GPU's NVLinks and their per-link rate.

The output is one block per GPU: ``GPU <index>: <name> (UUID: <uuid>)`` at column 0, then one indented
line per link, ``Link <n>: <rate> GB/s`` or ``Link <n>: <inactive>`` (real samples:
tests/data/real/nvlink/INDEX.tsv: H100 18 x 26.562 GB/s, GB200 18 x 53.125 GB/s, a V100 with two links
<inactive>). An indented line that is not a link line is kept as the GPU's note (nvidia-smi prints a
sentence there when NVML cannot read the links). The rate is nvidia-smi's per-link figure as printed.
"""

from __future__ import annotations

import re

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.nvlink_records import NvlinkGpu, NvlinkLinkState, NvlinkStatus

INACTIVE = "<inactive>"
# "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-4039dfe4-...)": the name may hold spaces and parentheses,
# the UUID group is the last parenthesis of the line.
_GPU = re.compile(r"GPU (?P<index>[0-9]{1,4}): (?P<name>.*?) ?\(UUID: (?P<uuid>[^()\s]+)\)")
_GPU_START = re.compile(r"GPU [0-9]")
_LINK = re.compile(r"Link (?P<link>[0-9]{1,3}): (?P<rate>.*)")
_RATE = re.compile(r"(?P<gbytes>[0-9]{1,6}(?:\.[0-9]{1,6})?) GB/s")


def parse_nvlink_status(text: str, source: str = "<text>") -> NvlinkStatus:
    """Every GPU block in order. A link line outside a GPU block, a rate that is neither ``<n> GB/s``
    nor ``<inactive>``, a link or GPU listed twice, an unindented line that is no GPU header, or an
    output without any GPU raises ParseError."""
    gpus: list[NvlinkGpu] = []
    current: tuple[int, str | None, str | None] | None = None  # index, name, uuid
    links: list[NvlinkLinkState] = []
    notes: list[str] = []
    seen_gpus: set[int] = set()

    def close() -> None:
        if current is not None:
            index, name, uuid = current
            gpus.append(NvlinkGpu(index, name, uuid, tuple(links), "; ".join(notes) or None))

    for number, raw in enumerate(split_checked_lines(text, source, "nvidia-smi nvlink -s"), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if not line[0].isspace():
            header = _GPU.fullmatch(line)
            if header is None:
                what = "GPU header" if _GPU_START.match(line) else "line outside a GPU block"
                raise ParseError(
                    f"not a `GPU <i>: <name> (UUID: ...)` {what}: {line!r}", source=source, line=number
                )
            index = int(header["index"])
            if index in seen_gpus:
                raise ParseError(f"GPU {index} is listed twice", source=source, line=number)
            close()
            seen_gpus.add(index)
            current = (index, header["name"] or None, header["uuid"])
            links, notes = [], []
            continue
        if current is None:
            raise ParseError(
                f"indented line before any GPU header: {line.strip()!r}", source=source, line=number
            )
        found = _LINK.fullmatch(line.strip())
        if found is None:
            notes.append(line.strip())
            continue
        link = int(found["link"])
        if link in {seen.link for seen in links}:
            raise ParseError(f"GPU {current[0]}: Link {link} is listed twice", source=source, line=number)
        links.append(NvlinkLinkState(link, _rate(found["rate"].strip(), current[0], link, source, number)))
    close()
    if not gpus:
        raise ParseError("no `GPU <i>: <name> (UUID: ...)` line in the output", source=source)
    return NvlinkStatus(tuple(gpus))


def _rate(value: str, gpu: int, link: int, source: str, number: int) -> float | None:
    if value == INACTIVE:
        return None
    rate = _RATE.fullmatch(value)
    if rate is None:
        raise ParseError(
            f"GPU {gpu} Link {link}: {value!r} is neither `<n> GB/s` nor {INACTIVE}",
            source=source,
            line=number,
        )
    return float(rate["gbytes"])


# `systemctl is-active UNIT` prints one of systemd's unit active states
# (systemd/systemd:src/basic/unit-def.c@84a182811dfef46220a9b04a36538cfee19ee891 unit_active_state_table)
# and exits non-zero for every state but active; every such word is an answer. "unknown" is not in that
# table: older systemctl printed it for a unit it could not load (unverified, kept as an answer).
ACTIVE_STATES = (
    "active",
    "reloading",
    "inactive",
    "failed",
    "activating",
    "deactivating",
    "maintenance",
    "refreshing",
    "unknown",
)


def parse_active_state(rc: int, stdout: str, stderr: str, source: str) -> str:
    """`systemctl is-active UNIT` read as an answer (nvidia-imex, nvidia-fabricmanager): its state word
    whatever the exit status; output that holds no such word (systemctl missing, a bus error) raises
    ParseError naming what it said."""
    words = stdout.split()
    if len(words) == 1 and words[0] in ACTIVE_STATES:
        return words[0]
    said = (stderr.strip() or stdout.strip() or f"exit {rc}").splitlines()[-1]
    raise ParseError(f"no unit state in the output (exit {rc}: {said[:200]})", source=source)
