"""`ibqueryerrors` sweeps (tests/data/real/ib, INDEX.tsv) and their deltas over the counter window: the
linux-rdma sample, `port ALL` aggregates left out, the summary and PMA failures deciding `complete`,
resets and saturated counters named, damage refused naming the line."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers._text import MAX_LINE_CHARS
from fabcheck.parsers.ibqueryerrors import parse_ibqueryerrors, sweep_deltas

IB = Path(__file__).resolve().parents[1] / "data" / "real" / "ib"
SX6036 = IB / "ibqueryerrors-sx6036-mlx4-counters.txt"
CLEAN = IB / "ibqueryerrors-clean-empty-thresholds-rendered.txt"
PMA = IB / "ibqueryerrors-pma-failures-rendered.txt"
SWITCH = "0x0002c903006e29b0"
LEAF = "0x2c5eab0300b87b40"

SUMMARY = (
    "\n## Summary: 8 nodes checked, 1 bad nodes found\n"
    "##          136 ports checked, 1 ports have errors beyond threshold\n"
    "## Thresholds: \n## Suppressed:\n"
)


def sweep(counts: str, summary: str = SUMMARY) -> str:
    return f'Errors for {LEAF} "leaf01"\n   GUID {LEAF} port 33:{counts}\n{summary}'


def test_the_sx6036_sample_every_printed_port_without_the_aggregate() -> None:
    found = parse_ibqueryerrors(SX6036.read_text(), SX6036.name)
    assert (found.nodes_checked, found.ports_checked, found.pma_failures, found.complete) == (4, 43, 0, True)
    assert found.source == SX6036.name
    assert (
        len(found.ports) == 14
    )  # the summary's "14 ports have errors beyond threshold"; `port ALL` is not one
    assert sorted(port for guid, port in found.ports if guid == SWITCH) == list(range(9))
    port5 = found.ports[(SWITCH, 5)]
    assert port5.description == "MF0;ys23ib4:SX6036/U1"
    assert dict(port5.counts) == {
        "SymbolErrorCounter": 65535,
        "LinkErrorRecoveryCounter": 8,
        "LinkDownedCounter": 2,
        "PortRcvSwitchRelayErrors": 149,
        "PortXmitDiscards": 649,
        "PortXmitWait": 84704351,
    }
    # a CA header has no GUID; each port line carries its port GUID, padded to 16 digits here
    server = found.ports[("0x0002c9030042dff1", 1)]
    assert (server.description, dict(server.counts)) == ("server mlx4_0", {"PortXmitWait": 4294967295})
    two_port = sorted(key for key, port in found.ports.items() if port.description == "dl380g7 mlx4_0")
    assert two_port == [("0x7cfe900300179b31", 1), ("0x7cfe900300179b32", 2)]


def test_a_clean_sweep_is_complete_with_no_port() -> None:
    found = parse_ibqueryerrors(CLEAN.read_text())
    assert (dict(found.ports), found.nodes_checked, found.ports_checked, found.complete) == ({}, 8, 136, True)


def test_pma_query_failures_make_the_sweep_incomplete() -> None:
    found = parse_ibqueryerrors(PMA.read_text())
    assert (found.pma_failures, found.complete) == (2, False)
    assert dict(found.ports[(LEAF, 33)].counts) == {"SymbolErrorCounter": 12}


def test_output_cut_before_the_summary_is_incomplete() -> None:
    cut = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 3]", summary=""))
    assert (cut.nodes_checked, cut.ports_checked, cut.complete) == (None, None, False)
    assert parse_ibqueryerrors("").complete is False


def test_extended_counters_with_their_human_readable_value_and_a_null_threshold_line() -> None:
    text = sweep(" [SymbolErrorCounter == 1536 (1.500K)] [PortXmitWait == 42 (42.000)]")
    found = parse_ibqueryerrors(text.replace("## Thresholds: ", "## (null)"))
    assert dict(found.ports[(LEAF, 33)].counts) == {"SymbolErrorCounter": 1536, "PortXmitWait": 42}
    assert found.complete


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("Errors for leaf01\n", "not an `Errors for", 1),
        (f"   GUID {LEAF} port 1: [SymbolErrorCounter == 1]\n", "before any `Errors for` header", 1),
        (sweep(" [SymbolErrorCounter = 1]"), "not a ` \\[Name == value\\]` counter at character", 2),
        (sweep(" [SymbolErrorCounter == 1]x"), "counter at character", 2),
        (sweep(""), "names no counter", 2),
        (sweep(" [SymbolErrorCounter == 1] [SymbolErrorCounter == 2]"), "shown twice", 2),
        (sweep(" [SymbolErrorCounter == 1]").replace("port 33", "port 300"), "port 300 is over 255", 2),
        (sweep(" [SymbolErrorCounter == 1]").replace("port 33", "port x"), "not `GUID 0x<guid> port", 2),
        (sweep(" [SymbolErrorCounter == ٣]"), "counter at character", 2),
        (sweep(" [SymbolErrorCounter == 1]").replace("8 nodes", "eight nodes"), "not `## Summary", 4),
        (
            sweep(" [SymbolErrorCounter == 1]") + "ibwarn: [1] mad_rpc: _do_madrpc failed\n",
            "not an ibqueryerrors",
            8,
        ),
    ],
)
def test_damage_is_a_parse_error_naming_source_and_line(text: str, message: str, line: int) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_ibqueryerrors(text, "reader: ibqueryerrors")
    assert (raised.value.source, raised.value.line) == ("reader: ibqueryerrors", line)


def test_deltas_over_the_window_count_an_unprinted_counter_as_zero_in_a_complete_sweep() -> None:
    before = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 3] [PortXmitWait == 10]"))
    after = parse_ibqueryerrors(
        sweep(" [SymbolErrorCounter == 10] [LinkDownedCounter == 1] [PortXmitWait == 10]")
    )
    (delta,) = sweep_deltas(before, after)
    assert (delta.guid, delta.port, delta.description) == (LEAF, 33, "leaf01")
    assert dict(delta.deltas) == {"LinkDownedCounter": 1, "PortXmitWait": 0, "SymbolErrorCounter": 7}
    assert (delta.reset, delta.saturated) == ((), ())


def test_a_counter_that_went_down_is_a_reset_and_all_ones_is_saturated() -> None:
    before = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 500] [LinkDownedCounter == 3]"))
    after = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 65535] [LinkDownedCounter == 1]"))
    (delta,) = sweep_deltas(before, after)
    assert dict(delta.deltas) == {"SymbolErrorCounter": 65035}
    assert (delta.reset, delta.saturated) == (("LinkDownedCounter",), ("SymbolErrorCounter",))
    cleared = parse_ibqueryerrors(CLEAN.read_text())  # every counter back to 0: all of them reset
    (gone,) = sweep_deltas(before, cleared)
    assert (dict(gone.deltas), gone.reset) == ({}, ("LinkDownedCounter", "SymbolErrorCounter"))


def test_a_64_bit_counter_at_a_narrow_all_ones_value_is_not_saturated() -> None:
    # Extended counters print a human-readable suffix (rdma-core ibqueryerrors.c check_threshold) and
    # count past 65535: only the narrow ones stop there.
    before = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 65000 (65.000K)]"))
    after = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 65535 (65.535K)]"))
    assert after.ports[(LEAF, 33)].wide == frozenset({"SymbolErrorCounter"})
    (delta,) = sweep_deltas(before, after)
    assert (dict(delta.deltas), delta.saturated) == ({"SymbolErrorCounter": 535}, ())


def test_an_incomplete_sweep_leaves_unprinted_counters_unknown() -> None:
    before = parse_ibqueryerrors(PMA.read_text())  # 2 PMA failures: not complete
    after = parse_ibqueryerrors(sweep(" [SymbolErrorCounter == 20] [LinkDownedCounter == 1]"))
    (delta,) = sweep_deltas(before, after)
    assert dict(delta.deltas) == {"SymbolErrorCounter": 8}  # LinkDownedCounter: not known before
    appeared = sweep_deltas(parse_ibqueryerrors(CLEAN.read_text()), after)
    assert dict(appeared[0].deltas) == {"LinkDownedCounter": 1, "SymbolErrorCounter": 20}


def test_the_real_sweep_against_itself_changes_nothing() -> None:
    found = parse_ibqueryerrors(SX6036.read_text())
    deltas = sweep_deltas(found, found)
    assert len(deltas) == 14 and all(set(d.deltas.values()) == {0} and not d.reset for d in deltas)
    assert [d.port for d in deltas if "SymbolErrorCounter" in d.saturated] == [5, 7]


def test_a_64_kib_line_is_answered_in_milliseconds() -> None:
    for filler in (" [SymbolErrorCounter == 1]", " ", "9", '"', " [A == 1 (", "Errors for "):
        body = (filler * MAX_LINE_CHARS)[: MAX_LINE_CHARS - 60]
        for text in (f"Errors for {body}\n", sweep(body), f"   GUID {LEAF} port 1:{body}x\n", "## " + body):
            started = time.perf_counter()
            with contextlib.suppress(ParseError):
                parse_ibqueryerrors(text)
            assert time.perf_counter() - started < 0.05, (filler, text[:40])


test_hostile_mutations_of_the_samples_parse_or_refuse, test_hostile_text_parses_or_refuses = (
    parse_or_refuse_tests(parse_ibqueryerrors, [SX6036.read_text(), PMA.read_text()])
)
