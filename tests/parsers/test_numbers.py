"""The shared number reader: ASCII only, bounded digits, finite floats, ParseError with source and line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers.numbers import (
    FLOAT_MAX_DIGITS,
    INT_MAX_DIGITS,
    is_int_token,
    read_float,
    read_hex,
    read_int,
    read_number,
)

# Characters Python's int()/isdigit() or float() accept but tools never print.
NON_ASCII_NUMBERS = ["²", "١٢", "١", "۳", "৪", "１２", "𝟙", "1²", "٣.٥"]
NOT_FINITE = ["nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e400", "-1e309"]


@pytest.mark.parametrize(
    ("token", "value"), [("0", 0), ("12", 12), ("18446744073709551615", 2**64 - 1), ("007", 7)]
)
def test_read_int_accepts_ascii_decimal(token: str, value: int) -> None:
    assert read_int(token) == value


@pytest.mark.parametrize(
    "token", ["", "+", "-", "1.0", "1e3", "0x10", "1_000", " 1", "1 ", "-3", *NON_ASCII_NUMBERS]
)
def test_read_int_rejects_everything_else(token: str) -> None:
    with pytest.raises(ParseError, match="is not an ASCII non-negative integer"):
        read_int(token)


def test_read_int_signed_only_when_asked() -> None:
    assert read_int("-3", signed=True) == -3
    assert read_int("+3", signed=True) == 3


def test_error_names_source_line_and_what() -> None:
    with pytest.raises(ParseError) as raised:
        read_int("²", source="f.txt", line=7, what="port")
    assert str(raised.value) == "f.txt:7: port '²' is not an ASCII non-negative integer"
    assert raised.value.line == 7


@pytest.mark.parametrize("digits", [INT_MAX_DIGITS + 1, 4301, 100_000])
def test_too_many_digits_is_a_parse_error_fast_and_quoted_briefly(digits: int) -> None:
    token = "9" * digits
    for reader in (read_int, read_number):
        with pytest.raises(ParseError, match=f"more than {INT_MAX_DIGITS} digits") as raised:
            reader(token)
        # the message quotes a prefix, never the whole token
        assert len(str(raised.value)) < 200
    if digits > FLOAT_MAX_DIGITS:
        with pytest.raises(ParseError, match=f"more than {FLOAT_MAX_DIGITS} digits"):
            read_float(token)
    else:
        assert read_float(token) == float(token)


def test_max_digits_is_a_parameter() -> None:
    assert read_int("1" * 30, max_digits=30) == int("1" * 30)
    with pytest.raises(ParseError, match="more than 3 digits"):
        read_int("1234", max_digits=3)


@pytest.mark.parametrize(
    ("token", "value"),
    [("1.5", 1.5), ("-0.25", -0.25), (".5", 0.5), ("3.", 3.0), ("1e3", 1000.0), ("7", 7.0)],
)
def test_read_float_accepts_ascii_decimal(token: str, value: float) -> None:
    assert read_float(token) == value


@pytest.mark.parametrize("token", NOT_FINITE)
def test_read_float_rejects_non_finite(token: str) -> None:
    with pytest.raises(ParseError, match="not a finite number"):
        read_float(token)
    with pytest.raises(ParseError, match="not a finite number"):
        read_number(token)


@pytest.mark.parametrize("token", ["", ".", "e5", "1e", "1.2.3", "1,5", "0x1p3", "1_0.5", *NON_ASCII_NUMBERS])
def test_read_float_rejects_non_numbers(token: str) -> None:
    with pytest.raises(ParseError, match="is not an ASCII decimal number"):
        read_float(token)


def test_read_float_bounds_digits_and_exponent() -> None:
    assert read_float("1" * FLOAT_MAX_DIGITS) == float("1" * FLOAT_MAX_DIGITS)
    with pytest.raises(ParseError, match="more than"):
        read_float("1" * (FLOAT_MAX_DIGITS + 1))
    with pytest.raises(ParseError, match="exponent out of range"):
        read_float("1e0001")


def test_read_number_int_or_float() -> None:
    assert read_number("42") == 42 and isinstance(read_number("42"), int)
    assert read_number("-1") == -1
    assert read_number("42.0") == 42.0 and isinstance(read_number("42.0"), float)


@pytest.mark.parametrize(("token", "value"), [("0x1F", 31), ("1f", 31), ("0XfF", 255), ("0", 0)])
def test_read_hex(token: str, value: int) -> None:
    assert read_hex(token) == value


@pytest.mark.parametrize("token", ["", "0x", "0xg", "-1", "１", "f" * 17])
def test_read_hex_rejects(token: str) -> None:
    with pytest.raises(ParseError):
        read_hex(token)


def test_is_int_token() -> None:
    assert is_int_token("12")
    assert not is_int_token("²")
    assert not is_int_token("-1")
    assert is_int_token("-1", signed=True)
    assert not is_int_token("1" * (INT_MAX_DIGITS + 1))


def test_max_digits_beyond_pythons_int_limit_is_a_programming_error() -> None:
    # int() refuses more than 4,300 digits with ValueError; the reader never lets a caller get there.
    with pytest.raises(ValueError, match="max_digits"):
        read_int("1", max_digits=5000)


@given(st.text(max_size=60))
def test_any_text_is_a_value_or_parse_error(token: str) -> None:
    for reader in (read_int, read_float, read_number, read_hex):
        try:
            value = reader(token)
        except ParseError:
            continue
        assert isinstance(value, int | float)
        if isinstance(value, float):
            assert math.isfinite(value)
            json.dumps(value, allow_nan=False)
        assert token.isascii()
