"""Vault-encrypted values of the intent: find them while loading, never print them.

ansible-core >= 2.19 loads `!vault` values as EncryptedString and tags the decrypted text with
VaultedValue; older versions load AnsibleVaultEncryptedUnicode. A file encrypted whole
(`ansible-vault encrypt group_vars/all/vault.yml`) gives plain values: a value whose origin is such a
file counts as vaulted. A value derived from a secret by a template (`"{{ secret | int }}"`, `| upper`,
`~ ''`, `[1:]`) carries no mark, so a templated key that reads a vaulted variable, directly or through
variables that are templates themselves, counts as vaulted too. Keys are paths of strings
(`("rails", "0")`), as in the JSON of the intent.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

REDACTED = "<vaulted>"
KeyPath = tuple[str, ...]
_MISSING = object()
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMPLATE = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
VAULT_HEADER = b"$ANSIBLE_VAULT;"  # the first line of every ansible-vault file


def is_vaulted(value: Any) -> bool:
    """Whether this one value is (or was decrypted from) a vault-encrypted string or file."""
    types, tag = _vault_marks()
    if isinstance(value, types) or (tag is not None and tag.is_tagged_on(value)):
        return True
    path = origin_path(value)
    return path is not None and _file_is_vaulted(path)


def origin_path(value: Any) -> str | None:
    """The file a loaded value came from: ansible's Origin tag (>= 2.19) or ansible_pos (< 2.19)."""
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:
        position = getattr(value, "ansible_pos", None)
        return str(position[0]) if position and position[0] else None
    tag = Origin.get_tag(value)
    return tag.path if tag is not None and tag.path else None


_VAULTED_FILES: dict[str, tuple[tuple[int, int], bool]] = {}  # path -> ((mtime_ns, size), vaulted)


_READ_ONCE: dict[str, bool] | None = None  # within files_read_once(): path -> vaulted, no stat again


@contextlib.contextmanager
def files_read_once() -> Iterator[None]:
    """While loading one inventory: each value's origin file is looked at once (a 1,024-host inventory
    asks ~200 times a host), not stat'ed again for every value that came from it."""
    global _READ_ONCE
    outer, _READ_ONCE = _READ_ONCE, {} if _READ_ONCE is None else _READ_ONCE
    try:
        yield
    finally:
        _READ_ONCE = outer


def _file_is_vaulted(path: str) -> bool:
    """Whether the file is encrypted whole by ansible-vault (cached while it is unchanged)."""
    if _READ_ONCE is not None:
        known = _READ_ONCE.get(path)
        if known is None:
            known = _READ_ONCE[path] = _file_is_vaulted_now(path)
        return known
    return _file_is_vaulted_now(path)


def _file_is_vaulted_now(path: str) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    key = (info.st_mtime_ns, info.st_size)
    cached = _VAULTED_FILES.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        with open(path, "rb") as handle:
            vaulted = handle.read(len(VAULT_HEADER)) == VAULT_HEADER
    except OSError:
        vaulted = False
    _VAULTED_FILES[path] = (key, vaulted)
    return vaulted


@functools.cache
def _vault_marks() -> tuple[tuple[type, ...], Any]:
    """The types and the tag ansible marks vaulted values with, looked up once (this is a hot path)."""
    try:  # ansible-core >= 2.19: EncryptedString until decrypted, then the VaultedValue tag
        from ansible._internal._datatag._tags import VaultedValue
        from ansible.parsing.vault import EncryptedString

        return (EncryptedString,), VaultedValue
    except ImportError:  # ansible-core < 2.19
        from ansible.parsing.yaml.objects import AnsibleVaultEncryptedUnicode

        return (AnsibleVaultEncryptedUnicode,), None


def contains_vaulted(value: Any) -> bool:
    """Whether a value or anything inside it is vault-encrypted (nothing is decrypted)."""
    if is_vaulted(value):
        return True
    if isinstance(value, Mapping):
        return any(contains_vaulted(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_vaulted(v) for v in value)
    return False


def _templates_read_secret(value: Any, variables: Mapping[str, Any], seen: set[str]) -> bool:
    """Whether a template inside `value` reads a vaulted variable, directly or through variables that
    are templates too (each variable followed once: a loop ends)."""
    if isinstance(value, Mapping):
        return any(_templates_read_secret(v, variables, seen) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_templates_read_secret(v, variables, seen) for v in value)
    if not isinstance(value, str) or is_vaulted(value) or not _TEMPLATE.search(value):
        return False
    for name in referenced_names(value) - seen:
        seen.add(name)
        if name in variables and (
            contains_vaulted(variables[name]) or _templates_read_secret(variables[name], variables, seen)
        ):
            return True
    return False


def referenced_names(text: str) -> set[str]:
    """Every identifier inside the template blocks of a string (over-approximate on purpose)."""
    names: set[str] = set()
    for match in _TEMPLATE.finditer(text):
        names.update(_NAME.findall(match.group(1) or match.group(2) or ""))
    return names


def vaulted_paths(raw: Any, rendered: Any, variables: Mapping[str, Any]) -> frozenset[KeyPath]:
    """Key paths of the rendered intent whose value is, or is derived from, a vaulted value.

    `raw` is the intent as written (templates unrendered), `rendered` after templating (pass `raw`
    again when rendering failed), `variables` the host's variables the templates can read.
    """
    found: set[KeyPath] = set()
    _collect(raw, rendered, (), variables, found)
    return frozenset(found)


def _collect(
    raw: Any, rendered: Any, path: KeyPath, variables: Mapping[str, Any], found: set[KeyPath]
) -> None:
    if is_vaulted(rendered) or (raw is not _MISSING and is_vaulted(raw)):
        found.add(path)
        return
    if isinstance(raw, str) and _TEMPLATE.search(raw):
        used = [variables[n] for n in referenced_names(raw) if n in variables]
        leaf = not isinstance(rendered, (Mapping, list, tuple))
        # A vaulted scalar used by the template taints everything it made; a container with vaulted
        # parts inside taints a scalar result (e.g. `{{ settings.tos | int }}`); so does a variable
        # that is itself a template reading a secret (`tos: "{{ vault_tos }}"`, then `{{ tos | int }}`).
        # A container result keeps the marks of the vaulted values it holds, found below.
        if (
            any(is_vaulted(v) for v in used)
            or (leaf and any(contains_vaulted(v) for v in used))
            or any(_templates_read_secret(v, variables, set()) for v in used)
        ):
            found.add(path)
            return
    if isinstance(rendered, Mapping):
        for key, value in rendered.items():
            child = raw.get(key, _MISSING) if isinstance(raw, Mapping) else _MISSING
            _collect(child, value, (*path, str(key)), variables, found)
    elif isinstance(rendered, (list, tuple)):
        for index, value in enumerate(rendered):
            child = raw[index] if isinstance(raw, (list, tuple)) and index < len(raw) else _MISSING
            _collect(child, value, (*path, str(index)), variables, found)


def is_under(path: Iterable[Any], vaulted: frozenset[KeyPath]) -> bool:
    """Whether the key at `path` (strings or pydantic's ints) is vaulted or inside a vaulted value."""
    parts = tuple(str(p) for p in path)
    return any(parts[: len(v)] == v for v in vaulted)


def secret_texts(rendered: Any, vaulted: frozenset[KeyPath]) -> set[str]:
    """The plaintext of every vaulted value of the rendered intent, to keep them out of messages."""
    texts: set[str] = set()
    for path in vaulted:
        node = rendered
        for part in path:
            if isinstance(node, Mapping):
                node = next((v for k, v in node.items() if str(k) == part), None)
            elif isinstance(node, (list, tuple)) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                node = None
        texts.update(_leaf_texts(node))
    return texts


def _leaf_texts(node: Any) -> Iterable[str]:
    if isinstance(node, Mapping):
        for value in node.values():
            yield from _leaf_texts(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            yield from _leaf_texts(value)
    elif node is not None:
        try:
            text = str(node)
        except Exception:  # an undecryptable value: nothing readable to hide
            return
        if text.strip():
            yield text.strip()


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every whole-word occurrence of a secret in a message with the redaction marker."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(secret)}(?![A-Za-z0-9_])", REDACTED, text)
    return text


def redacted_tree(data: Any, vaulted: frozenset[KeyPath], path: KeyPath = ()) -> Any:
    """A copy of plain JSON data with every vaulted key's value replaced by the redaction marker."""
    if path in vaulted:
        return REDACTED
    if isinstance(data, Mapping):
        return {k: redacted_tree(v, vaulted, (*path, str(k))) for k, v in data.items()}
    if isinstance(data, list):
        return [redacted_tree(v, vaulted, (*path, str(i))) for i, v in enumerate(data)]
    return data
