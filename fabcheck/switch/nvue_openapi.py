"""Judge NVUE config trees with NVIDIA's own NVUE OpenAPI, per Cumulus Linux release.

The models are the PyPI package `nvueschema` (MIT; Pydantic models generated from NVIDIA's NVUE
OpenAPI for CL 5.0-5.18: paths as field aliases, enums as Literal, ranges as ge/le), an optional
dependency (`pip install 'fabcheck[nvue-schema]'`). The models themselves accept unknown keys, so they
are walked here, strictly: every key must be a field of its node, every collection key a key, every
value fit its field's type (enum, range, pattern). Two entry points:

- `lines_problems`: the `nv set` lines of a render, each turned into its path of the config tree as
  it is walked (a token names a field, a collection key list "0,1,2" / "swp1,swp2", or the value);
- `tree_problems`: a config tree as `nv config show -o json` prints its `set` document.

A release nvueschema does not carry is NvueSchemaUnavailable (the caller reports a named skip), never
a pass.
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fabcheck.errors import FabcheckError

PACKAGE = "nvueschema"
PINNED = "nvueschema==0.1.0"
_RANGE = re.compile(r"^(?P<prefix>[A-Za-z]*)(?P<first>\d+)-(?:(?P=prefix))?(?P<last>\d+)$")


class NvueSchemaUnavailable(FabcheckError):
    """nvueschema is not installed, or carries no model of the asked release."""


def releases() -> tuple[str, ...]:
    """The Cumulus Linux releases ("5.11") nvueschema carries models of; () when not installed."""
    try:
        versions = importlib.import_module(f"{PACKAGE}.models._versions")
    except ImportError:
        return ()
    return tuple(str(v) for v in versions.VERSIONS)


def release_name(release: tuple[int, int] | str) -> str:
    return release if isinstance(release, str) else f"{release[0]}.{release[1]}"


def root_model(release: tuple[int, int] | str) -> type[Any]:
    """nvueschema's NvueConfig of one release; NvueSchemaUnavailable when there is none."""
    name = release_name(release)
    if not releases():
        raise NvueSchemaUnavailable(
            f"the NVUE schema package is not installed (pip install '{PINNED}', or fabcheck[nvue-schema])"
        )
    if name not in releases():
        raise NvueSchemaUnavailable(
            f"{PINNED} has no NVUE model of Cumulus Linux {name} (it has {', '.join(releases())})"
        )
    module = importlib.import_module(f"{PACKAGE}.models.v{name.replace('.', '_')}")
    return module.NvueConfig


# -- the shape of a field's annotation ----------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    kind: str  # "model", "collection", "leaf"
    model: type[Any] | None = None  # kind model
    item: Any = None  # kind collection: the annotation of each entry
    leaf: Any = None  # kind leaf: the annotation a value must fit


def _strip_optional(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _node(annotation: Any) -> _Node:
    from pydantic import BaseModel

    bare = _strip_optional(annotation)
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        return _Node("model", model=bare)
    if typing.get_origin(bare) is dict:
        _key, item = typing.get_args(bare)
        return _Node("collection", item=item)
    return _Node("leaf", leaf=annotation)


def _fields(model: type[Any]) -> dict[str, Any]:
    """A model's fields by the name NVUE spells (the alias), with their annotations."""
    return {(info.alias or name): info.annotation for name, info in model.model_fields.items()}


def _value_problem(annotation: Any, value: Any) -> str | None:
    from pydantic import TypeAdapter, ValidationError

    if _strip_optional(annotation) is Any:
        return None
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError as err:
        return "; ".join(str(e.get("msg", e)) for e in err.errors())
    return None


def _path_text(path: Iterable[str]) -> str:
    return "/" + "/".join(path)


# -- config trees ------------------------------------------------------------------------------------


def tree_problems(tree: Mapping[str, Any], release: tuple[int, int] | str) -> list[str]:
    """Every key and value of `tree` (a `set` document) that NVUE's schema of `release` does not have."""
    return list(_walk_tree(tree, _Node("model", model=root_model(release)), (), release_name(release)))


def _walk_tree(value: Any, node: _Node, path: tuple[str, ...], release: str) -> Iterator[str]:
    where = _path_text(path)
    if node.kind == "model":
        if not isinstance(value, Mapping):
            yield f"{where}: {str(value)[:40]!r} is not an object (NVUE {release})"
            return
        fields = _fields(node.model) if node.model is not None else {}
        for key, child in value.items():
            if key not in fields:
                yield f"{_path_text((*path, str(key)))}: not a key of {where} in NVUE {release}"
                continue
            yield from _walk_tree(child, _node(fields[key]), (*path, str(key)), release)
    elif node.kind == "collection":
        if not isinstance(value, Mapping):
            yield f"{where}: {str(value)[:40]!r} is not a collection (NVUE {release})"
            return
        item = _node(node.item)
        for key, child in value.items():
            if item.kind == "leaf" and _strip_optional(node.item) is Any:
                continue  # a free-form collection entry (NVUE's Dict[str, Any]): nothing to judge
            yield from _walk_tree(child, item, (*path, str(key)), release)
    else:
        problem = _value_problem(node.leaf, value)
        if problem:
            yield f"{where}: value {str(value)[:40]!r} does not fit NVUE {release}: {problem}"


# -- `nv set` lines ----------------------------------------------------------------------------------


def expand_ids(token: str) -> list[str]:
    """NVUE's id list as the keys it names: "0,1,2" -> 0 1 2, "0-2,6" -> 0 1 2 6, "swp1-3" ->
    swp1 swp2 swp3 (the same forms NVUE takes)."""
    keys: list[str] = []
    for part in token.split(","):
        found = _RANGE.match(part)
        if found and int(found["first"]) <= int(found["last"]):
            keys += [f"{found['prefix']}{n}" for n in range(int(found["first"]), int(found["last"]) + 1)]
        else:
            keys.append(part)
    return keys


@dataclass(frozen=True)
class LineProblem:
    number: int  # 1-based, among the render's lines
    line: str
    problem: str

    def __str__(self) -> str:
        return f"line {self.number} `{self.line}`: {self.problem}"


def lines_problems(lines: Iterable[str], release: tuple[int, int] | str) -> list[LineProblem]:
    """Each `nv set` line walked down NVUE's schema of `release`: its words must name fields, keys
    and finally a value that fits; a line that is not `nv set` is a problem too."""
    root = _Node("model", model=root_model(release))
    name = release_name(release)
    problems = []
    for number, line in enumerate(lines, 1):
        words = line.split()
        if words[:2] != ["nv", "set"] or len(words) < 3:
            problems.append(LineProblem(number, line, "not an `nv set` line"))
            continue
        problem = _line_problem(words[2:], root, name)
        if problem:
            problems.append(LineProblem(number, line, problem))
    return problems


def _line_problem(words: list[str], root: _Node, release: str) -> str | None:
    node = root
    path: tuple[str, ...] = ()
    index = 0
    while index < len(words):
        word = words[index]
        if node.kind == "model":
            fields = _fields(node.model) if node.model is not None else {}
            if word not in fields:
                return f"{word!r} is not a key of {_path_text(path)} in NVUE {release}"
            node, path = _node(fields[word]), (*path, word)
        elif node.kind == "collection":
            item = _node(node.item)
            for key in expand_ids(word):
                if item.kind == "model" and not key:
                    return f"an empty id in {word!r} under {_path_text(path)}"
            node, path = item, (*path, word)
            if item.kind == "leaf" and _strip_optional(node.leaf) is Any:
                return None if index == len(words) - 1 else f"nothing follows {_path_text(path)} in NVUE"
        else:  # a leaf: this word is its value, and the last one
            if index != len(words) - 1:
                return f"{_path_text(path)} takes one value, not {' '.join(words[index:])!r}"
            problem = _value_problem(node.leaf, word)
            if problem and re.fullmatch(r"-?\d+", word):  # a number leaf the CLI spells in digits
                problem = _value_problem(node.leaf, int(word)) and problem
            return f"{_path_text(path)} {word!r} does not fit NVUE {release}: {problem}" if problem else None
        index += 1
    if node.kind == "leaf":
        return f"{_path_text(path)} needs a value"
    return None  # a container set bare (`nv set interface swp1 qos pfc-watchdog`): it exists
