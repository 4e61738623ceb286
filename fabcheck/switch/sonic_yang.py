"""SONiC's own YANG models judge a CONFIG_DB: translate it to YANG instance data, let yanglint validate it.

The models are sonic-buildimage's, vendored at a pinned commit (vendor/sonic-yang/README.md); the
validator is libyang's `yanglint` (Debian package libyang-tools, installed by scripts/setup). The
translation follows the rules of sonic-yang-mgmt's sonic_yang_ext.py (the code SONiC's own
`config apply-patch` validates with):
  - table T of module M becomes the container `M:M` / `M:T`; a table a vendored model does not
    define is reported as unchecked, never passed;
  - an entry goes into the table's list `T_LIST` (or, when the container holds several lists, the
    first list whose key count matches): its CONFIG_DB key split on '|' gives the list keys in
    order, each field becomes the leaf of that name; an entry named like a container of the table
    fills that container;
  - the QoS maps (sonic_yang_ext's "Type 1" lists) hold an inner list: field "k": "v" becomes
    {inner key: k, inner value: v};
  - a leaf-list takes a JSON array, or a comma-separated string (CONFIG_DB's `field@` form).
Values are encoded as RFC 7951 asks, which yanglint enforces: 8..32-bit integers as JSON numbers,
booleans as true/false, everything else (64-bit integers included) as strings. A value that does not
read as its type is passed as the string it is, so yanglint refuses it with its own message.

The schema facts the translation needs (tables, lists, keys, leaf types) are read from the models
themselves through `yanglint -f info` (the compiled schema, typedefs resolved), never restated here.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabcheck.errors import FabcheckError


def _vendor_dir() -> Path:
    """Inside the installed package (the wheel ships vendor/sonic-yang as fabcheck/vendor/sonic-yang),
    else the checkout's vendor/sonic-yang next to the package (editable installs, tests)."""
    packaged = importlib.resources.files("fabcheck") / "vendor" / "sonic-yang"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "vendor" / "sonic-yang"


VENDOR = _vendor_dir()
MODELS = VENDOR / "yang-models"
# fabcheck's own deviation module, for a rendered fragment validated without the switch's PORT facts.
FRAGMENT_MODULE = VENDOR / "fabcheck-fragment.yang"
YANGLINT = "yanglint"
LOAD_FIRST = ("sonic-types.yang", "sonic-extension.yang", "sonic-device_metadata.yang")
MIN_YANGLINT = (2, 1)  # libyang 2.1 is the first these models were checked with (Debian 12's 2.1.30)
YANGLINT_TIMEOUT_S = 120
INSTALL_HINT = (
    "run scripts/setup as root (it installs Debian's libyang-tools) or `apt-get install libyang-tools`"
)

# sonic_yang_ext's Type_1_list_maps_model: lists whose CONFIG_DB entry is a map of "key": "value".
TYPE1_MAP_LISTS = frozenset(
    {
        "DSCP_TO_TC_MAP_LIST",
        "DOT1P_TO_TC_MAP_LIST",
        "TC_TO_PRIORITY_GROUP_MAP_LIST",
        "TC_TO_QUEUE_MAP_LIST",
        "MAP_PFC_PRIORITY_TO_QUEUE_LIST",
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP_LIST",
        "DSCP_TO_FC_MAP_LIST",
        "EXP_TO_FC_MAP_LIST",
        "CABLE_LENGTH_LIST",
        "MPLS_TC_TO_TC_MAP_LIST",
        "TC_TO_DSCP_MAP_LIST",
    }
)
KEY_SEPARATOR = "|"
LEAF_LIST_SEPARATOR = ","
_INTEGER_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_INTEGER = re.compile(r"[+-]?[0-9]+")


class SonicYangError(FabcheckError):
    """The YANG validation could not run: no yanglint, a too old one, or models it cannot read."""


# -- the compiled schema, as `yanglint -f info` prints it ---------------------------------------------


@dataclass(frozen=True)
class Statement:
    keyword: str
    argument: str | None
    children: tuple[Statement, ...]

    def child(self, keyword: str) -> Statement | None:
        return next((c for c in self.children if c.keyword == keyword), None)

    def all(self, keyword: str) -> list[Statement]:
        return [c for c in self.children if c.keyword == keyword]


_TOKEN = re.compile(r'\s+|"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([{};])|([^\s{};"\']+)', re.S)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _tokens(text: str) -> list[str | tuple[str]]:
    """Words and quoted strings as str, the punctuation `{`, `}`, `;` as 1-tuples."""
    out: list[str | tuple[str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise SonicYangError(
                f"yanglint -f info: cannot read the schema at offset {pos}: {text[pos : pos + 40]!r}"
            )
        pos = match.end()
        double, single, punct, word = match.groups()
        if double is not None:
            out.append(re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), double))
        elif single is not None:
            out.append(single)
        elif punct is not None:
            out.append((punct,))
        elif word is not None:
            out.append(word)
    return out


def parse_statements(text: str) -> list[Statement]:
    """YANG statement syntax (keyword, optional argument, `;` or a `{ }` block) -> a statement tree."""
    tokens = _tokens(text)
    pos = 0

    def block() -> list[Statement]:
        nonlocal pos
        statements: list[Statement] = []
        while pos < len(tokens) and tokens[pos] != ("}",):
            keyword = tokens[pos]
            if not isinstance(keyword, str):
                raise SonicYangError(f"yanglint -f info: a keyword was expected, not {keyword[0]!r}")
            pos += 1
            argument: str | None = None
            if pos < len(tokens) and isinstance(first := tokens[pos], str):
                argument = first
                pos += 1
                # A printer may split a long argument as "a" + "b".
                while (
                    pos + 1 < len(tokens) and tokens[pos] == "+" and isinstance(piece := tokens[pos + 1], str)
                ):
                    argument += piece
                    pos += 2
            end = tokens[pos] if pos < len(tokens) else None
            pos += 1
            children: list[Statement] = []
            if end == ("{",):
                children = block()
                if pos >= len(tokens) or tokens[pos] != ("}",):
                    raise SonicYangError(f"yanglint -f info: block of {keyword} {argument or ''} not closed")
                pos += 1
            elif end != (";",):
                raise SonicYangError(
                    f"yanglint -f info: `;` or `{{` expected after {keyword} {argument or ''}"
                )
            statements.append(Statement(keyword, argument, tuple(children)))
        return statements

    statements = block()
    if pos != len(tokens):
        raise SonicYangError("yanglint -f info: unbalanced `}` in the schema")
    return statements


@dataclass(frozen=True)
class LeafSchema:
    name: str
    leaf_list: bool
    type: Statement  # the compiled `type` statement: typedefs resolved, leafref and union members inside


@dataclass(frozen=True)
class ListSchema:
    name: str
    keys: tuple[str, ...]
    leaves: Mapping[str, LeafSchema]
    inner_lists: tuple[ListSchema, ...]


@dataclass(frozen=True)
class ContainerSchema:
    name: str
    lists: tuple[ListSchema, ...]
    containers: Mapping[str, ContainerSchema]
    leaves: Mapping[str, LeafSchema]


@dataclass(frozen=True)
class TableSchema:
    module: str
    container: ContainerSchema


def _data_children(node: Statement) -> list[Statement]:
    """Data node children, choice and case flattened (their leaves sit in the parent's data)."""
    out: list[Statement] = []
    for child in node.children:
        if child.keyword in ("choice", "case"):
            out.extend(_data_children(child))
        elif child.keyword in ("leaf", "leaf-list", "list", "container"):
            out.append(child)
    return out


def _leaves(node: Statement, where: str) -> dict[str, LeafSchema]:
    leaves: dict[str, LeafSchema] = {}
    for child in _data_children(node):
        if child.keyword in ("leaf", "leaf-list"):
            type_statement = child.child("type")
            if type_statement is None or child.argument is None:
                raise SonicYangError(f"yanglint -f info: {where}/{child.argument}: no type")
            leaves[child.argument] = LeafSchema(child.argument, child.keyword == "leaf-list", type_statement)
    return leaves


def _list_keys(node: Statement, leaves: Sequence[str], where: str) -> tuple[str, ...]:
    """The key leaves in order. libyang's compiled printer runs the key names together ("ifnameqindex",
    ", name"), but a compiled list holds its keys first, in key order: match the run-together text."""
    key = node.child("key")
    if key is None or not key.argument:
        raise SonicYangError(f"yanglint -f info: list {where} has no key")
    joined = re.sub(r"[\s,]", "", key.argument)
    for count in range(1, len(leaves) + 1):
        if "".join(leaves[:count]) == joined:
            return tuple(leaves[:count])
    raise SonicYangError(f"yanglint -f info: list {where}: key {key.argument!r} is not its first leaves")


def _list_schema(node: Statement, where: str) -> ListSchema:
    name = node.argument or ""
    leaves = _leaves(node, f"{where}/{name}")
    inner = tuple(
        _list_schema(child, f"{where}/{name}") for child in _data_children(node) if child.keyword == "list"
    )
    return ListSchema(name, _list_keys(node, list(leaves), f"{where}/{name}"), leaves, inner)


def _container_schema(node: Statement, where: str) -> ContainerSchema:
    name = node.argument or ""
    here = f"{where}/{name}"
    children = _data_children(node)
    return ContainerSchema(
        name,
        tuple(_list_schema(c, here) for c in children if c.keyword == "list"),
        {c.argument or "": _container_schema(c, here) for c in children if c.keyword == "container"},
        _leaves(node, here),
    )


def model_files() -> list[Path]:
    """The vendored models, the common type modules first (so that yanglint implements them before the
    modules whose must/when expressions reach into them)."""
    files = sorted(MODELS.glob("*.yang"))
    if not files:
        raise SonicYangError(
            f"no SONiC YANG models in {MODELS} (vendor/sonic-yang/README.md says what belongs there)"
        )
    first = [path for name in LOAD_FIRST for path in files if path.name == name]
    return first + [path for path in files if path not in first]


def yanglint_path() -> str:
    path = shutil.which(YANGLINT)
    if path is None:
        raise SonicYangError(f"SONiC YANG validation needs yanglint, which is not installed: {INSTALL_HINT}")
    return path


@functools.cache
def yanglint_version() -> str:
    """`yanglint --version` as "2.1.30"; a SonicYangError when it is missing or older than MIN_YANGLINT."""
    completed = _run([yanglint_path(), "--version"])
    match = re.search(r"yanglint\s+([0-9]+)\.([0-9]+)\S*", completed.stdout + completed.stderr)
    if match is None:
        raise SonicYangError(f"yanglint --version printed no version: {completed.stdout.strip()!r}")
    if (int(match.group(1)), int(match.group(2))) < MIN_YANGLINT:
        raise SonicYangError(
            f"yanglint {match.group(0).split()[-1]} is older than {'.'.join(map(str, MIN_YANGLINT))}, "
            f"the first libyang these SONiC models were validated with: {INSTALL_HINT}"
        )
    return match.group(0).split()[-1]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=YANGLINT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise SonicYangError(f"{command[0]} did not finish within {YANGLINT_TIMEOUT_S} s") from None
    except OSError as err:
        raise SonicYangError(f"cannot run {command[0]}: {err}") from None


@functools.cache
def table_schemas() -> Mapping[str, TableSchema]:
    """CONFIG_DB table name -> its module and container, from the compiled vendored models."""
    yanglint_version()
    tables: dict[str, TableSchema] = {}
    for path in model_files():
        completed = _run([yanglint_path(), "-D", "-Q", "-f", "info", "-p", str(MODELS), str(path)])
        if completed.returncode != 0:
            raise SonicYangError(f"yanglint cannot load {path}: {completed.stderr.strip()}")
        for module in parse_statements(completed.stdout):
            if module.keyword != "module" or module.argument is None:
                continue
            # SONiC's model guideline: one top container named as the module, its containers are tables.
            top = next((c for c in module.all("container") if c.argument == module.argument), None)
            if top is None:
                continue  # a module of types and extensions only
            for table in top.all("container"):
                if table.argument is not None:
                    tables[table.argument] = TableSchema(
                        module.argument, _container_schema(table, f"{module.argument}:{top.argument}")
                    )
    return tables


# -- CONFIG_DB -> YANG instance ---------------------------------------------------------------------------


def _json_value(type_statement: Statement, text: str) -> Any:
    """One CONFIG_DB string as RFC 7951 encodes a value of this type."""
    base = type_statement.argument or ""
    if base == "leafref":
        target = type_statement.child("type")
        return text if target is None else _json_value(target, text)
    if base == "union":
        for member in type_statement.all("type"):
            value = _json_value(member, text)
            if not isinstance(value, str):
                return value  # a number or boolean member reads it; libyang tries it with that hint
        return text
    if base in _INTEGER_BOUNDS and _INTEGER.fullmatch(text):
        low, high = _INTEGER_BOUNDS[base]
        return int(text) if low <= int(text) <= high else text
    if base == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def _leaf_value(leaf: LeafSchema, value: Any, where: str, problems: list[str]) -> Any:
    if leaf.leaf_list:
        if isinstance(value, list):
            items = value
        elif isinstance(value, str):
            items = [part.strip() for part in value.split(LEAF_LIST_SEPARATOR)] if value else []
        else:
            problems.append(f"{where}: a list or a comma-separated string is expected, not {value!r}")
            return []
        return [_json_value(leaf.type, str(item)) for item in items]
    if isinstance(value, (list, dict)):
        problems.append(f"{where}: a single value is expected (the model has a leaf), not {value!r}")
        return str(value)
    return _json_value(leaf.type, str(value))


def _fields(
    leaves: Mapping[str, LeafSchema], fields: Mapping[str, Any], where: str, problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, value in fields.items():
        name = field[:-1] if field.endswith("@") else field  # redis spells a leaf-list field `name@`
        leaf = leaves.get(name)
        if leaf is None:
            problems.append(f"{where}: field {field!r} is not in the model (fields: {', '.join(leaves)})")
            continue
        out[name] = _leaf_value(leaf, value, f"{where}/{field}", problems)
    return out


def _list_entry(model: ListSchema, key: str, fields: Any, where: str, problems: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = dict(
        zip(model.keys, (part.strip() for part in key.split(KEY_SEPARATOR)), strict=True)
    )
    for name in model.keys:
        entry[name] = _json_value(model.leaves[name].type, entry[name])
    if not isinstance(fields, Mapping):
        problems.append(f"{where}|{key}: an object of fields is expected, not {fields!r}")
        return entry
    if model.name in TYPE1_MAP_LISTS and model.inner_lists:
        inner = model.inner_lists[0]
        value_leaf = next((name for name in inner.leaves if name not in inner.keys), None)
        if value_leaf is None or len(inner.keys) != 1:
            problems.append(f"{where}: map list {inner.name} has no single key and value")
            return entry
        entry[inner.name] = [
            {
                inner.keys[0]: _json_value(inner.leaves[inner.keys[0]].type, str(map_key)),
                value_leaf: _leaf_value(
                    inner.leaves[value_leaf], map_value, f"{where}|{key}/{map_key}", problems
                ),
            }
            for map_key, map_value in fields.items()
        ]
        return entry
    for field, value in _fields(model.leaves, fields, f"{where}|{key}", problems).items():
        if field in model.keys:
            problems.append(
                f"{where}|{key}: field {field!r} is a key of {model.name}, set by the entry's key"
            )
        else:
            entry[field] = value
    return entry


def _container(
    model: ContainerSchema, entries: Mapping[str, Any], where: str, problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # One list named <TABLE>_LIST, or several lists: each key goes to the first whose key count fits.
    lists = [m for m in model.lists if len(model.lists) > 1 or m.name == f"{model.name}_LIST"]
    for key, fields in entries.items():
        if key in model.containers and isinstance(fields, Mapping):
            inner = model.containers[key]
            out[key] = _fields(inner.leaves, fields, f"{where}|{key}", problems)
            continue
        parts = len(str(key).split(KEY_SEPARATOR))
        target = next((m for m in lists if len(m.keys) == parts), None)
        if target is None:
            shapes = ", ".join(f"{m.name} [{KEY_SEPARATOR.join(m.keys)}]" for m in lists) or "none"
            problems.append(f"{where}: key {key!r} fits no list of the model (lists: {shapes})")
            continue
        out.setdefault(target.name, []).append(_list_entry(target, str(key), fields, where, problems))
    return out


@dataclass(frozen=True)
class Translation:
    instance: dict[str, Any]  # RFC 7951 JSON instance data of the vendored modules
    tables: tuple[str, ...]  # CONFIG_DB tables translated
    unchecked: tuple[str, ...]  # tables no vendored model defines (reported, never passed)
    problems: tuple[str, ...]  # entries or fields the models have no place for


def to_yang(config_db: Mapping[str, Any]) -> Translation:
    """CONFIG_DB tables -> YANG instance data, by sonic_yang_ext's rules (module docstring)."""
    schemas = table_schemas()
    instance: dict[str, Any] = {}
    problems: list[str] = []
    tables: list[str] = []
    unchecked: list[str] = []
    for table, entries in config_db.items():
        schema = schemas.get(table)
        if schema is None:
            unchecked.append(table)
            continue
        if not isinstance(entries, Mapping):
            problems.append(f"{table}: an object of entries is expected, not {entries!r}")
            continue
        tables.append(table)
        top = instance.setdefault(f"{schema.module}:{schema.module}", {})
        top[f"{schema.module}:{table}"] = _container(schema.container, entries, table, problems)
    return Translation(instance, tuple(tables), tuple(unchecked), tuple(problems))


# -- validation -------------------------------------------------------------------------------------------


def _yanglint_errors(stderr: str, instance: Path) -> list[str]:
    """yanglint's error lines as it prints them, less what only names our temporary instance file (its
    "Failed to parse input data file" line, the line numbers in it)."""
    libyang = [line.strip() for line in stderr.splitlines() if line.startswith("libyang err")]
    own = [line.strip() for line in stderr.splitlines() if line.startswith("YANGLINT[E]")]
    if libyang:
        own = [line for line in own if str(instance) not in line]
    return [re.sub(r", line number [0-9]+\.\)", ".)", line) for line in [*libyang, *own]]


@dataclass(frozen=True)
class YangVerdict:
    """What yanglint made of one CONFIG_DB: valid only when every table was translated and judged."""

    valid: bool
    messages: tuple[str, ...]  # yanglint's own error lines, then the translation's problems
    tables: tuple[str, ...]
    unchecked: tuple[str, ...]
    yanglint: str  # its version
    fragment: bool  # validated as a rendered fragment (fabcheck-fragment.yang loaded)

    def summary(self) -> str:
        mode = "fragment" if self.fragment else "full CONFIG_DB"
        head = "valid" if self.valid else "REFUSED"
        text = f"SONiC YANG ({mode}, yanglint {self.yanglint}, {len(self.tables)} tables): {head}"
        if self.unchecked:
            text += f"; not checked, no vendored model: {', '.join(self.unchecked)}"
        return text


def validate_config_db(config_db: Mapping[str, Any], *, fragment: bool) -> YangVerdict:
    """Judge a CONFIG_DB with yanglint and the vendored models.

    fragment=True: a render, without the switch's own PORT facts (lanes, speed): fabcheck-fragment.yang
    relaxes those two mandatory leaves and yanglint checks only the modules the fragment has data for.
    A table without a vendored model makes a fragment invalid (fabcheck renders only modelled tables);
    in a full CONFIG_DB it is listed as unchecked.
    """
    translation = to_yang(config_db)
    version = yanglint_version()
    command = [yanglint_path(), "-D", "-t", "config", "-p", str(MODELS)]
    if fragment:
        command.append("-e")  # modules without data in the fragment are not asked for mandatory nodes
    command += [str(p) for p in model_files()]
    if fragment:
        command.append(str(FRAGMENT_MODULE))
    with tempfile.TemporaryDirectory(prefix="fabcheck-yang-") as folder:
        instance = Path(folder) / "config_db.json"
        instance.write_text(json.dumps(translation.instance, indent=1) + "\n")
        completed = _run([*command, str(instance)])
    errors = _yanglint_errors(completed.stderr, instance)
    if completed.returncode != 0 and not errors:
        errors = [completed.stderr.strip() or f"yanglint exited {completed.returncode} and printed nothing"]
    messages = [*errors, *translation.problems]
    if fragment and translation.unchecked:
        messages.append(f"tables without a vendored model: {', '.join(translation.unchecked)}")
    valid = completed.returncode == 0 and not messages and bool(translation.tables)
    if not translation.tables:
        messages.append("no table of the CONFIG_DB has a vendored model: nothing was validated")
    return YangVerdict(valid, tuple(messages), translation.tables, translation.unchecked, version, fragment)
