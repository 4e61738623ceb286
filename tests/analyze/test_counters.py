"""`fabcheck analyze counters BEFORE AFTER`: `ethtool -S` read strictly, judged with lossless semantics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabcheck.checks.counters import LosslessWant, check_counters
from fabcheck.checks.model import Status
from fabcheck.cli import main
from fabcheck.errors import ParseError
from fabcheck.parsers.ethtool_stats import UNNAMED, parse_ethtool_stats

CLEAN = {
    "rx_packets": 100,
    "tx_packets": 100,
    "rx_prio3_packets": 50,
    "tx_prio3_packets": 50,
    "rx_prio3_pause": 0,
    "tx_prio3_pause": 0,
    "rx_prio0_pause": 0,
    "rx_pause_ctrl_phy": 0,
    "tx_pause_ctrl_phy": 0,
    "rx_discards_phy": 0,
    "out_of_sequence": 0,
    "packet_seq_err": 0,
    "np_ecn_marked_roce_packets": 0,
    "np_cnp_sent": 0,
    "rp_cnp_handled": 0,
}
DCQCN = LosslessWant(priority=3, congestion_control=True)


def capture(counters: dict[str, int], interface: str | None = "ens1np0") -> str:
    head = f"root@gpu01:~# ethtool -S {interface}\n" if interface else ""
    body = "".join(f"     {name}: {value}\n" for name, value in counters.items())
    return f"{head}NIC statistics:\n{body}root@gpu01:~# \n"


def after(**moved: int) -> dict[str, int]:
    return {name: CLEAN[name] + moved.get(name, 0) for name in CLEAN}


def statuses(findings: list) -> dict[str, Status]:
    return {f.check: f.status for f in findings}


# A receiver of an incast on a healthy DCQCN fabric: traffic on 3, pauses on 3, marks and CNPs, no loss.
HEALTHY = after(rx_prio3_packets=9000, rx_prio3_pause=120, np_ecn_marked_roce_packets=40, np_cnp_sent=40)


def test_healthy_receiver_passes_every_check() -> None:
    findings = check_counters("ens1np0", CLEAN, HEALTHY, DCQCN)
    assert statuses(findings) == {
        "counters.lossless_traffic": Status.PASS,
        "counters.lossless_drops": Status.PASS,
        "counters.out_of_sequence": Status.PASS,
        "counters.congestion": Status.PASS,
        "counters.pause": Status.PASS,
    }
    assert "9000 packets" in findings[0].actual


@pytest.mark.parametrize(
    ("moved", "check"),
    [
        ({"rx_discards_phy": 7}, "counters.lossless_drops"),
        ({"out_of_sequence": 3}, "counters.out_of_sequence"),
        ({"np_ecn_marked_roce_packets": -40, "np_cnp_sent": -40}, "counters.congestion"),
        ({"rx_prio0_pause": 5}, "counters.pause"),
        ({"rx_pause_ctrl_phy": 5}, "counters.pause"),
    ],
)
def test_each_broken_promise_fails_exactly_its_check(moved: dict[str, int], check: str) -> None:
    broken = {name: value + moved.get(name, 0) for name, value in HEALTHY.items()}
    result = statuses(check_counters("ens1np0", CLEAN, broken, DCQCN))
    assert result.pop(check) is Status.FAIL
    assert set(result.values()) == {Status.PASS}


def test_per_priority_discards_are_preferred_to_the_port_wide_counter() -> None:
    before = {**CLEAN, "rx_prio3_discards": 0}
    # Lossy traffic on priority 0 dropped at the port; priority 3 lost nothing.
    later = {**HEALTHY, "rx_prio3_discards": 0, "rx_discards_phy": 50}
    drops = next(f for f in check_counters("x", before, later, DCQCN) if f.check == "counters.lossless_drops")
    assert drops.status is Status.PASS and "rx_prio3_discards" in drops.expected


def test_pfc_only_intent_does_not_ask_for_marks() -> None:
    quiet = after(rx_prio3_packets=9000, rx_prio3_pause=10)
    result = statuses(check_counters("x", CLEAN, quiet, LosslessWant(3, congestion_control=False)))
    assert result["counters.congestion"] is Status.SKIP
    assert result["counters.lossless_drops"] is Status.PASS


def test_what_cannot_be_judged_is_an_error_never_a_pass() -> None:
    # No traffic on the lossless priority between the snapshots.
    assert statuses(check_counters("x", CLEAN, CLEAN, DCQCN)) == {"counters.lossless_traffic": Status.ERROR}
    # A counter reset (reboot, driver reload) between the snapshots.
    reset = {**HEALTHY, "rx_packets": 3}
    assert statuses(check_counters("x", CLEAN, reset, DCQCN)) == {"counters.readable": Status.ERROR}
    # A capture without the sequence counters: that check is an error, the others still judge.
    bare = {k: v for k, v in HEALTHY.items() if k not in ("out_of_sequence", "packet_seq_err")}
    result = statuses(check_counters("x", CLEAN, bare, DCQCN))
    assert result["counters.out_of_sequence"] is Status.ERROR
    assert result["counters.lossless_drops"] is Status.PASS


def test_parser_reads_named_blocks_and_a_lone_block() -> None:
    two = capture({"rx_packets": 1}, "ens1np0") + capture({"rx_packets": 2, "tx bytes [0]": 5}, "ens2np0")
    blocks = parse_ethtool_stats(two, "two.txt")
    assert {name: dict(b.counters) for name, b in blocks.items()} == {
        "ens1np0": {"rx_packets": 1},
        "ens2np0": {"rx_packets": 2, "tx bytes [0]": 5},
    }
    lone = parse_ethtool_stats(capture({"rx_packets": 9}, None))
    assert list(lone) == [UNNAMED] and lone[UNNAMED].counters["rx_packets"] == 9


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("just text\n", None, "no `NIC statistics:` block"),
        ("NIC statistics:\n     rx_packets: 1x\n", 2, "counter rx_packets"),
        ("NIC statistics:\n     rx_packets: -1\n", 2, "counter rx_packets"),
        ("NIC statistics:\n     rx_packets: 1\n     rx_packets: 2\n", 3, "appears twice"),
        ("NIC statistics:\n     no colon here\n", 2, "expected `counter: value`"),
        ("NIC statistics:\n     a: 1\nNIC statistics:\n     a: 2\n", 3, "second statistics block"),
        ("NIC statistics:\n", 1, "without a counter"),
    ],
)
def test_parser_refuses_what_is_not_ethtool_statistics(text: str, line: int | None, words: str) -> None:
    with pytest.raises(ParseError, match=words) as caught:
        parse_ethtool_stats(text, "bad.txt")
    assert caught.value.line == line and caught.value.source == "bad.txt"


def test_cli_judges_two_captures_with_the_shared_exit_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, good, bad = tmp_path / "before.txt", tmp_path / "good.txt", tmp_path / "bad.txt"
    before.write_text(capture(CLEAN))
    good.write_text(capture(HEALTHY))
    bad.write_text(capture({**HEALTHY, "rx_discards_phy": 7}))
    assert main(["analyze", "counters", str(before), str(good)]) == 0
    capsys.readouterr()
    assert main(["analyze", "counters", str(before), str(bad), "--json"]) == 1
    line = json.loads(capsys.readouterr().out)
    assert line["kind"] == "counters" and line["interfaces"]["ens1np0"]["rx_discards_phy"] == 7
    assert main(["analyze", "counters", str(before)]) == 2
    (tmp_path / "junk.txt").write_text("hello\n")
    assert main(["analyze", "counters", str(before), str(tmp_path / "junk.txt")]) == 2
    assert "junk.txt" in capsys.readouterr().err
