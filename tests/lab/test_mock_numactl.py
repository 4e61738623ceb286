"""The lab's numactl: binds to the NUMA nodes the mock server models (two sockets), refuses the ones it
does not have as libnuma does, and runs the command in place under the binding it was given."""

from __future__ import annotations

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes

from fabcheck.pairs.commands import HostSetup


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> MockNode:
    bin_dir = installed_bin(tmp_path_factory.mktemp("mockbin"))
    [only] = make_nodes(tmp_path_factory.mktemp("nodes"), bin_dir, [("gpu1", "rail8")])
    return only


def test_hardware_lists_both_sockets_with_their_cpus(node: MockNode) -> None:
    text = node.run("numactl", "--hardware").stdout
    assert text.startswith("available: 2 nodes (0-1)\n")
    cpus = {
        line.split(" cpus:")[0]: line.split(": ", 1)[1].split()
        for line in text.splitlines()
        if " cpus:" in line
    }
    assert cpus["node 0"][:2] == ["0", "1"] and "112" in cpus["node 0"] and "56" in cpus["node 1"]
    assert "node distances:" in text


def test_the_runner_prefix_runs_the_command_under_that_binding(node: MockNode) -> None:
    prefix = HostSetup(numactl=True, numa_nodes={"mlx5_4": 1}).pinning("mlx5_4")
    done = node.run(*prefix, "sh", "-c", 'echo "bound $FABCHECK_MOCK_NUMA"')
    assert done.stdout == "bound cpunodebind=1;membind=1\n"


def test_a_node_the_host_does_not_have_is_refused_like_libnuma(node: MockNode) -> None:
    done = node.run("numactl", "--cpunodebind=2", "--membind=2", "true", rc=1)
    assert done.stderr.startswith("libnuma: Warning: node argument 2 is out of range\n")
    assert "usage: numactl" in done.stderr and done.stdout == ""


def test_no_command_or_an_unknown_option_is_a_usage_error(node: MockNode) -> None:
    assert "usage: numactl" in node.run("numactl", "-N", "0", rc=1).stderr
    assert "unrecognized option '--frobnicate'" in node.run("numactl", "--frobnicate", "true", rc=1).stderr
    missing = node.run("numactl", "-N0", "/nonexistent/tool", rc=1)
    assert "numactl: execution of `/nonexistent/tool'" in missing.stderr


def test_short_options_with_attached_values(node: MockNode) -> None:
    done = node.run("numactl", "-N0", "-m", "0", "sh", "-c", 'echo "$FABCHECK_MOCK_NUMA"')
    assert done.stdout == "cpunodebind=0;membind=0\n"
