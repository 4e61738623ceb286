"""Token grammar for the EOS mock: keyword abbreviation and EOS's three error messages.

A rule is a space-separated pattern. Elements: a keyword; `{a|b}` one of several keywords;
`<int:LO-HI>` (with `+` for one or more); `<dec>` a decimal; `<word>` any token; `<rest>` the rest
of the line; `<ifs>` an interface list such as `Ethernet1`, `Et1-4,6` or `Ethernet 1`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

INVALID = "% Invalid input"
INCOMPLETE = "% Incomplete command"
AMBIGUOUS = "% Ambiguous command"


class EosInputError(Exception):
    """Input the EOS parser rejects; str() is what EOS prints."""


@dataclass(frozen=True)
class Rule:
    pattern: tuple[str, ...]
    action: str

    @classmethod
    def of(cls, spec: str, action: str) -> Rule:
        return cls(tuple(spec.split()), action)


@dataclass(frozen=True)
class Matched:
    action: str
    values: list[Any]


IfParser = Callable[[str], "list[str] | None"]
_FAIL, _SHORT = "fail", "short"


def _keyword(choices: Sequence[str], token: str) -> str | None:
    low = token.lower()
    if low in choices:
        return low
    hits = [c for c in choices if c.startswith(low)]
    return hits[0] if len(hits) == 1 else None


@dataclass
class _Attempt:
    status: str  # ok | fail | short
    index: int  # furthest token reached
    values: list[Any]
    exact: int  # keywords typed in full
    abbreviated: dict[int, str]  # token index -> keyword an abbreviation was taken for


def _match_rule(rule: Rule, tokens: Sequence[str], interfaces: IfParser) -> _Attempt:
    i, values, exact, abbreviated = 0, [], 0, {}

    def done(status: str) -> _Attempt:
        return _Attempt(status, i, values, exact, abbreviated)

    for element in rule.pattern:
        if i >= len(tokens):
            return done(_SHORT)
        token = tokens[i]
        if element.startswith("<int:"):
            lo, hi = (int(x) for x in element[5:].rstrip("+").rstrip(">").split("-"))
            taken = []
            while i < len(tokens) and tokens[i].isdigit() and lo <= int(tokens[i]) <= hi:
                taken.append(int(tokens[i]))
                i += 1
                if not element.endswith("+"):
                    break
            if not taken:
                return done(_FAIL)
            values.append(taken if element.endswith("+") else taken[0])
            continue
        if element == "<dec>":
            if not re.fullmatch(r"\d+(\.\d+)?", token):
                return done(_FAIL)
            values.append(token)
        elif element == "<word>":
            values.append(token)
        elif element == "<rest>":
            values.append(" ".join(tokens[i:]))
            i = len(tokens)
            continue
        elif element == "<ifs>":
            if re.fullmatch(r"[A-Za-z]+", token) and i + 1 < len(tokens):
                token = token + tokens[i + 1]
                i += 1
            names = interfaces(token)
            if not names:
                return done(_FAIL)
            values.append(names)
        else:
            choices = element.strip("{}").split("|")
            word = _keyword(choices, token)
            if word is None:
                return done(_FAIL)
            exact += word == token.lower()
            if word != token.lower():
                abbreviated[i] = word
            if len(choices) > 1:
                values.append(word)
        i += 1
    return done(_FAIL if i < len(tokens) else "ok")


def _ambiguous(attempts: Sequence[_Attempt]) -> bool:
    """EOS refuses an abbreviation that fits two keywords at the same position (`c` = configure|copy)."""
    seen: dict[int, set[str]] = {}
    for attempt in attempts:
        for index, word in attempt.abbreviated.items():
            seen.setdefault(index, set()).add(word)
    return any(len(words) > 1 for words in seen.values())


def match(rules: Sequence[Rule], tokens: Sequence[str], interfaces: IfParser) -> Matched:
    """The rule the tokens select, or EosInputError with EOS's message."""
    attempts = [(rule, _match_rule(rule, tokens, interfaces)) for rule in rules]
    if _ambiguous([a for _, a in attempts]):
        raise EosInputError(AMBIGUOUS)
    full = [(a.exact, rule, a.values) for rule, a in attempts if a.status == "ok"]
    if full:
        best = max(e for e, _, _ in full)
        winners = {(r.action, r.pattern): v for e, r, v in full if e == best}
        if len({action for action, _ in winners}) > 1:
            raise EosInputError(AMBIGUOUS)
        (action, _), values = next(iter(winners.items()))
        return Matched(action, values)
    if any(a.status == _SHORT for _, a in attempts):
        raise EosInputError(INCOMPLETE)
    furthest = max(a.index for _, a in attempts)
    token = tokens[furthest] if furthest < len(tokens) else tokens[-1]
    raise EosInputError(f"{INVALID} (at token {furthest}: '{token}')")
