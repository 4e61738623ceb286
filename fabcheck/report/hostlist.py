"""Slurm hostlist expressions (`gpu[01-04,07]`), written the way Slurm reads them back. Pure.

The rules are Slurm's own, for one dimension (SchedMD/slurm:src/common/hostlist.c@
284c3b95f08a2dc2478499837b03355e1b9c5c75): a name's numeric suffix is its trailing digits
(host_prefix_end), the rest its prefix; a name without trailing digits stands alone. A range `lo-hi`
inside brackets is written with the width of `lo`, every number of it zero-padded to that width, so
`gpu[9-10]` is gpu9 and gpu10 and `gpu[09-10]` is gpu09 and gpu10; each comma-separated range in one
bracket has its own width. `compress` only merges names whose spelling that rule reproduces, so
`expand(compress(names))` is always the same set of names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# What a name may hold to stand in a hostlist: no separator (','), no bracket, no space, nothing a
# topology.conf line would read as `key=value` or a comment.
NAME = re.compile(r"[A-Za-z0-9._-]+")
_SUFFIX = re.compile(r"^(.*?)([0-9]+)$")
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")


def is_hostlist_name(name: str) -> bool:
    return bool(NAME.fullmatch(name))


def compress(names: Iterable[str]) -> str:
    """The shortest-range hostlist of `names` (duplicates once), sorted by prefix then number.
    ValueError for a name that cannot stand in a hostlist."""
    unique = sorted(set(names), key=_order)
    for name in unique:
        if not is_hostlist_name(name):
            raise ValueError(f"{name!r} cannot stand in a Slurm hostlist (letters, digits, '.', '_', '-')")
    groups: list[tuple[str | None, list[str]]] = []  # (prefix, ranges) in order; None: a lone name
    for name in unique:
        match = _SUFFIX.match(name)
        if match is None:
            groups.append((None, [name]))
            continue
        prefix, digits = match.groups()
        if not groups or groups[-1][0] != prefix:
            groups.append((prefix, []))
        _add(groups[-1][1], digits)
    parts = []
    for group_prefix, ranges in groups:
        if group_prefix is None or (len(ranges) == 1 and "-" not in ranges[0]):
            parts.append((group_prefix or "") + ranges[0])  # one host: no brackets, as Slurm prints it
        else:
            parts.append(f"{group_prefix}[{','.join(ranges)}]")
    return ",".join(parts)


def _order(name: str) -> tuple[str, int, int, str]:
    match = _SUFFIX.match(name)
    if match is None:
        return (name, -1, 0, name)
    prefix, digits = match.groups()
    return (prefix, int(digits), len(digits), name)


def _add(ranges: list[str], digits: str) -> None:
    """Extend the last range with `digits` when it is the next number at the range's width, else start
    a range."""
    number = int(digits)
    if ranges:
        lo, _, hi = ranges[-1].partition("-")
        width = len(lo)
        last = int(hi or lo)
        if number == last + 1 and f"{number:0{width}d}" == digits:
            ranges[-1] = f"{lo}-{number:0{width}d}"
            return
    ranges.append(digits)


def expand(text: str) -> list[str]:
    """Every name of a hostlist `compress` writes (prefix[ranges] or a plain name, comma-separated),
    in order. ValueError for anything else."""
    names: list[str] = []
    for part in _top_level(text):
        if "[" not in part:
            if not is_hostlist_name(part):
                raise ValueError(f"{part!r} is not a host name")
            names.append(part)
            continue
        prefix, _, rest = part.partition("[")
        if not rest.endswith("]") or "[" in rest or (prefix and not is_hostlist_name(prefix)):
            raise ValueError(f"{part!r} is not prefix[ranges]")
        for item in rest[:-1].split(","):
            match = _RANGE.match(item)
            if match is None:
                raise ValueError(f"{item!r} in {part!r} is not a number or a range lo-hi")
            lo, hi = match.group(1), match.group(2) or match.group(1)
            if int(hi) < int(lo):
                raise ValueError(f"{item!r} in {part!r}: the range runs backwards")
            names += [f"{prefix}{n:0{len(lo)}d}" for n in range(int(lo), int(hi) + 1)]
    return names


def _top_level(text: str) -> list[str]:
    """The comma-separated parts of a hostlist, commas inside brackets kept."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    parts.append(current)
    return [part for part in parts if part]
