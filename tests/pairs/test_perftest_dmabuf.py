"""The perftest stage on a host that does GPUDirect by dma-buf: its setup round trip reads nvidia_peermem,
`uname -r` and `modinfo -F license nvidia` (real outputs, tests/data/real/host), and without peermem on
a kernel >= 5.12 with the open GPU kernel module perftest registers the GPU buffer with
`--use_cuda_dmabuf` (plain `--use_cuda` needs nvidia_peermem)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabcheck.desired.perftest import desired_perftest
from fabcheck.intent.model import FabricIntent
from fabcheck.pairs.commands import SETUP_SCRIPT, HostSetup, pair_command, parse_setup
from fabcheck.pairs.rounds import Endpoint, Pair

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
KERNEL = (REAL / "uname-r-ubuntu-22.04.txt").read_text().strip()
OLD_KERNEL = (REAL / "uname-r-centos-7.txt").read_text().strip()
OPEN = (REAL / "modinfo-F-license-nvidia-open.txt").read_text().strip()
PROPRIETARY = (REAL / "modinfo-F-license-nvidia-proprietary.txt").read_text().strip()


def answer(peermem: str, kernel: str, license_text: str) -> str:
    return (
        f"numactl no\nnic mlx5_0 0\npeermem {peermem}\nkernel {kernel}\ngpu_module_license {license_text}\n"
    )


@pytest.mark.parametrize(
    ("peermem", "kernel", "license_text", "dmabuf"),
    [
        ("no", KERNEL, OPEN, True),
        ("yes", KERNEL, OPEN, False),  # peermem loaded: plain --use_cuda works, as before
        ("no", KERNEL, PROPRIETARY, False),
        ("no", OLD_KERNEL, OPEN, False),
        ("no", KERNEL, "", False),  # no nvidia module: modinfo printed nothing
        ("no", "", OPEN, False),
    ],
)
def test_the_setup_answer_says_dmabuf(peermem: str, kernel: str, license_text: str, dmabuf: bool) -> None:
    setup = parse_setup(answer(peermem, kernel, license_text))
    assert setup.cuda_dmabuf is dmabuf and setup.numa_nodes == {"mlx5_0": 0}


def test_an_answer_without_the_lines_keeps_peermem() -> None:
    assert parse_setup("numactl yes\nnic mlx5_0 1\n").cuda_dmabuf is False


def test_a_dmabuf_host_runs_perftest_with_use_cuda_dmabuf() -> None:
    intent = FabricIntent(rails={0: "mlx5_0"})
    desired = {host: desired_perftest(intent, host) for host in ("gpu01", "gpu02")}
    pair = Pair(Endpoint("gpu01", "mlx5_0"), Endpoint("gpu02", "mlx5_0"))
    setup = {"gpu01": HostSetup(False, {}, cuda_dmabuf=True), "gpu02": HostSetup(False, {})}
    command = pair_command(pair, 18515, "10.0.0.2", desired, setup)
    assert "--use_cuda=0" in command.server and "--use_cuda_dmabuf" in command.server
    assert "--use_cuda=0" in command.client and "--use_cuda_dmabuf" not in command.client


def test_the_setup_script_prints_the_lines(tmp_path: Path) -> None:
    """The script run by sh with stand-in lsmod, uname and modinfo on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {
        "lsmod": "echo 'Module Size Used by'; echo 'mlx5_ib 1 0'",
        "uname": f"echo {KERNEL}",
        "modinfo": f"echo '{OPEN}'",
    }
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    done = subprocess.run(
        ["sh", "-c", SETUP_SCRIPT, "setup"],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert parse_setup(done.stdout).cuda_dmabuf is True
