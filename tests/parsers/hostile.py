"""Hypothesis strategies for hostile parser input: what damaged or adversarial captures hold.

Long digit runs (past 64-bit and past Python's 4,300-digit int limit), NUL bytes, '\\r', tabs,
digits Python accepts but tools never print ('٣', '²', '１'), nan/inf/huge numbers, and very long
lines on both sides of the parsers' 64 KiB cap. ``mutated(texts)`` plants them in real samples, where
they reach past the block markers into the number readers.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers._text import MAX_LINE_CHARS

NON_ASCII_DIGITS = ("٣", "۳", "५", "৪", "１", "𝟙", "²", "³", "¹", "①", "٫")
NOT_FINITE = ("nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e999")

long_digit_runs = st.sampled_from((20, 21, 40, 310, 4300, 4301, 6000)).map(lambda n: "9" * n)
nul_bytes = st.integers(1, 50).map(lambda n: "\x00" * n)
line_ends_and_tabs = st.sampled_from(("\r", "\r\n", "\n\r", "\t", "\t\t", " \t "))
odd_digits = st.sampled_from(NON_ASCII_DIGITS)
not_finite = st.sampled_from(NOT_FINITE)
very_long_lines = st.sampled_from((5_000, MAX_LINE_CHARS - 1, MAX_LINE_CHARS + 1, 100_000)).flatmap(
    lambda n: st.sampled_from(("x", " ", "9", ":", "\t", "#", "[", "GPU0 ")).map(lambda unit: (unit * n)[:n])
)
hostile_pieces = st.one_of(
    long_digit_runs,
    nul_bytes,
    line_ends_and_tabs,
    odd_digits,
    not_finite,
    very_long_lines,
    st.text(max_size=12),
)
hostile_text = st.lists(hostile_pieces, max_size=10).map("".join)

_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


@st.composite
def mutated(draw: st.DrawFn, texts: list[str]) -> str:
    """One of ``texts`` with 1 to 4 hostile pieces put in, each either inserted or replacing a number."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 4))):
        piece = draw(hostile_pieces)
        at = draw(st.integers(0, len(text)))
        number = _NUMBER.search(text, at) if draw(st.booleans()) else None
        if number is not None:
            text = text[: number.start()] + piece + text[number.end() :]
        else:
            text = text[:at] + piece + text[at:]
    return text


def parse_or_refuse_tests(
    parse: Callable[[str, str], object], samples: list[str]
) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two hostile-input tests of a ``parse(text, source)`` parser, to bind to test_ names in a module.

    Mutated ``samples`` and hostile text each parse, or are a ParseError naming the source given.
    """

    def parses_or_refuses(text: str) -> None:
        try:
            parse(text, "hostile")
        except ParseError as error:
            assert error.source == "hostile"

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(mutated(samples))
    def mutations_of_the_samples_parse_or_refuse(text: str) -> None:
        parses_or_refuses(text)

    @settings(max_examples=100, deadline=None)
    @given(hostile_text)
    def hostile_text_parses_or_refuses(text: str) -> None:
        parses_or_refuses(text)

    return mutations_of_the_samples_parse_or_refuse, hostile_text_parses_or_refuses
