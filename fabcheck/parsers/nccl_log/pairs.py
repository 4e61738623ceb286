"""Which pairs of ranks the log connects, over which transport, and on which hosts (for nccl.pair_transport).

A channel line (fabcheck.parsers.nccl_log.channels) names two ranks; the line prefix ``host:pid:tid [dev]``
names the host of the rank that printed it (the receiver of a ``[receive]`` line, else the sender). A rank's
``ncclCommInitRank comm ... rank R`` and ``comm ... rank R nRanks`` lines name its host too. A rank number
seen on two hosts (a log of several communicators or jobs) is ambiguous: its pairs are not judged.

Each (rank, peer, transport) is kept once, with the first line that showed it, up to MAX_PAIRS.
"""

from __future__ import annotations

import re

from fabcheck.parsers.nccl_log.channels import read_channel
from fabcheck.parsers.nccl_log.lines import clean_line
from fabcheck.parsers.nccl_log.records import MAX_RANKS, RankPair

MAX_PAIRS = 100_000
_CHANNEL_MARK = re.compile(r"NCCL INFO (?:Channel|Ring) \d")
_RANK_MARK = re.compile(r"NCCL INFO (?:ncclCommInitRank )?comm \S{1,40} rank (\d{1,9}) n[Rr]anks (\d{1,9})")
_PREFIX = re.compile(
    r"([^\s\[\]:]{1,255}):\d{1,10}:\d{1,10} \[\d{1,6}\]\s*(?:\[[^\]]{0,80}\]\s*)?$", re.ASCII
)
_AMBIGUOUS = ""


class PairReader:
    """Reads the channel and rank lines of each block of whole lines (NcclLogParser feeds it)."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[int, int, str], tuple[str | None, str, int, str]] = {}
        self._hosts: dict[int, str] = {}  # rank -> host; _AMBIGUOUS when two hosts claim it
        self.dropped = 0
        self.nranks: int | None = None

    def scan(self, block: str, first_line: int) -> None:
        """``first_line``: the 1-based number of the block's first line."""
        if "NCCL INFO comm" in block or "NCCL INFO ncclCommInitRank" in block:
            for match in _RANK_MARK.finditer(block):
                self.nranks = max(self.nranks or 0, int(match.group(2)))
                host = self._host_before(block, match.start())
                if host is not None:
                    self._note_host(int(match.group(1)), host)
        if " via " not in block:
            return
        counted, line = 0, first_line
        for match in _CHANNEL_MARK.finditer(block):
            start = match.start()
            line_start = block.rfind("\n", 0, start) + 1
            line_end = block.find("\n", start)
            channel = read_channel(clean_line(block[start + 10 : line_end]))
            if channel is None:
                continue
            host = self._host_before(block, start)
            if host is not None:
                self._note_host(channel.rank, host)
            key = (channel.rank, channel.peer, channel.transport)
            if key in self._pairs:
                continue
            if len(self._pairs) >= MAX_PAIRS:
                self.dropped += 1
                continue
            line += block.count("\n", counted, line_start)
            counted = line_start
            text = clean_line(block[line_start:line_end]).strip()
            self._pairs[key] = (host, channel.path, line, text)

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

    @staticmethod
    def _host_before(block: str, marker: int) -> str | None:
        """The host of the ``host:pid:tid [dev]`` prefix right before the NCCL marker at ``marker``."""
        line_start = block.rfind("\n", 0, marker) + 1
        match = _PREFIX.search(clean_line(block[max(line_start, marker - 512) : marker]))
        return match.group(1) if match else None
