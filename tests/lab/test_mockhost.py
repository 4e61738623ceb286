"""Mock host tools: their output reads with the real parsers, state-setting flags stick, bad use fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes

from fabcheck.parsers.ibstat import parse_ibstat, parse_ibstatus
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.rdma_link import parse_rdma_link
from fabcheck.parsers.show_gids import parse_show_gids
from fabcheck.parsers.topo import parse_topo
from fabcheck_lab.mockhost import HOST_PROFILES, MOCK_STATE_MOUNT, MockNodePaths
from fabcheck_lab.mockhost.tools import DISPATCHER, TOOL_NAMES


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


@pytest.fixture
def rail8(tmp_path: Path, bin_dir: Path) -> MockNode:
    return make_nodes(tmp_path, bin_dir, [("gpu1", "rail8")])[0]


def test_contract_names() -> None:
    assert {"rail8", "pcie", "ib", "sm"} <= set(HOST_PROFILES)
    assert MOCK_STATE_MOUNT == "/var/lib/fabcheck-mock"
    paths = MockNodePaths.under(Path("/x/n1"))
    assert (paths.upper, paths.state, paths.sys_class) == (
        Path("/x/n1/upper"),
        Path("/x/n1/state"),
        Path("/x/n1/sys_class"),
    )


def test_install_tools_writes_one_dispatcher_and_links(bin_dir: Path) -> None:
    dispatcher = bin_dir / DISPATCHER
    assert dispatcher.read_bytes().startswith(b"#!/usr/bin/python3 -IS\n")
    assert os.access(dispatcher, os.X_OK)
    for name in TOOL_NAMES:
        assert (bin_dir / name).is_symlink() and os.readlink(bin_dir / name) == DISPATCHER
    installed_bin(bin_dir.parent)  # reinstalling over an existing bin dir works


def test_topo_rail8_each_gpu_pix_to_its_own_nic(rail8: MockNode) -> None:
    matrix = parse_topo(rail8.run("nvidia-smi", "topo", "-m").stdout)
    assert matrix.gpus == tuple(f"GPU{i}" for i in range(8))
    assert matrix.nics == tuple(f"mlx5_{i}" for i in range(8))
    for i in range(8):
        assert matrix.nearest_nics(f"GPU{i}") == ((f"mlx5_{i}",), "PIX")
    assert matrix.link("GPU0", "mlx5_1") == "NODE"
    assert matrix.link("GPU0", "mlx5_4") == "SYS"
    assert matrix.link("GPU0", "GPU5") == "NV18"
    assert matrix.cpu_affinity["GPU0"] == "0-55,112-167"
    assert matrix.numa_affinity["GPU7"] == "1"


def test_topo_pcie_profile_has_no_pix_nic(tmp_path: Path, bin_dir: Path) -> None:
    node = make_nodes(tmp_path, bin_dir, [("pcie1", "pcie")])[0]
    matrix = parse_topo(node.run("nvidia-smi", "topo", "-m").stdout)
    assert matrix.nics == ("mlx5_0", "mlx5_1")
    assert matrix.nearest_nics("GPU0") == (("mlx5_0",), "NODE")
    assert matrix.nearest_nics("GPU6") == (("mlx5_1",), "NODE")
    assert matrix.link("GPU0", "mlx5_1") == "SYS"
    assert matrix.link("GPU0", "GPU1") == "PIX"


def test_nvidia_smi_default_table(rail8: MockNode) -> None:
    lines = rail8.run("nvidia-smi").stdout.splitlines()
    assert "Driver Version: 550.90.07" in lines[2] and "CUDA Version: 12.4" in lines[2]
    assert all(len(line) == 91 for line in lines[1:] if line.startswith(("|", "+")))
    rows = [line for line in lines if "NVIDIA H100 80GB HBM3" in line]
    assert len(rows) == 8 and "00000000:DB:00.0" in rows[7]
    assert "No running processes found" in lines[-2]


def test_nvidia_smi_list_query_and_errors(rail8: MockNode, tmp_path: Path, bin_dir: Path) -> None:
    listing = rail8.run("nvidia-smi", "-L").stdout.splitlines()
    assert len(listing) == 8 and listing[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    csv = rail8.run("nvidia-smi", "--query-gpu=index,pci.bus_id,memory.total", "--format=csv,noheader").stdout
    assert csv.splitlines()[1] == "1, 00000000:2A:00.0, 81559 MiB"
    header = rail8.run("nvidia-smi", "--query-gpu", "index,name", "--format=csv,nounits").stdout.splitlines()[
        0
    ]
    assert header == "index, name"
    bad_field = rail8.run("nvidia-smi", "--query-gpu=index,bogus", "--format=csv", rc=2)
    assert 'Field "bogus" is not a valid field to query.' in bad_field.stdout
    assert "Please run 'nvidia-smi -h'" in rail8.run("nvidia-smi", "--frobnicate", rc=2).stdout
    sm = make_nodes(tmp_path / "sm", bin_dir, [("sm1", "sm")])[0]
    assert "couldn't communicate with the NVIDIA driver" in sm.run("nvidia-smi", "topo", "-m", rc=9).stdout


def test_mlnx_qos_factory_state_parses(rail8: MockNode) -> None:
    qos = parse_mlnx_qos(rail8.run("mlnx_qos", "-i", "ens1np0").stdout)
    assert qos.dcbx_mode == "os"
    assert qos.trust == "pcp"
    assert qos.pfc_enabled == ()
    assert qos.cable_len == 7
    assert qos.prio2tc[0] == 1 and qos.prio2tc[1] == 0 and qos.prio2tc[3] == 3
    assert all(tc.tsa == "vendor" for tc in qos.tcs.values())


def test_mlnx_qos_settings_persist_and_print(rail8: MockNode) -> None:
    rail8.run("mlnx_qos", "-i", "ens1np0", "--trust", "dscp")
    printed = rail8.run(
        "mlnx_qos", "-i", "ens1np0", "--pfc", "0,0,0,1,0,0,0,0", "--dscp2prio", "set,48,6"
    ).stdout
    qos = parse_mlnx_qos(rail8.run("mlnx_qos", "-i", "ens1np0").stdout)
    assert parse_mlnx_qos(printed) == qos
    assert qos.trust == "dscp"
    assert qos.pfc_enabled == (3,)
    assert qos.dscp2prio[26] == 3 and qos.dscp2prio[48] == 6 and qos.dscp2prio[0] == 0
    assert qos.pfc_buffer == (0, 0, 0, 1, 0, 0, 0, 0)
    assert "\tprio:6 dscp:48,55,54,53,52,51,50,49," in printed
    other = parse_mlnx_qos(rail8.run("mlnx_qos", "-i", "ens2np0").stdout)
    assert other.trust == "pcp" and other.pfc_enabled == ()
    rail8.run("mlnx_qos", "-i", "ens1np0", "--dscp2prio", "flush")
    assert parse_mlnx_qos(rail8.run("mlnx_qos", "-i", "ens1np0").stdout).trust == "pcp"


def test_mlnx_qos_ets_and_buffers(rail8: MockNode) -> None:
    rail8.run(
        "mlnx_qos",
        "-i",
        "ens1np0",
        "-p",
        "0,0,0,3,0,0,6,0",
        "-s",
        "ets,vendor,vendor,ets,vendor,vendor,strict,vendor",
        "-t",
        "50,0,0,50,0,0,0,0",
    )
    qos = parse_mlnx_qos(rail8.run("mlnx_qos", "-i", "ens1np0").stdout)
    assert (qos.tcs[0].tsa, qos.tcs[0].bw_percent) == ("ets", 50)
    assert (qos.tcs[3].tsa, qos.tcs[3].bw_percent) == ("ets", 50)
    assert qos.tcs[6].tsa == "strict"
    assert qos.prio2tc[3] == 3 and qos.prio2tc[6] == 6
    rail8.run(
        "mlnx_qos",
        "-i",
        "ens1np0",
        "--cable_len",
        "30",
        "--prio2buffer",
        "0,0,0,1,0,0,0,0",
        "--buffer_size",
        "131008,131008,0,0,0,0,0,0",
    )
    qos = parse_mlnx_qos(rail8.run("mlnx_qos", "-i", "ens1np0").stdout)
    assert qos.cable_len == 30
    assert qos.buffer_sizes == (131008, 131008, 0, 0, 0, 0, 0, 0)
    assert qos.max_buffer_size == 262016


@pytest.mark.parametrize(
    ("args", "rc", "message"),
    [
        (["--trust", "dscp", "--dscp2prio", "set,26,3"], 1, "can't be used in the same command"),
        (
            ["-t", "60,0,0,50,0,0,0,0", "-s", "ets,vendor,vendor,ets,vendor,vendor,vendor,vendor"],
            1,
            "must be 100",
        ),
        (
            ["-t", "50,10,0,50,0,0,0,0", "-s", "ets,vendor,vendor,ets,vendor,vendor,vendor,vendor"],
            1,
            "must be 0",
        ),
        (["--pfc", "0,0,0,2,0,0,0,0"], 1, "Invalid pfc value"),
        (["--buffer_size", "262016,1,0,0,0,0,0,0"], 1, "exceeds max_buffer_size"),
        (["--trust", "l3"], 1, "Invalid trust state"),
        (["--bogus"], 2, "mlnx_qos: error: no such option: --bogus"),
    ],
)
def test_mlnx_qos_rejects_bad_use_and_keeps_state(
    rail8: MockNode, args: list[str], rc: int, message: str
) -> None:
    before = rail8.run("mlnx_qos", "-i", "ens1np0").stdout
    failed = rail8.run("mlnx_qos", "-i", "ens1np0", *args, rc=rc)
    assert message in failed.stderr
    assert rail8.run("mlnx_qos", "-i", "ens1np0").stdout == before


def test_mlnx_qos_unknown_interface_and_missing_option(rail8: MockNode) -> None:
    assert "Interface eth9 does not exist" in rail8.run("mlnx_qos", "-i", "eth9", rc=1).stderr
    assert "Usage: mlnx_qos -i <interface> [options]" in rail8.run("mlnx_qos", rc=2).stderr


def test_cma_roce_tos_and_mode(rail8: MockNode) -> None:
    assert rail8.run("cma_roce_tos", "-d", "mlx5_2").stdout == "0\n"
    assert rail8.run("cma_roce_tos", "-d", "mlx5_2", "-t", "106").stdout == "106\n"
    assert rail8.run("cma_roce_tos", "-d", "mlx5_2", "-p", "1").stdout == "106\n"
    assert rail8.run("cma_roce_tos", "-d", "mlx5_1").stdout == "0\n"
    assert rail8.run("cma_roce_mode", "-d", "mlx5_2", "-m", "1").stdout == "IB/RoCE v1\n"
    assert rail8.run("cma_roce_mode", "-d", "mlx5_2").stdout == "IB/RoCE v1\n"
    assert rail8.run("cma_roce_mode", "-d", "mlx5_2", "-m", "2").stdout == "RoCE v2\n"
    rail8.run("cma_roce_tos", "-d", "mlx5_9", rc=1)
    rail8.run("cma_roce_tos", "-d", "mlx5_0", "-t", "300", rc=1)


def test_ibv_devinfo_follows_netdev_mtu(rail8: MockNode) -> None:
    devices = parse_ibv_devinfo(rail8.run("ibv_devinfo").stdout)
    assert [d.hca_id for d in devices] == [f"mlx5_{i}" for i in range(8)]
    port = devices[0].ports[0]
    assert (port.state, port.link_layer, port.max_mtu, port.active_mtu) == (
        "PORT_ACTIVE",
        "Ethernet",
        4096,
        1024,
    )
    assert devices[0].vendor_part_id == 4129
    rail8.sys_write("net/ens1np0/mtu", "9000")
    verbose = parse_ibv_devinfo(rail8.run("ibv_devinfo", "-v", "-d", "mlx5_0").stdout)
    port = verbose[0].ports[0]
    assert port.active_mtu == 4096
    assert port.gids[3].gid.endswith("10.0.0.1") or "0a00:0001" in port.gids[3].gid
    assert len(port.gids) == 4
    missing = rail8.run("ibv_devinfo", "-d", "mlx5_9", rc=255)
    assert missing.stderr == "IB device 'mlx5_9' wasn't found\n"
    assert rail8.run("ibv_devinfo", "-l").stdout.startswith("8 HCAs found:\n\tmlx5_0\n")
    assert "invalid option" in rail8.run("ibv_devinfo", "-z", rc=255).stderr


def test_ibstat_and_ibstatus_parse(rail8: MockNode) -> None:
    cas = parse_ibstat(rail8.run("ibstat").stdout)
    assert [ca.name for ca in cas] == [f"mlx5_{i}" for i in range(8)]
    port = cas[0].ports[0]
    assert (port.state, port.physical_state, port.rate, port.link_layer) == (
        "Active",
        "LinkUp",
        400,
        "Ethernet",
    )
    assert cas[0].ca_type == "MT4129"
    single = parse_ibstat(rail8.run("ibstat", "mlx5_3").stdout)
    assert [ca.name for ca in single] == ["mlx5_3"]
    statuses = parse_ibstatus(rail8.run("ibstatus").stdout)
    assert len(statuses) == 8
    assert statuses[1].state_code == 4 and statuses[1].link_layer == "Ethernet"
    assert statuses[1].rate_text.startswith("400 Gb/sec")
    assert rail8.run("ibstat", "-l").stdout.splitlines()[0] == "mlx5_0"


def test_show_gids_and_rdma_link_parse(rail8: MockNode) -> None:
    entries = parse_show_gids(rail8.run("show_gids").stdout)
    assert len(entries) == 32
    v2_ipv4 = [e for e in entries if e.dev == "mlx5_0" and e.version == "v2" and e.ipv4]
    assert [(e.index, e.ipv4, e.netdev) for e in v2_ipv4] == [(3, "10.0.0.1", "ens1np0")]
    links = parse_rdma_link(rail8.run("rdma", "link").stdout)
    assert [(link.dev, link.state, link.physical_state, link.netdev) for link in links[:1]] == [
        ("mlx5_0", "ACTIVE", "LINK_UP", "ens1np0")
    ]
    as_json = parse_rdma_link(rail8.run("rdma", "link", "-j").stdout)
    assert [link.dev for link in as_json] == [link.dev for link in links]
    assert as_json[2].netdev_index == 4
    assert rail8.run("ibdev2netdev").stdout.splitlines()[7] == "mlx5_7 port 1 ==> ens8np0 (Up)"
    rail8.run("rdma", "resource", rc=255)


def test_infiniband_profile(tmp_path: Path, bin_dir: Path) -> None:
    node = make_nodes(tmp_path, bin_dir, [("ib1", "ib")])[0]
    cas = parse_ibstat(node.run("ibstat").stdout)
    port = cas[0].ports[0]
    assert port.link_layer == "InfiniBand" and port.base_lid == 1 and port.sm_lid == 1
    devices = parse_ibv_devinfo(node.run("ibv_devinfo").stdout)
    assert devices[0].ports[0].active_mtu == 4096
    links = parse_rdma_link(node.run("rdma", "link").stdout)
    assert links[0].lid == 1 and links[0].netdev == "ib0"
    matrix = parse_topo(node.run("nvidia-smi", "topo", "-m").stdout)
    assert matrix.nearest_nics("GPU2") == (("mlx5_2",), "PIX")
    node.run("mlnx_qos", "-i", "ib0", rc=1)


def test_ip_link_reads_and_writes_mock_netdevs_only(rail8: MockNode) -> None:
    rail8.run("ip", "link", "set", "dev", "ens3np0", "mtu", "9000")
    assert rail8.sys_read("net/ens3np0/mtu") == "9000"
    shown = rail8.run("ip", "link", "show", "ens3np0").stdout
    assert shown.startswith("4: ens3np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP")
    brief = rail8.run("ip", "-br", "link").stdout.splitlines()
    assert brief[1].split()[:3] == ["ens1np0", "UP", "a0:88:c2:00:00:00"]
    rail8.run("ip", "link", "set", "dev", "eth0", "mtu", "9000", rc=1)
    rail8.run("ip", "link", "set", "dev", "ens3np0", "mtu", "99999", rc=255)
    assert (
        "Operation not permitted" in rail8.run("ip", "addr", "add", "10.9.9.9/32", "dev", "lo", rc=2).stderr
    )


def test_ethtool_pause_stats_and_driver(rail8: MockNode) -> None:
    assert "RX:\t\ton\nTX:\t\ton" in rail8.run("ethtool", "-a", "ens1np0").stdout
    rail8.run("ethtool", "-A", "ens1np0", "rx", "off", "tx", "off")
    assert "RX:\t\toff\nTX:\t\toff" in rail8.run("ethtool", "-a", "ens1np0").stdout
    stats = rail8.run("ethtool", "-S", "ens1np0").stdout.splitlines()
    assert stats[0] == "NIC statistics:"
    names = {line.split(":")[0].strip() for line in stats[1:]}
    assert {
        "rx_prio3_pause",
        "tx_prio3_pause",
        "rx_prio3_packets",
        "np_ecn_marked_roce_packets",
        "np_cnp_sent",
        "rp_cnp_handled",
    } <= names
    assert "firmware-version: 28.39.1002 (MT_0000000838)" in rail8.run("ethtool", "-i", "ens1np0").stdout
    rail8.run("ethtool", "-S", "nope0", rc=1)


def test_modules_and_sysctl(rail8: MockNode) -> None:
    assert "nvidia_peermem" not in rail8.run("lsmod").stdout
    rail8.run("modprobe", "nvidia_peermem")
    assert any(line.startswith("nvidia_peermem ") for line in rail8.run("lsmod").stdout.splitlines())
    rail8.run("modprobe", "-r", "nvidia_peermem")
    assert "nvidia_peermem" not in rail8.run("lsmod").stdout
    assert "Module nvidia_nope not found" in rail8.run("modprobe", "nvidia_nope", rc=1).stderr
    assert rail8.run("sysctl", "-w", "net.ipv4.tcp_ecn=1").stdout == "net.ipv4.tcp_ecn = 1\n"
    assert rail8.run("sysctl", "-n", "net.ipv4.tcp_ecn").stdout == "1\n"
    assert "Read-only file system" in rail8.run("sysctl", "-w", "kernel.pid_max=4096", rc=255).stderr
    conf = rail8.paths.etc / "sysctl.d" / "90-roce.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("net.ipv4.tcp_ecn = 2\n")
    assert "net.ipv4.tcp_ecn = 2" in rail8.run("sysctl", "--system").stdout
    assert rail8.run("sysctl", "net.ipv4.tcp_ecn").stdout == "net.ipv4.tcp_ecn = 2\n"


def test_opensm_master_follows_priority(tmp_path: Path, bin_dir: Path) -> None:
    sm1, sm2, host = make_nodes(tmp_path, bin_dir, [("sm1", "sm"), ("sm2", "sm"), ("ib1", "ib")])
    for node, priority in ((sm1, 15), (sm2, 14)):
        conf = node.paths.etc / "opensm" / "opensm.conf"
        conf.write_text(conf.read_text().replace("sm_priority 0", f"sm_priority {priority}"))
    assert host.run("sminfo", rc=255).stderr.endswith("sminfo: iberror: failed: query\n")
    assert sm1.run("systemctl", "is-active", "opensm", rc=3).stdout == "inactive\n"
    try:
        sm1.run("systemctl", "enable", "opensm")
        sm1.run("systemctl", "start", "opensm")
        sm2.run("systemctl", "start", "opensm")
        assert sm1.run("systemctl", "is-active", "opensm").stdout == "active\n"
        assert sm1.run("systemctl", "is-enabled", "opensm").stdout == "enabled\n"
        assert "ActiveState=active" in sm1.run("systemctl", "show", "opensm").stdout
        master = host.run("sminfo").stdout
        assert master.startswith("sminfo: sm lid 1 sm guid 0x") and master.endswith(
            "priority 15 state 3 SMINFO_MASTER\n"
        )
        assert sm2.run("sminfo", "9").stdout.endswith("priority 14 state 2 SMINFO_STANDBY\n")
        sm1.run("systemctl", "stop", "opensm")
        assert host.run("sminfo").stdout.endswith("priority 14 state 3 SMINFO_MASTER\n")
    finally:
        sm1.run("systemctl", "stop", "opensm")
        sm2.run("systemctl", "stop", "opensm")
    assert "not found" in host.run("systemctl", "start", "opensm", rc=5).stderr
