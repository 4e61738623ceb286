"""Read the fabric intent through ansible-core's own inventory API.

Host vars, group vars, templated values and vault-encrypted values resolve exactly as they do for
`ansible-playbook`, so an inventory that already works for Ansible works here. Validation errors name
the inventory file and line where the bad value was written.
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
from fabcheck.intent.model import SKIP_COHERENCE, FabricIntent, coherence_problems

INTENT_VAR = "fabric_intent"
RAILS_VAR = "fabric_rails"  # optional per-host override of fabric_intent.rails
PROBE_HOST = "fabcheck-intent-probe"


@dataclass(frozen=True)
class HostEntry:
    """One inventory host with the facts fabcheck needs to reach and judge it."""

    name: str
    groups: tuple[str, ...]
    intent: FabricIntent
    variables: Mapping[str, Any] = field(repr=False)

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

    def host(self, name: str) -> HostEntry:
        for entry in self.hosts:
            if entry.name == name:
                return entry
        known = ", ".join(h.name for h in self.hosts) or "none"
        raise UsageError(f"host {name!r} is not in inventory {self.source} (hosts: {known})")

    def group(self, name: str) -> tuple[HostEntry, ...]:
        return tuple(h for h in self.hosts if name in h.groups)


def load_inventory(source: str | os.PathLike[str]) -> Inventory:
    """Load every host's intent; raise IntentError listing every problem, UsageError if unreadable."""
    path = Path(source)
    if not path.exists():
        raise UsageError(f"inventory {path} does not exist")
    manager, variable_manager, loader = _open(path)
    hosts = manager.get_hosts() or [_probe_host(manager)]
    problems: list[str] = []
    entries: list[HostEntry] = []
    fabric: FabricIntent | None = None
    seen: dict[str, FabricIntent] = {}
    missing: list[str] = []
    for host in hosts:
        variables = variable_manager.get_vars(host=host, include_hostvars=False)
        if variables.get(INTENT_VAR) is None:
            missing.append(host.name)
            continue
        try:
            intent = _host_intent(variables, loader, host.name)
        except IntentError as err:
            problems.extend(p for p in err.problems if p not in problems)
            continue
        key = intent.model_dump_json(exclude={"rails"})
        seen.setdefault(key, intent)
        fabric = fabric or intent
        if host.name != PROBE_HOST:
            groups = tuple(sorted(g.name for g in host.get_groups()))
            entries.append(HostEntry(host.name, groups, intent, variables))
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
                f"{source}: hosts resolve {len(seen)} different fabric intents (only rails "
                f"may differ per host); keep {INTENT_VAR} in group_vars/all"
            ]
        )
    assert fabric is not None
    return Inventory(str(path), fabric, tuple(entries), manager)


def _open(path: Path) -> tuple[Any, Any, Any]:
    # An inventory folder holding only group_vars (the lab before `lab up`) is valid for us.
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_WARNING", "False")
    os.environ.setdefault("ANSIBLE_LOCALHOST_WARNING", "False")
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    _load_vault_secrets(loader)
    try:
        manager = InventoryManager(loader=loader, sources=[str(path)])
    except Exception as err:  # ansible raises many types for unreadable inventories
        raise UsageError(f"cannot read inventory {path}: {err}") from None
    return manager, VariableManager(loader=loader, inventory=manager), loader


def _load_vault_secrets(loader: Any) -> None:
    """Vault passwords come from the environment, as for ansible-playbook; never from arguments."""
    password_file = os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    if not password_file:
        return
    from ansible.parsing.vault import get_file_vault_secret

    secret = get_file_vault_secret(filename=password_file, loader=loader)
    secret.load()
    secrets = [("default", secret)]
    loader.set_vault_secrets(secrets)
    try:  # ansible-core >= 2.19 decrypts lazily through one process-wide context
        from ansible.parsing.vault import VaultSecretsContext
    except ImportError:
        return
    context = VaultSecretsContext.current(optional=True)
    if context is None:
        VaultSecretsContext.initialize(VaultSecretsContext(secrets))
    else:
        context.secrets = secrets


def _probe_host(manager: Any) -> Any:
    """An inventory with only group_vars (no hosts yet) still has an intent to check."""
    from ansible.inventory.host import Host

    probe = Host(PROBE_HOST)
    probe.add_group(manager.groups["all"])
    return probe


def _host_intent(variables: Mapping[str, Any], loader: Any, host: str) -> FabricIntent:
    raw = variables[INTENT_VAR]
    rails = variables.get(RAILS_VAR)
    try:
        # Rendered values keep their origin tags (ansible >= 2.19), so errors still name file and line.
        rendered = _render(raw, variables, loader)
        rendered_rails = None if rails is None else _render(rails, variables, loader)
    except Exception as err:  # template or vault errors carry their own explanation
        raise IntentError([f"{_where(raw)}{INTENT_VAR}: cannot resolve value: {err}"]) from None
    if not isinstance(rendered, Mapping):
        raise IntentError(
            [f"{_where(raw)}{INTENT_VAR}: expected a mapping, got {type(_plain(rendered)).__name__}"]
        )
    tree = dict(rendered) if rendered_rails is None else {**rendered, "rails": rendered_rails}
    data = _plain(tree)
    try:
        intent = FabricIntent.model_validate(data, context={SKIP_COHERENCE: True})
    except ValidationError as err:
        raise IntentError([_describe(e, tree) for e in err.errors()]) from None
    problems = coherence_problems(intent)
    if problems:
        raise IntentError([_describe_rule(key, message, tree, intent, rendered) for key, message in problems])
    return intent


def _describe_rule(key: str, message: str, raw: Mapping[str, Any], intent: FabricIntent, root: Any) -> str:
    """A rule spanning several keys, reported at the key to fix; an unset key shows its default."""
    node, found = _walk(raw, key.split("."))
    if found and not isinstance(node, Mapping):
        return f"{_where(node)}{INTENT_VAR}.{key} = {_plain(node)!r}: {message}"
    default: Any = intent
    for part in key.split("."):
        default = getattr(default, part)
    return f"{_where(root)}{INTENT_VAR}.{key} = {default!r} (default, not set): {message}"


def _render(value: Any, variables: Mapping[str, Any], loader: Any) -> Any:
    from ansible.template import Templar

    return Templar(loader=loader, variables=dict(variables)).template(value)


def _plain(value: Any) -> Any:
    """Strip ansible's tagged subclasses so pydantic sees plain Python values."""
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _describe(error: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    loc = [p for p in error["loc"] if p not in ("function-after", "[key]")]
    key = ".".join(str(p) for p in (INTENT_VAR, *loc))
    node, found = _walk(raw, loc)
    where = _where(node)
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{where}{key}: required key is missing"
    if error["type"] == "extra_forbidden":
        return f"{where}{key}: unknown key (check the spelling; allowed keys are in the README)"
    value = f" = {error['input']!r}" if found and not isinstance(error.get("input"), Mapping) else ""
    bounds = _bounds(loc) if error["type"] in _RANGE_ERRORS else None
    if bounds:
        message = f"out of range, allowed: {bounds}"
    return f"{where}{key}{value}: {message}"


_RANGE_ERRORS = {"less_than_equal", "greater_than_equal", "less_than", "greater_than"}


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


def _walk(raw: Any, loc: list[Any]) -> tuple[Any, bool]:
    """Follow an error location into the raw data; return the deepest node reached."""
    node = raw
    for part in loc:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, Mapping) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return node, False
    return node, True


def _where(value: Any) -> str:
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
