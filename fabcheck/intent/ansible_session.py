"""ansible-core set up as `ansible-playbook` sets it up, and its failures turned into one clear line.

`ansible-playbook` installs the collection loader (so `lookup('ansible.builtin.env', ...)` resolves)
and the vault secrets before it reads an inventory. Its inventory plugins turn a file they cannot
parse into warnings and carry on with fewer hosts; its vars plugin drops the file name from a YAML
error in group_vars. Here each of those becomes a UsageError naming the file, line and what was
expected.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabcheck.errors import UsageError

VAULT_PASSWORD_VAR = "ANSIBLE_VAULT_PASSWORD_FILE"
INVENTORY_EXPECTED = "expected an Ansible inventory (YAML or INI hosts and groups, or a folder of them)"
YAML_SUFFIXES = (".yml", ".yaml", ".json")
VARS_DIRS = ("group_vars", "host_vars")
_REASON_CHARS = 300
SNIFF_BYTES = 64 * 1024  # enough to tell text from binary without reading a huge file
_UNPARSED_SUMMARY = "Unable to parse "  # ansible's summary warning for a source no plugin parsed


def init_collection_loader() -> None:
    """Install Ansible's collection finder once per process, as ansible-playbook does at start."""
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    if AnsibleCollectionConfig.collection_finder:
        return
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()


# Ansible's default order tries `auto` before `yaml`, and each parses (and deep-copies) a YAML inventory
# file: `auto` only to find no `plugin:` key in it. `yaml` refuses a plugin configuration before it adds
# anything, so `auto` after it reads such a file as before: the same inventory, each YAML hosts file
# parsed once (1.9 -> 1.1 s of CPU to load a 1,024-host inventory, bench/scale.py's --via slurm merge).
_YAML_FIRST = ("host_list", "script", "yaml", "auto", "ini", "toml")


def yaml_inventory_first() -> None:
    """Read YAML inventories with the `yaml` plugin before `auto`, unless the user set the plugins
    (ansible.cfg `[inventory] enable_plugins`, ANSIBLE_INVENTORY_ENABLED): theirs are kept as given."""
    from ansible import constants

    enabled, origin = constants.config.get_config_value_and_origin("INVENTORY_ENABLED")
    if origin == "default" and sorted(enabled) == sorted(_YAML_FIRST):
        constants.INVENTORY_ENABLED = list(_YAML_FIRST)


def vault_password_file() -> str | None:
    """The vault password file ansible-playbook would use (environment first, then ansible.cfg)."""
    configured = os.environ.get(VAULT_PASSWORD_VAR)
    if configured:
        return configured
    from ansible import constants

    value = constants.config.get_config_value("DEFAULT_VAULT_PASSWORD_FILE")
    return str(value) if value else None


def load_vault_secrets(loader: Any) -> bool:
    """Give the loader the vault password; True when one is set. Never taken from arguments."""
    password_file = vault_password_file()
    secrets: list[tuple[str, Any]] = []
    if password_file:
        from ansible.errors import AnsibleError
        from ansible.parsing.vault import get_file_vault_secret

        try:
            secret = get_file_vault_secret(filename=password_file, loader=loader)
            secret.load()
        except (AnsibleError, OSError) as err:
            raise UsageError(
                f"{password_file}: cannot read the vault password file ({VAULT_PASSWORD_VAR}): "
                f"{one_line(str(err))}; expected a readable file holding the vault password"
            ) from None
        secrets = [("default", secret)]
        loader.set_vault_secrets(secrets)
    try:  # ansible-core >= 2.19 decrypts lazily through one process-wide context
        from ansible.parsing.vault import VaultSecretsContext
    except ImportError:
        return bool(secrets)
    context = VaultSecretsContext.current(optional=True)
    if context is None:
        VaultSecretsContext.initialize(VaultSecretsContext(secrets))
    else:
        context.secrets = secrets  # an earlier load's password must not decrypt this inventory
    return bool(secrets)


@dataclass(frozen=True)
class AnsibleWarning:
    message: str
    exception: BaseException | None


@contextmanager
def captured_warnings() -> Iterator[list[AnsibleWarning]]:
    """Hold back ansible's warnings so that a failed parse is reported once, by us."""
    from ansible.utils.display import Display

    display = Display()
    captured: list[AnsibleWarning] = []

    def warning(msg: str, *_args: Any, **_kwargs: Any) -> None:
        captured.append(AnsibleWarning(str(msg), None))

    def error_as_warning(msg: str | None, exception: BaseException, *_args: Any, **_kwargs: Any) -> None:
        captured.append(AnsibleWarning(str(msg or ""), exception))

    patched = {"warning": warning}
    if hasattr(display, "error_as_warning"):  # ansible-core >= 2.19
        patched["error_as_warning"] = error_as_warning
    for name, function in patched.items():
        setattr(display, name, function)
    try:
        yield captured
    finally:
        for name in patched:
            delattr(display, name)  # the class's own method shows through again


def replay(warnings: list[AnsibleWarning]) -> None:
    """Show the held-back warnings of a load that succeeded, as ansible would have."""
    from ansible.utils.display import Display

    display = Display()
    for item in warnings:
        if item.exception is None and item.message.startswith(_UNPARSED_SUMMARY):
            continue  # every file was parsed (check_parsed): this names a folder, which holds no hosts
        text = item.message if item.exception is None else f"{item.message} {item.exception}"
        display.warning(text.strip())


def inventory_files(source: Path) -> list[Path]:
    """The files ansible considers inventory sources under `source` (its own ignore rules)."""
    if not source.is_dir():
        return [source]
    from ansible.inventory.manager import IGNORED

    found: list[Path] = []
    for name in sorted(os.listdir(source)):
        if IGNORED.search(os.fsencode(name)):
            continue
        path = source / name
        found.extend(inventory_files(path) if path.is_dir() else [path])
    return found


def check_parsed(manager: Any, source: Path, warnings: list[AnsibleWarning]) -> None:
    """Raise UsageError for the first inventory file that no inventory plugin could parse."""
    processed = {os.path.abspath(p) for p in manager._inventory.processed_sources if p}
    for path in inventory_files(source):
        if os.path.abspath(path) not in processed:
            raise UsageError(_unparsed_message(path, warnings))


def check_readable(source: Path) -> None:
    """Refuse what cannot be an inventory before ansible sees it: nothing there, empty, binary."""
    if not source.exists():
        raise UsageError(f"{source}: no such file or directory; {INVENTORY_EXPECTED}")
    if source.is_dir():
        return
    try:
        with source.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
            rest = handle.read(1)
    except OSError as err:
        raise UsageError(f"{source}: cannot read: {err.strerror}; {INVENTORY_EXPECTED}") from None
    if not head.strip() and not rest:
        raise UsageError(f"{source}: file is empty; {INVENTORY_EXPECTED}")
    if _is_binary(head):
        raise UsageError(f"{source}: binary data, not text; {INVENTORY_EXPECTED}")


def _is_binary(head: bytes) -> bool:
    """NUL bytes or undecodable UTF-8 in the first bytes (a cut multi-byte character is allowed)."""
    if b"\0" in head:
        return True
    return head.decode("utf-8", errors="replace")[:-1].count("\ufffd") > 0


def _head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(SNIFF_BYTES)


def _unparsed_message(path: Path, warnings: list[AnsibleWarning]) -> str:
    try:
        data = _head(path)
    except OSError as err:
        return f"{path}: cannot read: {err.strerror}; {INVENTORY_EXPECTED}"
    if _is_binary(data):
        return f"{path}: binary data, not text; {INVENTORY_EXPECTED}"
    if path.suffix in YAML_SUFFIXES:
        located = yaml_error(path)
        if located:
            return f"{located}; expected valid YAML (check indentation, colons and brackets)"
    plugin = "yaml" if path.suffix in YAML_SUFFIXES else "ini"
    reason = _plugin_reason(path, plugin, warnings)
    where = f"{path}:{reason[1]}" if reason[1] else str(path)
    return f"{where}: not an inventory ansible can parse ({plugin} plugin: {reason[0]}); {INVENTORY_EXPECTED}"


def _plugin_reason(path: Path, plugin: str, warnings: list[AnsibleWarning]) -> tuple[str, int | None]:
    """What the named inventory plugin said about this file, from the held-back warnings."""
    fallback: tuple[str, int | None] = ("no plugin accepted the file", None)
    for item in warnings:
        text = f"{item.message} {item.exception or ''}"
        if item.exception is not None and str(path) not in text:
            text += f" {_origin_text(getattr(item.exception, 'obj', None))}"
        if str(path) not in text and path.name not in text:
            continue
        if f"'{plugin}'" in item.message or f"with {plugin} plugin" in item.message:
            detail = str(item.exception) if item.exception is not None else item.message
            detail = detail.split(f"with {plugin} plugin:", 1)[-1]
            return one_line(detail), error_line(item.exception)
    return fallback


def _origin_text(obj: Any) -> str:
    try:
        from ansible._internal._datatag._tags import Origin

        tag = obj if isinstance(obj, Origin) else Origin.get_tag(obj)
        return f"{tag.path} {tag.description}" if tag is not None else ""
    except ImportError:
        return ""


def yaml_error(path: Path) -> str | None:
    """'file:line: YAML syntax error: why' when ansible's YAML loader refuses the file, else None."""
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader

    try:
        DataLoader().load_from_file(str(path), cache="none")
    except AnsibleError as err:
        line = error_line(err)
        where = f"{path}:{line}" if line else str(path)
        reason = one_line(getattr(err, "message", None) or str(err))
        reason = reason.removeprefix("YAML parsing failed: ").removeprefix("Syntax Error while loading YAML.")
        return f"{where}: YAML syntax error: {reason.strip().rstrip('.') or 'cannot parse'}"
    return None


def error_line(err: BaseException | None) -> int | None:
    """The 1-based line an ansible or YAML error points at, whichever way this version records it."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        obj = getattr(err, "obj", None)
        line = _tag_line(obj)
        if line:
            return line
        position = getattr(obj, "ansible_pos", None)  # ansible-core < 2.19
        if position and position[1]:
            return int(position[1])
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        if mark is not None:
            return int(mark.line) + 1
        err = err.__cause__ or err.__context__
    return None


def _tag_line(obj: Any) -> int | None:
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:
        return None
    tag = obj if isinstance(obj, Origin) else Origin.get_tag(obj) if obj is not None else None
    return tag.line_num if tag is not None and tag.line_num else None


def vars_file_error(source: Path) -> str | None:
    """The group_vars/host_vars file ansible failed on, as 'file:line: why', found by loading each."""
    base = source if source.is_dir() else source.parent
    for folder in VARS_DIRS:
        root = base / folder
        if not root.is_dir():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            if path.suffix not in ("", *YAML_SUFFIXES):
                continue
            try:
                head = _head(path)
            except OSError as err:
                return (
                    f"{path}: cannot read: {err.strerror or err}; expected a readable file of YAML variables"
                )
            if _is_binary(head):
                return f"{path}: binary data, not text; expected YAML variables"
            located = yaml_error(path)
            if located:
                return located
    return None


def one_line(text: str) -> str:
    """A message as one printable line, cut to a readable length."""
    flat = re.sub(r"\s+", " ", text).strip()
    flat = "".join(c if c.isprintable() else "?" for c in flat)
    return flat if len(flat) <= _REASON_CHARS else flat[: _REASON_CHARS - 3] + "..."
