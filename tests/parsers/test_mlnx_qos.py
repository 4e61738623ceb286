"""mlnx_qos parser/renderer: the corpus facts from INDEX.tsv, exact re-rendering, broken layouts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers.mlnx_qos import LLDPAD_WARNING, MlnxQos, TcConfig, parse_mlnx_qos, parse_mlnx_qos_all
from tests.parsers.renderers import render_mlnx_qos

NIC = CORPUS / "nic-state"
SAMPLES = [
    NIC / "mlnx_qos-3fs-ens4np0-dscp-pfc5-ets-buffers.txt",
    NIC / "mlnx_qos-cx5-mce0-firmware-dcbx-ets-grouped.txt",
    NIC / "mlnx_qos-ens14f0-dscp-remapped-prio6-split-lines.txt",
    NIC / "mlnx_qos-setup-lossless-l3-script-trace-eth4.txt",
    NIC / "spiderpool-rdma-qos-query-eth0-dscp-pfc5-ecn-sysfs.txt",
]
DEFAULT_DSCP = {prio: tuple(range(8 * prio, 8 * prio + 8)) for prio in range(8)}
MLX5_DEFAULT_PRIO2TC = {0: 1, 1: 0, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7}


def _parse(name: str) -> MlnxQos:
    path = NIC / name
    return parse_mlnx_qos(path.read_text(), source=path.name)


def _dscp_by_prio(qos: MlnxQos) -> dict[int, tuple[int, ...]]:
    return {prio: tuple(sorted(d for d, p in qos.dscp2prio.items() if p == prio)) for prio in range(8)}


def test_3fs_dscp_trust_pfc5_ets_and_buffers() -> None:
    qos = _parse("mlnx_qos-3fs-ens4np0-dscp-pfc5-ets-buffers.txt")
    assert (qos.dcbx_mode, qos.trust) == ("os", "dscp")
    assert _dscp_by_prio(qos) == DEFAULT_DSCP
    assert list(qos.dscp2prio)[40:42] == [40, 47]  # 40 was moved by --dscp2prio set,40,5: printed first
    assert qos.default_priorities == ()
    assert qos.buffer_sizes == (19872, 220896, 0, 0, 0, 0, 0, 0)
    assert qos.max_buffer_size == 4151520
    assert qos.cable_len == 30
    assert qos.pfc_enabled == (5,)
    assert qos.pfc_buffer == (0, 0, 0, 0, 0, 1, 0, 0)
    assert {tc: (c.tsa, c.bw_percent) for tc, c in qos.tcs.items()} == {
        0: ("ets", 9),
        1: ("ets", 1),
        2: ("ets", 80),
        3: ("ets", 10),
        4: ("strict", None),
        5: ("strict", None),
        6: ("strict", None),
        7: ("strict", None),
    }
    assert dict(qos.prio2tc) == {p: p for p in range(8)}
    assert {c.ratelimit for c in qos.tcs.values()} == {"unlimited"}


def test_cx5_firmware_dcbx_with_grouped_tcs() -> None:
    qos = _parse("mlnx_qos-cx5-mce0-firmware-dcbx-ets-grouped.txt")
    assert (qos.dcbx_mode, qos.trust) == ("fw", "dscp")
    assert _dscp_by_prio(qos) == DEFAULT_DSCP
    assert qos.buffer_sizes == (130944, 130944, 0, 0, 0, 0, 0, 0)
    assert qos.max_buffer_size == 262016
    assert qos.cable_len == 7
    assert qos.pfc_enabled == (3,)
    assert qos.pfc_buffer == (0, 0, 0, 1, 0, 0, 0, 0)
    assert dict(qos.tcs) == {
        0: TcConfig("ets", 50, "unlimited", (0, 1, 2, 4, 5, 7)),
        3: TcConfig("ets", 50, "unlimited", (3,)),
        6: TcConfig("vendor", None, "unlimited", (6,)),
    }
    assert dict(qos.prio2tc) == {0: 0, 1: 0, 2: 0, 3: 3, 4: 0, 5: 0, 6: 6, 7: 0}


def test_remapped_dscp30_to_prio6_over_split_lines() -> None:
    qos = _parse("mlnx_qos-ens14f0-dscp-remapped-prio6-split-lines.txt")
    assert (qos.dcbx_mode, qos.trust) == ("os", "dscp")
    expected = dict(DEFAULT_DSCP)
    expected[3] = (24, 25, 26, 27, 28, 29, 31)
    expected[6] = (30, 48, 49, 50, 51, 52, 53, 54, 55)
    assert _dscp_by_prio(qos) == expected
    assert qos.dscp2prio[26] == 3 and qos.dscp2prio[30] == 6 and len(qos.dscp2prio) == 64
    assert qos.buffer_sizes == (80256, 80256, 896, 80256, 896, 896, 896, 896)
    assert qos.max_buffer_size is None
    assert qos.cable_len == 7
    assert qos.pfc_enabled == (3,)
    assert qos.pfc_buffer == (0, 2, 5, 7, 1, 2, 3, 6)
    assert {c.tsa for c in qos.tcs.values()} == {"vendor"}
    assert {c.bw_percent for c in qos.tcs.values()} == {None}
    assert dict(qos.prio2tc) == MLX5_DEFAULT_PRIO2TC


def test_script_trace_holds_two_identical_reports() -> None:
    path = NIC / "mlnx_qos-setup-lossless-l3-script-trace-eth4.txt"
    first, second = parse_mlnx_qos_all(path.read_text(), source=path.name)
    assert first == second == parse_mlnx_qos(path.read_text())
    assert (second.dcbx_mode, second.trust) == ("os", "dscp")
    assert _dscp_by_prio(second) == DEFAULT_DSCP
    assert second.cable_len == 7
    assert second.buffer_sizes is None and second.max_buffer_size is None  # older MLNX_OFED
    assert second.pfc_buffer is None
    assert second.pfc_enabled == (3,)
    assert len(second.tcs) == 8
    assert {(c.tsa, c.bw_percent, c.ratelimit) for c in second.tcs.values()} == {
        ("vendor", None, "unlimited")
    }
    assert dict(second.prio2tc) == MLX5_DEFAULT_PRIO2TC


def test_spiderpool_excerpt_reads_only_what_it_shows() -> None:
    qos = _parse("spiderpool-rdma-qos-query-eth0-dscp-pfc5-ecn-sysfs.txt")
    assert qos.trust == "dscp"
    assert qos.pfc_enabled == (5,)
    assert qos.pfc_buffer == (0, 0, 0, 0, 0, 1, 0, 0)
    assert qos.dcbx_mode is None and qos.cable_len is None and qos.buffer_sizes is None
    assert not qos.dscp2prio_shown and dict(qos.dscp2prio) == {}
    assert dict(qos.tcs) == {}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_render_reproduces_the_captured_block(sample: Path) -> None:
    text = sample.read_text()
    rendered = render_mlnx_qos(parse_mlnx_qos(text), show_default_priority="default priority:" in text)
    expected = rendered.expandtabs().splitlines()
    captured = text.expandtabs().splitlines()
    assert any(captured[i : i + len(expected)] == expected for i in range(len(captured)))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_round_trip_of_each_sample(sample: Path) -> None:
    qos = parse_mlnx_qos(sample.read_text())
    assert parse_mlnx_qos(render_mlnx_qos(qos)) == qos
    assert parse_mlnx_qos(render_mlnx_qos(qos, show_default_priority=False)) == qos


def test_render_wraps_dscp2prio_every_eight_values() -> None:
    qos = MlnxQos(
        dcbx_mode="os",
        trust="dscp",
        dscp2prio={dscp: 3 if dscp < 20 else 0 for dscp in range(64)},
        pfc_enabled=(3,),
        tcs={0: TcConfig("ets", 100, "12.5 Gbps", tuple(range(8)))},
        default_priorities=(2,),
        lldpad_warning=True,
    )
    text = render_mlnx_qos(qos)
    assert text.startswith(LLDPAD_WARNING + "\n\nDCBX mode: OS controlled\n")
    prio3_lines = [line for line in text.splitlines() if line.startswith("\tprio:3 dscp:")]
    assert prio3_lines == [
        "\tprio:3 dscp:00,01,02,03,04,05,06,07,",
        "\tprio:3 dscp:08,09,10,11,12,13,14,15,",
        "\tprio:3 dscp:16,17,18,19,",
    ]
    assert "default priority:\n\tprio:2\n" in text
    assert "\tenabled     0   0   0   1   0   0   0   0   \n" in text
    assert "tc: 0 ratelimit: 12.5 Gbps, tsa: ets, bw: 100%\n\t priority:  0\n" in text
    back = parse_mlnx_qos(text)
    assert back == qos
    assert back.tcs[0].ratelimit == "12.5 Gbps"


def test_trust_not_supported_and_no_buffers() -> None:
    text = (
        "Priority trust state is not supported on your system\n"
        "Buffers commands are not supported on your system\n"
        "DCBX mode: OS controlled\n"
        "Priority trust state: none\n"
        "Cable len: 7\n"
        "PFC configuration:\n"
        "\tpriority    0   1   2   3   4   5   6   7\n"
        "\tenabled     0   0   0   0   0   0   0   0   \n"
        "tc: 0 ratelimit: unlimited, tsa: strict\n"
        "\t priority:  0\n"
    )
    qos = parse_mlnx_qos(text)
    assert qos.trust == "none" and qos.pfc_enabled == () and qos.pfc_buffer is None
    assert not qos.lldpad_warning


def test_render_refuses_dscp2prio_under_pcp_trust() -> None:
    qos = MlnxQos(dcbx_mode="os", trust="pcp", dscp2prio={26: 3}, pfc_enabled=(3,))
    with pytest.raises(ValueError):
        render_mlnx_qos(qos)


_GOOD = [
    "DCBX mode: OS controlled",
    "Priority trust state: dscp",
    "dscp2prio mapping:",
    "\tprio:0 dscp:07,06,05,04,03,02,01,00,",
    "\tprio:3 dscp:31,30,29,28,27,26,25,24,",
    "Cable len: 7",
    "PFC configuration:",
    "\tpriority    0   1   2   3   4   5   6   7",
    "\tenabled     0   0   0   1   0   0   0   0   ",
    "\tbuffer      0   0   0   1   0   0   0   0   ",
    "tc: 0 ratelimit: unlimited, tsa: vendor",
    "\t priority:  1",
    "tc: 1 ratelimit: unlimited, tsa: vendor",
    "\t priority:  0",
]


def _with_line(number: int, replacement: str | None) -> str:
    """_GOOD with its 1-based line ``number`` replaced (or removed when ``replacement`` is None)."""
    lines = list(_GOOD)
    if replacement is None:
        del lines[number - 1]
    else:
        lines[number - 1] = replacement
    return "\n".join(["$ mlnx_qos -i eth4", *lines]) + "\n"


def test_the_good_block_parses() -> None:
    qos = parse_mlnx_qos(_with_line(1, _GOOD[0]))
    assert qos.pfc_enabled == (3,) and qos.dscp2prio[26] == 3 and dict(qos.prio2tc) == {1: 0, 0: 1}


@pytest.mark.parametrize(
    ("number", "replacement", "message"),
    [
        (9, "\tenabled     0   0   0   1   0   0   0", "enabled"),  # 7 values
        (9, "\tenabled     0   0   0   2   0   0   0   0", "0 or 1"),
        (8, "\tpriority    0   1   2   3", "priority"),
        (10, "\tbuffer      0   0   0   9   0   0   0   0", "buffer"),
        (5, "\tprio:3 dscp:31,3x,29,28,", "dscp2prio"),
        (5, "\tprio:3 dscp:31,64,29,", "DSCP"),
        (5, "\tprio:3 dscp:31,07,29,", "repeated"),
        (5, "\tprio:9 dscp:31,30,", "dscp2prio"),
        (5, "\tprio:3 dscp:24,25,26,27,28,29,30,31,32,", "dscp2prio"),  # 9 values on one line
        (2, "Priority trust state: maybe", "trust"),
        (1, "DCBX mode: sometimes", "DCBX"),
        (6, "Cable len: seven", "Cable len"),
        (6, "some unrelated line", "unexpected"),
        (11, "tc: 0 ratelimit: unlimited, tsa: wfq", "tc"),
        (11, "tc: 9 ratelimit: unlimited, tsa: vendor", "traffic class"),
        (13, "tc: 0 ratelimit: unlimited, tsa: vendor", "traffic class"),  # tc 0 twice
        (14, "\t priority:  1", "two traffic classes"),
        (12, "\t priority:  x", "tc priority"),
        (11, "tc: 0 ratelimit: unlimited, tsa: ets, bw: 150%", "100%"),
    ],
)
def test_broken_layout_names_the_line(number: int, replacement: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos(_with_line(number, replacement), source="qos.txt")
    assert caught.value.line == number + 1  # +1 for the prompt line
    assert caught.value.source == "qos.txt"
    assert message in caught.value.message


def test_dscp2prio_out_of_order_is_an_error() -> None:
    text = _with_line(5, "\tprio:3 dscp:31,30,").replace(
        "\tprio:0 dscp:07,06,05,04,03,02,01,00,", "\tprio:4 dscp:07,"
    )
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos(text)
    assert caught.value.line == 6 and "out of order" in caught.value.message


def test_continuation_after_a_short_dscp_line_is_an_error() -> None:
    lines = list(_GOOD)
    lines[4] = "\tprio:0 dscp:30,"  # prio 0 again, after a line that did not hold 8 values
    lines[3] = "\tprio:0 dscp:07,06,"
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos("\n".join(lines))
    assert caught.value.line == 5


def test_dscp2prio_under_pcp_trust_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos(_with_line(2, "Priority trust state: pcp"))
    assert caught.value.line == 4


def test_block_that_stops_before_the_pfc_table_is_an_error() -> None:
    text = "\n".join(_GOOD[:5]) + "\n"
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos(text)
    assert caught.value.line == 5 and "PFC configuration" in caught.value.message


def test_pfc_table_cut_after_its_header_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos("\n".join(_GOOD[:8]))
    assert caught.value.line == 8 and "enabled" in caught.value.message


def test_text_without_mlnx_qos_output_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos("$ mlnx_qos -i eth9\nNetlink error: no such device\n", source="x.txt")
    assert caught.value.line is None and caught.value.source == "x.txt"


def test_lldpad_warning_is_recorded() -> None:
    qos = parse_mlnx_qos(LLDPAD_WARNING + "\n\n" + "\n".join(_GOOD))
    assert qos.lldpad_warning
    assert render_mlnx_qos(qos).startswith(LLDPAD_WARNING)


# Records mlnx_qos can print: priorities partitioned over TCs, dscp2prio only under dscp trust.
@st.composite
def _reports(draw: st.DrawFn) -> MlnxQos:
    trust = draw(st.sampled_from(["dscp", "pcp", "none", None]))
    dscp2prio: dict[int, int] = {}
    if trust in ("dscp", None):
        dscps = draw(st.lists(st.integers(0, 63), unique=True, max_size=64))
        dscp2prio = {dscp: draw(st.integers(0, 7)) for dscp in dscps}
    prio_tc = draw(st.lists(st.integers(0, 7), min_size=8, max_size=8))
    tcs = {}
    for tc in sorted(set(prio_tc)):
        tsa = draw(st.sampled_from(["ets", "strict", "vendor"]))
        tcs[tc] = TcConfig(
            tsa=tsa,
            bw_percent=draw(st.integers(0, 100)) if tsa == "ets" else None,
            ratelimit=draw(st.sampled_from(["unlimited", "1.0 Gbps", "100.0 Gbps"])),
            priorities=tuple(p for p in range(8) if prio_tc[p] == tc),
        )
    buffers = draw(st.none() | st.lists(st.integers(0, 10**7), min_size=8, max_size=8).map(tuple))
    return MlnxQos(
        dcbx_mode=draw(st.sampled_from(["os", "fw", None])),
        trust=trust,
        dscp2prio=dscp2prio,
        dscp2prio_shown=trust == "dscp" or bool(dscp2prio),
        pfc_enabled=tuple(p for p in range(8) if draw(st.booleans())),
        pfc_buffer=draw(st.none() | st.lists(st.integers(0, 7), min_size=8, max_size=8).map(tuple)),
        buffer_sizes=buffers,
        max_buffer_size=None if buffers is None else draw(st.none() | st.integers(0, 10**8)),
        cable_len=draw(st.none() | st.integers(0, 0xFFFF)),
        tcs=tcs,
        default_priorities=tuple(draw(st.lists(st.integers(0, 7), max_size=2))),
        lldpad_warning=draw(st.booleans()),
    )


@settings(max_examples=150, deadline=None)
@given(_reports())
def test_render_then_parse_returns_the_record(qos: MlnxQos) -> None:
    assert parse_mlnx_qos(render_mlnx_qos(qos)) == qos
