"""Parsers for OpenSM's files: ``opensm.conf`` and ``partitions.conf``.

opensm.conf holds one ``key value`` a line; a line whose first word starts with ``#`` is a comment, and
a key set twice keeps its last value (OpenSM applies the lines in order). partitions.conf holds rules
``Name[=PKey][,flag[=value]...] : member[=full|limited|both], ... ;`` that may span lines, with ``#``
comments to the end of a line (OpenSM doc/partition-config.txt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError
from fabcheck.parsers._text import split_checked_lines

PKEY_MASK = 0x7FFF  # the full-member bit is not part of the partition's key
_PKEY = re.compile(r"0x[0-9a-fA-F]{1,4}", re.ASCII)
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}", re.ASCII)


@dataclass(frozen=True)
class OpenSmConf:
    pairs: tuple[tuple[str, str], ...]  # every `key value` line, in file order

    @property
    def values(self) -> dict[str, str]:
        return dict(self.pairs)  # later lines win, as OpenSM applies them


def parse_opensm_conf(text: str, source: str = "<text>") -> OpenSmConf:
    pairs: list[tuple[str, str]] = []
    for number, line in enumerate(split_checked_lines(text, source, "opensm.conf"), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if "\x00" in line:
            raise ParseError("NUL byte in a line", source=source, line=number)
        pairs.append((words[0], words[1] if len(words) > 1 else ""))
    return OpenSmConf(tuple(pairs))


@dataclass(frozen=True)
class PartitionRule:
    """One partitions.conf rule: its flags in file order (``ipoib`` has the value ``""``)."""

    name: str
    pkey: int | None  # None: no PKey given (OpenSM then picks one)
    flags: tuple[tuple[str, str], ...]
    members: tuple[str, ...]
    line: int  # where the rule starts

    @property
    def ipoib(self) -> bool:
        return any(flag == "ipoib" for flag, _ in self.flags)

    @property
    def text(self) -> str:
        head = [self.name if self.pkey is None else f"{self.name}=0x{self.pkey:04x}"]
        head += [flag if value == "" else f"{flag}={value}" for flag, value in self.flags]
        return f"{', '.join(head)} : {', '.join(self.members)} ;"


def parse_partitions_conf(text: str, source: str = "<text>") -> tuple[PartitionRule, ...]:
    """Every rule, in file order. A rule without ``:``, a bad name or PKey, or text after the last ``;``
    is a ParseError naming the line the rule starts on."""
    rules: list[PartitionRule] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(split_checked_lines(text, source, "partitions.conf"), start=1):
        line = raw.split("#", 1)[0]
        while line.strip():
            if not pending:
                start = number
            statement, ended, line = line.partition(";")
            pending.append(statement)
            if ended:
                rules.append(_rule(" ".join(pending), start, source))
                pending = []
    if pending and " ".join(pending).strip():
        raise ParseError("rule does not end with ';'", source=source, line=start)
    return tuple(rules)


def _rule(statement: str, line: int, source: str) -> PartitionRule:
    head, colon, members = statement.partition(":")
    if not colon:
        raise ParseError(
            f"rule without ':' before its members: {statement.strip()[:120]!r}", source=source, line=line
        )
    name_part, *flag_parts = [part.strip() for part in head.split(",")]
    name, _, pkey_text = (word.strip() for word in name_part.partition("="))
    if not _NAME.fullmatch(name):
        raise ParseError(f"partition name {name!r} is not a plain word", source=source, line=line)
    if pkey_text and not _PKEY.fullmatch(pkey_text):
        raise ParseError(f"PKey {pkey_text!r} of {name} is not 0x0001..0x7fff", source=source, line=line)
    flags = tuple(_pair(part) for part in flag_parts if part)
    listed = tuple(_member(part) for part in members.split(",") if part.strip())
    pkey = int(pkey_text, 16) & PKEY_MASK if pkey_text else None
    return PartitionRule(name, pkey, flags, listed, line)


def _pair(part: str) -> tuple[str, str]:
    flag, _, value = (word.strip() for word in part.partition("="))
    return flag, value


def _member(part: str) -> str:
    """``guid = full`` and ``guid=full`` are the same member: spaces around ``=`` are dropped."""
    who, equals, membership = (word.strip() for word in part.partition("="))
    return f"{who}={membership}" if equals else who
