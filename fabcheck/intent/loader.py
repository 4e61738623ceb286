"""Read the fabric intent through ansible-core's own inventory API.

Host vars, group vars, templated values and vault-encrypted values resolve exactly as they do for
`ansible-playbook`, so an inventory that already works for Ansible works here. Validation errors name
the inventory file and line where the bad value was written; a vault-encrypted value is never printed
(errors and `intent show` say `<vaulted>`).
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fabcheck.errors import IntentError, UsageError
from fabcheck.intent import ansible_session
from fabcheck.intent.model import SKIP_COHERENCE, FabricIntent, coherence_problems
from fabcheck.intent.vaulted import (
    REDACTED,
    KeyPath,
    contains_vaulted,
    files_read_once,
    is_under,
    is_vaulted,
    origin_path,
    redact_text,
    redacted_tree,
    referenced_names,
    secret_texts,
    vaulted_paths,
)

INTENT_VAR = "fabric_intent"
RAILS_VAR = "fabric_rails"  # optional per-host override of fabric_intent.rails
# Optional per-host override of fabric_intent.max_gpu_nic_link: a PCIe server whose NICs hang off the
# host bridge cannot reach PXB, and says so for itself while the fabric keeps its stricter default.
MAX_LINK_VAR = "fabric_max_gpu_nic_link"
# Optional per-host override of fabric_intent.nvlink: a host that is not like the fleet's GPU servers (a
# PCIe server without NVLink beside HGX boards) states its own; one NVLink domain still has one intent
# (fabcheck.desired.nvlink.desired_nvlink).
NVLINK_VAR = "fabric_nvlink"
HOST_OVERRIDES = {
    RAILS_VAR: "rails",
    MAX_LINK_VAR: "max_gpu_nic_link",
    NVLINK_VAR: "nvlink",
}  # host var -> key
PROBE_HOST = "fabcheck-intent-probe"


@dataclass(frozen=True)
class HostEntry:
    """One inventory host with the facts fabcheck needs to reach and judge it."""

    name: str
    groups: tuple[str, ...]
    intent: FabricIntent
    variables: Mapping[str, Any] = field(repr=False)
    vaulted: frozenset[KeyPath] = frozenset()  # intent keys whose value came from a vaulted value

    def intent_json(self) -> dict[str, Any]:
        """The resolved intent as JSON data, vaulted values replaced by `<vaulted>`."""
        return redacted_intent(self.intent, self.vaulted)

    @property
    def is_switch(self) -> bool:
        return "switches" in self.groups or any(g.startswith("switches_") for g in self.groups)


@dataclass(frozen=True)
class Inventory:
    source: str
    intent: FabricIntent
    hosts: tuple[HostEntry, ...]
    # ansible-core's InventoryManager, so `validate --limit` matches patterns exactly as Ansible does.
    manager: Any = field(default=None, repr=False, compare=False)
    vaulted: frozenset[KeyPath] = frozenset()  # vaulted intent keys of any host

    def intent_json(self) -> dict[str, Any]:
        """The fabric intent as JSON data, vaulted values replaced by `<vaulted>`."""
        return redacted_intent(self.intent, self.vaulted)

    def host(self, name: str) -> HostEntry:
        for entry in self.hosts:
            if entry.name == name:
                return entry
        known = ", ".join(h.name for h in self.hosts)
        expected = f"expected one of its hosts: {known}" if known else "expected an inventory with hosts"
        raise UsageError(f"{self.source}: host {name!r} is not in the inventory; {expected}")

    def group(self, name: str) -> tuple[HostEntry, ...]:
        return tuple(h for h in self.hosts if name in h.groups)


def redacted_intent(intent: FabricIntent, vaulted: frozenset[KeyPath]) -> dict[str, Any]:
    data: dict[str, Any] = redacted_tree(intent.model_dump(mode="json"), vaulted)
    return data


def load_inventory(source: str | os.PathLike[str]) -> Inventory:
    """Load every host's intent; raise IntentError listing every problem, UsageError if unreadable."""
    path = Path(source)
    ansible_session.check_readable(path)
    manager, variable_manager, loader, has_password = _open(path)
    with files_read_once():
        return _load_hosts(source, (manager, variable_manager, loader), has_password)


def _load_hosts(source: str | os.PathLike[str], opened: tuple[Any, Any, Any], secret: bool) -> Inventory:
    """Every host's intent (load_inventory), once the inventory is open."""
    manager, variable_manager, loader = opened
    path = Path(source)
    hosts = manager.get_hosts() or [_probe_host(manager)]
    problems: list[str] = []
    entries: list[HostEntry] = []
    fabric: FabricIntent | None = None
    first_plain: FabricIntent | None = None
    seen: dict[str, FabricIntent] = {}
    missing: list[str] = []
    vaulted: set[KeyPath] = set()
    rendered = _RenderedIntents()
    for host in hosts:
        variables = _host_vars(variable_manager, host, path)
        if variables.get(INTENT_VAR) is None:
            missing.append(host.name)
            continue
        reuse_key = rendered.key(variables)
        known = rendered.get(reuse_key)
        try:
            intent, host_vaulted = known or _host_intent(variables, loader, secret)
        except IntentError as err:
            problems.extend(p for p in err.problems if p not in problems)
            continue
        if known is None:
            rendered.put(reuse_key, (intent, host_vaulted))
            vaulted |= host_vaulted
            seen.setdefault(intent.model_dump_json(exclude=set(HOST_OVERRIDES.values())), intent)
        # The inventory's own intent (analyze without --host): the first host that overrides nothing of
        # it (rails, max link, nvlink are per-host), else the first host.
        overrides_nothing = all(variables.get(var) is None for var in HOST_OVERRIDES)
        if fabric is None or (overrides_nothing and first_plain is None):
            fabric = intent
        if overrides_nothing and first_plain is None:
            first_plain = intent
        if host.name != PROBE_HOST:
            groups = tuple(sorted(g.name for g in host.get_groups()))
            entries.append(HostEntry(host.name, groups, intent, variables, host_vaulted))
    if missing == [PROBE_HOST]:
        raise UsageError(
            f"{source}: the inventory has no hosts and no variable {INTENT_VAR}; expected an Ansible "
            f"inventory with hosts (hosts.yml) and the fabric intent (group_vars/all/fabric.yml)"
        )
    if missing:
        problems.insert(
            0,
            f"{source}: variable {INTENT_VAR} is not defined for host(s) "
            f"{', '.join(missing)} (put it in group_vars/all)",
        )
    if problems:
        raise IntentError(problems)
    if len(seen) > 1:
        # A fabric has one lossless recipe; hosts that disagree would each pass their own check.
        raise IntentError(
            [
                f"{source}: hosts resolve {len(seen)} different fabric intents (only rails, "
                f"max_gpu_nic_link and nvlink may differ per host, as host vars "
                f"{', '.join(HOST_OVERRIDES)}); "
                f"keep {INTENT_VAR} in group_vars/all"
            ]
        )
    assert fabric is not None
    return Inventory(str(path), fabric, tuple(entries), manager, frozenset(vaulted))


def _open(path: Path) -> tuple[Any, Any, Any, bool]:
    """InventoryManager, VariableManager, DataLoader, and whether a vault password is set."""
    # An inventory folder holding only group_vars (the lab before `lab up`) is valid for us.
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_WARNING", "False")
    os.environ.setdefault("ANSIBLE_LOCALHOST_WARNING", "False")
    from ansible import constants
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    # The environment only counts before ansible's constants are first read; a process that imported
    # ansible earlier (a test run, a plugin) still must not print this warning for us.
    constants.INVENTORY_UNPARSED_WARNING = False
    ansible_session.init_collection_loader()
    ansible_session.yaml_inventory_first()
    loader = DataLoader()
    has_password = ansible_session.load_vault_secrets(loader)
    with ansible_session.captured_warnings() as warnings:
        try:
            manager = InventoryManager(loader=loader, sources=[str(path)])
        except AnsibleError as err:
            raise UsageError(_vars_error(path, err)) from None
    # Ansible's plugins turn a file they cannot parse into warnings and go on without its hosts.
    ansible_session.check_parsed(manager, path, warnings)
    ansible_session.replay(warnings)
    return manager, VariableManager(loader=loader, inventory=manager), loader, has_password


def _host_vars(variable_manager: Any, host: Any, path: Path) -> Mapping[str, Any]:
    from ansible.errors import AnsibleError

    try:
        variables: Mapping[str, Any] = variable_manager.get_vars(host=host, include_hostvars=False)
    except AnsibleError as err:
        raise UsageError(_vars_error(path, err)) from None
    return variables


def _vars_error(path: Path, err: Exception) -> str:
    """A group_vars/host_vars file ansible could not load, named with its line (ansible drops both)."""
    located = ansible_session.vars_file_error(path)
    if located and "; expected" in located:  # unreadable or binary: it says what was expected
        return located
    if located:
        return f"{located}; expected valid YAML (check indentation, colons and brackets)"
    reason = ansible_session.one_line(getattr(err, "message", None) or str(err))
    return f"{path}: cannot read the inventory: {reason}; {ansible_session.INVENTORY_EXPECTED}"


def _probe_host(manager: Any) -> Any:
    """An inventory with only group_vars (no hosts yet) still has an intent to check."""
    from ansible.inventory.host import Host

    probe = Host(PROBE_HOST)
    probe.add_group(manager.groups["all"])
    return probe


@dataclass(frozen=True)
class _Secrets:
    """What must not be printed while describing one host's intent."""

    paths: frozenset[KeyPath]
    texts: frozenset[str]

    def value(self, loc: list[Any], value: Any) -> str:
        return REDACTED if is_under(loc, self.paths) else repr(plain_python(value))

    def text(self, message: str) -> str:
        return redact_text(message, self.texts)


# What a host's intent is rendered from, beyond the intent itself: values of these kinds are compared.
_PLAIN = (dict, list, tuple, str, int, float, bool, type(None))


class _RenderedIntents:
    """Hosts whose intent renders from equal inputs share one validated intent: a fleet's hosts mostly
    read one group_vars intent, and rendering, checking and validating it again for each of 1,024 hosts
    was most of loading the inventory.

    The inputs are the intent as written, the host's overrides, and the value of every variable its
    templates read, directly or through variables that are templates themselves, each with the file it
    came from (a whole-file vault marks its values by their origin alone). Reused only when every one of
    them is plain data; a template reading anything else (hostvars, a lookup's object) renders per host,
    as does a host whose intent failed."""

    def __init__(self) -> None:
        self.entries: list[tuple[tuple[Any, ...], tuple[FabricIntent, frozenset[KeyPath]]]] = []

    def key(self, variables: Mapping[str, Any]) -> tuple[Any, ...] | None:
        try:
            return self._key(variables)
        except Exception:  # a value that cannot be looked at without rendering (a vault string): render
            return None

    def _key(self, variables: Mapping[str, Any]) -> tuple[Any, ...] | None:
        raw = variables[INTENT_VAR]
        overrides = tuple((var, variables[var]) for var in HOST_OVERRIDES if variables.get(var) is not None)
        names: set[str] = set()
        pending = [raw, *(value for _var, value in overrides)]
        while pending:
            for text in _strings(pending.pop()):
                for name in referenced_names(text) - names:
                    names.add(name)
                    if name in variables:
                        pending.append(variables[name])
        used = tuple((name, variables[name]) for name in sorted(names) if name in variables)
        inputs = (raw, *(value for _var, value in overrides), *(value for _name, value in used))
        if not all(isinstance(value, _PLAIN) for value in inputs):
            return None
        origins = tuple(origin_path(value) for value in inputs)
        # repr, not ==: 9000 == 9000.0 and 1 == True, which the strict intent model tells apart.
        return (repr(raw), repr(overrides), repr(used), origins)

    def get(self, key: tuple[Any, ...] | None) -> tuple[FabricIntent, frozenset[KeyPath]] | None:
        if key is None:
            return None
        return next((result for known, result in self.entries if known == key), None)

    def put(self, key: tuple[Any, ...] | None, result: tuple[FabricIntent, frozenset[KeyPath]]) -> None:
        if key is not None and len(self.entries) < 64:  # a few distinct intents; a bounded scan
            self.entries.append((key, result))


def _host_intent(
    variables: Mapping[str, Any], loader: Any, has_password: bool
) -> tuple[FabricIntent, frozenset[KeyPath]]:
    raw = variables[INTENT_VAR]
    overrides = {key: variables[var] for var, key in HOST_OVERRIDES.items() if variables.get(var) is not None}
    raw_tree = {**raw, **overrides} if isinstance(raw, Mapping) else raw
    try:
        # Rendered values keep their origin tags (ansible >= 2.19), so errors still name file and line.
        rendered = _render(raw, variables, loader)
        rendered_overrides = {key: _render(value, variables, loader) for key, value in overrides.items()}
    except Exception as err:  # template or vault errors carry their own explanation
        raise IntentError(_render_problems(raw_tree, variables, has_password, err)) from None
    if not isinstance(rendered, Mapping):
        raise IntentError(
            [f"{where_of(raw)}{INTENT_VAR}: expected a mapping, got {type(plain_python(rendered)).__name__}"]
        )
    tree = {**rendered, **rendered_overrides}
    paths = vaulted_paths(raw_tree, tree, variables)
    secrets = _Secrets(paths, frozenset(secret_texts(tree, paths)))
    data = plain_python(tree)
    try:
        intent = FabricIntent.model_validate(data, context={SKIP_COHERENCE: True})
    except ValidationError as err:
        raise IntentError([_describe(e, tree, secrets) for e in err.errors()]) from None
    problems = coherence_problems(intent)
    if problems:
        raise IntentError(
            [_describe_rule(key, message, tree, intent, rendered, secrets) for key, message in problems]
        )
    return intent, paths


def _render_problems(raw: Any, variables: Mapping[str, Any], has_password: bool, err: Exception) -> list[str]:
    """Why the intent could not be rendered; a vault problem names ANSIBLE_VAULT_PASSWORD_FILE."""
    paths = vaulted_paths(raw, raw, variables)
    secrets = _Secrets(paths, frozenset(_referenced_secrets(raw, variables)))
    if not paths or _undefined_variable(err):  # a name no template can read is not a vault problem
        return [f"{where_of(raw)}{INTENT_VAR}: cannot resolve value: {secrets.text(str(err))}"]
    variable = ansible_session.VAULT_PASSWORD_VAR
    if has_password:
        why = (
            f"vault-encrypted value that the password from {variable}="
            f"{ansible_session.vault_password_file()} cannot decrypt ({secrets.text(str(err))}); "
            "expected the password the value was encrypted with"
        )
    else:
        why = (
            f"vault-encrypted value but no vault password is set; expected {variable} naming the file "
            "that holds the vault password (as for ansible-playbook)"
        )
    problems = []
    for path in sorted(paths):
        node, _found, key = _walk(raw, list(path))
        name = ".".join((INTENT_VAR, *path))
        problems.append(f"{where_of(node) or where_of(key) or where_of(raw)}{name}: {why}")
    return problems


def _undefined_variable(err: BaseException | None) -> bool:
    from ansible.errors import AnsibleUndefinedVariable

    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, AnsibleUndefinedVariable):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def _referenced_secrets(raw: Any, variables: Mapping[str, Any]) -> set[str]:
    """Plaintexts of vaulted variables the intent's templates read (when they can be decrypted)."""
    texts: set[str] = set()
    for text in _strings(raw):
        for name in referenced_names(text):
            value = variables.get(name)
            if value is not None and contains_vaulted(value):
                texts |= secret_texts(value, vaulted_paths(value, value, {}))
    return texts


def _strings(node: Any) -> list[str]:
    if isinstance(node, Mapping):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, (list, tuple)):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) and not is_vaulted(node) else []


def _describe_rule(
    key: str, message: str, raw: Mapping[str, Any], intent: FabricIntent, root: Any, secrets: _Secrets
) -> str:
    """A rule spanning several keys, reported at the key to fix; an unset key shows its default."""
    loc = key.split(".")
    node, found, mapping_key = _walk(raw, loc)
    if found and not isinstance(node, Mapping):
        where = where_of(node) or where_of(mapping_key)
        return f"{where}{INTENT_VAR}.{key} = {secrets.value(loc, node)}: {secrets.text(message)}"
    default: Any = intent
    for part in loc:
        default = getattr(default, part)
    return f"{where_of(root)}{INTENT_VAR}.{key} = {default!r} (default, not set): {secrets.text(message)}"


def _render(value: Any, variables: Mapping[str, Any], loader: Any) -> Any:
    if not _has_template(value):
        # Nothing to render: Jinja leaves such a value as it is, and a Templar over every variable of the
        # host costs milliseconds a host (most of loading a 1,024-host inventory's intents).
        return value
    from ansible.template import Templar

    return Templar(loader=loader, variables=dict(variables)).template(value)


def _has_template(value: Any) -> bool:
    """Whether the value needs Ansible's templating: a string holding a Jinja expression, statement or
    comment, or a vaulted value (the Templar decrypts it, and says so when it cannot)."""
    if isinstance(value, Mapping):
        return any(_has_template(key) or _has_template(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_template(item) for item in value)
    if is_vaulted(value):
        return True
    if isinstance(value, str):
        return "{{" in value or "{%" in value or "{#" in value
    return False


def plain_python(value: Any) -> Any:
    """Strip ansible's tagged subclasses so pydantic sees plain Python values."""
    if is_vaulted(value):  # a decrypted value, or one ansible < 2.19 decrypts on str()
        return str(value)
    if isinstance(value, Mapping):
        return {plain_python(k): plain_python(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_python(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _describe(error: Mapping[str, Any], raw: Mapping[str, Any], secrets: _Secrets) -> str:
    loc = [p for p in error["loc"] if p not in ("function-after", "function-before", "[key]")]
    key = ".".join(str(p) for p in (INTENT_VAR, *loc))
    node, found, mapping_key = _walk(raw, loc)
    # A bool or None cannot carry ansible's origin tag; its key (or the enclosing mapping) can.
    where = where_of(node) or where_of(mapping_key) or where_of(raw)
    message = _TYPE_MESSAGES.get(error["type"]) or str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{where}{key}: required key is missing"
    if error["type"] == "extra_forbidden":
        return f"{where}{key}: unknown key (check the spelling; allowed keys are in docs/intent.md)"
    if "[key]" in error["loc"]:  # a mapping key of the wrong type: name the mapping and the key
        parent = ".".join(str(p) for p in (INTENT_VAR, *loc[:-1]))
        shown = secrets.value(loc, error.get("input"))
        got = f", got {_type_name(error.get('input'))}" if error["type"] in _TYPE_MESSAGES else ""
        return f"{where}{parent}: key {shown}: {secrets.text(message)}{got}"
    value = ""
    if found and not isinstance(error.get("input"), Mapping):
        value = f" = {secrets.value(loc, error['input'])}"
    if error["type"] in _TYPE_MESSAGES and not is_under(loc, secrets.paths):
        message += f", got {_type_name(error.get('input'))}"
    bounds = _bounds(loc) if error["type"] in _RANGE_ERRORS else None
    if bounds:
        message = f"out of range, allowed: {bounds}"
    return f"{where}{key}{value}: {secrets.text(message)}"


_RANGE_ERRORS = {"less_than_equal", "greater_than_equal", "less_than", "greater_than"}
_TYPE_MESSAGES = {
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected a string",
    "dict_type": "expected a mapping",
    "list_type": "expected a list",
    "model_type": "expected a mapping",
}


def _type_name(value: Any) -> str:
    """YAML's name for a value's type: `true` is a boolean, not an integer."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", type(None): "null"}
    plain = plain_python(value)
    if isinstance(plain, Mapping):
        return "a mapping"
    if isinstance(plain, list):
        return "a list"
    return names.get(type(plain), type(plain).__name__)


def _bounds(loc: list[Any]) -> str | None:
    """The allowed range of the field at an error location, e.g. '0..7', from the model's metadata."""
    annotation: Any = FabricIntent
    metadata: list[Any] = []
    for part in loc:
        if (
            isinstance(annotation, type)
            and issubclass(annotation, BaseModel)
            and part in annotation.model_fields
        ):
            info = annotation.model_fields[part]
            annotation, metadata = info.annotation, list(info.metadata)
            continue
        item = typing.get_args(annotation)[-1:] if typing.get_args(annotation) else ()
        if not item:
            return None
        annotation, metadata = item[0], []
        if typing.get_origin(annotation) is typing.Annotated:
            base, *extras = typing.get_args(annotation)
            annotation = base
            for extra in extras:
                metadata.extend(getattr(extra, "metadata", [extra]))
    low = next((m.ge for m in metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in metadata if hasattr(m, "le")), None)
    if low is None and high is None:
        return None
    return f"{'' if low is None else low}..{'' if high is None else high}"


def _walk(raw: Any, loc: list[Any]) -> tuple[Any, bool, Any]:
    """Follow an error location into the raw data: the deepest node reached, whether it is the one
    asked for, and the mapping key it was found under (keys keep their origin when values cannot)."""
    node, key = raw, None
    for part in loc:
        if isinstance(node, Mapping):
            match = next((k for k in node if k == part or str(k) == str(part)), _NO_KEY)
            if match is _NO_KEY:
                return node, False, key
            node, key = node[match], match
        elif isinstance(node, list) and str(part).isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return node, False, key
    return node, True, key


_NO_KEY = object()


def where_of(value: Any) -> str:
    origin = _origin(value)
    return f"{origin}: " if origin else ""


def _origin(value: Any) -> str | None:
    try:  # ansible-core >= 2.19 tags every loaded value with its origin
        from ansible._internal._datatag._tags import Origin

        tag = Origin.get_tag(value)
        if tag is not None and tag.path:
            return f"{tag.path}:{tag.line_num}" if tag.line_num else tag.path
    except ImportError:
        pass
    position = getattr(value, "ansible_pos", None)  # ansible-core < 2.19
    if position:
        return f"{position[0]}:{position[1]}"
    return None
