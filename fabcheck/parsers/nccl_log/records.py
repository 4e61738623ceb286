"""What a parsed NCCL log shows: its failures, each rank's network, the summary and its truth facts."""

from __future__ import annotations

from dataclasses import dataclass

MAX_ERRORS = 1000
MAX_RANKS = 65536
MAX_MESSAGE_CHARS = 2000  # error messages are kept up to this length


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
class RankPair:
    """A pair of ranks a channel line connects (fabcheck.parsers.nccl_log.pairs): ``rank`` printed ``line``
    on ``host``; a host is None where the log does not tell it (or two hosts claim the rank number)."""

    rank: int
    host: str | None
    peer: int
    peer_host: str | None
    transport: str  # NET, P2P or SHM
    path: str  # the text after "via"
    line: int
    text: str


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
    pairs: tuple[RankPair, ...] = ()  # each (rank, peer, transport) a channel line shows, first line kept
    ambiguous_ranks: tuple[int, ...] = ()  # rank numbers two hosts claim: their pairs are not judged
    pairs_dropped: int = 0  # channel pairs past MAX_PAIRS, not kept
    nranks: int | None = None  # the largest communicator size an init or comm line printed
    rank_hosts: tuple[tuple[int, str], ...] = ()  # (rank, host) as the line prefixes tell, by rank


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
