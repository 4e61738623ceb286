"""Mock perftest and nccl-tests: real bytes between two nodes, output the real parsers read, NCCL
transport/GDR lines that follow node state, and counters that move with traffic."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest
from test_mockhost_support import (
    MockNode,
    configure_lossless,
    fake_ssh,
    installed_bin,
    kill_quietly,
    make_nodes,
)

from fabcheck.parsers.nccl_tests import parse_nccl_tests
from fabcheck.parsers.perftest import parse_perftest
from fabcheck_lab.mockhost import inject
from fabcheck_lab.mockhost.tools import traffic


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def pair(tmp_path: Path, bin_dir: Path) -> tuple[MockNode, MockNode]:
    first, second = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8"), ("gpu2", "rail8")])
    for node in (first, second):
        configure_lossless(node, ["ens1np0"])
    return first, second


def counters(node: MockNode, netdev: str = "ens1np0") -> dict[str, int]:
    lines = node.run("ethtool", "-S", netdev).stdout.splitlines()[1:]
    return {name.strip(): int(value) for name, value in (line.split(":") for line in lines)}


def perftest_pair(server: MockNode, client: MockNode, *args: str) -> tuple[str, str]:
    """Run one perftest server/client pair over the nodes' addresses; return both outputs."""
    port = str(random.randrange(20000, 40000))
    proc = server.start(*args, "-p", port)
    try:
        banner = [proc.stdout.readline() for _ in range(4)]
        assert "* Waiting for client to connect... *\n" in banner
        client_out = client.run(*args, "-p", port, server.address).stdout
        server_out, _ = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0
    return "".join(banner) + server_out, client_out


def test_write_bw_moves_bytes_and_parses(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    server_out, client_out = perftest_pair(server, client, "ib_write_bw", "-d", "mlx5_0", "--report_gbits")
    run = parse_perftest(client_out)
    assert (run.test, run.role, run.link_layer, run.mtu, run.gid_index) == (
        "ib_write_bw",
        "client",
        "Ethernet",
        4096,
        3,
    )
    assert run.bw_unit == "Gb/sec" and run.completed and not run.errors
    (row,) = run.rows
    assert row.bytes == 65536 and row.iterations == 5000
    assert 370 < row.bw_avg < 400 and row.bw_peak >= row.bw_avg
    assert row.msg_rate == pytest.approx(row.bw_avg * 1e9 / 8 / 65536 / 1e6, rel=1e-3)
    served = parse_perftest(server_out)
    assert served.role == "server" and served.rows[0].bw_avg == row.bw_avg
    sent, received = counters(client), counters(server)
    assert sent["tx_vport_rdma_unicast_bytes"] == 65536 * 5000 == received["rx_vport_rdma_unicast_bytes"]
    assert sent["tx_prio3_bytes"] == 65536 * 5000 and sent["rx_prio3_pause"] > 0
    assert received["tx_prio3_pause"] == sent["rx_prio3_pause"]
    assert received["np_ecn_marked_roce_packets"] == sent["rp_cnp_handled"] > 0
    assert received["rx_discards_phy"] == 0


def test_send_bw_all_sizes_in_mb_and_server_peak_zero(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    server_out, client_out = perftest_pair(server, client, "ib_send_bw", "-d", "mlx5_0", "-a", "-n", "100")
    run = parse_perftest(client_out)
    assert run.bw_unit == "MB/sec" and len(run.rows) == 23
    assert [r.bytes for r in run.rows][:3] == [2, 4, 8] and run.rows[-1].bytes == 8388608
    assert run.rows[0].bw_avg < run.rows[-1].bw_avg
    assert 40000 < run.rows[-1].bw_avg < 47700  # MB = 2**20 bytes: 400 Gb/s is 47684 MB/s
    served = parse_perftest(server_out)
    assert all(r.bw_peak == 0 for r in served.rows)
    assert "RX depth        : 512" in server_out and "RKey" not in server_out


def test_duration_mode_reports_no_peak(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    _, out = perftest_pair(server, client, "ib_write_bw", "-d", "mlx5_0", "-D", "1", "--report_gbits")
    (row,) = parse_perftest(out).rows
    assert row.bw_peak == 0 and row.bw_avg > 370
    assert row.iterations == pytest.approx(row.bw_avg * 1e9 / 8 / 65536, rel=0.01)


def test_read_bw_and_write_lat_parse(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    _, read_out = perftest_pair(server, client, "ib_read_bw", "-d", "mlx5_0", "-q", "2")
    run = parse_perftest(read_out)
    assert run.test == "ib_read_bw" and run.qps == 2
    assert read_out.count(" local address: LID 0000 QPN ") == 2
    server_lat, lat_out = perftest_pair(server, client, "ib_write_lat", "-d", "mlx5_0", "-s", "8")
    lat = parse_perftest(lat_out)
    assert lat.test == "ib_write_lat" and lat.lat_unit == "usec"
    (row,) = lat.rows
    assert row.bytes == 8 and row.iterations == 1000 and 0 < row.t_min <= row.t_typical <= row.t_max
    assert parse_perftest(server_lat).rows[0].t_typical == row.t_typical


def test_pfc_off_and_ecn_off_show_in_counters(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    inject(server.paths, "pfc-off")
    inject(server.paths, "ecn-off")
    perftest_pair(server, client, "ib_write_bw", "-d", "mlx5_0")
    received = counters(server)
    assert received["tx_prio3_pause"] == 0 and received["rx_discards_phy"] > 0
    assert received["np_ecn_marked_roce_packets"] == 0 and counters(client)["roce_adp_retrans"] > 0


def test_trust_pcp_moves_roce_to_priority_zero(pair: tuple[MockNode, MockNode]) -> None:
    server, client = pair
    inject(server.paths, "trust-pcp")
    perftest_pair(server, client, "ib_write_bw", "-d", "mlx5_0")
    received = counters(server)
    assert received["rx_prio0_bytes"] == 65536 * 5000 and received["rx_prio3_bytes"] == 0


def test_perftest_without_rdma_devices_fails_like_perftest(pair: tuple[MockNode, MockNode]) -> None:
    server, _ = pair
    inject(server.paths, "no-rdma")
    failed = server.run("ib_write_bw", "-d", "mlx5_0", rc=1)
    assert failed.stderr == (
        " Did not detect devices \n If device exists, check if driver is up\n"
        " Unable to find the Infiniband/RoCE device\n"
    )
    assert "IB device mlx5_9 not found" in pair[1].run("ib_write_bw", "-d", "mlx5_9", rc=1).stderr
    assert "unrecognized option '--bogus'" in pair[1].run("ib_write_bw", "--bogus", rc=1).stderr
    refused = pair[1].run("ib_write_bw", "-p", "1", server.address, rc=1)
    assert refused.stderr.startswith(f"Couldn't connect to {server.address}:1")


def test_bandwidth_scales_with_the_measured_wire_rate() -> None:
    full = traffic.wire_factor(100_000_000, 0.5)  # 1.6 Gbit/s: faster than the lab's reference wire
    slow = traffic.wire_factor(10_000_000, 0.5)  # 160 Mbit/s, e.g. a tc-shaped link
    assert full == 1.0 and slow == pytest.approx(0.2)
    from fabcheck_lab.mockhost.tools import perftest

    params = perftest.Params(prog="ib_write_bw", iters=5000)
    profile = {"mtu": 4096, "rate_gbps": 400, "link_layer": "Ethernet"}
    fast_row, slow_row = (perftest.bw_rows(params, profile, profile, f)[0] for f in (full, slow))
    assert slow_row["gbps"] == pytest.approx(fast_row["gbps"] * 0.2, rel=0.01)  # rows carry <1% jitter


# --- nccl-tests -------------------------------------------------------------------------------
def run_mpi(tmp_path: Path, nodes: list[MockNode], *command: str, debug: bool = True) -> str:
    ssh = fake_ssh(tmp_path, nodes)
    env = {"FABCHECK_MPI_SSH": str(ssh), **({"NCCL_DEBUG": "INFO"} if debug else {})}
    hosts = ",".join(node.name for node in nodes)
    return (
        nodes[0].run("fabcheck-mpirun", "-np", str(len(nodes)), "-H", hosts, *command, extra_env=env).stdout
    )


def test_single_node_eight_gpus(tmp_path: Path, bin_dir: Path) -> None:
    (node,) = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])
    args = ("all_gather_perf", "-b", "8", "-e", "64M", "-f", "2", "-g", "8")
    out = node.run(*args, extra_env={"NCCL_DEBUG": "VERSION"}).stdout
    run = parse_nccl_tests(out)
    assert run.op == "all_gather" and run.nranks == 8 and run.hosts == ("gpu1",)
    # all_gather rounds each rank's share down to 16 bytes: with 8 ranks the first rows are empty
    assert [r.bytes for r in run.rows[:5]] == [0, 0, 0, 0, 128] and run.rows[4].count == 4
    assert run.rows[-1].bytes == 64 * 1024 * 1024 and run.rows[-1].oop_busbw > 100
    assert run.avg_busbw is not None and run.nccl_version == "2.21.5+cuda12.4"
    assert "NCCL INFO" not in out
    quiet = node.run(*args).stdout  # NCCL_DEBUG unset: no "NCCL version" line, the banner's library code
    assert "NCCL version" not in quiet and "nccl-library=22105" in quiet
    assert parse_nccl_tests(quiet).nccl_version == "2.21.5"
    assert "invalid device ordinal" in node.run("all_reduce_perf", "-g", "9", rc=2).stdout


@pytest.fixture(scope="module")
def nccl_logs(tmp_path_factory: pytest.TempPathFactory, bin_dir: Path) -> dict[str, str]:
    """Two-node NCCL_DEBUG=INFO runs: RoCE with GDR, one node without peermem, no RDMA at all."""
    logs: dict[str, str] = {}
    tmp = tmp_path_factory.mktemp("nccl")
    nodes = make_nodes(tmp, bin_dir, [("gpu1", "rail8"), ("gpu2", "rail8")])
    for node in nodes:
        configure_lossless(node, ["ens1np0"])
    before = counters(nodes[1])
    logs["gdr"] = run_mpi(tmp, nodes, "all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "4", "-g", "1")
    after = counters(nodes[1])
    logs["counters"] = f"{after['tx_prio3_bytes'] - before['tx_prio3_bytes']} {after['rx_prio3_bytes']}"
    nodes[1].run("modprobe", "-r", "nvidia_peermem")
    logs["no-peermem"] = run_mpi(tmp, nodes, "all_reduce_perf", "-b", "64M", "-e", "64M")
    for node in nodes:
        inject(node.paths, "no-rdma")
    logs["socket"] = run_mpi(tmp, nodes, "alltoall_perf", "-b", "64M", "-e", "64M")
    return logs


def busbw_at(out: str, size: int) -> float:
    return next(r.oop_busbw for r in parse_nccl_tests(out).rows if r.bytes == size)


def test_two_nodes_roce_gdr(nccl_logs: dict[str, str]) -> None:
    out = nccl_logs["gdr"]
    run = parse_nccl_tests(out)
    assert run.op == "all_reduce" and run.nranks == 2 and run.hosts == ("gpu1", "gpu2")
    assert len(run.rows) == 6 and 35 < run.rows[-1].oop_busbw < 47
    assert "gpu1:" in out and re.search(r"^gpu2:\d+:\d+ \[0\] NCCL INFO Using network IB$", out, re.M)
    assert "NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE" in out
    assert re.search(r"\[send\] via NET/IB/0/GDRDMA$", out, re.M)
    assert "GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 3 <= 4)" in out
    sent, received = (int(v) for v in nccl_logs["counters"].split())
    assert sent > 0 and received > 0


def test_two_nodes_without_peermem_lose_gdr(nccl_logs: dict[str, str]) -> None:
    out = nccl_logs["no-peermem"]
    gpu2_lines = [line for line in out.splitlines() if line.startswith("gpu2:")]
    assert "Using network IB" in out and not any("/GDRDMA" in line for line in gpu2_lines)
    assert re.search(r"^gpu1:.*\[send\] via NET/IB/0/GDRDMA$", out, re.M)  # GDR is decided per rank
    assert "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)" in out
    assert re.search(r"^gpu2:.*\[receive\] via NET/IB/0$", out, re.M)
    size = 64 * 1024 * 1024
    assert busbw_at(out, size) < busbw_at(nccl_logs["gdr"], size)


def test_two_nodes_without_rdma_fall_back_to_socket(nccl_logs: dict[str, str]) -> None:
    out = nccl_logs["socket"]
    assert "NCCL INFO NET/IB : No device found." in out
    assert re.search(r"NCCL INFO NET/Socket : Using \[0\]eth0:127\.[\d.]+<0>$", out, re.M)
    assert "Using network Socket" in out and "via NET/Socket/0" in out and "NET/IB/" not in out
    run = parse_nccl_tests(out)
    assert run.op == "alltoall" and run.rows[0].ip_wrong is None and run.rows[0].oop_busbw < 15


@pytest.mark.parametrize(
    ("scenario", "network", "gdr", "link_layers"),
    [("gdr", "IB", True, ["RoCE"]), ("no-peermem", "IB", False, ["RoCE"]), ("socket", "Socket", False, [])],
)
def test_nccl_log_parser_reads_mock_logs(
    nccl_logs: dict[str, str], scenario: str, network: str, gdr: bool, link_layers: list[str]
) -> None:
    """The nccl_log parser (another helper's) must read the mock's log like a real one."""
    module = pytest.importorskip(
        "fabcheck.parsers.nccl_log", reason="fabcheck.parsers.nccl_log is not written yet"
    )
    summary = module.parse_nccl_log(nccl_logs[scenario])
    facts = module.nccl_log_facts(summary)
    assert facts["network"] == network and facts["link_layers"] == link_layers
    assert facts["rdma"] is (network == "IB") and facts["errors"] is False
    assert facts["hcas"] == ([f"mlx5_{i}" for i in range(8)] if network == "IB" else [])
    assert facts["nccl_version"] == "2.21.5"
    per_host = {rank.host: rank.gdr for rank in summary.ranks}
    if scenario == "no-peermem":  # GDR is per rank: gpu1 keeps it, gpu2 lost nvidia_peermem
        assert per_host == {"gpu1": True, "gpu2": False}
    else:
        assert facts["gdr"] is gdr and set(per_host.values()) == {gdr}


def test_launcher_usage_and_rank_errors(tmp_path: Path, bin_dir: Path) -> None:
    (node,) = make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])
    assert node.run("fabcheck-mpirun", "-np", "2", rc=1).stderr.startswith("Usage: fabcheck-mpirun")
    unset = node.run("all_reduce_perf", rc=1, extra_env={"OMPI_COMM_WORLD_SIZE": "2"})
    assert "FABCHECK_MPI_ROOT is not set" in unset.stderr
    assert "invalid option" in node.run("all_reduce_perf", "-Z", "1").stdout
    with pytest.raises(subprocess.TimeoutExpired):
        node.run(
            "all_reduce_perf",
            timeout=1.5,
            extra_env={
                "OMPI_COMM_WORLD_SIZE": "2",
                "FABCHECK_MPI_ROOT": node.address,
                "FABCHECK_MPI_PORT": str(random.randrange(20000, 40000)),
            },
        )
