"""Tests for the streaming NCCL_DEBUG=INFO log parser: every recorded log, each quirk, robustness."""

from __future__ import annotations

import re
import time
import tracemalloc
from pathlib import Path
from unittest import mock

import pytest
from conftest import CORPUS, corpus_samples, corpus_truth
from hostile import hostile_text, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers.nccl_log import (
    BLOCK_CHARS,
    MAX_ERRORS,
    MAX_LINE_CHARS,
    MAX_MESSAGE_CHARS,
    NcclError,
    NcclLogParser,
    NcclLogSummary,
    RankNet,
    completion_status,
    nccl_log_facts,
    parse_nccl_log,
)
from fabcheck.parsers.nccl_log import lines as nccl_log_lines  # where the block sizes are read

SAMPLES = corpus_samples("nccl-log")
TESTS_SAMPLES = corpus_samples("nccl-tests")
P = "gpu1:100:200 [0] NCCL INFO "  # a typical line prefix for inline logs


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def _parse(*lines: str) -> NcclLogSummary:
    return parse_nccl_log(_log(*lines), source="inline.log")


def _lines_of(text: str) -> list[str]:
    """The log's lines as a file iterator yields them (split on newline only)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _by_lines(text: str) -> NcclLogSummary:
    return parse_nccl_log(_lines_of(text))


def _by_chunks(text: str, size: int) -> NcclLogSummary:
    parser = NcclLogParser()
    for start in range(0, len(text), size):
        parser.feed_chunk(text[start : start + size])
    return parser.result()


# --- every recorded log against its truth file ----------------------------------------------------


def test_corpus_has_nccl_log_samples_with_truth() -> None:
    assert len(SAMPLES) >= 18
    assert all(corpus_truth(sample) is not None for sample in SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_sample_matches_truth(sample: Path) -> None:
    truth = {
        k: v
        for k, v in (corpus_truth(sample) or {}).items()
        if k not in ("kind", "note", "verdict", "verdict_reason")
    }
    summary = parse_nccl_log(sample.read_text(), source=sample.name)
    assert nccl_log_facts(summary) == truth
    assert summary.lines == len(_lines_of(sample.read_text()))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_lines_and_odd_chunks_give_the_same_summary(sample: Path) -> None:
    text = sample.read_text()
    whole = parse_nccl_log(text)
    assert _by_lines(text) == whole
    for size in (1, 7, 113):
        assert _by_chunks(text, size) == whole


# --- NCCL lines inside nccl-tests outputs ---------------------------------------------------------


def _has_nccl_lines(text: str) -> bool:
    return re.search(r"NCCL (?:INFO|WARN) |NCCL version \d", text) is not None


@pytest.mark.parametrize("sample", TESTS_SAMPLES, ids=[s.stem for s in TESTS_SAMPLES])
def test_nccl_tests_outputs_parse_when_they_hold_nccl_lines(sample: Path) -> None:
    text = sample.read_text()
    if not _has_nccl_lines(text):
        with pytest.raises(ParseError, match="no NCCL log lines") as caught:
            parse_nccl_log(text, source=sample.name)
        assert caught.value.source == sample.name
        return
    summary = parse_nccl_log(text, source=sample.name)
    printed = re.search(r"NCCL version (\d+\.\d+\.\d+)", text)
    assert printed is not None and summary.nccl_version == printed.group(1)
    assert summary.errors == ()


def test_nccl_tests_sample_with_forced_gdr_shows_ibext_gdr() -> None:
    text = (CORPUS / "nccl-tests" / "all_reduce-293-a100pcie-2node-hdr-ib-sharp-gdr-forced.txt").read_text()
    facts = nccl_log_facts(parse_nccl_log(text))
    assert facts == {
        "nccl_version": "2.21.5",
        "network": "IBext_v8",
        "rdma": True,
        "link_layers": ["IB"],
        "hcas": ["mlx5_0"],
        "gdr": True,
        "errors": False,
    }


def test_interleaved_alltoall_output_reads_like_its_log_copy() -> None:
    interleaved = (CORPUS / "nccl-tests" / "alltoall-321-h20-roce-interleaved-info.txt").read_text()
    log_copy = (CORPUS / "nccl-log" / "nccl-tests-321-h20-vm-roce-tencent-plugin.txt").read_text()
    assert nccl_log_facts(parse_nccl_log(interleaved)) == nccl_log_facts(parse_nccl_log(log_copy))
    assert len(parse_nccl_log(interleaved).ranks) == 4


# --- per-rank network and GDR ---------------------------------------------------------------------


def test_ranks_carry_their_own_network_and_gdr() -> None:
    summary = _parse(
        "gpu1:100:100 [0] NCCL INFO Using network IB",
        "gpu2:300:300 [1] NCCL INFO Using network IB",
        "gpu1:100:150 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0/GDRDMA",
        "gpu2:300:350 [1] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [receive] via NET/IB/1",
        "gpu3:500:550 [2] NCCL INFO Channel 00/0 : 0[0] -> 2[2] [send] via NET/IB/2/GDRDMA",
    )
    assert summary.ranks == (
        RankNet("gpu1", 0, "IB", True),
        RankNet("gpu2", 1, "IB", False),
        RankNet("gpu3", 2, "IB", True),
    )
    assert summary.gdr is True  # any GDRDMA channel makes the log-level answer True


def test_mixed_gdr_receive_channels_make_the_rank_host_staged() -> None:
    summary = _parse(
        P + "Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/0/GDRDMA",
        P + "Channel 01/0 : 7[3] -> 0[0] [receive] via NET/IB/1",
    )
    assert summary.gdr is True  # log level: any GDRDMA channel (the truth files' rule)
    assert summary.ranks == (RankNet("gpu1", 0, "IB", False),)  # but this rank stages one NIC via host


def test_send_channels_without_gdrdma_do_not_make_a_rank_host_staged() -> None:
    # With GDR read off (NCCL_NET_GDR_READ=0) only receive channels print /GDRDMA.
    summary = _parse(
        P + "Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/0/GDRDMA",
        P + "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0",
    )
    assert summary.ranks == (RankNet("gpu1", 0, "IB", True),)


def test_rank_network_prefers_using_network_over_channels() -> None:
    summary = _parse(
        P + "Channel 00/1 : 1[0] -> 0[0] [receive] via NET/NCCL RDMA Plugin v6/0(2)/GDRDMA/Shared",
        P + "Using network IB",
    )
    assert summary.network == "IB"
    assert summary.ranks == (RankNet("gpu1", 0, "IB", True),)


def test_prefixes_behind_timestamps_ray_tags_ansi_and_citations() -> None:
    summary = _parse(
        "[2026-04-28 14:14:49] node-a:1:2 [3] NCCL INFO Channel 00/0 : 11[3] -> 3[3] [receive] "
        "via NET/IB/1/GDRDMA",
        "",
        "(Worker pid=9, ip=10.0.0.1) \x1b[36mnode-b:4:5 [2]\x1b[0m NCCL INFO Using network gIB",
        "[cite_start][... (Worker pid=9) [0m node-c:6:7 [1] NCCL INFO Channel 02/0 : 10[2] -> 2[2] [send] "
        "via NET/gIB/2/GDRDMA [cite: 1739]",
    )
    assert summary.ranks == (
        RankNet("node-a", 3, "IB", True),
        RankNet("node-b", 2, "gIB", None),
        RankNet("node-c", 1, "gIB", True),
    )
    assert summary.network == "gIB"


def test_old_nccl_2_7_channel_lines_with_bus_ids() -> None:
    summary = _parse(
        "host:1:2 [0] NCCL INFO Channel 00 : 3[c7000] -> 0[87000] [receive] via NET/IB/0/GDRDMA",
        "host:1:2 [0] NCCL INFO Channel 00 : 0[87000] -> 1[8d000] via P2P/IPC",
    )
    assert (summary.network, summary.gdr, summary.rdma) == ("IB", True, True)


# --- network, plugins, fallback -------------------------------------------------------------------


def test_socket_fallback_after_no_ib_device() -> None:
    summary = _parse(
        P + "NET/IB : No device found.",
        P + "NET/Socket : Using [0]eth0:10.0.0.1<0>",
        P + "Using network Socket",
    )
    assert (summary.network, summary.rdma, summary.socket_fallback) == ("Socket", False, True)
    assert (summary.hcas, summary.link_layers, summary.gdr) == ((), (), None)


def test_socket_chosen_on_purpose_is_not_a_fallback() -> None:
    summary = _parse(
        P + "NCCL_IB_DISABLE set by environment to 1.",
        P + "NET/IB : No device found.",
        P + "Using network Socket",
    )
    assert summary.rdma is False and summary.socket_fallback is False


def test_socket_without_any_ib_attempt_is_not_a_fallback() -> None:
    summary = _parse(P + "Channel 00/0 : 0[0] -> 1[2] [send] via NET/Socket/0")
    assert (summary.network, summary.rdma, summary.gdr, summary.socket_fallback) == (
        "Socket",
        False,
        False,
        False,
    )


def test_ib_plugin_that_finds_nothing_then_socket_is_a_fallback() -> None:
    summary = _parse(
        P + "P2P plugin v8 IBext_v8", P + "NET/IB : No device found.", P + "Using network Socket"
    )
    assert summary.socket_fallback is True


@pytest.mark.parametrize(
    ("lines", "network", "rdma"),
    [
        (["Using network NCCL RDMA Plugin v6"], "NCCL RDMA Plugin v6", True),
        (["Using network IBext_v8"], "IBext_v8", True),
        (["NET/FastSocket : Using [0]ibs108:10.0.19.12<0> [1]ibs109:10.0.19.13<0>"], "FastSocket", False),
        (
            ["NET/OFI Selected Provider is efa (found 4 nics)", "Using network AWS Libfabric"],
            "AWS Libfabric",
            True,
        ),
        (
            ["NET/OFI Selected Provider is tcp (found 1 nics)", "Using network AWS Libfabric"],
            "AWS Libfabric",
            False,
        ),
        (["Using network AWS Libfabric"], "AWS Libfabric", None),
        (["Using network MysteryNet"], "MysteryNet", None),
        (
            ["NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>", "Using network MysteryNet"],
            "MysteryNet",
            True,
        ),
    ],
)
def test_plugin_names_and_rdma(lines: list[str], network: str, rdma: bool | None) -> None:
    summary = _parse(*(P + line for line in lines))
    assert (summary.network, summary.rdma) == (network, rdma)


def test_network_priority_using_then_channel_then_devices_then_transport_warn() -> None:
    devices = P + "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>"
    channel = P + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IBext_v8/0"
    warn = "gpu1:1:2 [0] transport/net_socket.cc:500 NCCL WARN NET/Socket : peer closed connection"
    assert _parse(warn, devices, channel, P + "Using network X").network == "X"
    assert _parse(warn, devices, channel).network == "IBext_v8"
    assert _parse(warn, devices).network == "IB"
    assert _parse(warn).network == "Socket"


def test_warn_from_an_external_plugin_names_no_network_but_shows_rdma() -> None:
    summary = _parse(
        "pod:1:2 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5> with status=12 "
        "opcode=0 len=0 vendor err 129 (Recv) localGid fd00::1 remoteGidsfd00::2"
    )
    assert (summary.network, summary.rdma) == (None, True)
    assert summary.errors == (NcclError(1, "pod", 4, summary.errors[0].message, 12, 129),)
    assert summary.errors[0].message.endswith("remoteGidsfd00::2")


def test_device_lists_give_hcas_and_link_layers_sorted() -> None:
    summary = _parse(
        P + "NET/IB : Using [0]mlx5_10:1/IB [1]mlx5_9:1/IB [2]mlx5_bond_0:1/RoCE [RO]; OOB ib0:10.0.0.1<0>",
        P + "NET/IBext_v8 : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [RO]; OOB bond0:10.0.0.2<0>",
        P + "NET/IB : Using [0]mlx5_0:1/IB/SHARP [RO]; OOB eno1:10.0.0.3<0>",
        P + "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]veth0:fe80::1%veth0<0>",
        P + "NET/gIB : GPU Direct RDMA Enabled for HCA 0 'mlx5_7'",
    )
    assert summary.hcas == ("mlx5_0", "mlx5_10", "mlx5_2", "mlx5_3", "mlx5_9", "mlx5_bond_0")
    assert summary.link_layers == ("IB", "RoCE")
    assert summary.gdr is True


def test_gdr_disabled_line_without_channels_is_false() -> None:
    assert _parse(P + "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'").gdr is False
    assert (
        _parse(P + "GPU Direct RDMA Enabled for GPU 7 / HCA 0 (distance 4 <= 4), read 0 mode Default").gdr
        is True
    )
    assert _parse(P + "Using network IB").gdr is None


# --- versions -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "NCCL version 2.18.3+cuda12.2",
        P + "NCCL version 2.18.3+cuda12.2",
        "[rank0]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, "
        "NCCL version 2.18.3",
    ],
)
def test_version_in_every_form(line: str) -> None:
    assert _parse(line).nccl_version == "2.18.3"


def test_first_version_wins() -> None:
    assert _parse("NCCL version 2.7.6+cuda11.1", P + "NCCL version 2.30.4+cuda13.0").nccl_version == "2.7.6"


# --- errors ---------------------------------------------------------------------------------------


def test_warn_wrapped_over_two_lines_is_one_error() -> None:
    summary = _parse(
        "node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
        "10.2.0.5<33092> with error 12, opcode 0, len",
        "0, vendor err 129 (Recv)",
        "node-2:5776:5902 [0] NCCL INFO transport/net.cc:1134 -> 6",
    )
    (error,) = summary.errors
    assert error == NcclError(
        1,
        "node-2",
        0,
        "NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, "
        "vendor err 129 (Recv)",
        12,
        129,
    )
    assert summary.network == "IB" and summary.rdma is True


def test_warn_is_not_glued_to_the_next_log_line_or_a_traceback() -> None:
    summary = _parse(
        "h:1:2 [0] socket.c:446 NCCL WARN socketFinalizeAccept: wrong type 3 != 4",
        "h:1:2 [0] NCCL INFO init.cc:1 -> 3",
        "h:1:3 [1] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer 10.0.0.2<4>",
        "Traceback (most recent call last):",
    )
    assert [(e.line, e.rank, e.message) for e in summary.errors] == [
        (1, 0, "socketFinalizeAccept: wrong type 3 != 4"),
        (3, 1, "Net : Connection closed by remote peer 10.0.0.2<4>"),
    ]


def test_new_style_completion_error_behind_timestamp_and_linkified_source() -> None:
    summary = _parse(
        "[2026-09-09 10:46:33] ubuntu2:319733:319761 [1] transport/net_ib/[p2p.cc:648]"
        "(https://p2p.cc:648/) NCCL WARN NET/IB: Got completion from peer 10.153.235.13<40554> "
        "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV_RDMA_WITH_IMM(129) vendor_err=129 "
        "localGid ::ffff:1.1.2.2 remoteGids::ffff:1.1.1.4 hca mlx5_1",
    )
    (error,) = summary.errors
    assert (error.host, error.rank, error.status, error.vendor_err) == ("ubuntu2", 1, 12, 129)
    assert summary.network == "IB"
    assert summary.hcas == ()  # 'hca mlx5_1' inside an error is not a device list


@pytest.mark.parametrize(
    ("message", "status", "vendor_err"),
    [
        (
            "Got completion from peer 10.0.0.1<1> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
            12,
            129,
        ),
        ("Got completion from peer 10.0.0.1<1> with error 5, opcode 0, len 1, vendor err 244 (Recv)", 5, 244),
        ("Got completion from peer 10.0.0.1<1> with status=12 opcode=0 len=0 vendor err 129 (Recv)", 12, 129),
        ("completion with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129", 12, 129),
        ("completion with status=transport retry counter exceeded(12) opcode=1 vendor_err=129", 12, 129),
        ("Call to ibv_modify_qp failed with error 110", None, None),
        ("Got completion with error 4, opcode 8983, len 0, vendor err 81", 4, 81),
        ("completion status IBV_WC_WR_FLUSH_ERR on qp 7", 5, None),
        ("NET/IB : request failed: retry exceeded", 12, None),
        ("NET/IB : RNR retry counter exceeded", 13, None),
        ("vendor err 0x81 without status", None, 129),
        ("Got completion with error 012, vendor err 0129", 12, 129),
        ("ncclIbTest: Got CQE with error (devIndex=0, req=0x7f, wr_id=0, qp_num=26257)", None, None),
        ("socketFinalizeAccept: wrong type 3 != 4", None, None),
    ],
)
def test_completion_status_and_vendor_err(message: str, status: int | None, vendor_err: int | None) -> None:
    assert completion_status(message) == (status, vendor_err)


def test_pytorch_report_with_last_error_detail() -> None:
    summary = _parse(
        "[rank9]:[E ProcessGroupNCCL.cpp:577] [Rank 9] Some NCCL operations have failed or timed out.",
        "[rank9]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 9] Process group watchdog thread terminated with "
        "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting.",
        "Last error:",
        "NET/IB : Got completion from peer 10.5.0.34<33956> with error 5, opcode 0, len 1, vendor err 244",
        "Exception raised from checkForNCCLErrorsInternal at ProcessGroupNCCL.cpp:1723:",
    )
    assert [(e.line, e.rank, e.status, e.vendor_err) for e in summary.errors] == [
        (2, 9, None, None),
        (5, 9, 5, 244),
    ]
    assert (summary.nccl_version, summary.network, summary.rdma) == ("2.20.5", None, True)


def test_absurd_numbers_do_not_break_parsing() -> None:
    summary = _parse(
        "[rank" + "9" * 5000 + "] NCCL error: x",
        "h:1:2 [0] NCCL WARN Got completion with error " + "7" * 5000,
    )
    assert [(e.rank, e.status) for e in summary.errors] == [(None, None), (0, 777777777)]


def test_watchdog_timeout_is_an_error() -> None:
    summary = _parse(
        "[rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600085 "
        "milliseconds before timing out."
    )
    (error,) = summary.errors
    assert (error.line, error.rank, error.status) == (1, 3, None)


@pytest.mark.parametrize(
    "message",
    [
        "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory",
        "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "Failed to open libibverbs.so[.1]",
        "NET/IB : mlx5_0:1 Got async event : GID table change",
    ],
)
def test_benign_warns_are_not_errors(message: str) -> None:
    assert _parse("h:1:2 [0] NCCL WARN " + message).errors == ()


def test_info_error_propagation_lines_are_not_errors() -> None:
    summary = _parse(P + "transport/net.cc:1302 -> 6", P + "proxy.cc:878 -> 6 [Progress Thread]")
    assert summary.errors == ()


def test_errors_stay_bounded_over_200k_lines() -> None:
    parser = NcclLogParser()
    warn = (
        "h:1:2 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.{n}<1> "
        "with error 12, opcode 0, len 0, vendor err 129 (Recv)"
    )
    for n in range(200_000):
        parser.feed(warn.format(n=n % 250))
    summary = parser.result()
    assert len(summary.errors) == MAX_ERRORS
    assert summary.error_count == 200_000 and summary.lines == 200_000
    assert summary.errors[-1].line == MAX_ERRORS


# --- line handling quirks -------------------------------------------------------------------------


def test_comments_tables_blank_lines_and_crlf() -> None:
    text = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824\r\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong\r\n"
        "\r\n" + P + "Using network IB\r\n"
        "           8             2     float     sum      -1    20.13    0.00    0.00      0\r\n"
        + P
        + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\r\n"
    )
    summary = parse_nccl_log(text)
    assert (summary.lines, summary.network, summary.gdr) == (6, "IB", True)
    assert _by_lines(text) == summary


def test_lines_without_any_prefix() -> None:
    summary = _parse(
        "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [8]mlx5_bond_0:1/RoCE [RO]; OOB ibp25s0:10.0.12.82<0>"
    )
    assert (summary.network, summary.hcas, summary.ranks) == ("IB", ("mlx5_0", "mlx5_bond_0"), ())


def test_text_without_nccl_lines_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no NCCL log lines found") as caught:
        parse_nccl_log(
            "mpirun -x NCCL_DEBUG=INFO ./all_reduce_perf\n# Avg bus bandwidth : 1.0\n", source="run.txt"
        )
    assert caught.value.source == "run.txt"
    with pytest.raises(ParseError):
        parse_nccl_log([])


def test_a_log_with_only_dull_info_lines_still_parses() -> None:
    summary = _parse(P + "Connected all rings")
    assert (summary.network, summary.rdma, summary.gdr, summary.lines) == (None, None, None, 1)


def test_result_is_final() -> None:
    parser = NcclLogParser()
    parser.feed(P + "Using network IB")
    assert parser.result() is parser.result()
    with pytest.raises(ValueError, match="already called"):
        parser.feed(P + "Using network Socket")


def test_feed_after_a_partial_chunk_starts_a_new_line() -> None:
    parser = NcclLogParser()
    parser.feed_chunk(P + "Using network IB")
    parser.feed(P + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA")
    summary = parser.result()
    assert (summary.lines, summary.network, summary.gdr) == (2, "IB", True)


def test_huge_line_is_cut_and_memory_stays_bounded() -> None:
    parser = NcclLogParser()
    junk = "x" * 4096
    tracemalloc.start()
    try:
        for _ in range(8 * MAX_LINE_CHARS // len(junk)):
            parser.feed_chunk(junk)
        parser.feed_chunk("\n" + P + "Using network IB\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * (MAX_LINE_CHARS + BLOCK_CHARS)  # not the 8 MiB that was fed
    summary = parser.result()
    assert (summary.lines, summary.network) == (2, "IB")


# --- robustness -----------------------------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        P,
        "NCCL INFO ",
        "NCCL WARN ",
        "NCCL version 2.",
        "NCCL error",
        "Last error:",
        "ncclRemoteError: ",
        "via NET/",
        "IB/0/GDRDMA",
        "Channel 00/0 : ",
        "Using network ",
        "NET/IB : Using [0]mlx5_0:1/RoCE",
        "Got completion from peer",
        " with status=",
        "vendor err ",
        "transport/net_ib.cc:1 ",
        "[cite: 1]",
        "\x1b[0m",
        "\n",
        "\r",
        "]",
        "[",
        ":",
        "(",
        "0",
    ]
)
_TEXT = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=12)), max_size=60).map("".join)


def _summary_or_parse_error(text: str) -> NcclLogSummary | None:
    try:
        return parse_nccl_log(text)
    except ParseError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT)
def test_arbitrary_text_gives_a_summary_or_parse_error(text: str) -> None:
    whole = _summary_or_parse_error(text)
    try:
        by_lines = _by_lines(text)
    except ParseError:
        by_lines = None
    assert by_lines == whole
    if whole is not None:
        assert whole.lines == len(_lines_of(text))


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(SAMPLES), st.floats(min_value=0.0, max_value=1.0), st.integers(min_value=1, max_value=400)
)
def test_truncated_samples_give_a_summary_or_parse_error(sample: Path, fraction: float, chunk: int) -> None:
    text = sample.read_text()
    cut = text[: int(len(text) * fraction)]
    whole = _summary_or_parse_error(cut)
    if whole is not None:
        assert _by_chunks(cut, chunk) == whole


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SAMPLES), st.integers(1, 300), st.integers(1, 3000))
def test_block_boundaries_do_not_change_the_summary(sample: Path, chunk: int, block: int) -> None:
    """Small blocks exercise the chunk assembly that real logs hit every BLOCK_CHARS characters."""
    text = sample.read_text()
    expected = parse_nccl_log(text)
    with mock.patch.object(nccl_log_lines, "BLOCK_CHARS", block):
        assert _by_chunks(text, chunk) == expected
        assert _by_lines(text) == expected


def test_overlong_lines_are_cut_wherever_the_chunks_end() -> None:
    first = P + "Using network IB" + "x" * 500
    text = _log(first, "y" * 700, P + "Channel 00/0 : 1[0] -> 0[0] via NET/IB/0")
    with (
        mock.patch.object(nccl_log_lines, "MAX_LINE_CHARS", 100),
        mock.patch.object(nccl_log_lines, "BLOCK_CHARS", 64),
    ):
        for chunk in (1, 33, 64, 1000):
            summary = _by_chunks(text, chunk)
            assert (summary.lines, summary.gdr) == (3, False)
            assert summary.network == first[len(P) + len("Using network ") : 100]


_CORPUS_LINES = sorted(
    {
        line
        for kind in ("nccl-log", "nccl-tests")
        for sample in corpus_samples(kind)
        for line in sample.read_text().split("\n")
        if "NCCL" in line or "NET/" in line or not line.startswith(("#", " "))
    }
)
_MIXED_LOG = st.lists(
    st.one_of(st.sampled_from(_CORPUS_LINES).map(lambda line: line + "\n"), _FRAGMENTS, st.text(max_size=8)),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MIXED_LOG, st.integers(1, 120), st.integers(1, 400))
def test_mixed_logs_do_not_depend_on_block_boundaries(text: str, chunk: int, block: int) -> None:
    expected = _summary_or_parse_error(text)
    with mock.patch.object(nccl_log_lines, "BLOCK_CHARS", block):
        try:
            chunked: NcclLogSummary | None = _by_chunks(text, chunk)
        except ParseError:
            chunked = None
        assert chunked == expected


def test_passes_over_a_block_agree_whatever_the_block_size() -> None:
    """Lines that mix kinds: each fact must come from one pass, so block edges cannot reorder it."""
    text = _log(
        "[rank0]: NCCL error in: c10d.cpp:1, unhandled system error, NCCL version 2.20.5",
        "NCCL errorhost9:1:2 [0] NCCL INFO Using network IB",
        "h:1:2 [5] NCCL WARN x:1:2 [5] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        P + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IBext_v8/0",
        "NCCL version 2.26.6+cuda12.8",
        P + "NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>",
        "gpu2:1:2 [1] NCCL INFO Using network Socket",
    )
    expected = parse_nccl_log(text)
    assert (expected.nccl_version, expected.network) == ("2.26.6", "IB")
    for block in range(1, len(text) + 2, 3):
        with mock.patch.object(nccl_log_lines, "BLOCK_CHARS", block):
            assert _by_chunks(text, 17) == expected
            assert _by_lines(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000 + " NCCL INFO Channel 00/0 : 1[0] -> 0[0] via NET/IB/0\n",
        "h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] via NET/" + "1/" * 100_000 + "x\n",
        "a" * 200_000 + " NCCL WARN boom\n",
        "a" * 200_000 + " NCCL INFO Using network IB\n",
        "h:1:2 [0] NCCL WARN Got completion len\n0" + "a" * 200_000 + "\n",
        "h:1:2 [0] NCCL INFO Using network IB" + " " * 200_000 + "[cite: 1]\n",
        "h:1:2 [0] NCCL WARN " + ("status=" + "a " * 50) * 2000 + "\n",
        "h:1:2 [0] NCCL INFO NET/" + "x" * 200_000 + " : Using [0]" + "m" * 100_000 + ":1/IB\n",
    ],
    ids=["chan-prefix", "chan-tail", "warn-prefix", "using-prefix", "wrap", "cite", "status", "devices"],
)
def test_pathological_long_lines_stay_linear(text: str) -> None:
    started = time.perf_counter()
    summary = parse_nccl_log(text)
    assert time.perf_counter() - started < 10  # a quadratic regex would take minutes here
    assert summary.lines == text.count("\n")
    assert all(len(error.message) <= MAX_MESSAGE_CHARS for error in summary.errors)


# Hostile input (tests/parsers/hostile.py): long digit runs, NULs, '\r', tabs, non-ASCII digits, long lines.


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text)
def test_hostile_text_gives_a_summary_or_parse_error(text: str) -> None:
    whole = _summary_or_parse_error(text)
    if whole is not None:
        assert _by_chunks(text, 97) == whole


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated([s.read_text() for s in SAMPLES]), st.integers(13, 5000))
def test_hostile_mutations_of_samples_do_not_depend_on_chunks(text: str, chunk: int) -> None:
    whole = _summary_or_parse_error(text)
    if whole is not None:
        assert _by_chunks(text, chunk) == whole
        assert all(e.status is None or 0 <= e.status < 10**9 for e in whole.errors)


def test_a_line_of_many_megabytes_is_cut_not_kept() -> None:
    # Streaming: a 12 MB line (no newline) must not be held whole; the log is still read after it.
    parser = NcclLogParser("big.log")
    parser.feed_chunk("host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0\n")
    for _ in range(12):
        parser.feed_chunk("x" * 1_000_000)
    parser.feed_chunk("\nhost:1:1 [0] NCCL INFO Using network IB\n")
    summary = parser.result()
    assert (summary.network, summary.hcas, summary.lines) == ("IB", ("mlx5_0",), 3)


# ---- formats of issue 24. Each string is the shape a real source prints (cited per test); where the
# ---- line is taken from NCCL / aws-ofi-nccl source or docs rather than a captured log, the test says so.


def _parse(*lines: str):
    return parse_nccl_log([line + "\n" for line in lines], "t")


def test_ray_repeated_suffix_is_not_part_of_the_name() -> None:
    # SYNTHESISED (no captured Ray log found): Ray's log deduplication appends ' [repeated Nx across
    # cluster]' to a line repeated by several workers; the NCCL lines are the standard INFO shapes.
    summary = _parse(
        "(RayWorkerWrapper pid=1234, ip=10.0.0.2) node2:1234:1300 [0] NCCL INFO Using network IB "
        "[repeated 7x across cluster]",
        "(RayWorkerWrapper pid=1234, ip=10.0.0.2) node2:1234:1300 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] "
        "[receive] via NET/IB/0/GDRDMA [repeated 3x across cluster]",
    )
    assert (summary.network, summary.rdma, summary.gdr) == ("IB", True, True)


def test_ofi_lowercase_provider_with_fabric_is_read() -> None:
    # Newer aws-ofi-nccl, as quoted in public EFA notes: 'NET/OFI Selected provider is efa, fabric is
    # efa-direct (found 32 nics)' (older: 'Selected Provider is efa (found 4 nics)').
    summary = _parse(
        "ip-10-1-2-3:79:90 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct "
        "(found 32 nics)",
        "ip-10-1-2-3:79:90 [0] NCCL INFO Using network Libfabric",
    )
    assert (summary.network, summary.rdma) == ("Libfabric", True)


def test_libfabric_gdrdma_channel_without_provider_line_is_rdma() -> None:
    # Public EFA notes quote only the channels: '[send] via NET/Libfabric/3/GDRDMA' (CXI likewise).
    summary = _parse(
        "nid001:5:6 [0] NCCL INFO Channel 00/0 : 3[3] -> 14[6] [send] via NET/Libfabric/3/GDRDMA"
    )
    assert (summary.network, summary.rdma, summary.gdr) == ("Libfabric", True, True)


def test_no_device_found_is_socket_fallback_evidence() -> None:
    summary = _parse("h:1:2 [0] NCCL INFO NET/IB : No device found.", "h:1:2 [0] NCCL INFO Init COMPLETE")
    assert summary.rdma is False and summary.ib_missing


def test_empty_ib_device_list_is_no_network_choice() -> None:
    summary = _parse(
        "h:1:2 [0] NCCL INFO NET/IB : Using [RO]; OOB enp3s0:192.168.1.2<0>",
        "h:1:2 [0] NCCL INFO Failed to initialize NET plugin IB",
    )
    assert summary.network is None and summary.rdma is False
    assert summary.failed_plugins == ("IB",)


@pytest.mark.parametrize(
    "message",
    [
        # NCCL graph/search.cc WARN (2.x): the search falls back and NCCL goes on.
        "Could not find a path for pattern 4, falling back to simple order",
        # NVIDIA/nccl#1050: SHARP not available, CollNet off, point-to-point used.
        "NET/IB : SHARP coll init error: Cannot create SHARP job(-11)",
        "Cannot initialize CollNet, using point-to-point network instead",
    ],
)
def test_benign_graph_and_sharp_warns_are_not_errors(message: str) -> None:
    assert _parse(f"h:1:2 [7] transport.cc:323 NCCL WARN {message}").errors == ()


def test_dmabuf_gdr_line_in_any_case() -> None:
    for line in (
        "GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0",
        "GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
    ):
        assert _parse(f"h:1:2 [0] NCCL INFO NET/IB : {line}").gdr is True


def test_collnet_sharp_channel_counts_as_gdr() -> None:
    summary = _parse("node:176:4360 [5] NCCL INFO CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA")
    assert summary.gdr is True and summary.ranks[0].gdr is True


def test_init_complete_is_recorded() -> None:
    line = "h:1:2 [0] NCCL INFO comm 0x55f0 rank 0 nranks 2 cudaDev 0 busId 30 commId 0x43 - Init COMPLETE"
    assert _parse(line).init_complete and not _parse("h:1:2 [0] NCCL INFO Using network IB").init_complete
