"""The lab node's GPUDirect mechanism, in-process on a tmp_path node: mock `modinfo -F license` follows
the GPU module's flavour, and the dmabuf-host variant (a host-fault switch) installs the open module
without nvidia_peermem, then heals back to the proprietary module with peermem installable."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from fabcheck.collect.host import NVIDIA_LICENSE, PROBES_BY_NAME
from fabcheck.parsers.gpudirect import NvidiaModule, parse_module_license
from fabcheck_lab.mockhost import heal, inject
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import prepare_node
from fabcheck_lab.mockhost.tools import SERVED_TOOLS, TOOL_NAMES
from fabcheck_lab.mockhost.tools.common import Node, ToolError
from fabcheck_lab.mockhost.tools.dispatch import state_tools
from fabcheck_lab.mockhost.tools.perftest import Params, check_cuda, parse_args
from fabcheck_lab.mockhost.tools.system import lsmod, modinfo, modprobe


def node_at(tmp_path: Path, profile: str = "rail8") -> tuple[MockNodePaths, Node]:
    paths = MockNodePaths.under(tmp_path / "gpu01")
    prepare_node(paths, name="gpu01", profile=profile, index=0, address="10.0.0.1", peers={})
    return paths, Node(paths.state, paths.sys_class, paths.etc)


Tool = Callable[[Node, list[str]], int]


def run(tool: Tool, node: Node, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The tool as the dispatcher runs it: a ToolError is its message on stderr and its exit code."""
    try:
        rc = tool(node, args)
    except ToolError as exc:
        return exc.code, capsys.readouterr().out, exc.message
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def license_record(node: Node, capsys: pytest.CaptureFixture[str]) -> NvidiaModule:
    argv = PROBES_BY_NAME[NVIDIA_LICENSE].argv
    assert argv[0] == "modinfo"
    rc, out, err = run(modinfo, node, list(argv[1:]), capsys)
    return parse_module_license(rc, out, err, "modinfo")


def test_modinfo_is_a_served_tool() -> None:
    assert "modinfo" in SERVED_TOOLS and "modinfo" in TOOL_NAMES and "modinfo" in state_tools()


def test_the_factory_gpu_host_has_the_proprietary_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, node = node_at(tmp_path)
    module = license_record(node, capsys)
    assert module.license == "NVIDIA" and not module.is_open
    assert run(modinfo, node, ["-F", "license", "nvidia_peermem"], capsys)[:2] == (0, "Dual BSD/GPL\n")


def test_modinfo_refuses_what_kmod_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, node = node_at(tmp_path)
    rc, _, err = run(modinfo, node, ["-F", "license", "no_such_module"], capsys)
    assert rc == 1 and "Module no_such_module not found." in err
    assert run(modinfo, node, ["-F", "license"], capsys)[0] == 1


def test_a_node_without_gpus_has_no_nvidia_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, node = node_at(tmp_path, profile="sm")
    module = license_record(node, capsys)
    assert not module.installed


def test_dmabuf_host_variant_and_heal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths, node = node_at(tmp_path)
    modprobe(node, ["nvidia_peermem"])
    before = {name: (paths.state / name).read_text() for name in ("modules.json", "modules_available.json")}
    inject(paths, "dmabuf-host")
    assert license_record(node, capsys).is_open
    assert not node.peermem_loaded()
    rc, _, err = run(modprobe, node, ["nvidia_peermem"], capsys)
    assert rc == 1 and "Module nvidia_peermem not found" in err
    lsmod(node, [])
    assert "nvidia_peermem" not in capsys.readouterr().out
    assert node.gdr_ready() == node.dmabuf_ready()  # GPUDirect by dma-buf where the kernel allows it
    heal(paths, "dmabuf-host")
    assert license_record(node, capsys).license == "NVIDIA"
    assert {name: (paths.state / name).read_text() for name in before} == before
    assert not (paths.state / "gpu_module.json").exists()
    assert json.loads(before["modules.json"])["nvidia_peermem"] is True and node.gdr_ready()


def test_mock_perftest_registers_gpu_memory_by_the_hosts_mechanism(tmp_path: Path) -> None:
    """--use_cuda needs nvidia_peermem; --use_cuda_dmabuf needs dma-buf (the dmabuf-host variant)."""
    paths, node = node_at(tmp_path)
    peermem = Params("ib_write_bw", cuda_device=0)
    dmabuf = Params("ib_write_bw", cuda_device=0, cuda_dmabuf=True)
    with pytest.raises(ToolError, match="Couldn't allocate MR"):
        check_cuda(node, peermem)  # factory: peermem not loaded yet
    with pytest.raises(ToolError, match="Couldn't allocate MR"):
        check_cuda(node, dmabuf)  # the proprietary module: no dma-buf
    inject(paths, "dmabuf-host")
    if node.dmabuf_ready():  # the machine's kernel is >= 5.12
        check_cuda(node, dmabuf)
    with pytest.raises(ToolError, match="Couldn't allocate MR"):
        check_cuda(node, peermem)
    assert parse_args("ib_write_bw", ["--use_cuda=0", "--use_cuda_dmabuf"]).cuda_dmabuf


def test_role_gpu_rdma_reads_the_lab_node_as_a_real_host(tmp_path: Path) -> None:
    """boot_kernel_module's dma-buf reading (role gpu_rdma, policy without_dmabuf) over the mock modinfo and
    the machine's own `uname -r`: peermem on the factory host, nothing on the dmabuf-host variant."""
    code = importlib.import_module("tests.roles.test_boot_kernel_module").module_code()
    paths, node = node_at(tmp_path)

    class OnTheNode:
        def run_command(self, argv: list[str]) -> tuple[int, str, str]:
            if argv[0] == "uname":
                done = subprocess.run(argv, capture_output=True, text=True, check=False)
                return done.returncode, done.stdout, done.stderr
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                try:
                    return state_tools()[argv[0]](node, argv[1:]), out.getvalue(), ""
                except ToolError as exc:
                    return exc.code, out.getvalue(), exc.message

        def fail_json(self, msg: str) -> None:
            raise AssertionError(msg)

    dmabuf, reason = code.read_dmabuf(OnTheNode())
    assert not dmabuf and "license 'NVIDIA'" in reason
    inject(paths, "dmabuf-host")
    dmabuf, reason = code.read_dmabuf(OnTheNode())
    assert dmabuf is node.dmabuf_ready()
    assert reason.startswith("dma-buf: kernel ") if dmabuf else "(< 5.12)" in reason
