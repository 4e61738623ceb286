"""The kernel's view of the PCIe bus and the IOMMU (docs/checks/bus.md): AER counters, a device's IOMMU
group type and the kernel command line.

AER (torvalds/linux:
Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats@0e7d29a39a546161ea3a49e8e282a43212d7ff68):
`/sys/bus/pci/devices/<BDF>/aer_dev_{correctable,nonfatal,fatal}` hold one `<Name> <count>` line per
error and a last `TOTAL_ERR_COR|TOTAL_ERR_NONFATAL|TOTAL_ERR_FATAL <count>` line; names hold spaces
("Receiver Error", "RELAY_NUM Rollover"; newer kernels print RxErr, BadTLP), so a line splits on its
last space. The probe reads them all with `grep -H "" FILE...`: each line comes as `<FILE>:<line>`.

IOMMU group type (torvalds/linux:
Documentation/ABI/testing/sysfs-kernel-iommu_groups@50501936288d6a29d7ef78f25d00e33240fad45f):
`identity` (not translated), `DMA`, `DMA-FQ` (translated), and `blocked`, `unmanaged`; a device
without an iommu_group has no IOMMU translation at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines
from fabcheck.parsers.bus_records import AerCounts, AerSeverity, bdf_of

_AER_LINE = re.compile(
    r"^(?P<dir>.*)/(?P<bdf>[^/]+)/aer_dev_(?P<severity>correctable|nonfatal|fatal):(?P<line>.*)$"
)
_TOTALS: dict[str, AerSeverity] = {
    "TOTAL_ERR_COR": "correctable",
    "TOTAL_ERR_NONFATAL": "nonfatal",
    "TOTAL_ERR_FATAL": "fatal",
}
_NO_SUCH_FILE = "No such file or directory"


def parse_aer(text: str, source: str = "<text>") -> dict[str, AerCounts]:
    """`grep -H "" /sys/bus/pci/devices/*/aer_dev_*` -> BDF -> its counters (every severity it showed)."""
    counts: dict[str, dict[AerSeverity, dict[str, int]]] = {}
    totals: dict[str, dict[AerSeverity, int]] = {}
    for number, line in enumerate(split_checked_lines(text, source, "grep"), start=1):
        if not line.strip():
            continue
        found = _AER_LINE.match(line)
        bdf = bdf_of(found["bdf"]) if found else None
        if found is None or bdf is None:
            raise ParseError(f"not an AER counter line: {line[:100]!r}", source=source, line=number)
        severity: AerSeverity = found["severity"]  # type: ignore[assignment]  # the regex admits only these
        name, _, count = found["line"].strip().rpartition(" ")
        if not name or not count.isdigit():
            raise ParseError(
                f"an AER line without `<name> <count>`: {line[:100]!r}", source=source, line=number
            )
        named = counts.setdefault(bdf, {}).setdefault(severity, {})
        if name in _TOTALS:
            if _TOTALS[name] != severity:
                raise ParseError(f"{name} in aer_dev_{severity}", source=source, line=number)
            totals.setdefault(bdf, {})[severity] = int(count)
        else:
            named[name.strip()] = int(count)
    return {bdf: AerCounts(bdf, counts[bdf], totals.get(bdf, {})) for bdf in sorted(counts)}


def aer_answer(rc: int, out: str, err: str, source: str) -> dict[str, AerCounts]:
    """The AER probe read as an answer: grep's lines, or {} (no AER counters on this host) when the
    glob matched no file (grep: "No such file or directory", exit 2) or the files were empty (exit 1).
    Any other failure (a file that could not be read) is a ParseError: the counters are unreadable."""
    errors = [line for line in err.splitlines() if line.strip()]
    if rc == 0 or (rc == 2 and errors and all(line.endswith(_NO_SUCH_FILE) for line in errors)):
        return parse_aer(out, source)
    if rc == 1 and not out.strip() and not errors:
        return {}
    said = errors[-1] if errors else (out.strip().splitlines() or [""])[-1]
    raise ParseError(f"exit {rc}" + (f": {said}" if said else ""), source=source)


IOMMU_DOMAIN_TYPES = ("identity", "DMA", "DMA-FQ", "blocked", "unmanaged")
TRANSLATED_DOMAIN_TYPES = ("DMA", "DMA-FQ")


def parse_iommu_group_type(text: str, source: str = "<text>") -> str:
    """`cat /sys/class/infiniband/DEV/device/iommu_group/type`: the group's default domain type."""
    words = text.split()
    if len(words) != 1 or words[0] not in IOMMU_DOMAIN_TYPES:
        raise ParseError(
            f"{text.strip()[:60]!r} is not an IOMMU domain type ({', '.join(IOMMU_DOMAIN_TYPES)})",
            source=source,
        )
    return words[0]


@dataclass(frozen=True)
class KernelCmdline:
    """`cat /proc/cmdline`: the words the kernel booted with, and what they say of the IOMMU."""

    words: tuple[str, ...]

    def value(self, key: str) -> str | None:
        """The last `key=value` (the kernel takes the last one), None when the key is absent."""
        found = [word.partition("=")[2] for word in self.words if word.partition("=")[0] == key]
        return found[-1] if found else None

    @property
    def iommu_words(self) -> tuple[str, ...]:
        """The IOMMU words as the host shows them (for a finding's actual)."""
        keys = ("iommu", "iommu.passthrough", "iommu.strict", "intel_iommu", "amd_iommu")
        return tuple(word for word in self.words if word.partition("=")[0] in keys)

    @property
    def passthrough(self) -> bool | None:
        """True: `iommu=pt` or `iommu.passthrough=1` (the last of them wins); False: `iommu=nopt` or
        `iommu.passthrough=0`; None: the command line does not say (the kernel's build default rules)."""
        said: bool | None = None
        for word in self.words:
            key, _, value = word.partition("=")
            if key == "iommu" and value in ("pt", "nopt"):
                said = value == "pt"
            elif key == "iommu.passthrough" and value in ("0", "1"):
                said = value == "1"
        return said


def parse_cmdline(text: str, source: str = "<text>") -> KernelCmdline:
    lines = [line for line in split_checked_lines(text, source, "/proc/cmdline") if line.strip()]
    if len(lines) != 1:
        raise ParseError(f"/proc/cmdline is one line; this is {len(lines)}", source=source)
    return KernelCmdline(tuple(lines[0].split()))
