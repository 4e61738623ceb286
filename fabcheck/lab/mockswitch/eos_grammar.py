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


def _match_rule(rule: Rule, tokens: Sequence[str], interfaces: IfParser) -> tuple[str, int, list[Any], int]:
    """(status, furthest token index, captured values, exact keyword count); status ok|fail|short."""
    i, values, exact = 0, [], 0
    for element in rule.pattern:
        if i >= len(tokens):
            return _SHORT, i, values, exact
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
                return _FAIL, i, values, exact
            values.append(taken if element.endswith("+") else taken[0])
            continue
        if element == "<dec>":
            if not re.fullmatch(r"\d+(\.\d+)?", token):
                return _FAIL, i, values, exact
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
                return _FAIL, i, values, exact
            values.append(names)
        else:
            choices = element.strip("{}").split("|")
            word = _keyword(choices, token)
            if word is None:
                return _FAIL, i, values, exact
            exact += word == token.lower()
            if len(choices) > 1:
                values.append(word)
        i += 1
    if i < len(tokens):
        return _FAIL, i, values, exact
    return "ok", i, values, exact


def match(rules: Sequence[Rule], tokens: Sequence[str], interfaces: IfParser) -> Matched:
    """The rule the tokens select, or EosInputError with EOS's message."""
    full: list[tuple[int, Rule, list[Any]]] = []
    furthest, short = 0, False
    for rule in rules:
        status, index, values, exact = _match_rule(rule, tokens, interfaces)
        if status == "ok":
            full.append((exact, rule, values))
        elif status == _SHORT:
            short = True
        else:
            furthest = max(furthest, index)
    if full:
        best = max(e for e, _, _ in full)
        winners = {(r.action, r.pattern): v for e, r, v in full if e == best}
        if len({action for action, _ in winners}) > 1:
            raise EosInputError(AMBIGUOUS)
        (action, _), values = next(iter(winners.items()))
        return Matched(action, values)
    if short:
        raise EosInputError(INCOMPLETE)
    token = tokens[furthest] if furthest < len(tokens) else tokens[-1]
    raise EosInputError(f"{INVALID} (at token {furthest}: '{token}')")
