"""`validate --from-snapshot DIR --metrics FILE` over four mock rail8 hosts (in process: the mock tools'
own functions, no sshd): the host stage's sections as the collection script names them (`rdma link`,
`ibv_devinfo -v`, `ethtool -S`, `ethtool -I --show-fec` and each port's hw_counters at both ends of a 5 s
window), saved as a gate
snapshot and replayed by the CLI. The metrics carry the counters the wire checks judged, from the same
records: the link-errors fault on gpu02's first rail NIC is its host.link_errors failing AND its FCS
counter ahead."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from mocknode import node_of
from promtool import promtool_check_metrics

from fabcheck.cli import main
from fabcheck.collect import host as collect
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.gate.host_stage import evidence, host_record
from fabcheck.report.metrics import host_readings
from fabcheck_lab.mockhost import inject
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.prepare import prepare_node
from fabcheck_lab.mockhost.tools import netdev, rdma_info, wire
from fabcheck_lab.mockhost.tools.common import Node

HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")
WINDOW_S = 5
FAULTED = "ens1np0"  # gpu02's first rail NIC, mlx5_0
INVENTORY = """
all:
  children:
    gpu_hosts:
      vars: {ansible_host: 127.0.0.1, ansible_port: 1}
      hosts: {gpu01: {}, gpu02: {}, gpu03: {}, gpu04: {}}
"""
Tool = Callable[[Node, list[str]], int]


def section(capsys: pytest.CaptureFixture[str], tool: Tool, node: Node, *args: str) -> Section:
    capsys.readouterr()
    rc = tool(node, list(args))
    out = capsys.readouterr()
    return Section(rc, out.out, out.err)


def age(node: Node, dev: str, seconds: float) -> None:
    """As if `seconds` had passed on the port's wire since its fault started (the counter window)."""
    state = wire.wire_state(node, dev)
    state["since"] -= seconds
    for entry in state["rates"].values():
        entry["since"] -= seconds
    wire.save_wire_state(node, dev, state)


def collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, index: int, fault: str | None
) -> HostCollection:
    """The host's counter sections as one round trip with a window reads them."""
    paths = MockNodePaths.under(tmp_path / name)
    prepare_node(paths, name=name, profile="rail8", index=index, address=f"127.200.1.{index + 1}", peers={})
    if fault:
        inject(paths, fault)
    node = node_of(paths)
    links = section(capsys, rdma_info.rdma, node, "link")
    netdevs = sorted(set(re.findall(r"netdev (\S+)", links.stdout)))
    assert len(netdevs) == 8
    sections = {
        collect.RDMA_LINK: links,
        collect.IBV_DEVINFO: section(capsys, rdma_info.ibv_devinfo, node, "-v"),
        collect.COUNTER_WINDOW: Section(0, f"{WINDOW_S}\n", ""),
    }

    ports = re.findall(r"^link (\S+)", links.stdout, re.M)

    def counters(first: bool) -> None:
        for dev in netdevs:
            for probe, args in ((collect.LINK_STATS, ("-S",)), (collect.FEC, ("-I", "--show-fec"))):
                label = collect.PROBES_BY_NAME[probe].section(dev, first=first)
                sections[label] = section(capsys, netdev.ethtool, node, *args, dev)
        for port in ports:  # the probe's own grep, over the mock's sysfs, named as on the host
            label = collect.PROBES_BY_NAME[collect.RDMA_HW_COUNTERS].section(port, first=first)
            folder = paths.sys_class / "infiniband" / port.replace("/", "/ports/") / "hw_counters"
            done = subprocess.run(
                ["grep", "-r", "-H", "", str(folder)], capture_output=True, text=True, check=False
            )
            sections[label] = Section(
                done.returncode, done.stdout.replace(str(paths.sys_class), "/sys/class"), ""
            )

    counters(first=True)
    for dev in netdevs:
        age(node, dev, WINDOW_S)
    if fault:  # DCQCN at work on the faulted port: its notification point sent CNPs inside the window
        (
            paths.sys_class / "infiniband" / "mlx5_0" / "ports" / "1" / "hw_counters" / "np_cnp_sent"
        ).write_text("1000\n")
    counters(first=False)
    return HostCollection(name, sections, True)


@pytest.fixture
def snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = tmp_path / "snap"
    (folder / "host").mkdir(parents=True)
    for index, name in enumerate(HOSTS):
        read = host_record(
            collection(tmp_path, capsys, name, index, "link-errors" if name == "gpu02" else None)
        )
        (folder / "host" / f"{name}.json").write_text(
            json.dumps({"stage": "host", "node": name, "read": read})
        )
    manifest = {"format": "fabcheck-snapshot", "version": 2, "stages": {"host": list(HOSTS)}}
    (folder / "snapshot.json").write_text(json.dumps(manifest))
    return folder


def test_host_readings_are_the_views_the_wire_checks_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = evidence(collection(tmp_path, capsys, "gpu02", 1, "link-errors"))
    readings = host_readings("gpu02", shown)
    assert [port.port for port in readings.ports] == [f"mlx5_{i}" for i in range(8)]
    faulted = readings.ports[0].delta
    assert faulted == shown.wire(FAULTED).counters  # the same record, not a second parse
    assert faulted.grown["fcs_errors"] > 0 and readings.ports[1].delta.grown["fcs_errors"] == 0
    assert readings.windows == {"gpu02": WINDOW_S}
    assert all(port.lossless_priority == 3 for port in readings.ports)
    assert [(r.port, r.counters["np_cnp_sent"]) for r in readings.rdma][:2] == [
        ("mlx5_0", 1000),
        ("mlx5_1", 0),
    ]
    assert readings.rdma[0].counters == shown.rdma_counters("mlx5_0/1")


def test_validate_from_snapshot_writes_the_metrics_of_four_hosts(
    tmp_path: Path, snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = tmp_path / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (inventory / "hosts.yml").write_text(INVENTORY)
    out = tmp_path / "textfile" / "fabcheck.prom"
    out.parent.mkdir()
    args = ["validate", "-i", str(inventory), "--from-snapshot", str(snapshot), "--stages", "host", "--json"]
    code = main([*args, "--metrics", str(out)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1 and [line["host"] for line in lines] == list(HOSTS)
    text = out.read_text()
    assert out.stat().st_mode & 0o777 == 0o644 and list(out.parent.iterdir()) == [out]  # no temporary left
    promtool_check_metrics(text)
    status = dict(
        re.findall(
            r'^fabcheck_check_status\{(node="gpu02",check="host.link_errors",part="mlx5_\d")\} (\S+)$',
            text,
            re.M,
        )
    )
    assert status['node="gpu02",check="host.link_errors",part="mlx5_0"'] == "0"
    assert status['node="gpu02",check="host.link_errors",part="mlx5_1"'] == "1"
    fcs = {
        (node, port): int(value)
        for node, port, value in re.findall(
            r'^fabcheck_link_fcs_errors_frames\{node="(\w+)",kind="host",port="(mlx5_\d)",'
            r'native="rx_crc_errors_phy"\} (\d+)$',
            text,
            re.M,
        )
    }
    assert len(fcs) == 4 * 8 and fcs[("gpu02", "mlx5_0")] > 0
    assert {value for key, value in fcs.items() if key != ("gpu02", "mlx5_0")} == {0}
    pause = re.findall(
        r'^fabcheck_link_pause_frames\{node="gpu01",kind="host",port="mlx5_0",direction="(rx|tx)",'
        r'priority="3",lossless="true"\} \d+$',
        text,
        re.M,
    )
    assert sorted(pause) == ["rx", "tx"]
    assert re.search(r"^fabcheck_run_status 0$", text, re.M) and re.search(
        r"^fabcheck_run_timestamp_seconds \d+\.?\d*$", text, re.M
    )
    cnps = re.findall(
        r'^fabcheck_rdma_cnp_sent_packets\{node="(gpu0\d)",port="(mlx5_\d)",native="np_cnp_sent"\} (\d+)$',
        text,
        re.M,
    )
    assert len(cnps) == 32 and {(node, port) for node, port, sent in cnps if sent != "0"} == {
        ("gpu02", "mlx5_0")
    }
    assert len(re.findall(r"^fabcheck_read_window_seconds\{node=\"gpu0\d\"\} 5$", text, re.M)) == 4
    # the file is replaced whole on the next run
    assert main([*args, "--metrics", str(out), "--limit", "gpu01"]) in (0, 1, 3)
    assert 'node="gpu02"' not in out.read_text() and list(out.parent.iterdir()) == [out]
