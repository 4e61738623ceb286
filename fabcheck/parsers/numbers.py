"""The one way fabcheck reads numbers out of tool output and sysfs text.

Tool output prints numbers in ASCII. Python's ``int()``/``float()``/``str.isdigit()`` accept far more
(``'²'``, Arabic-Indic digits, ``'nan'``, ``'inf'``, ``'1_000'``, 100,000-digit integers that take seconds
or hit the 4,300-digit limit), so every reader here is ASCII-only, bounded in length and, for floats,
finite. Every failure is a :class:`ParseError` naming the source and line, never a ``ValueError``.

Stable API (also used by ``fabcheck.validate``)::

    read_int(token, *, source="<text>", line=None, what="number", max_digits=20, signed=False) -> int
    read_hex(token, *, source="<text>", line=None, what="number", max_digits=16) -> int
    read_float(token, *, source="<text>", line=None, what="number", max_digits=40) -> float
    read_number(token, ...) -> int | float      # int when the token has no fraction or exponent
    is_int_token(token, *, max_digits=20, signed=False) -> bool

Tokens are taken as given: callers strip surrounding whitespace first.
"""

from __future__ import annotations

import math
import re

from fabcheck.errors import ParseError

__all__ = [
    "FLOAT_MAX_DIGITS",
    "HEX_MAX_DIGITS",
    "INT_MAX_DIGITS",
    "is_int_token",
    "read_float",
    "read_hex",
    "read_int",
    "read_number",
]

# 20 digits hold any 64-bit counter (2**64 - 1 has 20 digits); no tool prints a wider integer.
INT_MAX_DIGITS = 20
# Significant digits of a decimal float; real tools print well under 20, 40 leaves room for odd formats.
FLOAT_MAX_DIGITS = 40
# A 64-bit value in hex; callers reading GUIDs or wider fields pass max_digits explicitly.
HEX_MAX_DIGITS = 16
# Exponents beyond 3 digits can only be damage (and would overflow a float anyway).
_EXPONENT_MAX_DIGITS = 3

# Python's int() refuses longer decimal strings (sys.int_info.default_max_str_digits is 4,300).
_MAX_DIGITS_ALLOWED = 4000

# Plain character classes, no nested quantifiers: linear time on any input.
_INT = re.compile(r"[0-9]+", re.ASCII)
_SIGNED_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_HEX = re.compile(r"(?:0[xX])?([0-9a-fA-F]+)", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?:[eE](?P<exp>[+-]?[0-9]+))?", re.ASCII)

# How much of a bad token an error message quotes: enough to recognise it, never a 100 KB blob.
_QUOTE_CHARS = 40


def _quote(token: str) -> str:
    if len(token) <= _QUOTE_CHARS:
        return repr(token)
    return f"{token[:_QUOTE_CHARS]!r}... ({len(token)} characters)"


def _fail(token: str, why: str, *, what: str, source: str, line: int | None) -> ParseError:
    return ParseError(f"{what} {_quote(token)} {why}", source=source, line=line)


def _digit_count(token: str) -> int:
    return sum(1 for char in token if "0" <= char <= "9")


def is_int_token(token: str, *, max_digits: int = INT_MAX_DIGITS, signed: bool = False) -> bool:
    """True when ``token`` is an ASCII decimal integer of at most ``max_digits`` digits."""
    if len(token) > max_digits + 1:  # cheap reject before the regex sees a huge token
        return False
    pattern = _SIGNED_INT if signed else _INT
    return pattern.fullmatch(token) is not None and _digit_count(token) <= max_digits


def read_int(
    token: str,
    *,
    source: str = "<text>",
    line: int | None = None,
    what: str = "number",
    max_digits: int = INT_MAX_DIGITS,
    signed: bool = False,
) -> int:
    """Read an ASCII decimal integer (a sign only when ``signed``) of at most ``max_digits`` digits."""
    if not 0 < max_digits <= _MAX_DIGITS_ALLOWED:
        raise ValueError(f"max_digits must be 1..{_MAX_DIGITS_ALLOWED}, not {max_digits}")
    pattern = _SIGNED_INT if signed else _INT
    if pattern.fullmatch(token) is None:
        kind = "integer" if signed else "non-negative integer"
        raise _fail(token, f"is not an ASCII {kind}", what=what, source=source, line=line)
    if _digit_count(token) > max_digits:
        raise _fail(token, f"has more than {max_digits} digits", what=what, source=source, line=line)
    return int(token)


def read_hex(
    token: str,
    *,
    source: str = "<text>",
    line: int | None = None,
    what: str = "number",
    max_digits: int = HEX_MAX_DIGITS,
) -> int:
    """Read an ASCII hexadecimal integer, with or without ``0x``, of at most ``max_digits`` hex digits."""
    if not 0 < max_digits <= _MAX_DIGITS_ALLOWED:
        raise ValueError(f"max_digits must be 1..{_MAX_DIGITS_ALLOWED}, not {max_digits}")
    match = _HEX.fullmatch(token) if len(token) <= max_digits + 2 else None
    if match is None:
        if len(token) > max_digits + 2 and _HEX.fullmatch(token) is not None:
            raise _fail(token, f"has more than {max_digits} hex digits", what=what, source=source, line=line)
        raise _fail(token, "is not an ASCII hexadecimal number", what=what, source=source, line=line)
    digits = match.group(1)
    if len(digits) > max_digits:
        raise _fail(token, f"has more than {max_digits} hex digits", what=what, source=source, line=line)
    return int(digits, 16)


def read_float(
    token: str,
    *,
    source: str = "<text>",
    line: int | None = None,
    what: str = "number",
    max_digits: int = FLOAT_MAX_DIGITS,
) -> float:
    """Read a finite ASCII decimal number (``12``, ``-0.5``, ``.5``, ``1e3``); ``nan``/``inf`` are errors."""
    if not 0 < max_digits <= _MAX_DIGITS_ALLOWED:
        raise ValueError(f"max_digits must be 1..{_MAX_DIGITS_ALLOWED}, not {max_digits}")
    # sign + digits + dot + 'e' + exponent sign + exponent digits
    longest = max_digits + 4 + _EXPONENT_MAX_DIGITS
    match = _FLOAT.fullmatch(token) if len(token) <= longest else None
    if match is None or not (match["int"] or match["frac"]):
        if len(token) > longest and _digit_count(token) > max_digits:
            raise _fail(token, f"has more than {max_digits} digits", what=what, source=source, line=line)
        lowered = token.strip().lower().lstrip("+-")
        if lowered in {"nan", "inf", "infinity"}:
            raise _fail(token, "is not a finite number", what=what, source=source, line=line)
        raise _fail(token, "is not an ASCII decimal number", what=what, source=source, line=line)
    if len(match["int"]) + len(match["frac"] or "") > max_digits:
        raise _fail(token, f"has more than {max_digits} digits", what=what, source=source, line=line)
    exponent = match["exp"]
    if exponent is not None and len(exponent.lstrip("+-")) > _EXPONENT_MAX_DIGITS:
        raise _fail(token, "has an exponent out of range", what=what, source=source, line=line)
    value = float(token)
    if not math.isfinite(value):
        raise _fail(token, "is not a finite number (overflows a float)", what=what, source=source, line=line)
    return value


def read_number(
    token: str,
    *,
    source: str = "<text>",
    line: int | None = None,
    what: str = "number",
    max_digits: int = INT_MAX_DIGITS,
) -> int | float:
    """Read a table cell: an int when it is a plain (optionally signed) integer, else a finite float.

    ``max_digits`` bounds the integer form; the float form allows :data:`FLOAT_MAX_DIGITS` digits.
    """
    if _SIGNED_INT.fullmatch(token) is not None:
        return read_int(token, source=source, line=line, what=what, max_digits=max_digits, signed=True)
    return read_float(token, source=source, line=line, what=what)
