"""roles/fabcheck_node on the controller itself (connection local, no lab): from a wheelhouse built by
scripts/wheelhouse, the role makes a real venv with the system Python, installs the wheel with no index
and links its entry point; check mode before it reports the changes and touches nothing, a second run
changes nothing, a rebuilt wheel is installed again, and a wheelhouse without a fabcheck wheel is refused."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fabcheck import __version__

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")
PLAY = """\
- name: fabcheck on this machine
  hosts: localhost
  gather_facts: false
  roles:
    - role: fabcheck.fabric.fabcheck_node
"""

pytestmark = pytest.mark.skipif(
    not (REPO / ".wheelhouse" / ".complete").exists(), reason="no .wheelhouse: scripts/setup makes it"
)


def run_role(tmp_path: Path, wheelhouse: Path, *options: str) -> subprocess.CompletedProcess[str]:
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAY)
    node = tmp_path / "node"
    argv = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        str(playbook),
        "-i",
        "localhost,",
        "-e",
        "ansible_connection=local",
        "-e",
        "ansible_python_interpreter={{ ansible_playbook_python }}",
        "-e",
        f"fabcheck_node_wheelhouse={wheelhouse}",
        "-e",
        f"fabcheck_node_venv={node}/opt/fabcheck",
        "-e",
        f"fabcheck_node_wheel_cache={node}/var/cache/fabcheck/wheelhouse",
        "-e",
        f"fabcheck_node_link={node}/usr/local/bin/fabcheck",
        *options,
    ]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def changed(run: subprocess.CompletedProcess[str]) -> int:
    recap = run.stdout[run.stdout.rindex("PLAY RECAP") :]
    return int(recap.split("changed=")[1].split()[0])


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("wheelhouse") / "wheels"
    env = {"PATH": "/usr/bin:/bin", "PYTHON": sys.executable}
    subprocess.run([REPO / "scripts" / "wheelhouse", target], cwd=REPO, env=env, check=True, timeout=300)
    return target


@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no /usr/bin/python3 to make the venv with")
def test_role_installs_fabcheck_offline_idempotent_with_check_mode(tmp_path: Path, wheelhouse: Path) -> None:
    node = tmp_path / "node"
    (node / "usr" / "local" / "bin").mkdir(parents=True)
    dry = run_role(tmp_path, wheelhouse, "--check", "--diff")
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert changed(dry) >= 3 and "fabcheck-0" in dry.stdout  # the stamp's diff names the wheel
    assert not (node / "opt").exists() and not (node / "var").exists()

    first = run_role(tmp_path, wheelhouse)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    link = node / "usr" / "local" / "bin" / "fabcheck"
    assert link.is_symlink() and link.readlink() == node / "opt" / "fabcheck" / "bin" / "fabcheck"
    # The venv is the system Python's and holds the wheel, not this checkout.
    venv_python = node / "opt" / "fabcheck" / "bin" / "python"
    where = [str(venv_python), "-I", "-c", "import fabcheck, sys; print(fabcheck.__file__, sys.base_prefix)"]
    shown = subprocess.run(where, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    module_file, base = shown.stdout.split()
    assert module_file.startswith(str(node / "opt" / "fabcheck" / "lib")) and base == "/usr"
    version = subprocess.run([link, "--version"], capture_output=True, text=True, check=True, env={})
    assert version.stdout.strip() == f"fabcheck {__version__}"
    node_check = subprocess.run([link, "node-check", "--help"], capture_output=True, text=True, env={})
    assert node_check.returncode == 0 and "--slurm" in node_check.stdout, node_check.stderr

    again = run_role(tmp_path, wheelhouse, "--diff")
    assert again.returncode == 0 and changed(again) == 0, again.stdout[-3000:]

    # A rebuilt wheel of the same version (another byte in it) is installed over the old one.
    (wheel,) = wheelhouse.glob("fabcheck-*.whl")
    rebuilt = tmp_path / "wheels"
    shutil.copytree(wheelhouse, rebuilt)
    with zipfile.ZipFile(rebuilt / wheel.name, "a") as archive:
        archive.writestr("fabcheck/_rebuilt_marker.txt", "rebuilt\n")
    third = run_role(tmp_path, rebuilt)
    assert third.returncode == 0 and changed(third) >= 2, third.stdout[-3000:] + third.stderr[-3000:]
    site = node / "opt" / "fabcheck" / "lib"
    marker = list(site.glob("python3*/site-packages/fabcheck/_rebuilt_marker.txt"))
    assert len(marker) == 1


def test_role_refuses_a_wheelhouse_without_a_fabcheck_wheel(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = run_role(tmp_path, empty)
    assert refused.returncode != 0
    assert "must hold exactly one fabcheck-*.whl" in refused.stdout, refused.stdout[-3000:]
    assert not (tmp_path / "node").exists()
