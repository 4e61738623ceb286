"""The collection fabcheck.fabric as users install it: `ansible-galaxy collection build` of the checkout,
installed with `ansible-galaxy collection install`, its docs read by ansible-doc, `ansible-test sanity`
clean on what the tarball holds, FQCNs everywhere, one version, and the execution environment's build
context made by `ansible-builder create`."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging_support import REPO, VENV_BIN, Built, build, clean_env, run
from prime_offline import SANITY_TESTS, install_pip_bootstrap, sanity_argv

import fabcheck

MODULES = ("boot_kernel_module", "ipoib_child", "nic_fw_config", "roce_nic", "switch_config")
FILTERS = (
    "fabcheck_desired_host",
    "fabcheck_switch_config",
    "fabcheck_subnet_manager",
    "fabcheck_ib_host",
    "fabcheck_nvlink_hosts",
)
# Task keywords (not the action) that roles and playbooks use.
TASK_KEYWORDS = {"name", "when", "tags", "register", "notify", "vars", "block", "changed_when", "failed_when",
                 "check_mode", "listen", "loop", "become", "delegate_to", "run_once", "no_log",
                 "ignore_errors"}  # fmt: skip


@pytest.fixture(scope="module")
def built() -> Built:
    return build()


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    collections = tmp_path_factory.mktemp("collections")
    run([VENV_BIN / "ansible-galaxy", "collection", "install", "-p", collections, built.collection],
        cwd=collections, env=clean_env())  # fmt: skip
    return collections


def test_one_version_for_wheel_collection_and_changelog() -> None:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    assert (galaxy["namespace"], galaxy["name"]) == ("fabcheck", "fabric")
    assert galaxy["version"] == fabcheck.__version__
    assert f"## [{fabcheck.__version__}]" in (REPO / "CHANGELOG.md").read_text()
    pinned = re.search(r'"ansible-core>=([\d.]+),<([\d.]+)"', (REPO / "pyproject.toml").read_text())
    assert pinned
    requires = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert requires == f">={pinned.group(1)}.0,<{pinned.group(2)}.0", (
        "meta/runtime.yml follows pyproject's pin"
    )


def test_the_tarball_holds_the_collection_and_nothing_of_the_checkout(built: Built) -> None:
    with tarfile.open(built.collection) as tarball:
        names = {m.name for m in tarball.getmembers() if m.isfile()}
    assert {f"plugins/modules/{m}.py" for m in MODULES} <= names
    assert {"plugins/action/switch_config.py", "playbooks/site.yml", "meta/runtime.yml", "MANIFEST.json",
            "roles/roce_host/tasks/main.yml", "plugins/module_utils/roce_nic_apply.py"} <= names  # fmt: skip
    tops = {name.split("/")[0] for name in names}
    shipped = {
        "CHANGELOG.md",
        "FILES.json",
        "MANIFEST.json",
        "README.md",
        "meta",
        "playbooks",
        "plugins",
        "roles",
    }
    assert tops == shipped, f"unexpected entries: {sorted(tops - shipped)}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_ansible_doc_reads_every_module_and_filter(installed: Path) -> None:
    env = clean_env(ANSIBLE_COLLECTIONS_PATH=str(installed))
    doc = VENV_BIN / "ansible-doc"
    modules = json.loads(
        run([doc, "-j", *(f"fabcheck.fabric.{m}" for m in MODULES)], cwd=installed, env=env).stdout
    )
    for name in MODULES:
        docs = modules[f"fabcheck.fabric.{name}"]["doc"]
        assert docs["version_added"] == fabcheck.__version__ and docs["options"], name
    listed = run([doc, "-t", "filter", "-l", "fabcheck.fabric"], cwd=installed, env=env).stdout
    assert all(f"fabcheck.fabric.{f}" in listed for f in FILTERS), listed


def test_ansible_test_sanity_is_clean_on_the_tarball(built: Built, tmp_path: Path) -> None:
    """`ansible-test sanity --python 3.11` (no container) on the files the tarball ships, with the
    repository's ignore file (each entry justified on its line)."""
    root = tmp_path / "ansible_collections" / "fabcheck" / "fabric"
    root.mkdir(parents=True)
    with tarfile.open(built.collection) as tarball:
        tarball.extractall(root, filter="data")
    shutil.copytree(REPO / "tests" / "sanity", root / "tests" / "sanity")
    for line in (root / "tests" / "sanity" / "ignore-2.19.txt").read_text().splitlines():
        assert re.fullmatch(r"\S+ \S+ # \S.*", line), f"an ignore entry without its reason: {line!r}"
    install_pip_bootstrap()  # the venvs themselves were made by scripts/setup (prime_offline.py)
    env = clean_env(PATH=f"{VENV_BIN}:{clean_env()['PATH']}")
    done = run(sanity_argv(), cwd=root, env=env, timeout=900)
    for test in SANITY_TESTS:
        assert f'Running sanity test "{test}"' in done.stdout, test


def tasks_of(path: Path) -> list[dict]:
    found: list[dict] = []

    def walk(items: Any) -> None:
        for item in items or []:
            if isinstance(item, dict):
                found.append(item)
                for nested in ("block", "tasks", "pre_tasks", "post_tasks", "handlers", "rescue", "always"):
                    walk(item.get(nested))

    walk(yaml.safe_load(path.read_text()))
    return found


def test_every_task_role_and_filter_is_named_by_fqcn() -> None:
    files = [REPO / "site.yml", *(REPO / "playbooks").glob("*.yml"), *(REPO / "roles").glob("*/tasks/*.yml"),
             *(REPO / "roles").glob("*/handlers/*.yml")]  # fmt: skip
    for path in files:
        for task in tasks_of(path):
            for role in task.get("roles", []):
                assert str(role["role"]).startswith("fabcheck.fabric."), f"{path}: role {role['role']}"
            if "hosts" in task or "block" in task:  # a play or a block: their tasks are walked too
                continue
            actions = set(task) - TASK_KEYWORDS
            assert len(actions) == 1, f"{path}: {task.get('name')}: actions {actions}"
            (action,) = actions
            assert action.startswith(("ansible.builtin.", "fabcheck.fabric.")), f"{path}: {action}"
    our_filters = "|".join(FILTERS)
    for path in [*files, *(REPO / "roles").glob("*/defaults/*.yml")]:
        bare = re.findall(rf"\|\s*({our_filters})\b", path.read_text())
        assert not bare, f"{path}: filters without fabcheck.fabric.: {bare}"


def test_ansible_builder_creates_the_execution_environment_context(built: Built, tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    shutil.copy(REPO / "execution-environment.yml", tmp_path)
    for artifact in (built.wheel, built.collection):
        shutil.copy(artifact, tmp_path / "dist")
    builder = VENV_BIN / "ansible-builder"
    create = [builder, "create", "-f", "execution-environment.yml", "-c", "context"]
    run([*create, "--output-filename", "Containerfile"], cwd=tmp_path, env=clean_env())
    context = tmp_path / "context"
    containerfile = (context / "Containerfile").read_text()
    assert (context / "_build" / "fabcheck" / built.wheel.name).is_file()
    assert (context / "_build" / "fabcheck" / built.collection.name).is_file()
    assert "pip install --no-cache-dir /tmp/fabcheck/fabcheck-*-py3-none-any.whl" in containerfile
    assert "ansible-galaxy collection install -p /usr/share/ansible/collections" in containerfile
    assert "openssh-clients [platform:rpm]" in (context / "_build" / "bindep.txt").read_text()
