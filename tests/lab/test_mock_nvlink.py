"""The mock NVLink tools of a GB200-like tray (profile nvl) and an HGX board (rail8): nvidia-smi's Fabric
section and `nvlink -s`, the nvidia-imex daemon as a systemd unit reading its node list at start-up,
`nvidia-imex-ctl -N` measured between the daemons, nvidia-fabricmanager. Mock nodes on tmp dirs (no lab)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mockhost_support import MockNode, installed_bin, make_nodes

from fabcheck.parsers.imex import parse_imex_nodes_config, parse_imex_status
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.nvlink import parse_nvlink_status
from fabcheck.parsers.nvlink_records import ZERO_UUID
from fabcheck_lab.mockhost.profiles import fabric_for, nvl_domain_of

IMEX_NODES = Path("nvidia-imex") / "nodes_config.cfg"
UNIT_DIR = Path("usr/lib/systemd/system")
# The shapes of the real outputs (tests/data/real/nvlink/): `\t Link n: 53.125 GB/s`, the Fabric lines.
LINK_LINE = re.compile(r"\t Link (?P<link>[0-9]+): (?P<rate>[0-9]+\.[0-9]{3} GB/s|<inactive>)")
GPU_LINE = re.compile(r"GPU (?P<index>[0-9]+): (?P<name>.+) \(UUID: (?P<uuid>GPU-[0-9a-f-]+)\)")


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_bin(tmp_path_factory.mktemp("mockbin"))


def in_lab_bin(node: MockNode) -> None:
    """The node's units name its /usr/local/bin, where the lab mounts the tools; here that is bin_dir."""
    for unit in (node.paths.upper / UNIT_DIR).glob("*.service"):
        unit.write_text(unit.read_text().replace("/usr/local/bin/", f"{node.bin_dir}/"))


@pytest.fixture
def trays(tmp_path: Path, bin_dir: Path) -> Iterator[list[MockNode]]:
    """Three nvl trays: tray1 and tray2 form one domain, tray3 is the next domain's first tray."""
    nodes = make_nodes(tmp_path, bin_dir, [("tray1", "nvl"), ("tray2", "nvl"), ("tray3", "nvl")])
    for node in nodes:
        in_lab_bin(node)
    yield nodes
    for node in nodes:
        node.run("systemctl", "stop", "nvidia-imex", rc=None)


def write_nodes_config(node: MockNode, addresses: list[str]) -> None:
    path = node.paths.etc / IMEX_NODES
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# IMEX domain\n" + "".join(f"{a}\n" for a in addresses))


def fabric_fields(query: str) -> list[dict[str, str]]:
    """Per GPU block of `nvidia-smi -q`, the Fabric section's `name : value` lines by name."""
    blocks = []
    for block in query.split("\n    Fabric\n")[1:]:
        fields = {}
        for line in block.splitlines():
            if not line.startswith("        "):
                break
            if ":" in line:
                name, value = (part.strip() for part in line.split(":", 1))
                fields[name] = value
        blocks.append(fields)
    return blocks


def test_a_tray_shows_4_gpus_with_18_links_at_53_125(trays: list[MockNode]) -> None:
    text = trays[0].run("nvidia-smi", "nvlink", "-s").stdout
    gpus = [GPU_LINE.fullmatch(line) for line in text.splitlines() if not line.startswith("\t")]
    links = [LINK_LINE.fullmatch(line) for line in text.splitlines() if line.startswith("\t")]
    assert [g["name"] for g in gpus if g] == ["NVIDIA GB200"] * 4
    assert len(links) == 4 * 18 and all(m and m["rate"] == "53.125 GB/s" for m in links)
    assert trays[0].run("nvidia-smi", "nvlink", "-e", rc=2).stdout.startswith("Invalid combination")


def test_every_gpu_of_a_tray_is_in_its_domains_clique(trays: list[MockNode]) -> None:
    per_tray = [fabric_fields(t.run("nvidia-smi", "-q").stdout) for t in trays]
    for fields in per_tray:
        assert len(fields) == 4
        assert {f["State"] for f in fields} == {"Completed"} and {f["Status"] for f in fields} == {"Success"}
        assert {(f["Summary"], f["Bandwidth"]) for f in fields} == {("Healthy", "Full")}
    keys = [{(f["ClusterUUID"], f["CliqueId"]) for f in fields} for fields in per_tray]
    assert all(len(k) == 1 for k in keys)
    assert keys[0] == keys[1] != keys[2]  # trays 0 and 1 one domain, tray 2 the next
    assert [nvl_domain_of(i) for i in range(4)] == [0, 0, 1, 1]
    assert next(iter(keys[0]))[0] != "00000000-0000-0000-0000-000000000000"


def test_an_hgx_board_shows_a_zero_uuid_and_18_links_at_26_562(tmp_path: Path, bin_dir: Path) -> None:
    """As the real 565 HGX H100 output: Completed/Success, CliqueId 0, zero ClusterUUID, Bandwidth N/A
    alone under Health; the pcie profile's GPUs have no fabric (every field N/A) and no links."""
    board, pcie = make_nodes(tmp_path, bin_dir, [("hgx", "rail8"), ("pcie", "pcie")])
    fields = fabric_fields(board.run("nvidia-smi", "-q").stdout)
    assert len(fields) == 8
    assert fields[0] == {
        "State": "Completed",
        "Status": "Success",
        "CliqueId": "0",
        "ClusterUUID": "00000000-0000-0000-0000-000000000000",
        "Bandwidth": "N/A",
    }
    links = [line for line in board.run("nvidia-smi", "nvlink", "-s").stdout.splitlines() if line[:1] == "\t"]
    assert len(links) == 8 * 18 and all(line.endswith(": 26.562 GB/s") for line in links)
    assert fabric_for("pcie", 0) is None
    assert {f["State"] for f in fabric_fields(pcie.run("nvidia-smi", "-q").stdout)} == {"N/A"}
    assert all(
        GPU_LINE.fullmatch(line) for line in pcie.run("nvidia-smi", "nvlink", "-s").stdout.splitlines()
    )


def imex_status(node: MockNode) -> tuple[list[tuple[str, str]], list[list[str]], str]:
    """(address, state) per node row, the matrix rows' cells and the domain state of `-N`."""
    text = node.run("nvidia-imex-ctl", "-N").stdout
    rows = re.findall(r"^Node #[0-9]+ +- (\S+) +- (\S+) +- Version: \S+$", text, re.M)
    matrix = [line.split()[1:] for line in text.split("Nodes From\\To")[1].splitlines()[1:] if line.strip()]
    state = re.search(r"^Domain State: (\S+)$", text, re.M)
    assert state is not None and text.startswith("Connectivity Table Legend:\n")
    return rows, matrix[:-1], state[1]


def test_imex_domain_up_when_every_tray_runs_the_same_list(trays: list[MockNode]) -> None:
    one, two, _ = trays
    for tray in (one, two):
        write_nodes_config(tray, [one.address, two.address])
        assert tray.run("systemctl", "is-active", "nvidia-imex", rc=3).stdout == "inactive\n"
        tray.run("systemctl", "enable", "nvidia-imex")
        tray.run("systemctl", "start", "nvidia-imex")
    assert one.run("systemctl", "is-active", "nvidia-imex").stdout == "active\n"
    wait_ready(one)
    rows, matrix, state = imex_status(one)
    assert rows == [(one.address, "READY"), (two.address, "READY")]
    assert matrix == [["C", "C"], ["C", "C"]] and state == "UP"
    assert one.run("nvidia-imex-ctl", "-q").stdout == "READY\n"


def wait_ready(node: MockNode, timeout: float = 20.0) -> None:
    """The unit's process listens shortly after `systemctl start` returns (Type=simple)."""
    import time

    deadline = time.monotonic() + timeout
    while node.run("nvidia-imex-ctl", "-q", rc=None).returncode != 0:
        assert time.monotonic() < deadline, "nvidia-imex never answered"
        time.sleep(0.05)


def test_a_stopped_daemon_is_down_for_its_peers_and_its_own_ctl(trays: list[MockNode]) -> None:
    one, two, _ = trays
    for tray in (one, two):
        write_nodes_config(tray, [one.address, two.address])
        tray.run("systemctl", "start", "nvidia-imex")
        wait_ready(tray)
    assert imex_status(one)[2] == "UP"  # one has reached two once
    two.run("systemctl", "stop", "nvidia-imex")
    assert two.run("systemctl", "is-active", "nvidia-imex", rc=3).stdout == "inactive\n"
    failed = two.run("nvidia-imex-ctl", "-N", rc=1)
    assert failed.stdout == "" and "IMEX daemon" in failed.stderr
    rows, matrix, state = imex_status(one)
    assert rows == [(one.address, "READY"), (two.address, "UNAVAILABLE")]
    assert matrix == [["C", "D"], ["I", "I"]] and state == "DEGRADED"


def test_the_daemon_reads_its_node_list_only_at_start(trays: list[MockNode]) -> None:
    one, two, three = trays
    write_nodes_config(one, [one.address, two.address])
    write_nodes_config(two, [one.address, two.address])
    for tray in (one, two):
        tray.run("systemctl", "start", "nvidia-imex")
        wait_ready(tray)
    write_nodes_config(one, [one.address, two.address, three.address])
    assert [a for a, _ in imex_status(one)[0]] == [one.address, two.address]  # still the list it started with
    one.run("systemctl", "restart", "nvidia-imex")
    wait_ready(one)
    rows, matrix, state = imex_status(one)
    assert [a for a, _ in rows] == [one.address, two.address, three.address]
    # two still runs the 2-node list: a node map mismatch both ways; three runs no daemon.
    assert matrix[0] == ["C", "!M!", "N"] and matrix[1] == ["!M!", "C", "!M!"]
    assert rows[2][1] == "UNAVAILABLE" and matrix[2] == ["I"] * 3 and state == "DEGRADED"


def test_a_daemon_whose_list_lacks_its_address_refuses_to_run(trays: list[MockNode]) -> None:
    one, two, three = trays
    write_nodes_config(three, [one.address, two.address])
    done = three.run("nvidia-imex", "-c", "/etc/nvidia-imex/config.cfg", rc=1)
    assert "No matching network interface found" in done.stderr
    (three.paths.etc / IMEX_NODES).unlink()
    assert "nodes_config.cfg" in three.run("nvidia-imex", "-c", "/etc/nvidia-imex/config.cfg", rc=1).stderr


def test_fabric_manager_unit_of_an_hgx_board(tmp_path: Path, bin_dir: Path) -> None:
    (board,) = make_nodes(tmp_path, bin_dir, [("hgx", "rail8")])
    in_lab_bin(board)
    assert board.run("systemctl", "is-enabled", "nvidia-fabricmanager", rc=1).stdout == "disabled\n"
    assert board.run("systemctl", "is-active", "nvidia-fabricmanager", rc=3).stdout == "inactive\n"
    try:
        board.run("systemctl", "enable", "nvidia-fabricmanager")
        board.run("systemctl", "start", "nvidia-fabricmanager")
        assert board.run("systemctl", "is-active", "nvidia-fabricmanager").stdout == "active\n"
    finally:
        board.run("systemctl", "stop", "nvidia-fabricmanager")
    assert board.run("systemctl", "is-active", "nvidia-fabricmanager", rc=3).stdout == "inactive\n"
    assert not (board.paths.upper / UNIT_DIR / "nvidia-imex.service").exists()


def test_the_parsers_read_the_mocks_as_the_real_outputs(
    trays: list[MockNode], tmp_path: Path, bin_dir: Path
) -> None:
    """fabcheck's own parsers (written from the real samples) read every mock output whole."""
    one, two, _ = trays
    status = parse_nvlink_status(one.run("nvidia-smi", "nvlink", "-s").stdout)
    assert [g.index for g in status.gpus] == [0, 1, 2, 3] and all(g.note is None for g in status.gpus)
    assert {link.gbytes for g in status.gpus for link in g.links} == {53.125} and len(
        status.gpus[3].links
    ) == 18
    fabrics = [gpu.fabric for t in trays for gpu in parse_nvidia_smi_q(t.run("nvidia-smi", "-q").stdout).gpus]
    assert all(
        f is not None
        and (f.state, f.status, f.health_summary, f.bandwidth) == ("Completed", "Success", "Healthy", "Full")
        for f in fabrics
    )
    keys = [f.domain_key for f in fabrics if f is not None]
    assert len(set(keys[:8])) == 1 and keys[8] not in keys[:8] and None not in keys
    (board,) = make_nodes(tmp_path / "hgx", bin_dir, [("hgx", "rail8")])
    hgx = [gpu.fabric for gpu in parse_nvidia_smi_q(board.run("nvidia-smi", "-q").stdout).gpus]
    assert {(f.cluster_uuid, f.clique_id, f.domain_key, f.bandwidth) for f in hgx if f} == {
        (ZERO_UUID, 0, None, None)
    }
    for tray in (one, two):
        write_nodes_config(tray, [one.address, two.address])
        tray.run("systemctl", "start", "nvidia-imex")
        wait_ready(tray)
    assert parse_imex_nodes_config((two.paths.etc / IMEX_NODES).read_text()) == (one.address, two.address)
    imex = parse_imex_status(two.run("nvidia-imex-ctl", "-N").stdout)
    assert [(n.index, n.address, n.state) for n in imex.nodes] == [
        (0, one.address, "READY"),
        (1, two.address, "READY"),
    ]
    assert (
        set(imex.connections.values()) == {"C"} and len(imex.connections) == 4 and imex.domain_state == "UP"
    )
    one.run("systemctl", "stop", "nvidia-imex")
    down = parse_imex_status(two.run("nvidia-imex-ctl", "-N").stdout)
    assert (
        down.nodes[0].state == "UNAVAILABLE"
        and down.connections[(1, 0)] == "D"
        and down.domain_state == "DEGRADED"
    )


def test_a_reboot_ends_the_old_daemon_and_starts_the_enabled_unit_on_the_current_list(
    trays: list[MockNode],
) -> None:
    one, two, _ = trays
    write_nodes_config(one, [one.address])
    one.run("systemctl", "enable", "nvidia-imex")
    one.run("systemctl", "start", "nvidia-imex")
    wait_ready(one)
    write_nodes_config(one, [one.address, two.address])
    one.run("fabcheck-mock", "fabcheck-mock-boot")
    wait_ready(one)
    assert [a for a, _ in imex_status(one)[0]] == [one.address, two.address]  # the new daemon's list
    assert one.run("systemctl", "is-active", "nvidia-imex").stdout == "active\n"
