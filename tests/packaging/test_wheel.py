"""The wheel as users install it: built with `python -m build`, installed (never editable) into a fresh
venv outside the checkout, its commands, templates and pytest plugin working from there; its runtime
dependencies are exactly what the product imports, the tests' in an extra. It holds no lab: the lab is a
distribution of its own (lab/, fabcheck-lab) whose wheel, installed beside it, brings `fabcheck lab`."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging_support import REPO, Built, build, clean_env, fresh_venv, run

import fabcheck
from fabcheck.cli import LAB_MISSING
from fabcheck.intent.platforms import PLATFORMS


@pytest.fixture(scope="module")
def built() -> Built:
    return build()


def metadata(built: Built) -> str:
    with zipfile.ZipFile(built.wheel) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        return wheel.read(name).decode()


def requirement_names(text: str, extra: str | None) -> set[str]:
    names = set()
    for line in text.splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        spec, _, marker = line.removeprefix("Requires-Dist: ").partition(";")
        in_extra = re.search(r"extra == '([^']+)'", marker)
        if (in_extra.group(1) if in_extra else None) == extra:
            names.add(re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def third_party_imports(package: Path) -> set[str]:
    """Top-level modules imported anywhere under `package`, outside the stdlib, fabcheck and its lab."""
    found = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names | {"fabcheck", "fabcheck_lab"}}


def distributions_of(modules: set[str]) -> set[str]:
    providers = importlib.metadata.packages_distributions()
    unknown = modules - set(providers)
    assert not unknown, f"imported but installed by no distribution: {sorted(unknown)}"
    return {providers[m][0].lower().replace("_", "-") for m in modules}


def test_the_wheel_ships_the_templates_py_typed_and_one_version(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
    for record in PLATFORMS.values():
        shipped = {n for n in names if n.startswith(f"fabcheck/templates/{record.template_folder}/")}
        in_checkout = {f"fabcheck/templates/{p.relative_to(REPO / 'templates')}"
                       for p in (REPO / "templates" / record.template_folder).glob("*.j2")}  # fmt: skip
        assert shipped == in_checkout and f"fabcheck/templates/{record.template_folder}/switch.j2" in shipped
    assert "fabcheck/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "templates/", "roles/")) or "__pycache__" in n]
    assert f"Version: {fabcheck.__version__}\n" in metadata(built)
    assert built.wheel.name == f"fabcheck-{fabcheck.__version__}-py3-none-any.whl"


def test_the_product_wheel_holds_no_lab(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = wheel.namelist()
    assert not [n for n in names if n.startswith(("fabcheck/lab/", "fabcheck_lab/", "lab/"))], names
    assert not [n for n in names if "mockswitch" in n or "mockhost" in n]
    assert "lab" not in re.findall(r"^Provides-Extra: (.+)$", metadata(built), re.M)
    with zipfile.ZipFile(built.lab_wheel) as lab:
        lab_names = lab.namelist()
    assert "fabcheck_lab/mockswitch/server.py" in lab_names and "fabcheck_lab/mockhost/client.c" in lab_names
    assert not [n for n in lab_names if n.startswith("fabcheck/")], "the lab's wheel holds no product"


def test_runtime_dependencies_are_what_the_product_imports(built: Built) -> None:
    text = metadata(built)
    runtime = requirement_names(text, None)
    imported = distributions_of(third_party_imports(REPO / "fabcheck"))
    assert runtime == imported, "Requires-Dist: exactly the distributions fabcheck imports"
    assert "asyncssh" not in runtime
    assert {"hypothesis", "ruff"} <= requirement_names(text, "test")


def test_the_labs_dependencies_are_what_it_imports_and_this_very_fabcheck(built: Built) -> None:
    text = metadata(Built(built.lab_wheel, built.sdist, built.collection, built.lab_wheel))
    assert f"Version: {fabcheck.__version__}\n" in text
    assert f"Requires-Dist: fabcheck=={fabcheck.__version__}\n" in text
    imported = distributions_of(third_party_imports(REPO / "lab" / "src" / "fabcheck_lab"))
    assert requirement_names(text, None) == imported | {"fabcheck"}
    with zipfile.ZipFile(built.lab_wheel) as lab:
        (name,) = [n for n in lab.namelist() if n.endswith(".dist-info/entry_points.txt")]
        assert "[fabcheck.commands]\nlab = fabcheck_lab.cli:register\n" in lab.read(name).decode()


def test_the_installed_wheel_works_outside_the_checkout(built: Built, tmp_path: Path) -> None:
    venv = fresh_venv(built)
    bin_dir = venv / "bin"
    user_repo = tmp_path / "user"
    shutil.copytree(REPO / "inventory" / "example", user_repo / "inventory")
    env = clean_env()
    where = run([bin_dir / "python", "-c", "import fabcheck.switch.render as r; print(r.TEMPLATES)"],
                cwd=user_repo, env=env).stdout.strip()  # fmt: skip
    assert Path(where) == next(venv.glob("lib/python3*/site-packages")) / "fabcheck" / "templates"
    rendered = run([bin_dir / "fabcheck", "render", "-i", "inventory"], cwd=user_repo, env=env).stdout
    assert "leaf01" in rendered and "leaf02" in rendered
    for command in ("validate", "report", "analyze", "intent", "baseline", "bench"):
        assert "usage: fabcheck " + command in run([bin_dir / "fabcheck", command, "--help"], cwd=user_repo,
                                                    env=env).stdout  # fmt: skip
    run([bin_dir / "fabcheck", "intent", "check", "-i", "inventory"], cwd=user_repo, env=env)
    plugin = run(
        [bin_dir / "python", "-m", "pytest", "-p", "fabcheck", "--help"], cwd=user_repo, env=env
    ).stdout
    assert "--fabcheck-inventory" in plugin


def test_the_lab_not_installed_names_how_to_install_it(built: Built, tmp_path: Path) -> None:
    venv = fresh_venv(built)
    env = clean_env()
    argv = [str(venv / "bin" / "fabcheck"), "lab", "status"]
    done = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"fabcheck: {LAB_MISSING}\n"


def test_the_labs_wheel_beside_the_product_brings_fabcheck_lab(built: Built, tmp_path: Path) -> None:
    venv = fresh_venv(built, with_lab=True)
    env = clean_env()
    fabcheck_bin = venv / "bin" / "fabcheck"
    assert "usage: fabcheck lab" in run([fabcheck_bin, "lab", "--help"], cwd=tmp_path, env=env).stdout
    listed = run([fabcheck_bin, "lab", "faults"], cwd=tmp_path, env=env).stdout
    assert {"pfc-off", "switch-pfc-prio", "link-down"} <= {line.split()[0] for line in listed.splitlines()}
    where = run([venv / "bin" / "python", "-c", "import fabcheck_lab; print(fabcheck_lab.__file__)"],
                cwd=tmp_path, env=env).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(next(venv.glob("lib/python3*/site-packages")))
