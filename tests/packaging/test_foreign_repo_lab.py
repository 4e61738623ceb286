"""Proof: fabcheck used from a playbook repository that is not ours (issue 25).

A fresh folder outside the checkout holds only the lab's generated inventory (copied), a
requirements.yml naming the built collection tarball, a requirements.txt naming the built wheel and a
site.yml importing fabcheck.fabric.site. With no ansible.cfg of ours and nothing of the checkout on
PYTHONPATH: `ansible-galaxy collection install -r requirements.yml -p ./collections`, `pip install -r
requirements.txt` into a fresh venv, then `ansible-playbook site.yml` converges the lab (2 GPU hosts and
the three switch platforms) and ends with its gate, a rerun changes nothing, and `fabcheck validate`
exits 0.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

# tests/lab's helpers; a conftest.py here would shadow tests/conftest.py for `from conftest import ...`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
from labsupport import RECAP, requires_lab, running_lab
from packaging_support import build, clean_env, fresh_venv, offline_pip, run

pytestmark = [pytest.mark.lab, requires_lab]

SITE = """\
---
# Our own playbook repository: fabcheck's plays come from the installed collection fabcheck.fabric.
- name: Configure the fabric to its intent and gate it
  ansible.builtin.import_playbook: fabcheck.fabric.site
"""


def changed_by_host(output: str) -> dict[str, int]:
    return {m.group(1): int(m.group(3)) for m in RECAP.finditer(output)}


def test_a_foreign_playbook_repository_converges_the_lab(tmp_path: Path) -> None:
    built = build()
    venv = fresh_venv(built)
    user = tmp_path / "our-ansible-repo"
    user.mkdir()
    (user / "requirements.yml").write_text(f"collections:\n  - name: {built.collection}\n    type: file\n")
    (user / "requirements.txt").write_text(f"{built.wheel}\n")
    (user / "site.yml").write_text(SITE)
    env = clean_env(PATH=f"{venv / 'bin'}:{clean_env()['PATH']}")
    run(["ansible-galaxy", "collection", "install", "-r", "requirements.yml", "-p", "./collections"],
        cwd=user, env=env)  # fmt: skip
    run([*offline_pip(venv), "-r", "requirements.txt"], cwd=user, env=env)
    with running_lab(profile="roce", hosts=2, switches=3) as (paths, _state):
        shutil.copytree(paths.inventory.parent, user / "inventory", symlinks=False)
        assert sorted(p.name for p in user.iterdir()) == [
            "collections", "inventory", "requirements.txt", "requirements.yml", "site.yml"
        ]  # fmt: skip
        first = run(["ansible-playbook", "-i", "inventory", "site.yml"], cwd=user, env=env).stdout
        changed = changed_by_host(first)
        assert {"leaf01", "leaf02", "leaf03"} <= set(changed) and all(
            changed[s] > 0 for s in ("leaf01", "leaf02")
        )
        assert "Run fabcheck validate on the inventory and limit of this run" in first
        again = run(
            ["ansible-playbook", "-i", "inventory", "site.yml", "--skip-tags", "gate"], cwd=user, env=env
        )
        assert set(changed_by_host(again.stdout).values()) == {0}, again.stdout[-3000:]
        run(["fabcheck", "validate", "-i", "inventory"], cwd=user, env=env)
