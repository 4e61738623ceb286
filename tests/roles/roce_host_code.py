"""Load the roce_nic module and its module_utils the way Ansible does, in tests.

The module imports its shared code from the collection (``ansible_collections.fabcheck.fabric.plugins.
module_utils.roce_nic_apply`` / ``roce_nic_persist``); Ansible bundles those files from the collection's
plugins/module_utils/. Here they are loaded from the same files and registered under those names first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "roles" / "roce_host"
MODULE_UTILS = REPO / "plugins" / "module_utils"
MODULES = REPO / "plugins" / "modules"
UTILS_PACKAGE = "ansible_collections.fabcheck.fabric.plugins.module_utils"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def apply_code() -> ModuleType:
    """module_utils/roce_nic_apply.py: the apply logic, also the applier installed on hosts."""
    return _load(f"{UTILS_PACKAGE}.roce_nic_apply", MODULE_UTILS / "roce_nic_apply.py")


def persist_code() -> ModuleType:
    apply_code()
    return _load(f"{UTILS_PACKAGE}.roce_nic_persist", MODULE_UTILS / "roce_nic_persist.py")


def module_code() -> ModuleType:
    """plugins/modules/roce_nic.py, with its module_utils registered."""
    persist_code()
    return _load("roce_nic", MODULES / "roce_nic.py")
