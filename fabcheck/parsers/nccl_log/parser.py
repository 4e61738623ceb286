"""The streaming NCCL_DEBUG=INFO log parser: the block scanner and its line handlers (rules in the
package docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from itertools import repeat
from operator import itemgetter

from fabcheck.errors import ParseError
from fabcheck.parsers.nccl_log.facts import MAX_NAME_CHARS, RDMA_NAME, SOCKET_NAME, Facts
from fabcheck.parsers.nccl_log.failures import completion_status
from fabcheck.parsers.nccl_log.lines import CACHE_LIMIT, LineBlocks, clean_line, first_sighting
from fabcheck.parsers.nccl_log.pairs import PairReader
from fabcheck.parsers.nccl_log.records import MAX_ERRORS, MAX_MESSAGE_CHARS, NcclError, NcclLogSummary

_PREFIX_WINDOW = 512  # the line prefix is looked for in the text right before the NCCL marker

# Every line worth a look (besides NET channel lines) holds a match, which runs to the line end.
_MARKED = re.compile(
    r"NCCL(?: (?:INFO (?:Using network |NET/|GPU Direct RDMA |P2P plugin IB|Failed to initialize NET plugin "
    r"|NCCL_(?:IB_DISABLE|IB_HCA|NET) set|.{0,400}?Init COMPLETE)|WARN |version \d|error)|\(SeqNum)[^\n]*"
)
# Lines quoted without NCCL's 'host:pid:tid [d] NCCL INFO' prefix (pasted into docs or issues) that open
# with one of the messages the proof reads: they get the marker back, so one scanner reads both forms.
_BARE = re.compile(
    r"^(?P<lead>[ \t]*)(?=(?:NET/\S+ ?: ?(?:Using \[|No device found|GPU Direct RDMA |Selected [Pp]rovider )"
    r"|Using network |GPU Direct RDMA |Channel \d+/\d+ ?: |(?:Channel|Ring) \d+ ?: \d+\S* -> "
    r"|CollNet \d+/\d+ ?: "
    r"|Failed to initialize NET plugin |comm 0x[0-9a-f]+ rank |ncclComm\w* comm 0x))",
    re.MULTILINE,
)
# Lines that must be read in order with their prefix and line number: failures.
_IN_ORDER = re.compile(r"NCCL(?: (?:WARN |error)|\(SeqNum)")
_IN_ORDER_MARKERS = ("NCCL WARN ", "NCCL error", "NCCL(SeqNum")
# Lines whose prefix tells which rank they describe. (NCCL 2.27+ also prints "Assigned NET plugin
# X to comm" next to each of them, naming the same X.)
_USING_MARKER = "NCCL INFO Using network "
_PREFIX = re.compile(r"([^\s\[\]:]{1,255}):(\d{1,10}):(\d{1,10}) \[(\d{1,6})\]\s*(.*)$", re.ASCII)
_TORCH_RANK = re.compile(r"\[[Rr]ank ?(\d{1,9})\]", re.ASCII)
_NET_MESSAGE = re.compile(r"NET/([^\s:]{1,200})(?=[\s:]|$)\s*:?\s*(.*)$")
_CHANNEL_TAIL = re.compile(r"(.+?)/(\d+)(?:\(\d+\))?((?:/[A-Za-z]+)*)$", re.ASCII)
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
_COLLNET_TAIL = re.compile(r"via COLLNET/([^/\s]{1,200})/\d+((?:/[A-Za-z]+)*)", re.ASCII)

# What the line after the current one may be: nothing special, the second half of a WARN that
# was wrapped, the body of a PyTorch "NCCL error" report, or the detail line after "Last error:".
_PLAIN, _WARN_HELD, _ERROR_REPORT, _ERROR_DETAIL = range(4)


class NcclLogParser:
    """Feed lines (``feed``) or arbitrary slices of the log (``feed_chunk``), then ``result()``.

    Both paths go through the same block scanner, so they give identical summaries.
    """

    def __init__(self, source: str = "<text>") -> None:
        self.source = source
        self._blocks = LineBlocks()
        self._facts = Facts()
        self._pairs = PairReader()
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
            summary = self._facts.summary(self._lines, self._errors, self._error_count)
            self._finished = replace(
                summary,
                pairs=self._pairs.pairs(),
                ambiguous_ranks=self._pairs.ambiguous(),
                pairs_dropped=self._pairs.dropped,
                nranks=self._pairs.nranks,
                rank_hosts=self._pairs.rank_hosts(),
            )
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
        self._pairs.scan(block, self._counted_line)
        if not self._facts.seen_nccl and ("NCCL INFO" in block or "NCCL WARN" in block):
            self._facts.seen_nccl = True
        if "via COLLNET/" in block:
            self._scan_collnet(block)
        if "via NET/" in block:
            # NCCL 2.4-2.6 print 'Ring NN : a -> b [send] via NET/...' where later releases say Channel.
            ring = "NCCL INFO Ring " in block
            self._scan_channels(block.replace("NCCL INFO Ring ", "NCCL INFO Channel ") if ring else block)
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
            elif first_sighting(self._seen_marked, found, len(found)):
                self._handle_marked(clean_line(found))
        return in_order, using

    def _scan_using_lines(self, block: str) -> None:
        """``<prefix> NCCL INFO Using network X``: note X for the rank named by each new prefix."""
        pieces = block.split(_USING_MARKER)
        heads = map(itemgetter(2), map(str.rpartition, pieces[:-1], repeat("\n")))
        names = map(itemgetter(0), map(str.partition, pieces[1:], repeat("\n")))
        for prefix, name in dict.fromkeys(zip(heads, names, strict=True)):
            if first_sighting(self._seen_using, (prefix, name), len(prefix) + len(name)):
                self._note_using(clean_line(prefix), clean_line(name).strip())

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
            if marker and first_sighting(self._seen_channels, key, len(prefix) + len(tail)):
                self._note_channel(prefix, tail, sending)

    def _scan_collnet(self, block: str) -> None:
        """``CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA``: a CollNet (SHARP) channel; its
        /GDRDMA says GPUDirect as a NET channel's does. It names no network: SHARP rides the IB NICs."""
        for line in block.splitlines():
            if "via COLLNET/" not in line:
                continue
            text = clean_line(line)
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
        tail = clean_line(tail)
        match = _CHANNEL_TAIL.match(tail) if len(tail) <= MAX_NAME_CHARS else None
        if match:
            host, rank, _ = self._prefix_fields(clean_line(prefix))
            gdr = "/GDRDMA" in match.group(3)
            self._facts.note_channel(match.group(1), gdr, self._facts.rank(host, rank), sending)

    # ----------------------------------------------------------------- open states
    def _continue_state(self, line: str) -> bool:
        """Let a held WARN or a PyTorch error report absorb this line; True when absorbed."""
        if self._state == _PLAIN:
            return False
        text = clean_line(line)
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
            facts.socket_chosen |= SOCKET_NAME.search(message[31:]) is not None
        elif message.startswith("Failed to initialize NET plugin "):
            name = message[32:].strip()[:MAX_NAME_CHARS]
            if name and name not in facts.failed_plugins and len(facts.failed_plugins) < 64:
                facts.failed_plugins.append(name)
            facts.ib_missing |= name in ("IB", "IBext")
        if "Init COMPLETE" in message:
            facts.init_complete = True

    def _handle_failure(self, line: str) -> None:
        """A WARN line, or a PyTorch report line outside the NCCL prefix format."""
        text = clean_line(line)
        warn = text.find("NCCL WARN ")
        if warn >= 0:
            self._handle_warn(text[:warn], text[warn + 10 :].strip())
        else:
            self._handle_report(text.strip())

    def _note_using(self, prefix: str, name: str) -> None:
        if 0 < len(name) <= MAX_NAME_CHARS:
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
            rdma_name = RDMA_NAME.search(name) is not None
            facts.ib_sought |= rdma_name
            facts.ib_missing |= rdma_name
        elif "GPU Direct RDMA " in rest:
            facts.note_gdr_line(rest)
        elif name == "OFI" and rest.lower().startswith("selected provider is "):
            # 'Selected Provider is efa (found 4 nics)' and newer 'Selected provider is efa, fabric is
            # efa-direct (found 32 nics)': the provider is the first word.
            provider = rest[21 : 21 + MAX_NAME_CHARS].split(",")[0].split(" ")[0]
            facts.ofi_provider = facts.ofi_provider or provider

    def _handle_warn(self, prefix: str, message: str) -> None:
        host, rank, source = self._prefix_fields(prefix)
        facts = self._facts
        facts.seen_nccl = True
        net = _NET_MESSAGE.match(message)
        if net is not None:
            facts.verbs_evidence |= RDMA_NAME.search(net.group(1)) is not None
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
            if len(self._prefixes) >= CACHE_LIMIT:
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
