"""Role gpu_rdma's module boot_kernel_module, run as Ansible runs it (a process with its arguments file)
against stand-in `lsmod`/`modprobe` on PATH and a boot file in a scratch folder: it loads only what lsmod
lacks, writes the boot file only when it differs, changes nothing the second time, and in check mode
reports both changes and makes neither."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

MODULE = Path(__file__).resolve().parents[2] / "plugins" / "modules" / "boot_kernel_module.py"
REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
LSMOD_HEADER = "Module                  Size  Used by\n"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the boot file is owned by root (CI runs as root)")


def module_code() -> ModuleType:
    spec = importlib.util.spec_from_file_location("boot_kernel_module", MODULE)
    assert spec and spec.loader
    code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(code)
    return code


def test_listed_modules_reads_the_first_column_after_the_header() -> None:
    output = (
        LSMOD_HEADER + "nvidia_peermem         16384  0\nnvidia               9719808  1 nvidia_peermem\n\n"
    )
    assert module_code().listed_modules(output) == {"nvidia_peermem", "nvidia"}
    assert module_code().listed_modules(LSMOD_HEADER) == set()


class Host:
    """A scratch PATH whose lsmod lists what `modprobe` loaded (a file), `uname -r` and
    `modinfo -F license nvidia` answer as a real host's (tests/data/real/host), and a folder for the
    boot file."""

    def __init__(
        self, root: Path, kernel: str = "uname-r-ubuntu-22.04.txt", modinfo: str = "proprietary"
    ) -> None:
        self.root, self.loaded = root, root / "loaded"
        self.loaded.write_text("")
        bin_dir = root / "bin"
        bin_dir.mkdir()
        self.script(
            bin_dir / "lsmod", f'printf "{LSMOD_HEADER.strip()}\\n"; sed "s/$/ 16384 0/" {self.loaded}'
        )
        self.script(bin_dir / "modprobe", f'[ "$1" = nvidia_peermem ] || exit 1; echo "$1" >> {self.loaded}')
        self.script(bin_dir / "uname", f'[ "$1" = -r ] || exit 1; cat {REAL / kernel}')
        if modinfo == "missing":
            answer = f"cat {REAL / 'modinfo-F-license-nvidia-not-found.stderr.txt'} >&2; exit 1"
        else:
            answer = f"cat {REAL / f'modinfo-F-license-nvidia-{modinfo}.txt'}"
        self.script(bin_dir / "modinfo", f'[ "$*" = "-F license nvidia" ] || exit 2; {answer}')
        self.path = f"{bin_dir}:{os.environ['PATH']}"
        self.boot_file = root / "modules-load.d" / "peermem.conf"

    @staticmethod
    def script(path: Path, body: str) -> None:
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)

    def run(
        self, name: str = "nvidia_peermem", check_mode: bool = False, skip_when_dmabuf: bool = False
    ) -> dict:
        args = {
            "name": name,
            "boot_file": str(self.boot_file),
            "comment": "test",
            "skip_when_dmabuf": skip_when_dmabuf,
            "_ansible_check_mode": check_mode,
        }
        args_file = self.root / "args.json"
        args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        done = subprocess.run(
            [sys.executable, str(MODULE), str(args_file)],
            env=os.environ | {"PATH": self.path},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return json.loads(done.stdout)


@needs_root
def test_loads_and_writes_once_then_changes_nothing(tmp_path: Path) -> None:
    host = Host(tmp_path)
    first = host.run()
    assert first["changed"] and first["loaded"] and first["boot_file_changed"], first
    assert host.loaded.read_text() == "nvidia_peermem\n"
    assert host.boot_file.read_text() == "# test\nnvidia_peermem\n"
    assert stat.S_IMODE(host.boot_file.stat().st_mode) == 0o644
    second = host.run()
    assert not second["changed"] and not second["loaded"] and not second["boot_file_changed"], second
    assert host.loaded.read_text() == "nvidia_peermem\n"  # modprobe did not run again


@needs_root
def test_a_wrong_mode_alone_is_fixed(tmp_path: Path) -> None:
    host = Host(tmp_path)
    host.run()
    host.boot_file.chmod(0o600)
    again = host.run()
    assert again["changed"] and again["boot_file_changed"] and not again["loaded"], again
    assert stat.S_IMODE(host.boot_file.stat().st_mode) == 0o644


@needs_root
def test_check_mode_reports_both_changes_and_makes_none(tmp_path: Path) -> None:
    host = Host(tmp_path)
    result = host.run(check_mode=True)
    assert result["changed"] and result["loaded"] and result["boot_file_changed"], result
    assert host.loaded.read_text() == "" and not host.boot_file.exists()
    assert [diff["after"] for diff in result["diff"]] == [
        "# test\nnvidia_peermem\n",
        "nvidia_peermem: loaded\n",
    ]


def test_a_failed_modprobe_and_a_bad_name_fail_with_the_reason(tmp_path: Path) -> None:
    host = Host(tmp_path)
    missing = host.run(name="no_such_module")
    assert missing["failed"] and "modprobe no_such_module failed (rc 1)" in missing["msg"], missing
    unsafe = host.run(name="../evil")
    assert unsafe["failed"] and "invalid kernel module name '../evil'" in unsafe["msg"], unsafe
    assert not host.boot_file.exists()


def test_the_dmabuf_rule_is_fabchecks() -> None:
    """The module runs on the host without fabcheck: its copy of the rule must be host.gpudirect's."""
    from fabcheck.parsers import gpudirect

    code = module_code()
    assert code.DMABUF_MIN_KERNEL == gpudirect.DMABUF_MIN_KERNEL
    assert code.OPEN_MODULE_LICENSE == gpudirect.OPEN_MODULE_LICENSE
    assert code.MODINFO_NOT_FOUND in (REAL / "modinfo-F-license-nvidia-not-found.stderr.txt").read_text()


def test_a_dmabuf_host_loads_nothing_and_writes_nothing(tmp_path: Path) -> None:
    host = Host(tmp_path, modinfo="open")
    for check_mode in (True, False):
        result = host.run(skip_when_dmabuf=True, check_mode=check_mode)
        assert not result["changed"] and result["dmabuf"] is True, result
        assert result["dmabuf_reason"] == (
            "dma-buf: kernel 5.15.0-102-generic, open GPU kernel module (license Dual MIT/GPL)"
        )
    assert host.loaded.read_text() == "" and not host.boot_file.exists()


@pytest.mark.parametrize(
    ("kernel", "modinfo", "reason"),
    [
        (
            "uname-r-ubuntu-22.04.txt",
            "proprietary",
            "nvidia kernel module with license 'NVIDIA', not the open one",
        ),
        ("uname-r-centos-7.txt", "open", "kernel 3.10.0-1062.12.1.el7.x86_64 (< 5.12)"),
    ],
)
def test_a_host_without_dmabuf_gets_peermem(tmp_path: Path, kernel: str, modinfo: str, reason: str) -> None:
    host = Host(tmp_path, kernel=kernel, modinfo=modinfo)
    result = host.run(skip_when_dmabuf=True, check_mode=True)
    assert result["changed"] and result["loaded"] and result["dmabuf"] is False, result
    assert result["dmabuf_reason"] == f"no dma-buf: {reason}"
    assert host.loaded.read_text() == ""  # check mode


def test_no_gpu_module_is_no_dmabuf_and_modprobe_says_why(tmp_path: Path) -> None:
    host = Host(tmp_path, modinfo="missing")
    result = host.run(name="no_such_module", skip_when_dmabuf=True)
    assert result["failed"] and "modprobe no_such_module failed" in result["msg"], result
    verdict = module_code().dmabuf_verdict("6.8.0", None)
    assert verdict == (False, "no dma-buf: no nvidia kernel module installed")
