"""sminfo's SMInfo line, opensm.conf `key value` lines and partitions.conf rules, as OpenSM reads them."""

from __future__ import annotations

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.opensm_conf import parse_opensm_conf, parse_partitions_conf
from fabcheck.parsers.sminfo import MASTER, STANDBY, no_sm_answered, parse_sminfo

MASTER_LINE = (
    "sminfo: sm lid 1 sm guid 0x0002c90300a1b2c3, activity count 12345 priority 15 state 3 SMINFO_MASTER\n"
)
NO_SM = (
    "ibwarn: [4242] _do_madrpc: recv failed: Connection timed out\n"
    "ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (Lid 17)\n"
    "sminfo: iberror: failed: query\n"
)


def test_sminfo_line() -> None:
    info = parse_sminfo(MASTER_LINE)
    assert (info.lid, info.guid, info.activity, info.priority, info.state) == (
        1,
        0x2C90300A1B2C3,
        12345,
        15,
        MASTER,
    )
    assert info.is_master and info.state_name == "SMINFO_MASTER"
    assert info.describe() == "SMINFO_MASTER at priority 15 (lid 1, guid 0x0002c90300a1b2c3)"
    standby = parse_sminfo(MASTER_LINE.replace("state 3 SMINFO_MASTER", "state 2 SMINFO_STANDBY"))
    assert standby.state == STANDBY and not standby.is_master


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no `sminfo: sm lid ...` line"),
        (
            "sminfo: sm lid x sm guid 0x1, activity count 1 priority 1 state 3 SMINFO_MASTER\n",
            "not an SMInfo line",
        ),
        (MASTER_LINE.replace("state 3 SMINFO_MASTER", "state 3 SMINFO_STANDBY"), "is not an SMInfo state"),
        (MASTER_LINE.replace("priority 15", "priority 16"), "priority 16 is not 0..15"),
    ],
)
def test_sminfo_damage_is_a_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_sminfo(text, "sm01: sminfo")


def test_a_query_no_sm_answers_is_told_apart_from_a_tool_that_cannot_run() -> None:
    assert no_sm_answered(NO_SM)
    assert not no_sm_answered("ibpanic: [1] main: can't open UMAD port ((null):0)\n")


def test_opensm_conf_keeps_file_order_and_the_last_value_of_a_key() -> None:
    conf = parse_opensm_conf(
        "# OpenSM configuration\n\nsm_priority 0\nrouting_engine (null)\n"
        "  # indented comment\nsm_priority 15\n"
        "qos_sl2vl 0,1,2,3 trailing words ignored\nlonely_key\n"
    )
    assert conf.pairs == (
        ("sm_priority", "0"),
        ("routing_engine", "(null)"),
        ("sm_priority", "15"),
        ("qos_sl2vl", "0,1,2,3"),
        ("lonely_key", ""),
    )
    assert conf.values["sm_priority"] == "15"


def test_partitions_conf_rules_span_lines_and_drop_comments() -> None:
    rules = parse_partitions_conf(
        "# written by fabcheck\n"
        "Default=0x7fff, ipoib : ALL=full ;\n"
        "compute=0x8001, ipoib, mtu=5, sl=1 :   # members follow\n"
        "   0x0002c9030001a2b3 = full, 0x0002c9030001a2b4=limited ;\n"
        "nokey : ALL ; other=0x0002 : SELF=full ;\n"
    )
    assert [(r.name, r.pkey, r.ipoib, r.line) for r in rules] == [
        ("Default", 0x7FFF, True, 2),
        ("compute", 0x0001, True, 3),
        ("nokey", None, False, 5),
        ("other", 0x0002, False, 5),
    ]
    assert rules[1].flags == (("ipoib", ""), ("mtu", "5"), ("sl", "1"))
    assert rules[1].members == ("0x0002c9030001a2b3=full", "0x0002c9030001a2b4=limited")
    assert (
        rules[1].text
        == "compute=0x0001, ipoib, mtu=5, sl=1 : 0x0002c9030001a2b3=full, 0x0002c9030001a2b4=limited ;"
    )


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("Default=0x7fff ALL=full ;\n", "rule without ':'", 1),
        ("\nDefault=0x7fff : ALL=full\n", "does not end with ';'", 2),
        ("bad name=0x1 : ALL ;\n", "is not a plain word", 1),
        ("Default=7fff : ALL ;\n", "is not 0x0001..0x7fff", 1),
    ],
)
def test_partitions_conf_damage_names_the_line(text: str, message: str, line: int) -> None:
    with pytest.raises(ParseError, match=message) as raised:
        parse_partitions_conf(text, "sm01: cat /etc/opensm/partitions.conf")
    assert raised.value.line == line


SAMPLES = {
    parse_sminfo: MASTER_LINE,
    parse_opensm_conf: "sm_priority 15\nrouting_engine ftree\n# comment\nqos FALSE\n",
    parse_partitions_conf: "Default=0x7fff, ipoib : ALL=full ;\ncompute=0x0001, ipoib :\n 0x1=full ;\n",
}


@pytest.mark.parametrize("parse", list(SAMPLES), ids=lambda parse: parse.__name__)
def test_damaged_input_is_a_result_or_a_parse_error(parse: object) -> None:
    """Seeded mutations (cut, duplicated and inserted characters) parse or raise ParseError, never
    another exception, and the mutations reach both outcomes."""
    import random

    rng = random.Random(10)
    outcomes = {"parsed": 0, "refused": 0}
    sample = SAMPLES[parse]  # type: ignore[index]
    alphabet = sample + "\x00\x1b[0m;:=,#\t\n0x" + "\u00e9\U0001f600"
    for _ in range(300):
        text = list(sample)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(text) + 1)
            choice = rng.randrange(3)
            if choice == 0 and text:
                del text[at : at + rng.randint(1, 8)]
            elif choice == 1:
                text.insert(at, rng.choice(alphabet))
            else:
                text[at:at] = text[: rng.randint(0, 20)]
        try:
            parse("".join(text))  # type: ignore[operator]
            outcomes["parsed"] += 1
        except ParseError:
            outcomes["refused"] += 1
    assert outcomes["parsed"] and outcomes["refused"], outcomes
