"""Mock perftest options the perftest stage relies on: --use_cuda needs the GPU and nvidia_peermem (as
GPUDirect RDMA does), and a server whose port is taken fails the way perftest's does, so the stage's
port retry has something real to react to."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, kill_quietly, make_nodes

from fabcheck.pairs.runner import PORT_TAKEN, SERVER_READY
from fabcheck.parsers.perftest import parse_perftest


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def pair(tmp_path: Path, bin_dir: Path) -> tuple[MockNode, MockNode]:
    first, second = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8"), ("gpu2", "rail8")])
    return first, second


def test_use_cuda_without_peermem_fails_to_register_the_gpu_buffer(pair: tuple[MockNode, MockNode]) -> None:
    server, _client = pair
    done = server.run("ib_write_bw", "-d", "mlx5_0", "--use_cuda=0", rc=1)
    assert "Couldn't allocate MR" in done.stderr + done.stdout
    missing = server.run("ib_write_bw", "-d", "mlx5_0", "--use_cuda=9", rc=1)
    assert "Couldn't find CUDA device 9" in missing.stderr + missing.stdout


def test_use_cuda_with_peermem_measures(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    for node in pair:
        node.run("modprobe", "nvidia_peermem")
    port = str(random.randrange(20000, 40000))
    args = ("ib_write_bw", "-d", "mlx5_0", "--use_cuda=0", "--report_gbits", "-p", port)
    proc = server.start(*args)
    try:
        assert proc.stdout is not None
        assert any(SERVER_READY in proc.stdout.readline() for _ in range(4))
        run = parse_perftest(client.run(*args, server.address).stdout)
        proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert not run.errors and run.rows and (run.bw_gbps(run.rows[-1]) or 0) > 300


def test_a_taken_port_fails_like_perftest(pair: tuple[MockNode, MockNode]) -> None:
    server, _client = pair
    port = str(random.randrange(20000, 40000))
    first = server.start("ib_write_bw", "-d", "mlx5_0", "-p", port)
    try:
        assert first.stdout is not None
        assert any(SERVER_READY in first.stdout.readline() for _ in range(4))
        second = server.run("ib_write_bw", "-d", "mlx5_1", "-p", port, rc=1)
    finally:
        kill_quietly(first)
    said = second.stderr + second.stdout
    assert f"Couldn't listen to port {port}" in said
    assert any(marker in said.lower() for marker in PORT_TAKEN)
