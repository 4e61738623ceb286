"""`ethtool --get-tunable IF pfc-prevention-tout`: the line ethtool's print_tunable() writes for a u16."""

from __future__ import annotations

import pytest
from conftest import CORPUS

from fabcheck.errors import ParseError
from fabcheck.parsers.ethtool_tunable import parse_pfc_prevention_tout


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("pfc-prevention-tout: 100\n", 100),  # mlx5's "auto" value
        ("pfc-prevention-tout: 8000\n", 8000),  # what an mlx5 NIC starts at
        ("pfc-prevention-tout: 0\n", 0),  # off
        ("\npfc-prevention-tout: 80\n\n", 80),
    ],
)
def test_the_real_line_gives_milliseconds(text: str, ms: int) -> None:
    assert parse_pfc_prevention_tout(text, "ethtool") == ms


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "got 0 lines"),
        ("pfc-prevention-tout: Cannot get tunable\n", "pfc-prevention-tout value"),
        ("pfc-prevention-tout: Unknown format\n", "pfc-prevention-tout value"),
        ("rx-copybreak: 256\n", "expected 'pfc-prevention-tout: N'"),
        ("pfc-prevention-tout: 100\npfc-prevention-tout: 100\n", "got 2 lines"),
        ("pfc-prevention-tout: 70000\n", "is not a u16"),
        ("pfc-prevention-tout: -1\n", "pfc-prevention-tout value"),
        ("garbage\x00\n", "expected 'pfc-prevention-tout: N'"),
    ],
)
def test_anything_else_is_a_parse_error_naming_the_source(text: str, named: str) -> None:
    with pytest.raises(ParseError, match=named) as raised:
        parse_pfc_prevention_tout(text, "ethtool --get-tunable ens1np0 pfc-prevention-tout")
    assert raised.value.source == "ethtool --get-tunable ens1np0 pfc-prevention-tout"


SAMPLE = CORPUS / "nic-tunable" / "ethtool-get-tunable-pfc-prevention-tout-mlx5-factory-from-source.txt"


def test_the_corpus_sample_is_indexed_as_unverified_and_reads_as_the_factory_timeout() -> None:
    rows = [line.split("\t") for line in (CORPUS / "INDEX.tsv").read_text().splitlines()]
    row = next(r for r in rows if r[0] == "nic-tunable/" + SAMPLE.name)
    assert row[1] == "nic-tunable" and row[2].startswith("UNVERIFIED, rendered from source")
    assert parse_pfc_prevention_tout(SAMPLE.read_text(), SAMPLE.name) == 8000


def test_a_line_over_the_cap_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_pfc_prevention_tout("pfc-prevention-tout: " + "1" * 70_000 + "\n", "long.txt")
