"""Streaming parser for NCCL_DEBUG=INFO logs: which network NCCL used, GDR, HCAs and failures.

Lines look like ``host:pid:tid [dev] NCCL INFO <message>`` (or ``NCCL WARN`` with a source file
before it), possibly behind timestamps, Ray/Kubernetes tags, ANSI colours or pasted-document
artifacts; bare ``NCCL version 2.x.y+cudaZ`` lines and PyTorch ``NCCL error`` reports are read too.

Rules, in priority order where several sources exist:

* nccl_version: the first version NCCL prints (``NCCL version 2.x.y``, bare or as INFO); else the
  one quoted in a PyTorch ``NCCL error ... NCCL version 2.x.y`` report.
* network: ``Using network X``; else the first channel line
  ``via NET/<X>/<n>[/GDRDMA]``; else the first ``NET/<X> : Using [..]`` device list; else the
  ``NET/<X> :`` prefix of a WARN raised inside NCCL's own transport (source ``transport/net*``).
* gdr: True if any NET channel has ``/GDRDMA`` or a ``GPU Direct RDMA Enabled`` line is printed;
  False if NET channels exist without it or ``GPU Direct RDMA Disabled`` is printed; else None.
  Per rank (RankNet) only the rank's own NET channel lines count.
* hcas / link_layers: only from ``NET/<plugin> : Using [0]mlx5_0:1/RoCE ...`` device lists.
* errors: NCCL WARN lines (except plugin-loading chatter), PyTorch ``NCCL error`` reports and
  their ``Last error:`` detail line, collective watchdog timeouts.

Speed and memory: text is handled in blocks of whole lines (``feed`` batches lines into blocks
too, so both entry points share one code path). Per block, C-level passes pick out NET channel
lines and ``Using network`` lines (split + map, keyed by line prefix) and every other marked line
(one findall); only the first sighting of each distinct key reaches Python code. Failure lines
are then visited in order, because they need line numbers and may wrap onto the next line. Each
pass owns its facts, so results never depend on where blocks start. Errors keep the first
``MAX_ERRORS`` (``error_count`` has the total), long lines, names and messages are capped and
every cache is bounded, so memory does not grow with the log.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import TypeVar

from fabcheck.errors import ParseError
from fabcheck.parsers._text import strip_ansi

MAX_ERRORS = 1000
MAX_RANKS = 65536
BLOCK_CHARS = 1 << 20
MAX_LINE_CHARS = 1 << 20
MAX_MESSAGE_CHARS = 2000  # error messages are kept up to this length
_MAX_NAME_CHARS = 200  # network and HCA names longer than this are not names
_MAX_HCAS = 4096
_PREFIX_WINDOW = 512  # the line prefix is looked for in the text right before the NCCL marker
_CACHE_LIMIT = 50_000  # entries per "seen before" cache; it is emptied when full
_MAX_CACHED_KEY = 512  # longer lines are handled every time instead of being remembered
_Key = TypeVar("_Key", bound=Hashable)

# Every line worth a look (besides NET channel lines) holds a match, which runs to the line end.
_MARKED = re.compile(
    r"NCCL(?: (?:INFO (?:Using network |NET/|GPU Direct RDMA |P2P plugin IB|Failed to initialize NET plugin "
    r"|NCCL_(?:IB_DISABLE|IB_HCA|NET) set|.{0,400}?Init COMPLETE)|WARN |version \d|error)|\(SeqNum)[^\n]*"
)
# Lines quoted without NCCL's 'host:pid:tid [d] NCCL INFO' prefix (pasted into docs or issues) that open
# with one of the messages the proof reads: they get the marker back, so one scanner reads both forms.
_BARE = re.compile(
    r"^(?P<lead>[ \t]*)(?=(?:NET/\S+ ?: ?(?:Using \[|No device found|GPU Direct RDMA |Selected [Pp]rovider )"
    r"|Using network |GPU Direct RDMA |Channel \d+/\d+ ?: |CollNet \d+/\d+ ?: "
    r"|Failed to initialize NET plugin |comm 0x[0-9a-f]+ rank |ncclComm\w* comm 0x))",
    re.MULTILINE,
)
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]")
# Lines that must be read in order with their prefix and line number: failures.
_IN_ORDER = re.compile(r"NCCL(?: (?:WARN |error)|\(SeqNum)")
_IN_ORDER_MARKERS = ("NCCL WARN ", "NCCL error", "NCCL(SeqNum")
# Lines whose prefix tells which rank they describe. (NCCL 2.27+ also prints "Assigned NET plugin
# X to comm" next to each of them, naming the same X.)
_USING_MARKER = "NCCL INFO Using network "
_PREFIX = re.compile(r"([^\s\[\]:]{1,255}):(\d{1,10}):(\d{1,10}) \[(\d{1,6})\]\s*(.*)$", re.ASCII)
_TORCH_RANK = re.compile(r"\[[Rr]ank ?(\d{1,9})\]", re.ASCII)
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)", re.ASCII)
_CITE = re.compile(r"\[cite_start\]| ?\[cite:[\d, ]*\]")
_NET_MESSAGE = re.compile(r"NET/([^\s:]{1,200})(?=[\s:]|$)\s*:?\s*(.*)$")
_LISTED_DEVICE = re.compile(r"\[\d+\]\S", re.ASCII)
_HCA_ENTRY = re.compile(r"\]\s*([A-Za-z0-9_.\-]{1,64}):\d+/(IB|RoCE)\b", re.ASCII)
_CHANNEL_TAIL = re.compile(r"(.+?)/(\d+)(?:\(\d+\))?((?:/[A-Za-z]+)*)$", re.ASCII)
_STATUS_NUMBER = re.compile(r"(?:\bwith error\s+|\bstatus\s*=\s*(?:[A-Za-z_][\w ]*?\()?)(\d{1,9})", re.ASCII)
_STATUS_NAME = re.compile(r"IBV_WC_([A-Z_]+)")
_VENDOR_ERR = re.compile(r"vendor[ _]err\s*[= ]?\s*(?:0x([0-9a-fA-F]{1,8})|(\d{1,9}))", re.ASCII)
_TORCH_ERROR_NAME = re.compile(r"nccl[A-Z]\w*Error\b", re.ASCII)
_WRAPPED_START = re.compile(r"[0-9a-z,.;:)/\-]", re.ASCII)
_BENIGN_WARN = re.compile(
    r"libnccl-(?:net|tuner|profiler)|No plugin found|Failed to find nccl\w*Plugin|dlerror|libibverbs"
    r"|GID table change|Could not find:? libnccl"
    # graph/search.cc: the topology search found no faster order and uses the simple one; NCCL goes on.
    r"|Could not find a path for pattern \d+, falling back to simple order"
    # SHARP/CollNet notices: CollNet is an optional accelerator; NCCL continues point-to-point.
    r"|Cannot initialize CollNet, using point-to-point network instead|SHARP coll init error",
    re.IGNORECASE,
)
_GDR_LINE = re.compile(r"GPU Direct RDMA (?:\([^)]{1,40}\) )?(enabled|disabled)", re.IGNORECASE)
_COLLNET_TAIL = re.compile(r"via COLLNET/([^/\s]{1,200})/\d+((?:/[A-Za-z]+)*)", re.ASCII)
_SOCKET_NAME = re.compile(r"socket", re.IGNORECASE)
_RDMA_NAME = re.compile(r"IB|RDMA|RoCE|verbs", re.ASCII)
_OFI_NAME = re.compile(r"Libfabric|OFI", re.IGNORECASE)

# ibv_wc_status codes by enum name (IBV_WC_<name>) and by ibv_wc_status_str() wording.
_WC_NAMES = (
    "SUCCESS",
    "LOC_LEN_ERR",
    "LOC_QP_OP_ERR",
    "LOC_EEC_OP_ERR",
    "LOC_PROT_ERR",
    "WR_FLUSH_ERR",
    "MW_BIND_ERR",
    "BAD_RESP_ERR",
    "LOC_ACCESS_ERR",
    "REM_INV_REQ_ERR",
    "REM_ACCESS_ERR",
    "REM_OP_ERR",
    "RETRY_EXC_ERR",
    "RNR_RETRY_EXC_ERR",
    "LOC_RDD_VIOL_ERR",
    "REM_INV_RD_REQ_ERR",
    "REM_ABORT_ERR",
    "INV_EECN_ERR",
    "INV_EEC_STATE_ERR",
    "FATAL_ERR",
    "RESP_TIMEOUT_ERR",
    "GENERAL_ERR",
)
_WC_PHRASES = (
    ("rnr retry counter exceeded", 13),
    ("retry counter exceeded", 12),
    ("retry exceeded", 12),
    ("work request flushed", 5),
    ("local length error", 1),
    ("local protection error", 4),
    ("remote invalid request", 9),
    ("remote access error", 10),
    ("remote operation error", 11),
    ("response timeout", 20),
)

# What the line after the current one may be: nothing special, the second half of a WARN that
# was wrapped, the body of a PyTorch "NCCL error" report, or the detail line after "Last error:".
_PLAIN, _WARN_HELD, _ERROR_REPORT, _ERROR_DETAIL = range(4)


@dataclass(frozen=True)
class NcclError:
    """One failure reported in the log. ``line`` is 1-based; ``status`` is the IBV_WC status code."""

    line: int
    host: str | None
    rank: int | None
    message: str
    status: int | None
    vendor_err: int | None


@dataclass(frozen=True)
class RankNet:
    """What one process showed; ``rank`` is the bracketed number of the line prefix (its device)."""

    host: str | None
    rank: int | None
    network: str | None
    gdr: bool | None


@dataclass(frozen=True)
class NcclLogSummary:
    """What the whole log shows (see the module docstring for the rules); ``lines`` counts all lines."""

    nccl_version: str | None
    network: str | None
    rdma: bool | None
    link_layers: tuple[str, ...]
    hcas: tuple[str, ...]
    gdr: bool | None
    errors: tuple[NcclError, ...]
    ranks: tuple[RankNet, ...]
    socket_fallback: bool
    lines: int
    error_count: int = 0  # every error seen; ``errors`` keeps the first MAX_ERRORS
    init_complete: bool = False  # some communicator printed 'Init COMPLETE'
    failed_plugins: tuple[str, ...] = ()  # 'Failed to initialize NET plugin X'
    ib_missing: bool = False  # 'NET/IB : No device found.' or the IB plugin failed to initialise


def completion_status(message: str) -> tuple[int | None, int | None]:
    """(IBV_WC status, vendor error) printed in a completion error message, None where absent."""
    status: int | None = None
    lowered = message.lower()
    # "with error N" elsewhere is an errno (e.g. a failed ibv_modify_qp), not a work completion.
    number = _STATUS_NUMBER.search(message) if "completion" in lowered or "ibv_wc" in lowered else None
    if number:
        status = int(number.group(1))
    else:
        name = _STATUS_NAME.search(message)
        if name and name.group(1) in _WC_NAMES:
            status = _WC_NAMES.index(name.group(1))
        else:
            status = next((code for phrase, code in _WC_PHRASES if phrase in lowered), None)
    vendor = _VENDOR_ERR.search(message)
    if vendor is None:
        return status, None
    return status, int(vendor.group(1), 16) if vendor.group(1) else int(vendor.group(2))


def _clean(line: str) -> str:
    """Drop line ends, terminal colours and pasted-document citation markers."""
    text = line.rstrip()
    if "\x1b" in text:
        text = strip_ansi(text)
    if "[cite" in text:
        text = _CITE.sub("", text)
    if "[repeated " in text:
        text = _RAY_REPEATED.sub("", text)
    return text


def clean_line(line: str) -> str:
    """A log line as the parsers read it: no line end, terminal colours or citation markers."""
    return _clean(line)


def _rdma_from_name(name: str, ofi_provider: str | None) -> bool | None:
    """Whether a NET plugin name means RDMA (IB verbs) or TCP sockets; None when unknown."""
    if _SOCKET_NAME.search(name):
        return False
    if _RDMA_NAME.search(name):
        return True
    if _OFI_NAME.search(name) and ofi_provider:
        provider = ofi_provider.lower()
        if "efa" in provider or "verbs" in provider or "cxi" in provider:
            return True
        if "tcp" in provider or "sockets" in provider:
            return False
    return None


def _first_sighting(seen: set[_Key], key: _Key, size: int) -> bool:
    """Add ``key`` (``size`` characters) to the bounded cache ``seen``; True when it was not there."""
    if size > _MAX_CACHED_KEY:
        return True
    if key in seen:
        return False
    if len(seen) >= _CACHE_LIMIT:
        seen.clear()
    seen.add(key)
    return True


class _LineBlocks:
    """Collects fed text and hands it out as blocks of whole lines of about BLOCK_CHARS.

    At most one partial line is held; a line longer than MAX_LINE_CHARS is cut to that length.
    A big fed chunk is copied once: its first line (completing the held one) becomes its own block.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._line_open = False
        self._skipping = False

    def add_line(self, line: str) -> list[str]:
        if self._line_open:
            line = "\n" + line
        if not line.endswith("\n"):
            line += "\n"
        return self._add(line)

    def add_text(self, text: str) -> Iterator[str]:
        for start in range(0, len(text), BLOCK_CHARS):
            yield from self._add(text[start : start + BLOCK_CHARS])

    def finish(self) -> str:
        data = "".join(self._parts)
        self._parts, self._size, self._line_open = [], 0, False
        return data if not data or data.endswith("\n") else data + "\n"

    def _add(self, text: str) -> list[str]:
        if self._skipping:
            cut = text.find("\n")
            if cut < 0:
                return []
            text, self._skipping = text[cut:], False
        self._parts.append(text)
        self._size += len(text)
        self._line_open = not text.endswith("\n")
        return self._take() if self._size >= BLOCK_CHARS else []

    def _take(self) -> list[str]:
        parts, last = self._parts, self._parts[-1]
        cut = last.rfind("\n") + 1
        if cut == 0:
            return self._take_joined()
        if cut == len(last):
            self._parts, self._size = [], 0
            return ["".join(parts) if len(parts) > 1 else last]
        first = last.find("\n") + 1 if len(parts) > 1 else 0
        blocks = ["".join(parts[:-1]) + last[:first]] if first else []
        if cut > first:
            blocks.append(last[first:cut])
        self._parts, self._size = [last[cut:]], len(last) - cut
        return blocks

    def _take_joined(self) -> list[str]:
        """The newest piece has no newline: join everything and keep (a bounded) partial line."""
        data = "".join(self._parts)
        cut = data.rfind("\n") + 1
        rest = data[cut:]
        if len(rest) > MAX_LINE_CHARS:
            rest, self._skipping = rest[:MAX_LINE_CHARS], True
        self._parts, self._size = ([rest] if rest else []), len(rest)
        return [data[:cut]] if cut else []


class _RankState:
    __slots__ = ("channel_network", "gdr_off", "gdr_on", "receive_gdr_off", "using_network")

    def __init__(self) -> None:
        self.using_network: str | None = None
        self.channel_network: str | None = None
        self.gdr_on = False
        self.gdr_off = False
        self.receive_gdr_off = False

    def rank_net(self, host: str, rank: int) -> RankNet:
        # A receive channel without GDRDMA means host-staged traffic for that rank (e.g. a far NIC),
        # even when other channels use GDR. Send channels may legitimately lack it (GDR read off).
        if self.receive_gdr_off:
            gdr: bool | None = False
        else:
            gdr = True if self.gdr_on else (False if self.gdr_off else None)
        return RankNet(host, rank, self.using_network or self.channel_network, gdr)


class _Facts:
    """What the log has shown so far. Every note is idempotent, so repeated lines may be skipped."""

    def __init__(self) -> None:
        self.seen_nccl = False
        self.version: str | None = None
        self.reported_version: str | None = None
        self.using_network: str | None = None
        self.channel_network: str | None = None
        self.device_network: str | None = None
        self.warn_network: str | None = None
        self.ofi_provider: str | None = None
        self.hcas: set[str] = set()
        self.link_layers: set[str] = set()
        self.gdr_on = False
        self.gdr_off = False
        self.verbs_evidence = False
        self.ib_sought = False
        self.socket_chosen = False
        self.init_complete = False
        self.failed_plugins: list[str] = []
        self.ib_missing = False
        self.ranks: dict[tuple[str, int], _RankState] = {}

    def rank(self, host: str | None, rank: int | None) -> _RankState | None:
        if host is None or rank is None:
            return None
        state = self.ranks.get((host, rank))
        if state is None and len(self.ranks) < MAX_RANKS:
            state = self.ranks[(host, rank)] = _RankState()
        return state

    def note_version(self, text: str, reported: bool) -> None:
        """A version NCCL printed, or (``reported``) one quoted in a PyTorch error report."""
        match = _VERSION.search(text)
        if match is None:
            return
        self.seen_nccl = True
        if reported:
            self.reported_version = self.reported_version or match.group(1)
        else:
            self.version = self.version or match.group(1)

    def note_using(self, name: str, rank: _RankState | None) -> None:
        self.using_network = self.using_network or name
        if rank is not None:
            rank.using_network = rank.using_network or name

    def note_channel(self, name: str, gdr: bool, rank: _RankState | None, sending: bool = False) -> None:
        self.seen_nccl = True
        if rank is not None and not gdr and not sending:
            rank.receive_gdr_off = True
        self.channel_network = self.channel_network or name
        for state in (self, rank):
            if state is None:
                continue
            if gdr:
                state.gdr_on = True
            else:
                state.gdr_off = True
        if rank is not None:
            rank.channel_network = rank.channel_network or name

    def note_devices(self, name: str, devices: str) -> None:
        entries = _HCA_ENTRY.findall(devices)
        for hca, link_layer in entries:
            if len(self.hcas) < _MAX_HCAS:
                self.hcas.add(hca)
            self.link_layers.add(link_layer)
        if entries:
            self.verbs_evidence = self.ib_sought = True
        if entries or _LISTED_DEVICE.search(devices):
            self.device_network = self.device_network or name
        elif _RDMA_NAME.search(name):
            # An empty list ('NET/IB : Using [RO]; OOB ...') names no device: it is no network choice.
            self.ib_sought = True

    def note_gdr_line(self, message: str) -> None:
        """'GPU Direct RDMA Enabled/Disabled', '(DMABUF) enabled', '(nvidia-peermem) enabled', any case."""
        match = _GDR_LINE.search(message)
        if match is None:
            return
        if match.group(1).lower() == "enabled":
            self.gdr_on = True
        else:
            self.gdr_off = True

    def summary(self, lines: int, errors: list[NcclError], error_count: int) -> NcclLogSummary:
        network = self.using_network or self.channel_network or self.device_network or self.warn_network
        rdma = _rdma_from_name(network, self.ofi_provider) if network else None
        if rdma is None and self.verbs_evidence:
            rdma = True
        if rdma is None and network and _OFI_NAME.search(network) and self.gdr_on:
            # A libfabric channel with GDRDMA (CXI, EFA without a provider line): NCCL's TCP transport
            # never registers GPU memory, so GDR on a Libfabric channel is RDMA.
            rdma = True
        if rdma is None and self.ib_missing and not self.verbs_evidence:
            rdma = False  # 'NET/IB : No device found.': NCCL falls back to sockets
        socket_like = network is not None and _SOCKET_NAME.search(network) is not None
        return NcclLogSummary(
            nccl_version=self.version or self.reported_version,
            network=network,
            rdma=rdma,
            link_layers=tuple(sorted(self.link_layers)),
            hcas=tuple(sorted(self.hcas)),
            gdr=True if self.gdr_on else (False if self.gdr_off else None),
            errors=tuple(errors),
            ranks=tuple(state.rank_net(*key) for key, state in sorted(self.ranks.items())),
            socket_fallback=socket_like and self.ib_sought and not self.socket_chosen,
            lines=lines,
            error_count=error_count,
            init_complete=self.init_complete,
            failed_plugins=tuple(self.failed_plugins),
            ib_missing=self.ib_missing,
        )


class NcclLogParser:
    """Feed lines (``feed``) or arbitrary slices of the log (``feed_chunk``), then ``result()``.

    Both paths go through the same block scanner, so they give identical summaries.
    """

    def __init__(self, source: str = "<text>") -> None:
        self.source = source
        self._blocks = _LineBlocks()
        self._facts = _Facts()
        self._finished: NcclLogSummary | None = None
        self._lines = 0
        self._errors: list[NcclError] = []
        self._error_count = 0
        self._prefixes: dict[str, tuple[str, int, str] | None] = {}
        self._seen_channels: set[tuple[tuple[str, str, bool], str]] = set()
        self._seen_using: set[tuple[str, str]] = set()
        self._seen_marked: set[str] = set()
        self._state = _PLAIN
        self._state_budget = 0
        self._report_rank: int | None = None
        self._held: tuple[int, str | None, int | None, str] | None = None
        self._block = ""
        self._cursor = 0
        self._counted_pos = 0
        self._counted_line = 0

    # ----------------------------------------------------------------- public API
    def feed(self, line: str) -> None:
        """Feed one line, with or without its trailing newline."""
        self._check_open()
        for block in self._blocks.add_line(line):
            self._scan_block(block)

    def feed_chunk(self, text: str) -> None:
        """Feed any slice of the log; a line may be split across calls."""
        self._check_open()
        for block in self._blocks.add_text(text):
            self._scan_block(block)

    def result(self) -> NcclLogSummary:
        """End the stream and summarise it. Raises ParseError when no NCCL line was seen."""
        if self._finished is None:
            block = self._blocks.finish()
            if block:
                self._scan_block(block)
            self._end_pending()
            if not self._facts.seen_nccl:
                raise ParseError(
                    "no NCCL log lines found (expected 'NCCL INFO', 'NCCL WARN' or 'NCCL version' lines)",
                    source=self.source,
                )
            self._finished = self._facts.summary(self._lines, self._errors, self._error_count)
        return self._finished

    def _check_open(self) -> None:
        if self._finished is not None:
            raise ValueError("result() was already called on this NcclLogParser; start a new one")

    # ----------------------------------------------------------------- block scanning
    def _scan_block(self, block: str) -> None:
        """Handle a block of whole lines (it ends with a newline)."""
        self._block, self._cursor, self._counted_pos = block, 0, 0
        self._counted_line = self._lines + 1
        self._lines += block.count("\n")
        if _BARE.search(block) is not None:
            block = _BARE.sub(r"\g<lead>NCCL INFO ", block)
            self._block = block
        if not self._facts.seen_nccl and ("NCCL INFO" in block or "NCCL WARN" in block):
            self._facts.seen_nccl = True
        if "via COLLNET/" in block:
            self._scan_collnet(block)
        if "via NET/" in block:
            self._scan_channels(block)
        in_order, using = self._scan_marked(block)
        if using:
            self._scan_using_lines(block)
        if in_order or self._state != _PLAIN:
            self._scan_in_order(block)

    def _scan_marked(self, block: str) -> tuple[bool, bool]:
        """Handle the marked lines that need no prefix; say if failures or Using lines are present.

        One C-level findall collects the tails of marked lines; identical tails (the same device
        list printed by every rank) are handled once.
        """
        in_order = using = False
        for found in dict.fromkeys(_MARKED.findall(block)):
            using |= _USING_MARKER in found
            if any(marker in found for marker in _IN_ORDER_MARKERS):
                in_order = True
            elif found.startswith(_USING_MARKER):
                continue
            elif _first_sighting(self._seen_marked, found, len(found)):
                self._handle_marked(_clean(found))
        return in_order, using

    def _scan_using_lines(self, block: str) -> None:
        """``<prefix> NCCL INFO Using network X``: note X for the rank named by each new prefix."""
        pieces = block.split(_USING_MARKER)
        heads = map(itemgetter(2), map(str.rpartition, pieces[:-1], repeat("\n")))
        names = map(itemgetter(0), map(str.partition, pieces[1:], repeat("\n")))
        for prefix, name in dict.fromkeys(zip(heads, names, strict=True)):
            if _first_sighting(self._seen_using, (prefix, name), len(prefix) + len(name)):
                self._note_using(_clean(prefix), _clean(name).strip())

    def _scan_in_order(self, block: str) -> None:
        """Visit failure lines in order, and every line that follows one which left a state open.

        Each pass notes its own facts only (this one: errors, reported version, WARN transport),
        so the result does not depend on where blocks begin and end.
        """
        pos, end = 0, len(block)
        while self._state != _PLAIN and pos < end:
            pos = self._step_at(pos)
        for match in _IN_ORDER.finditer(block):
            start = match.start()
            if start < pos:
                continue
            line_start = block.rfind("\n", 0, start) + 1
            line_end = block.find("\n", start)
            pos = line_end + 1
            self._cursor = line_start
            self._handle_failure(block[line_start:line_end])
            while self._state != _PLAIN and pos < end:
                pos = self._step_at(pos)

    def _step_at(self, start: int) -> int:
        """Offer the line at ``start`` to the open state; if not absorbed, it may be a failure."""
        stop = self._block.find("\n", start)
        line = self._block[start:stop]
        self._cursor = start
        if not self._continue_state(line) and "NCCL" in line and _IN_ORDER.search(line):
            self._handle_failure(line)
        return stop + 1

    def _line_number(self) -> int:
        """1-based number of the line being handled, counted lazily (only errors need it)."""
        self._counted_line += self._block.count("\n", self._counted_pos, self._cursor)
        self._counted_pos = self._cursor
        return self._counted_line

    # ----------------------------------------------------------------- NET channel lines
    def _scan_channels(self, block: str) -> None:
        """Note each new (line prefix, NET tail) pair of ``... NCCL INFO Channel ... via NET/<tail>``.

        Splitting on "via NET/" and slicing with map() runs in C; channel numbers and peers are
        dropped from the key, so repeated lines of the same rank never reach Python code.
        """
        pieces = block.split("via NET/")
        heads = map(itemgetter(2), map(str.rpartition, pieces[:-1], repeat("\n")))
        prefixes = map(str.partition, heads, repeat("NCCL INFO Channel "))
        tails = map(itemgetter(0), map(str.partition, pieces[1:], repeat("\n")))
        keyed = (
            ((before, marker, "[send]" in after), tail)
            for (before, marker, after), tail in zip(prefixes, tails, strict=True)
        )
        for key in dict.fromkeys(keyed):
            (prefix, marker, sending), tail = key
            if marker and _first_sighting(self._seen_channels, key, len(prefix) + len(tail)):
                self._note_channel(prefix, tail, sending)

    def _scan_collnet(self, block: str) -> None:
        """``CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA``: a CollNet (SHARP) channel; its
        /GDRDMA says GPUDirect as a NET channel's does. It names no network: SHARP rides the IB NICs."""
        for line in block.splitlines():
            if "via COLLNET/" not in line:
                continue
            text = _clean(line)
            match = _COLLNET_TAIL.search(text)
            if match is None:
                continue
            host, rank, _ = self._prefix_fields(text[: match.start()])
            state = self._facts.rank(host, rank)
            gdr = "/GDRDMA" in match.group(2)
            for target in (self._facts, state):
                if target is None:
                    continue
                if gdr:
                    target.gdr_on = True
                else:
                    target.gdr_off = True

    def _note_channel(self, prefix: str, tail: str, sending: bool = False) -> None:
        tail = _clean(tail)
        match = _CHANNEL_TAIL.match(tail) if len(tail) <= _MAX_NAME_CHARS else None
        if match:
            host, rank, _ = self._prefix_fields(_clean(prefix))
            gdr = "/GDRDMA" in match.group(3)
            self._facts.note_channel(match.group(1), gdr, self._facts.rank(host, rank), sending)

    # ----------------------------------------------------------------- open states
    def _continue_state(self, line: str) -> bool:
        """Let a held WARN or a PyTorch error report absorb this line; True when absorbed."""
        if self._state == _PLAIN:
            return False
        text = _clean(line)
        if self._state == _WARN_HELD:
            wrapped = self._is_wrapped_part(text)
            if wrapped and self._held is not None:
                line_no, host, rank, message = self._held
                self._held = (line_no, host, rank, f"{message} {text.strip()}")
            self._end_pending()
            return wrapped
        return self._continue_report(text.strip())

    @staticmethod
    def _is_wrapped_part(text: str) -> bool:
        """The second half of a WARN wrapped onto the next physical line: no prefix, mid-sentence."""
        if not text or "NCCL" in text or _PREFIX.search(text[:_PREFIX_WINDOW]):
            return False
        return _WRAPPED_START.match(text) is not None

    def _continue_report(self, text: str) -> bool:
        """PyTorch report: 'NCCL error ...', 'ncclXxxError: ...', 'Last error:', then the detail."""
        if "NCCL INFO" in text or "NCCL WARN" in text:
            self._state = _PLAIN
            return False
        if self._state == _ERROR_DETAIL and text:
            self._state = _PLAIN
            self._record_error(None, self._report_rank, text)
            self._facts.verbs_evidence |= "Got completion" in text or "Got CQE" in text
            return True
        if text.startswith("Last error"):
            self._state, self._state_budget = _ERROR_DETAIL, 2
            return True
        self._state_budget -= 1
        if self._state_budget <= 0:
            self._state = _PLAIN
        return not text or _TORCH_ERROR_NAME.match(text) is not None

    def _end_pending(self) -> None:
        if self._held is not None:
            line_no, host, rank, message = self._held
            self._held = None
            self._store_error(line_no, host, rank, message)
        self._state = _PLAIN

    # ----------------------------------------------------------------- line handlers
    def _handle_marked(self, text: str) -> None:
        """A marked line from its "NCCL" on: ``NCCL version ...`` or ``NCCL INFO <fact>``."""
        if text.startswith("NCCL version"):
            self._facts.note_version(text, reported=False)
        elif text.startswith("NCCL INFO "):
            self._handle_info(text[10:].strip())

    def _handle_info(self, message: str) -> None:
        facts = self._facts
        if message.startswith("NET/"):
            self._handle_net_message(message)
        elif message.startswith("GPU Direct RDMA "):
            facts.note_gdr_line(message)
        elif message.startswith(("P2P plugin IB", "NCCL_IB_HCA set")):
            facts.ib_sought = True
        elif message.startswith("NCCL_IB_DISABLE set by environment to "):
            facts.socket_chosen |= message.rstrip(".").endswith(" 1")
        elif message.startswith("NCCL_NET set by environment to "):
            facts.socket_chosen |= _SOCKET_NAME.search(message[31:]) is not None
        elif message.startswith("Failed to initialize NET plugin "):
            name = message[32:].strip()[:_MAX_NAME_CHARS]
            if name and name not in facts.failed_plugins and len(facts.failed_plugins) < 64:
                facts.failed_plugins.append(name)
            facts.ib_missing |= name in ("IB", "IBext")
        if "Init COMPLETE" in message:
            facts.init_complete = True

    def _handle_failure(self, line: str) -> None:
        """A WARN line, or a PyTorch report line outside the NCCL prefix format."""
        text = _clean(line)
        warn = text.find("NCCL WARN ")
        if warn >= 0:
            self._handle_warn(text[:warn], text[warn + 10 :].strip())
        else:
            self._handle_report(text.strip())

    def _note_using(self, prefix: str, name: str) -> None:
        if 0 < len(name) <= _MAX_NAME_CHARS:
            host, rank, _ = self._prefix_fields(prefix)
            self._facts.note_using(name, self._facts.rank(host, rank))

    def _handle_net_message(self, message: str) -> None:
        match = _NET_MESSAGE.match(message)
        if match is None:
            return
        name, rest = match.group(1), match.group(2)
        facts = self._facts
        if rest.startswith("Using ["):
            facts.note_devices(name, rest)
        elif rest.startswith("No device found"):
            rdma_name = _RDMA_NAME.search(name) is not None
            facts.ib_sought |= rdma_name
            facts.ib_missing |= rdma_name
        elif "GPU Direct RDMA " in rest:
            facts.note_gdr_line(rest)
        elif name == "OFI" and rest.lower().startswith("selected provider is "):
            # 'Selected Provider is efa (found 4 nics)' and newer 'Selected provider is efa, fabric is
            # efa-direct (found 32 nics)': the provider is the first word.
            provider = rest[21 : 21 + _MAX_NAME_CHARS].split(",")[0].split(" ")[0]
            facts.ofi_provider = facts.ofi_provider or provider

    def _handle_warn(self, prefix: str, message: str) -> None:
        host, rank, source = self._prefix_fields(prefix)
        facts = self._facts
        facts.seen_nccl = True
        net = _NET_MESSAGE.match(message)
        if net is not None:
            facts.verbs_evidence |= _RDMA_NAME.search(net.group(1)) is not None
            if source.startswith("transport/net"):
                facts.warn_network = facts.warn_network or net.group(1)
        facts.verbs_evidence |= "Got completion" in message or "Got CQE" in message
        facts.ib_sought |= "libibverbs" in message
        if not _BENIGN_WARN.search(message):
            self._held = (self._line_number(), host, rank, message)
            self._state = _WARN_HELD

    def _handle_report(self, text: str) -> None:
        """Lines outside the NCCL prefix format: PyTorch 'NCCL error' reports and watchdog timeouts."""
        rank_match = _TORCH_RANK.search(text)
        rank = int(rank_match.group(1)) if rank_match else None
        if "NCCL error" in text:
            self._facts.note_version(text, reported=True)
            self._record_error(None, rank, text)
            self._state, self._state_budget, self._report_rank = _ERROR_REPORT, 3, rank
        elif "collective operation timeout" in text or "before timing out" in text:
            self._record_error(None, rank, text)

    def _record_error(self, host: str | None, rank: int | None, message: str) -> None:
        self._store_error(self._line_number(), host, rank, message)

    def _store_error(self, line_no: int, host: str | None, rank: int | None, message: str) -> None:
        self._facts.seen_nccl = True
        self._error_count += 1
        if len(self._errors) < MAX_ERRORS:
            message = message[:MAX_MESSAGE_CHARS]
            status, vendor_err = completion_status(message)
            self._errors.append(NcclError(line_no, host, rank, message, status, vendor_err))

    def _prefix_fields(self, prefix: str) -> tuple[str | None, int | None, str]:
        """(host, bracketed device, source file) from ``host:pid:tid [dev] [file.cc:123]``."""
        prefix = prefix[-_PREFIX_WINDOW:]
        if prefix in self._prefixes:
            cached = self._prefixes[prefix]
        else:
            match = _PREFIX.search(prefix)
            cached = (match.group(1), int(match.group(4)), match.group(5).strip()) if match else None
            if len(self._prefixes) >= _CACHE_LIMIT:
                self._prefixes.clear()
            self._prefixes[prefix] = cached
        return cached if cached is not None else (None, None, prefix.strip())


def parse_nccl_log(lines: Iterable[str] | str, source: str = "<text>") -> NcclLogSummary:
    """Parse a whole log given as one string or as an iterable of lines."""
    parser = NcclLogParser(source)
    if isinstance(lines, str):
        parser.feed_chunk(lines)
    else:
        for line in lines:
            parser.feed(line)
    return parser.result()


def nccl_log_facts(summary: NcclLogSummary) -> dict[str, object]:
    """The facts a careful human reads from the log: exactly the keys of the corpus truth files."""
    return {
        "nccl_version": summary.nccl_version,
        "network": summary.network,
        "rdma": summary.rdma,
        "link_layers": list(summary.link_layers),
        "hcas": list(summary.hcas),
        "gdr": summary.gdr,
        "errors": bool(summary.errors),
    }
