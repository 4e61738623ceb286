"""Prepare, while the network is there (scripts/setup), what tests/packaging needs inside the network-less
lab namespace where CI runs the suite: ansible-test's per-test sanity venvs (`ansible-test sanity
--prime-venvs`, run from a scratch collection tree, since ansible-test runs only under
ansible_collections/NAMESPACE/NAME). The wheelhouse for the fresh venvs is setup's own `pip download`.

ansible-test bootstraps pip in each venv with a get-pip script it fetches from ci-files.testing.ansible.com,
a host CI cannot reach; get_pip_offline.py does the same with ensurepip and the package index."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ANSIBLE_TEST = Path(sys.executable).with_name("ansible-test")
SANITY_TESTS = ("compile", "import", "pep8", "pylint", "validate-modules", "yamllint", "no-assert", "shebang")


def install_pip_bootstrap() -> None:
    """Where ansible-test looks for its cached get-pip script (for the pip version it pins)."""
    from ansible_test._internal.python_requirements import get_venv_packages
    from ansible_test._internal.util import version_to_str

    class Python311:  # get_venv_packages only reads .version
        version = version_to_str(sys.version_info[:2])

    pip_version = get_venv_packages(Python311())["pip"]  # type: ignore[arg-type]
    cached = Path.home() / ".ansible" / "test" / "cache" / f"get_pip_{pip_version.replace('.', '_')}.py"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "get_pip_offline.py", cached)


def sanity_argv(*extra: str) -> list[str]:
    argv = [
        str(ANSIBLE_TEST),
        "sanity",
        "--python",
        f"{sys.version_info[0]}.{sys.version_info[1]}",
        "--color",
        "no",
    ]
    for test in SANITY_TESTS:
        argv += ["--test", test]
    return [*argv, *extra]


def prime_sanity_venvs() -> None:
    install_pip_bootstrap()
    with tempfile.TemporaryDirectory(prefix="fabcheck-prime-") as scratch:
        root = Path(scratch) / "ansible_collections" / "fabcheck" / "fabric"
        root.mkdir(parents=True)
        for name in ("galaxy.yml", "meta"):
            source = REPO / name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
        subprocess.run(sanity_argv("--prime-venvs"), cwd=root, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    prime_sanity_venvs()
