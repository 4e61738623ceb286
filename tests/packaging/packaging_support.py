"""Build what users install (the wheel, the collection tarball, the lab's wheel) from this checkout, and a
fresh venv holding only the wheel and what it depends on (and one with the lab's wheel beside it): shared by
the packaging tests and the foreign-repository lab test.

The artifacts and the venv are made once per checkout state and kept under the system temp dir (keyed
by a digest of the packaged files), behind a file lock, so two test processes build them once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
WHEELHOUSE = REPO / ".wheelhouse"  # the runtime dependencies' wheels (scripts/setup)
# What the wheel and the collection are built from (their digest names the build).
PACKAGED = ("pyproject.toml", "galaxy.yml", "README.md", "CHANGELOG.md", "fabcheck", "templates", "meta",
            "plugins", "roles", "playbooks", "lab")  # fmt: skip


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path
    collection: Path  # fabcheck-fabric-X.tar.gz
    lab_wheel: Path  # fabcheck_lab-X-py3-none-any.whl, the lab's own distribution (lab/)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing of this checkout or its venv (no PYTHONPATH, no
    ANSIBLE_* of ours, no VIRTUAL_ENV), a PATH without our venv's bin."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "VIRTUAL_ENV", "PIP_"))
    }
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != VENV_BIN)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["ANSIBLE_NOCOLOR"] = "1"
    return env | extra


def run(argv: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    assert done.returncode == 0, (
        f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done


def _digest() -> str:
    listed = run(["git", "ls-files", "-co", "--exclude-standard", *PACKAGED], cwd=REPO).stdout.split()
    digest = hashlib.sha256()
    for name in sorted(listed):
        path = REPO / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def work_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"fabcheck-packaging-{_digest()}"


def build() -> Built:
    """`python -m build` (wheel + sdist) and `ansible-galaxy collection build`, once per checkout state."""
    work = work_dir()
    dist = work / "dist"
    with _locked(work / "build.lock"):
        if not (dist / "done").exists():
            shutil.rmtree(dist, ignore_errors=True)
            dist.mkdir(parents=True)
            # --no-isolation: the backend (hatchling) is in the test venv ([test] extra): no index asked.
            run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, REPO], cwd=REPO)
            run([VENV_BIN / "ansible-galaxy", "collection", "build", "--output-path", dist, REPO], cwd=REPO)
            lab = [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", dist, REPO / "lab"]
            run(lab, cwd=REPO)
            (dist / "done").touch()
    (wheel,) = dist.glob("fabcheck-*.whl")
    (sdist,) = dist.glob("fabcheck-[0-9]*.tar.gz")
    (collection,) = dist.glob("fabcheck-fabric-*.tar.gz")
    (lab_wheel,) = dist.glob("fabcheck_lab-*.whl")
    return Built(wheel, sdist, collection, lab_wheel)


def offline_pip(venv: Path) -> list[str | Path]:
    """`pip install` in `venv` from the wheelhouse scripts/setup downloads (the lab namespace, where CI runs
    the suite, has no network)."""
    assert (WHEELHOUSE / ".complete").is_file(), f"no {WHEELHOUSE}: run scripts/setup"
    return [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--find-links", WHEELHOUSE]


def fresh_venv(built: Built, *, with_lab: bool = False) -> Path:
    """A venv made by the system's Python holding `pip install WHEEL` (never editable), its
    dependencies from the checkout's wheelhouse; with_lab: the lab's wheel installed beside it."""
    work = work_dir()
    venv = work / ("venv-lab" if with_lab else "venv")
    wheels = [built.wheel, built.lab_wheel] if with_lab else [built.wheel]
    with _locked(work / f"{venv.name}.lock"):
        if not (venv / "done").exists():
            shutil.rmtree(venv, ignore_errors=True)
            python = shutil.which("python3", path=clean_env()["PATH"]) or sys.executable
            run([python, "-m", "venv", venv], cwd=work, env=clean_env())
            run([*offline_pip(venv), *wheels], cwd=work, env=clean_env())
            (venv / "done").touch()
    return venv
