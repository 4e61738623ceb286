"""Every NCCL channel line read with its transport, in each release's form (tests/data/real/nccl/INDEX.tsv):
2.4 `Ring NN : a -> b [send] via NET/IB/0` and `a[d] -> b[d] via P2P/IPC`, 2.5-2.18 busId brackets, 2.19+
`Channel NN/C`; a start-up `NET/Socket : Using` or `Bootstrap : Using` line is never the data path."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from fabcheck.parsers.nccl_log import MAX_MESSAGE_CHARS, NcclLogParser, parse_nccl_log
from fabcheck.parsers.nccl_log import lines as nccl_log_lines
from fabcheck.parsers.nccl_log.channels import NET, P2P, SHM, read_channel
from fabcheck.parsers.nccl_ranks import parse_nccl_ranks

REAL = Path(__file__).parents[1] / "data" / "real" / "nccl"


def real(name: str) -> str:
    return (REAL / name).read_text()


# Each form as NVIDIA/nccl prints it (the INFO format strings of src/transport/{p2p,net,shm}.cc at v2.4.8-1,
# v2.5.6-1 and 5067397c2676d5aed50042fc39e5c8ee96eb0027), with the fields read back.
@pytest.mark.parametrize(
    ("message", "read"),
    [
        ("Ring 00 : 6 -> 2 [receive] via NET/IB/0", (2, 6, "receive", NET, "IB", False)),
        ("Ring 01 : 3 -> 6 [send] via NET/IB/0/GDRDMA", (3, 6, "send", NET, "IB", False)),
        ("Ring 00 : 3[3] -> 1[1] via P2P/IPC", (3, 1, None, P2P, None, False)),
        ("Ring 00 : 0[0] -> 1[1] via direct shared memory", (0, 1, None, SHM, None, False)),
        ("Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC", (155, 157, None, P2P, None, False)),
        (
            "Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA",
            (0, 2, "receive", NET, "IB", False),
        ),
        ("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", (0, 1, None, P2P, None, False)),
        ("Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL", (0, 4, None, P2P, None, False)),
        ("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", (0, 1, None, SHM, None, False)),
        ("Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0", (0, 8, "send", NET, "Socket", True)),
        (
            "Channel 00/0 : 3[3] -> 4[0] [send] via NET/NCCL RDMA Plugin v6/1/GDRDMA/Shared",
            (3, 4, "send", NET, "NCCL RDMA Plugin v6", False),
        ),
    ],
)
def test_each_release_s_channel_form(message: str, read: tuple[object, ...]) -> None:
    line = read_channel(message)
    assert line is not None
    assert (line.rank, line.peer, line.direction, line.transport, line.network, line.tcp) == read


@pytest.mark.parametrize(
    "message",
    [
        "Ring 00 : 9 -> 0 -> 7",  # 2.22's ring neighbours: no transport
        "Channel 00/16 :    0   7   6   5   4   3   2   1   8  15",  # ring order
        "Channel 00/02 :    0   1",
        "CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA",
        "NET/Socket : Using [0]eth0:10.128.0.52<0>",
        "Bootstrap : Using [0]eth0:10.100.62.64<0>",
    ],
)
def test_lines_that_are_no_channel(message: str) -> None:
    assert read_channel(message) is None


def test_2_4_socket_line_before_the_ib_list_is_not_the_network() -> None:
    # 2.4 prints NET/Socket : Using at start-up, then the IB list it uses, and no 'Using network' line.
    summary = parse_nccl_log(real("nv-peer-memory-56-2.4.7-socket-line-then-ib-list.txt"))
    assert (summary.nccl_version, summary.network, summary.rdma, summary.hcas) == (
        "2.4.7",
        "IB",
        True,
        ("mlx5_0",),
    )
    assert not summary.socket_fallback


def test_2_4_ring_lines_are_channels_with_their_transport_and_hosts() -> None:
    summary = parse_nccl_log(real("nv-peer-memory-56-2.4-ring-lines-p2p-ipc-and-net-ib.txt"))
    assert (summary.network, summary.rdma, summary.gdr) == ("IB", True, False)
    pairs = {(p.rank, p.host, p.peer, p.peer_host, p.transport) for p in summary.pairs}
    assert pairs == {
        (3, "master_node", 1, "master_node", P2P),
        (7, "secondary_node", 5, "secondary_node", P2P),
        (2, "master_node", 6, "secondary_node", NET),
        (0, "master_node", 2, "master_node", P2P),
        (1, "master_node", 0, "master_node", P2P),
        (5, "secondary_node", 4, "secondary_node", P2P),
        (4, "secondary_node", 6, "secondary_node", P2P),
        (6, "secondary_node", 2, "master_node", NET),
        (3, "master_node", 6, "secondary_node", NET),
    }
    first = next(p for p in summary.pairs if p.rank == 2)
    assert (first.line, first.path) == (4, "NET/IB/0")
    assert first.text.endswith("Ring 00 : 6 -> 2 [receive] via NET/IB/0")
    # The per-rank parser keeps the same lines apart, NET ones with their device and GDR.
    ranks = parse_nccl_ranks(real("nv-peer-memory-56-2.4-ring-lines-p2p-ipc-and-net-ib.txt"))
    sending = next(r for r in ranks if (r.host, r.cuda_dev, r.pid) == ("master_node", 3, 11718))
    assert [(c.line.transport, c.line.peer) for c in sending.channels] == [(P2P, 1), (NET, 6)]
    assert [(n.peer, n.direction, n.device, n.gdr) for n in sending.net_channels] == [(6, "send", 0, False)]


def test_2_5_busid_brackets_and_a_launcher_tag() -> None:
    text = real("nccl-302-2.5.6-ring-busid-p2p-ipc-launcher-tag.txt")
    (rank,) = parse_nccl_ranks(text)
    assert [(c.line.rank, c.line.peer, c.line.path) for c in rank.channels] == [
        (155, 157, "P2P/IPC"),
        (155, 153, "P2P/IPC"),
        (155, 154, "P2P/IPC"),
    ]
    summary = parse_nccl_log(text)
    assert {(p.host, p.peer_host) for p in summary.pairs} == {("crow-ib-new-nccl-256-info-19", None)}
    assert summary.network == "IB"  # the Bootstrap line is no network


def test_2_7_busid_net_channels_on_one_host() -> None:
    text = real("nccl-707-2.7.6-one-host-net-ib-loopback-p2p-level-loc.txt")
    summary = parse_nccl_log(text)
    assert {(p.host, p.peer_host, p.transport) for p in summary.pairs} == {
        ("10-90-43-152", "10-90-43-152", NET)
    }
    assert {frozenset((p.rank, p.peer)) for p in summary.pairs} == {
        frozenset(pair) for pair in ((0, 1), (0, 2), (0, 3), (1, 2), (2, 3))
    }
    ranks = parse_nccl_ranks(text)
    assert all(c.gdr for r in ranks for c in r.net_channels) and sum(len(r.net_channels) for r in ranks) == 12


def test_comm_lines_name_each_rank_s_host_and_the_communicator_size() -> None:
    summary = parse_nccl_log(real("nccl-1412-2.2x-comm-lines-nranks-16-nnodes-2-mnnvl-0.txt"))
    assert summary.nranks == 16 and summary.pairs == ()
    assert summary.rank_hosts == tuple((rank, "swat1-04") for rank in (3, 5, 6, 7))
    # The per-rank parser keeps each rank's MNNVL flag with its line (NCCL src/init.cc: `... MNNVL %d`).
    ranks = parse_nccl_ranks(real("nccl-1412-2.2x-comm-lines-nranks-16-nnodes-2-mnnvl-0.txt"))
    flags = {r.cuda_dev: r.mnnvl for r in ranks if r.mnnvl is not None}
    assert sorted(flags) == [3, 5, 6, 7] and not any(flag for flag, _ in flags.values())
    assert flags[6][1].text.endswith("rank 6 nRanks 16 nNodes 2 localRanks 8 localRank 6 MNNVL 0")


def test_one_rank_s_log_of_a_socket_job() -> None:
    summary = parse_nccl_log(real("hypercomputer-lab12-2.22.3-a3-rank0-socket-excerpt.txt"))
    assert (summary.network, summary.rdma, summary.nranks) == ("Socket", False, 16)
    assert {(p.rank, p.peer, p.transport, p.path, p.peer_host) for p in summary.pairs} == {
        (0, 1, P2P, "P2P/CUMEM", None),
        (0, 8, NET, "NET/Socket/0", None),
    }
    assert summary.rank_hosts == ((0, "gke-hypercomputer-a3-a3-high-flex-poo-27562461-njnx"),)


def test_a_rank_number_on_two_hosts_is_ambiguous() -> None:
    lines = [
        "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
        "b:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
        "a:1:2 [1] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0",
    ]
    summary = parse_nccl_log("\n".join(lines))
    assert summary.ambiguous_ranks == (0,)
    assert {(p.host, p.peer_host) for p in summary.pairs} == {(None, "a")}


def test_a_channel_line_behind_megabytes_keeps_a_bounded_quote() -> None:
    line = "x" * 300_000 + " h1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"
    (pair,) = parse_nccl_log(
        line + "\nh1:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM\n"
    ).pairs[:1]
    assert (pair.host, pair.peer_host, pair.transport) == ("h1", "h1", P2P)
    assert len(pair.text) <= MAX_MESSAGE_CHARS and pair.text.endswith("via P2P/CUMEM")
    # A line that runs on past its path is no channel: the path is at most 200 characters.
    assert read_channel("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM " + "y" * 300) is None


@pytest.mark.parametrize(
    "text",
    [
        # Hypothesis's find: a line holding two prefixes, then the same channel line on its own.
        "gpu1:100:200 [0] NCCL INFO bigo:1884:2298 [0] NCCL INFO Channel 00/0 : 1[0] -> 2[0] [receive] via "
        "NET/IBext_v8/1\n"
        "bigo:1884:2298 [0] NCCL INFO Channel 00/0 : 1[0] -> 2[0] [receive] via NET/IBext_v8/1\n",
        # One pair in two forms (a log of two releases): the first printed is kept, whatever the blocks.
        "a:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC\n"
        "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n",
    ],
)
def test_pairs_do_not_depend_on_block_boundaries(text: str) -> None:
    whole = parse_nccl_log(text)
    assert len(whole.pairs) == 1 and whole.pairs[0].line == 1
    for block in (1, 7, 40, len(text)):
        with mock.patch.object(nccl_log_lines, "BLOCK_CHARS", block):
            parser = NcclLogParser()
            for start in range(0, len(text), 13):
                parser.feed_chunk(text[start : start + 13])
            assert parser.result().pairs == whole.pairs, block
