"""scripts/setup and scripts/demo, run for real in a scratch checkout with recording stand-ins.

The stand-ins (`.venv/bin/python` for pip, `apt-get`, the lab wrapper) only record how they were
called, so nothing is installed and no index is asked. Setup with nothing to do prints nothing and
calls neither pip nor apt; pip runs again only when pyproject.toml changed or the venv's fabcheck is
not the editable install of this checkout; apt waits for a held dpkg lock; the demo runs setup once,
outside the network-less wrapper.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What setup and demo need from the system besides the tools they check for (sshd, ip, tc, unshare,
# chromium, mpirun, Slurm's, promtool).
SLURM_TOOLS = ("slurmctld", "slurmd", "srun", "munged")
BASE_TOOLS = (
    "bash",
    "cat",
    "cut",
    "dirname",
    "grep",
    "id",
    "ln",
    "mkdir",
    "readlink",
    "rm",
    "sha256sum",
    "touch",
    "env",
)

RECORDER = """#!/bin/bash
printf '%s\\n' "$*" >> "{log}"
{extra}
"""
# A pip stand-in: `pip install -e` leaves what a real editable install leaves, direct_url.json, for the
# product and the lab (lab/, a distribution of its own).
FAKE_PIP = """
site=.venv/lib/python3.11/site-packages
case "$*" in *"install -q -e"*)
  mkdir -p $site/fabcheck-0.1.0.dist-info $site/fabcheck_lab-0.1.0.dist-info
  printf '{{"dir_info": {{"editable": true}}, "url": "file://%s"}}' "{url_root}" \\
    > $site/fabcheck-0.1.0.dist-info/direct_url.json
  printf '{{"dir_info": {{"editable": true}}, "url": "file://%s/lab"}}' "{url_root}" \\
    > $site/fabcheck_lab-0.1.0.dist-info/direct_url.json;;
*"download -q -d .wheelhouse"*) mkdir -p .wheelhouse;;
esac
"""


def recorder(path: Path, log: Path, extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORDER.format(log=log, extra=extra))
    path.chmod(0o755)


class Checkout:
    """A scratch copy of the scripts and pyproject.toml, a fake venv and a PATH of chosen tools."""

    def __init__(
        self,
        root: Path,
        *,
        system_tools: tuple[str, ...] = (
            "sshd",
            "ip",
            "tc",
            "unshare",
            "chromium",
            "mpirun",
            "yanglint",
            "promtool",
            *SLURM_TOOLS,
        ),
    ) -> None:
        self.root = root / "checkout"
        (self.root / "scripts").mkdir(parents=True)
        for name in ("setup", "demo"):
            shutil.copy2(REPO / "scripts" / name, self.root / "scripts" / name)
        shutil.copy2(REPO / "pyproject.toml", self.root / "pyproject.toml")
        (self.root / "lab").mkdir()
        shutil.copy2(REPO / "lab" / "pyproject.toml", self.root / "lab" / "pyproject.toml")
        self.log = root / "calls.log"
        self.log.touch()
        self.bin = root / "bin"
        self.bin.mkdir()
        for tool in BASE_TOOLS:
            found = shutil.which(tool)
            if found:
                (self.bin / tool).symlink_to(found)
        for tool in system_tools:
            recorder(self.bin / tool, self.log)
        recorder(self.bin / "apt-get", self.log)
        self.pip_url_root = str(self.root)
        self.write_python()

    def write_python(self) -> None:
        recorder(
            self.root / ".venv" / "bin" / "python", self.log, FAKE_PIP.format(url_root=self.pip_url_root)
        )

    def run(self, script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        self.log.write_text("")
        environment = {"PATH": str(self.bin), "HOME": str(self.root), **env}
        return subprocess.run(
            [str(self.root / "scripts" / script), *args],
            cwd=self.root,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    @property
    def stamp(self) -> Path:
        return self.root / ".venv" / ".fabcheck-setup-stamp"


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return Checkout(tmp_path)


def test_first_setup_installs_editable_then_a_rerun_does_nothing_and_prints_nothing(
    checkout: Checkout,
) -> None:
    first = checkout.run("setup")
    assert first.returncode == 0, first.stderr
    assert any("-m pip install -q -e .[test] -e ./lab" in call for call in checkout.calls()), checkout.calls()
    # The wheelhouse tests/packaging installs fresh venvs from, offline (the product's and the lab's).
    assert "-m pip download -q -d .wheelhouse . ./lab" in checkout.calls()
    assert (checkout.root / ".wheelhouse" / ".complete").is_file()
    assert checkout.stamp.is_file()
    again = checkout.run("setup")
    assert again.returncode == 0, again.stderr
    assert (again.stdout, again.stderr) == ("", "")
    assert checkout.calls() == [], "a no-op setup must call neither pip nor apt"


@pytest.mark.parametrize("pyproject_of", [".", "lab"])
def test_a_changed_pyproject_reinstalls(checkout: Checkout, pyproject_of: str) -> None:
    assert checkout.run("setup").returncode == 0
    pyproject = checkout.root / pyproject_of / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# a new dependency would go here\n")
    done = checkout.run("setup")
    assert done.returncode == 0, done.stderr
    assert any("install -q -e" in call for call in checkout.calls())
    assert checkout.run("setup").returncode == 0 and checkout.calls() == []


@pytest.mark.parametrize("dist_info", ["fabcheck-0.1.0.dist-info", "fabcheck_lab-0.1.0.dist-info"])
def test_fabcheck_installed_from_another_checkout_is_reinstalled(checkout: Checkout, dist_info: str) -> None:
    assert checkout.run("setup").returncode == 0
    direct_url = next((checkout.root / ".venv").rglob(f"{dist_info}/direct_url.json"))
    direct_url.write_text('{"dir_info": {"editable": true}, "url": "file:///elsewhere/fabcheck"}')
    assert checkout.run("setup").returncode == 0
    assert any("install -q -e" in call for call in checkout.calls())


def test_an_install_that_is_not_this_checkout_fails_and_leaves_no_stamp(checkout: Checkout) -> None:
    checkout.pip_url_root = "/elsewhere/fabcheck"
    checkout.write_python()
    done = checkout.run("setup")
    assert done.returncode == 1
    assert f"pip did not install fabcheck editable from {checkout.root}" in done.stderr
    assert not checkout.stamp.exists()


def test_missing_system_packages_wait_for_the_dpkg_lock(tmp_path: Path) -> None:
    # No ip, no tc.
    checkout = Checkout(
        tmp_path, system_tools=("sshd", "unshare", "chromium", "mpirun", "yanglint", "promtool", *SLURM_TOOLS)
    )
    done = checkout.run("setup")
    assert done.returncode == 0, done.stderr
    if os.geteuid() != 0:
        assert "missing system packages: iproute2 iproute2" in done.stderr
        return
    apt = [call for call in checkout.calls() if call.startswith("-o DPkg::Lock::Timeout=300 ")]
    assert apt == [
        "-o DPkg::Lock::Timeout=300 update -qq",
        "-o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends iproute2 iproute2",
    ], checkout.calls()


def test_demo_runs_setup_once_outside_the_wrapper(checkout: Checkout) -> None:
    # Stand-ins: setup and the lab wrapper record their calls; the wrapper does not run the lab.
    recorder(checkout.root / "scripts" / "setup", checkout.log, "echo setup")
    recorder(
        checkout.root / ".ci" / "lab-wrapper.sh",
        checkout.log,
        'echo "wrapper FABCHECK_DEMO_ISOLATED=$FABCHECK_DEMO_ISOLATED"',
    )
    outside = checkout.run("demo", "--lab-only")
    assert outside.returncode == 0, outside.stderr
    assert "setup" in outside.stdout.splitlines()
    if os.geteuid() == 0:
        assert "wrapper FABCHECK_DEMO_ISOLATED=1" in outside.stdout  # the lab part, re-run inside it
    inside = checkout.run("demo", "--lab-only", FABCHECK_DEMO_ISOLATED="1")
    assert "setup" not in inside.stdout.splitlines(), "inside the wrapper the demo must not run setup"
    assert "setup" not in "".join(checkout.calls())


# A tool the suite needs and the Debian package that brings it: chromium for the HTML report test, promtool
# (package prometheus) for the Prometheus tests (tests/promtool.py).
@pytest.mark.parametrize(("tool", "package"), [("chromium", "chromium"), ("promtool", "prometheus")])
def test_a_missing_tool_is_installed_from_debian(tmp_path: Path, tool: str, package: str) -> None:
    every = ("sshd", "ip", "tc", "unshare", "chromium", "mpirun", "yanglint", "promtool", *SLURM_TOOLS)
    checkout = Checkout(tmp_path, system_tools=tuple(t for t in every if t != tool))
    done = checkout.run("setup")
    assert done.returncode == 0, done.stderr
    if os.geteuid() != 0:
        assert f"missing system packages: {package}" in done.stderr
        return
    assert f"-o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends {package}" in checkout.calls()
