"""The mock-tool server and its C client answer exactly as the interpreter path does (no root needed).

Two copies of one node: every call runs through the interpreter path on one and through client + server
on the other; stdout, stderr (bytes) and exit codes must match call by call, and the two nodes' state and
sysfs trees must match at the end. The server runs with a short settle time and the nodes' files are left
to settle before each test, so its sysfs cache is in play: a text written behind its back, by a tool or
an injected fault, must show in the very next call.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_mockhost_support import (
    BASE_PATH,
    MockNode,
    configure_lossless,
    installed_bin,
    make_nodes,
    tree_bytes,
    unique_subnet,
)

from fabcheck_lab.mockhost import HOST_FAULTS, heal, inject
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import install_tools
from fabcheck_lab.mockhost.tools import CLIENT, DISPATCHER, SERVED_TOOLS, SOCKET_NAME, TOOL_NAMES, common
from fabcheck_lab.mockhost.tools.common import SETTLE_NS, SysfsCache
from fabcheck_lab.mockhost.tools.dispatch import state_tools
from fabcheck_lab.mockhost.toolserver import DELEGATE, Request, parse_request, run_call, stdout_errors

READY_TIMEOUT_S = 120.0  # generous: the machine may be fully loaded
PID = re.compile(rb"\[\d+\]")
# The bits a mock link received grow with time since its node was prepared (fabcheck_lab.wire_model):
# the two nodes of a pair are prepared and asked at different moments.
BITS = re.compile(rb"(rx_bits_phy: )[0-9]+")


def steady(output: bytes) -> bytes:
    return BITS.sub(rb"\1N", PID.sub(b"[pid]", output))


# Far above a jiffy (the coarsest ctime step of the test's filesystems), far below the lab's SETTLE_NS.
TEST_SETTLE_S = 0.05


@dataclass
class Pair:
    direct: MockNode
    served: MockNode
    served_bin: Path
    server: subprocess.Popen[bytes]

    def run_served(
        self, *argv: str | bytes, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        command = [str(self.served_bin / os.fsdecode(argv[0])), *argv[1:]]
        environment = {"PATH": f"{self.served_bin}:{BASE_PATH}", "LANG": "C.UTF-8", **(env or {})}
        return subprocess.run(command, env=environment, capture_output=True, timeout=60, check=False)

    def run_direct(self, *argv: str | bytes) -> subprocess.CompletedProcess[bytes]:
        command = [str(self.direct.bin_dir / os.fsdecode(argv[0])), *argv[1:]]
        return subprocess.run(command, env=self.direct.env, capture_output=True, timeout=60, check=False)


def _start_server(node: MockNode, ready: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "fabcheck_lab.mockhost.toolserver",
        "--node",
        f"{node.name}={node.paths.root}",
        "--settle-ms",
        str(int(TEST_SETTLE_S * 1000)),
    ]
    server = subprocess.Popen([*argv, "--ready", str(ready)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise AssertionError(f"tool server did not start: {server.communicate()[1].decode()}")
        time.sleep(0.02)
    return server


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    subnet = unique_subnet()
    direct = make_nodes(tmp_path / "direct", installed_bin(tmp_path / "direct"), [("gpu1", "rail8")], subnet)[
        0
    ]
    served_bin = tmp_path / "served" / "bin"
    served = make_nodes(tmp_path / "served", served_bin, [("gpu1", "rail8")], subnet)[0]
    problem = install_tools(served_bin, client_socket=str(served.paths.state / SOCKET_NAME))
    if problem is not None:
        pytest.skip(f"the fast mock tools need a C compiler: {problem}")
    server = _start_server(served, tmp_path / "ready")
    settle()
    try:
        yield Pair(direct, served, served_bin, server)
    finally:
        server.terminate()
        server.communicate(timeout=30)


# Reads, state changes, usage errors, --help, and arguments no shell should ever see interpreted.
CALLS: list[tuple[str | bytes, ...]] = [
    ("nvidia-smi", "topo", "-m"),
    ("nvidia-smi", "-L"),
    ("nvidia-smi", "--query-gpu=index,name,pci.bus_id", "--format=csv"),
    ("mlnx_qos", "-i", "ens1np0"),
    ("mlnx_qos", "-i", "ens1np0", "--trust", "dscp"),
    ("mlnx_qos", "-i", "ens1np0", "--pfc", "0,0,0,1,0,0,0,0"),
    ("mlnx_qos", "-i", "ens1np0", "--dscp2prio", "set,26,3", "--dscp2prio", "set,48,6"),
    ("mlnx_qos", "-i", "ens1np0", "--trust", "bogus"),
    ("mlnx_qos", "-i", "ens1np0", "--pfc", "1,2"),
    ("mlnx_qos",),
    ("mlnx_qos", "--help"),
    ("mlnx_qos", "-i", "no-such-if; rm -rf / $(reboot) `id`"),
    ("mlnx_qos", "-i", b"ens\xff\xfe"),
    ("mlnx_qos", "-i", "ens1np0", "-a"),
    ("cma_roce_tos", "-d", "mlx5_0", "-t", "106"),
    ("cma_roce_tos", "-d", "mlx5_0"),
    ("cma_roce_tos", "-d", "mlx5_99"),
    ("cma_roce_mode", "-d", "mlx5_0", "-p", "1"),
    ("ibv_devinfo",),
    ("ibv_devinfo", "-v"),
    ("ibv_devinfo", "-d", "mlx5_3", "-v"),
    ("ibv_devinfo", "-d", "nope"),
    ("ibstat",),
    ("ibstat", "-l"),
    ("ibstat", "mlx5_9"),
    ("ibstatus",),
    ("show_gids",),
    ("ibdev2netdev",),
    ("rdma", "link"),
    ("rdma", "link", "show", "mlx5_1/1"),
    ("ip", "link", "show"),
    ("ip", "-br", "link"),
    ("ip", "link", "set", "dev", "ens1np0", "mtu", "9000"),
    ("ip", "link", "set", "dev", "ens1np0", "mtu", "99999"),
    ("ip", "link", "set", "dev", "nope0", "mtu", "9000"),
    ("ip", "link", "show", "dev", "ens1np0"),
    ("ethtool", "-S", "ens1np0"),
    ("ethtool", "-S", "nope0"),
    ("lsmod",),
    ("modprobe", "nvidia_peermem"),
    ("modprobe", "no_such_module"),
    ("modprobe", "-x"),
    ("lsmod",),
]


def test_every_call_answers_byte_for_byte_as_the_interpreter_path(pair: Pair) -> None:
    for call in CALLS:
        direct, served = pair.run_direct(*call), pair.run_served(*call)
        got = (served.returncode, steady(served.stdout), steady(served.stderr))
        assert got == (direct.returncode, steady(direct.stdout), steady(direct.stderr)), call
    skip = (SOCKET_NAME,)
    # Each NIC's wire state (wire/<netdev>.json) holds the moment its node was prepared: not compared.
    served, direct = (
        {rel: data for rel, data in tree_bytes(node.paths.state, skip=skip).items() if "/wire/" not in rel}
        for node in (pair.served, pair.direct)
    )
    assert served == direct
    assert tree_bytes(pair.served.paths.sys_class) == tree_bytes(pair.direct.paths.sys_class)


def test_served_calls_really_go_to_the_server(pair: Pair) -> None:
    """Without the FABCHECK_MOCK_* variables the interpreter path would not find this node at all."""
    answer = pair.run_served("ibstat", "-l")
    assert (answer.returncode, answer.stdout) == (0, b"".join(b"mlx5_%d\n" % i for i in range(8))), answer
    pair.server.terminate()
    pair.server.communicate(timeout=30)
    fallback = pair.run_served("ibstat")  # no server: the client runs the interpreter path, on this machine
    assert fallback.returncode == 255 and b"can't list IB device names" in fallback.stderr, fallback


def test_the_interpreter_path_stays_one_switch_away(pair: Pair) -> None:
    env = {**pair.served.env, "FABCHECK_MOCK_DIRECT": "1"}
    for call in (("ibstat", "mlx5_9"), ("ibv_devinfo", "-d", "mlx5_0")):
        direct, switched = pair.run_direct(*call), pair.run_served(*call, env=env)
        assert (switched.returncode, switched.stdout) == (direct.returncode, direct.stdout)


def settle() -> None:
    """Let every file written so far become old enough for the server to cache (a lower bound, no race)."""
    time.sleep(2 * TEST_SETTLE_S)


def test_sysfs_written_behind_the_tools_back_is_seen_at_once(pair: Pair) -> None:
    assert b"active_mtu:\t\t1024 (3)" in pair.run_served("ibv_devinfo", "-d", "mlx5_2", "-v").stdout
    assert b"mtu 1500 " in pair.run_served("ip", "link", "show", "dev", "ens3np0").stdout  # both cached
    pair.served.sys_write("net/ens3np0/mtu", "4200")  # in place: same inode, same size as "1500"
    shown = pair.run_served("ip", "link", "show", "dev", "ens3np0").stdout
    assert b"mtu 4200 " in shown, shown
    assert b"active_mtu:\t\t4096 (5)" in pair.run_served("ibv_devinfo", "-d", "mlx5_2", "-v").stdout


# What the faults change, through the tools the gate runs (faults.py says which fault hits which file).
OBSERVED: list[tuple[str, ...]] = [
    ("ibv_devinfo", "-v"),
    ("show_gids",),
    ("rdma", "link"),
    ("ibstat",),
    ("mlnx_qos", "-i", "ens1np0"),
    ("cma_roce_tos", "-d", "mlx5_0"),
    ("nvidia-smi", "topo", "-m"),
    ("ip", "link", "show"),
]

# The host faults that write what served tools read (qos JSON, rdma_cm, topology, sysfs files, the
# infiniband tree). Not here: ecn-off (the gate reads those files with `cat`) and the faults on /etc files.
SERVED_FAULTS = ("pfc-off", "trust-pcp", "dscp-map", "tos", "mtu", "affinity", "no-rdma")


def _answers(run: Callable[..., subprocess.CompletedProcess[bytes]]) -> list[tuple[int, bytes, bytes]]:
    """Exit code, stdout and stderr of every OBSERVED call (pids masked: the two paths differ there)."""
    answers = []
    for call in OBSERVED:
        done = run(*call)
        answers.append((done.returncode, PID.sub(b"[pid]", done.stdout), PID.sub(b"[pid]", done.stderr)))
    return answers


def test_a_fault_injected_after_a_cached_call_shows_in_the_next_one(pair: Pair) -> None:
    for node in (pair.direct, pair.served):
        configure_lossless(node, ["ens1np0"])  # so that every fault changes something on mlx5_0
    settle()
    healthy = _answers(pair.run_direct)
    assert set(SERVED_FAULTS) <= set(HOST_FAULTS)
    for fault in SERVED_FAULTS:
        assert _answers(pair.run_served) == healthy, fault  # and now the server holds these texts
        for node in (pair.direct, pair.served):
            inject(node.paths, fault)
        faulty = _answers(pair.run_direct)
        assert faulty != healthy, f"{fault} changes nothing the observed tools show"
        assert _answers(pair.run_served) == faulty, fault
        for node in (pair.direct, pair.served):
            heal(node.paths, fault)
        assert _answers(pair.run_served) == healthy, fault
        settle()


UNIT = "probe-qos.service"
SINCE = re.compile(rb" since [^\n]+")
# Read verbs are served on the node's own unit; the rest (changes, options, unknown and opensm units, udevd)
# run in the node. Both kinds interleave, so each read also proves it sees what the node just changed.
SYSTEMCTL_CALLS: list[tuple[str, ...]] = [
    ("systemctl", "is-enabled", UNIT),
    ("systemctl", "is-active", UNIT),
    ("systemctl", "show", UNIT),
    ("systemctl", "status", UNIT),
    ("systemctl", "enable", UNIT),
    ("systemctl", "is-enabled", "probe-qos"),
    ("systemctl", "start", UNIT),
    ("systemctl", "is-active", UNIT),
    ("systemctl", "status", UNIT),
    ("systemctl", "show", UNIT),
    ("systemctl", "--quiet", "is-active", UNIT),
    ("systemctl", "show", UNIT, "-p", "ActiveState"),
    ("systemctl", "is-enabled", "missing.service"),
    ("systemctl", "status", "missing.service"),
    ("systemctl", "is-active", "opensm"),
    ("systemctl", "is-active", "systemd-udevd.service"),
    ("systemctl", "is-active", UNIT, "missing.service"),
    ("systemctl", "stop", UNIT),
    ("systemctl", "disable", UNIT),
    ("systemctl", "is-enabled", UNIT),
    ("systemctl", "is-active", UNIT),
    ("systemctl", "is-active"),
    ("systemctl", "is-enabled; reboot", UNIT),
]


def _write_unit(node: MockNode) -> None:
    path = node.paths.upper / "etc/systemd/system" / UNIT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "[Unit]\nDescription=probe\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )


def test_systemctl_answers_byte_for_byte_as_in_the_node(pair: Pair) -> None:
    for node in (pair.direct, pair.served):
        _write_unit(node)
    for call in SYSTEMCTL_CALLS:
        # The node's variables: a call the server hands back must change this node, never the machine's /etc.
        direct, served = pair.run_direct(*call), pair.run_served(*call, env=pair.served.env)
        got = (served.returncode, SINCE.sub(b" since T", served.stdout), served.stderr)
        assert got == (direct.returncode, SINCE.sub(b" since T", direct.stdout), direct.stderr), call
    assert _unit_state(pair.served) == _unit_state(pair.direct)
    assert tree_bytes(pair.served.paths.upper / "etc") == tree_bytes(pair.direct.paths.upper / "etc")


def _unit_state(node: MockNode) -> bytes:
    """The node's systemd state, its own folder and the start times masked (the two nodes differ there)."""
    text = (node.paths.state / "systemd.json").read_bytes().replace(os.fsencode(node.paths.upper), b"ROOT")
    return re.sub(rb'"since": "[^"]*"', b'"since": "T"', text)


def test_systemctl_serves_only_reads_of_the_nodes_own_units(tmp_path: Path) -> None:
    node = make_nodes(tmp_path, installed_bin(tmp_path), [("gpu1", "rail8")])[0]
    _write_unit(node)
    handlers = state_tools()
    assert run_call(node.paths, handlers, _request("systemctl", "is-enabled", UNIT)) == b"1 9 0\ndisabled\n"
    assert run_call(node.paths, handlers, _request("systemctl", "is-active", UNIT)) == b"3 9 0\ninactive\n"
    assert not (node.paths.state / "systemd.json").exists()  # a read saves no state
    for delegated in (
        ("start", UNIT),
        ("enable", UNIT),
        ("daemon-reload",),
        ("--quiet", "is-active", UNIT),
        ("is-active", "opensm"),
        ("is-active", "systemd-udevd"),
        ("is-enabled", "missing.service"),
        ("is-enabled", UNIT, "missing.service"),
    ):
        assert run_call(node.paths, handlers, _request("systemctl", *delegated)) == DELEGATE, delegated
    (node.paths.upper / "etc/systemd/system" / UNIT).unlink()
    (node.paths.upper / "usr/lib/systemd/system").mkdir(parents=True, exist_ok=True)  # rail8: FM unit
    moved = node.paths.upper / "usr/lib/systemd/system" / UNIT
    moved.write_text("[Service]\nExecStart=/bin/true\n")
    # Found only below /etc: the lab machine's own /etc/systemd/system may shadow it in the node.
    assert run_call(node.paths, handlers, _request("systemctl", "is-enabled", UNIT)) == DELEGATE


def test_install_links_only_the_served_tools_to_the_client(pair: Pair) -> None:
    for name in TOOL_NAMES:
        expected = CLIENT if name in SERVED_TOOLS else DISPATCHER
        assert os.readlink(pair.served_bin / name) == expected, name
    assert set(SERVED_TOOLS) <= set(state_tools())


def _request(*argv: str, env: dict[str, str] | None = None) -> Request:
    return Request(pid=4242, env=env or {"LANG": "C.UTF-8"}, tool=argv[0], args=list(argv[1:]))


def test_calls_only_the_node_can_run_are_delegated(tmp_path: Path) -> None:
    node = make_nodes(tmp_path, installed_bin(tmp_path), [("gpu1", "rail8")])[0]
    paths: MockNodePaths = node.paths
    handlers = state_tools()
    assert run_call(paths, handlers, _request("ip", "addr", "show")) == DELEGATE  # the real ip
    # In the node a write to a missing sysfs file fails on the strict mount; here it would create one.
    (paths.sys_class / "net" / "ens1np0" / "mtu").unlink()
    assert (
        run_call(paths, handlers, _request("ip", "link", "set", "dev", "ens1np0", "mtu", "9000")) == DELEGATE
    )
    assert not (paths.sys_class / "net" / "ens1np0" / "mtu").exists()
    assert run_call(paths, handlers, _request("sysctl", "-a")) == DELEGATE  # not a served tool
    assert stdout_errors("C") == "surrogateescape" and stdout_errors("") == "surrogateescape"
    assert stdout_errors("no_SUCH.locale") == "surrogateescape"  # Python falls back to C, UTF-8 mode
    assert stdout_errors("C.UTF-8") == "strict"
    answer = run_call(paths, handlers, _request("ibstat", "nope"))
    assert answer.startswith(b"255 0 ") and b"ibpanic: [4242] main: stat of IB device 'nope'" in answer


def test_requests_are_parsed_strictly() -> None:
    raw = b"fabcheck-mock/1\x00" + b"7\x001\x00LANG=C\x00" + b"3\x00mlnx_qos\x00-i\x00a b;c\xff\x00"
    request = parse_request(raw)
    assert request == Request(pid=7, env={"LANG": "C"}, tool="mlnx_qos", args=["-i", "a b;c\udcff"])
    for bad in (b"", b"other/1\x007\x000\x001\x00ip\x00", raw[:-1], raw.replace(b"3\x00", b"4\x00", 1)):
        with pytest.raises((ValueError, IndexError)):
            parse_request(bad)
    with pytest.raises(ValueError, match="unexpected environment"):
        parse_request(raw.replace(b"LANG=C", b"LD_PRELOAD=x"))


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the sysfs cache really opened, in order."""
    paths: list[str] = []
    real = common.read_attribute

    def counted(path: str) -> str | None:
        paths.append(path)
        return real(path)

    monkeypatch.setattr(common, "read_attribute", counted)
    return paths


def test_sysfs_cache_serves_a_settled_text_until_its_file_changes(tmp_path: Path, opened: list[str]) -> None:
    mtu = tmp_path / "mtu"
    mtu.write_text("9000\n")
    cache = SysfsCache(settle_ns=int(TEST_SETTLE_S * 1e9))
    settle()
    assert [cache.read(str(mtu)), cache.read(str(mtu))] == ["9000", "9000"]
    assert opened == [str(mtu)]  # the second read was a stat only
    mtu.write_text("1500\n")  # in place and of the same size: only the ctime tells
    assert cache.read(str(mtu)) == "1500" and len(opened) == 2
    settle()
    assert [cache.read(str(mtu)), cache.read(str(mtu))] == ["1500", "1500"] and len(opened) == 3
    replacement = tmp_path / "new"
    replacement.write_text("9000\n")
    replacement.replace(mtu)  # renamed onto the path: another inode
    assert cache.read(str(mtu)) == "9000"
    mtu.unlink()
    assert cache.read(str(mtu)) is None and str(mtu) not in cache.entries
    mtu.mkdir()
    assert cache.read(str(mtu)) is None  # as open() of a directory reads, without a cache


def test_sysfs_cache_keeps_no_text_younger_than_the_settle_time(tmp_path: Path, opened: list[str]) -> None:
    state = tmp_path / "state"
    state.write_text("4: ACTIVE\n")
    fresh = SysfsCache()  # the lab's SETTLE_NS: this file was written just now
    assert [fresh.read(str(state)), fresh.read(str(state))] == ["4: ACTIVE", "4: ACTIVE"]
    assert len(opened) == 2 and not fresh.entries
    ctime = state.stat().st_ctime_ns
    almost = SysfsCache(clock=lambda: ctime + SETTLE_NS - 1)
    almost.read(str(state))
    assert not almost.entries
    settled = SysfsCache(clock=lambda: ctime + SETTLE_NS)
    settled.read(str(state))
    assert settled.entries[str(state)][1] == "4: ACTIVE"
