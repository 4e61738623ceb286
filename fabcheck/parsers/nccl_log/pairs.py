"""Which pairs of ranks the log connects, over which transport, and on which hosts (for nccl.pair_transport).

A channel line (fabcheck.parsers.nccl_log.channels) names two ranks; the line prefix ``host:pid:tid [dev]``
names the host of the rank that printed it (the receiver of a ``[receive]`` line, else the sender). A rank's
``ncclCommInitRank comm ... rank R`` and ``comm ... rank R nRanks`` lines name its host too. A rank number
seen on two hosts (a log of several communicators or jobs) is ambiguous: its pairs are not judged.

Each (rank, peer, transport) is kept once, with the first line that showed it, up to MAX_PAIRS.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import itemgetter

from fabcheck.parsers.nccl_log.channels import NET, P2P, SHM, read_channel
from fabcheck.parsers.nccl_log.lines import CACHE_LIMIT, clean_line
from fabcheck.parsers.nccl_log.records import MAX_MESSAGE_CHARS, MAX_RANKS, RankPair

MAX_PAIRS = 100_000
_MARKERS = ("NCCL INFO Channel ", "NCCL INFO Ring ")
# sender[dev] -> receiver[dev] [send|receive], as the text before " via " (the bracket: a device or busId)
_ENDS = re.compile(
    r"(\d{1,9})(?:\[[0-9a-fA-F]{1,16}\])? -> (\d{1,9})(?:\[[0-9a-fA-F]{1,16}\])?(?: \[(send|receive)\])?$"
)
_KINDS = {"NET": NET, "P2P": P2P, "SHM": SHM, "dir": SHM}  # 'direct shared memory': 2.4-2.6 SHM
_HEAD_WINDOW = 512  # the line prefix is looked for in the text right before the marker
# The `host:pid:tid [dev] ` prefix at the end of the text before a marker (after a launcher tag or a
# timestamp, if any).
_HEAD_HOST = re.compile(r"(?:^|\s)([^\s\[\]:]{1,255}):\d{1,10}:\d{1,10} \[\d{1,6}\]\s*$", re.ASCII)
# Where a line's host stands: at its start, after an optional launcher tag (`[155] `, Open MPI's
# --tag-output rank). A line with a timestamp or other text before its prefix is not read here (NCCL
# prints none; pasted logs may), nor a line without a prefix: it names no host.
_LINE_HOST = r"\n(?:\[\d{1,9}\] )?([^\s\[\]:]{1,255}):\d{1,10}:\d{1,10} \[\d{1,6}\] ?NCCL INFO "
# (host, rank, nranks) of `ncclCommInitRank comm ... rank R nranks N` and `comm ... rank R nRanks N`.
_RANK_KEY = re.compile(
    _LINE_HOST + r"(?:ncclCommInitRank )?comm \S{1,40} rank (\d{1,9}) n[Rr]anks (\d{1,9})",
    re.ASCII,
)
_AMBIGUOUS = ""


class PairReader:
    """Reads the channel and rank lines of each block of whole lines (NcclLogParser feeds it)."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[int, int, str], tuple[str | None, str, int, str]] = {}
        self._hosts: dict[int, str] = {}  # rank -> host; _AMBIGUOUS when two hosts claim it
        self.dropped = 0
        self.nranks: int | None = None
        self._heads: dict[str, str | None] = {}  # line prefix -> its host

    def scan(self, block: str, first_line: int) -> None:
        """``first_line``: the 1-based number of the block's first line."""
        if "NCCL INFO comm" in block or "NCCL INFO ncclCommInitRank" in block:
            # The pattern starts with the line's newline, so the regex engine skips to line starts.
            for host, rank, nranks in dict.fromkeys(_RANK_KEY.findall("\n" + block)):
                self.nranks = max(self.nranks or 0, int(nranks))
                self._note_host(int(rank), host)
        if " via " not in block:
            return
        # C-level passes cut each channel line into the text before its marker (the line prefix), its two
        # ranks and direction, and its transport's first letters; only distinct ones reach Python code.
        fresh: dict[tuple[int, int, str], list[tuple[str, str, str]]] = {}
        for marker in _MARKERS:
            if marker not in block:
                continue
            pieces = block.split(marker)
            heads = map(itemgetter(2), map(str.rpartition, pieces[:-1], repeat("\n")))
            tails = map(itemgetter(0), map(str.partition, pieces[1:], repeat("\n")))
            cuts = list(
                map(
                    str.partition,
                    map(itemgetter(2), map(str.partition, tails, repeat(" : "))),
                    repeat(" via "),
                )
            )
            ends = map(itemgetter(0), cuts)
            kinds = map(str.__getitem__, map(itemgetter(2), cuts), repeat(slice(0, 3)))
            for head, before, kind in dict.fromkeys(zip(heads, ends, kinds, strict=True)):
                self._note(marker, head, before, kind, fresh)
        if fresh:
            self._locate(block, first_line, fresh)

    def _note(
        self,
        marker: str,
        head: str,
        ends: str,
        kind: str,
        fresh: dict[tuple[int, int, str], list[tuple[str, str, str]]],
    ) -> None:
        """Note the printing rank's host, and the pair when it is new."""
        match = _ENDS.match(ends)
        transport = _KINDS.get(kind)
        if match is None or transport is None:
            return
        sender, receiver, direction = int(match.group(1)), int(match.group(2)), match.group(3)
        rank, peer = (receiver, sender) if direction == "receive" else (sender, receiver)
        host = self._head_host(head)
        if host is not None:
            self._note_host(rank, host)
        pair = (rank, peer, transport)
        if pair in self._pairs:
            return
        if pair not in fresh and len(self._pairs) + len(fresh) >= MAX_PAIRS:
            self.dropped += 1
            return
        # Every form of the pair in this block: _locate keeps the one the log prints first.
        fresh.setdefault(pair, []).append((head, marker, ends + " via " + kind))

    def _head_host(self, head: str) -> str | None:
        window = head[-_HEAD_WINDOW:]  # the cache holds bounded keys, whatever a line's length
        if window not in self._heads:
            if len(self._heads) >= CACHE_LIMIT:
                self._heads.clear()
            found = _HEAD_HOST.search(clean_line(window))
            self._heads[window] = found.group(1) if found else None
        return self._heads[window]

    def _locate(
        self, block: str, first_line: int, fresh: dict[tuple[int, int, str], list[tuple[str, str, str]]]
    ) -> None:
        """Each fresh pair's first line in the block: its number, text and transport path."""
        placed = []
        for pair, candidates in fresh.items():
            found = [
                (pos, head)
                for head, marker, begins in candidates
                if (pos := self._find(block, head, marker, begins)) >= 0
            ]
            if found:
                pos, head = min(found)
                placed.append((pos, pair, head))
        counted, line = 0, first_line
        for pos, pair, head in sorted(placed):
            line += block.count("\n", counted, pos)
            counted = pos
            end = block.find("\n", pos)
            raw = block[pos : end if end >= 0 else len(block)]
            # The channel text starts at the marker (a line may hold an earlier 'NCCL INFO' of its own).
            channel = read_channel(clean_line(raw[len(head) + 10 :]))
            path = channel.path if channel is not None else clean_line(raw.partition(" via ")[2])[:200]
            text = clean_line(raw).strip()[-MAX_MESSAGE_CHARS:]
            self._pairs[pair] = (self._head_host(head), path, line, text)

    def _find(self, block: str, head: str, marker: str, begins: str) -> int:
        """Where the first line of ``head + marker`` that goes on with ``begins`` starts; -1 if none."""
        start = head + marker
        pos = block.find(start)
        while pos >= 0 and not (
            (pos == 0 or block[pos - 1] == "\n") and self._goes_on(block, pos + len(start), begins)
        ):
            pos = block.find(start, pos + 1)
        return pos

    @staticmethod
    def _goes_on(block: str, after_marker: int, begins: str) -> bool:
        """The line whose marker ends at ``after_marker`` goes on, past its channel number, with `begins`."""
        tail = block[after_marker : block.find("\n", after_marker)]
        return tail.partition(" : ")[2].startswith(begins)

    def pairs(self) -> tuple[RankPair, ...]:
        found = []
        for (rank, peer, transport), (host, path, line, text) in self._pairs.items():
            known = self._hosts.get(rank, host)
            found.append(
                RankPair(
                    rank=rank,
                    host=None if known == _AMBIGUOUS else known,
                    peer=peer,
                    peer_host=self._hosts.get(peer) or None,
                    transport=transport,
                    path=path,
                    line=line,
                    text=text,
                )
            )
        return tuple(found)

    def rank_hosts(self) -> tuple[tuple[int, str], ...]:
        return tuple(sorted((rank, host) for rank, host in self._hosts.items() if host != _AMBIGUOUS))

    def ambiguous(self) -> tuple[int, ...]:
        return tuple(sorted(rank for rank, host in self._hosts.items() if host == _AMBIGUOUS))

    def _note_host(self, rank: int, host: str) -> None:
        known = self._hosts.get(rank)
        if known is None:
            if len(self._hosts) < MAX_RANKS:
                self._hosts[rank] = host
        elif known != host:
            self._hosts[rank] = _AMBIGUOUS
