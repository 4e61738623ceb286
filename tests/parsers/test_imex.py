"""`nvidia-imex-ctl -N`, `-q` and nodes_config.cfg, replaying the real outputs of
tests/data/real/nvlink/INDEX.tsv (an 18-tray GB200 domain with the Version column, 1- and 2-node GH200
domains of the DRA driver without it, a 4-tray nodes_config.cfg)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.imex import parse_imex_nodes_config, parse_imex_query, parse_imex_status

NVLINK = Path(__file__).resolve().parents[1] / "data" / "real" / "nvlink"
EIGHTEEN = (NVLINK / "nvidia-imex-ctl-N-18-nodes-gb200-570.txt").read_text()
TWO = (NVLINK / "nvidia-imex-ctl-N-2-nodes-gh200-570.txt").read_text()
ONE = (NVLINK / "nvidia-imex-ctl-N-1-node-gh200-570.txt").read_text()
NODES_CONFIG = (NVLINK / "imex-nodes-config-4-trays.cfg").read_text()


def test_eighteen_trays_all_ready_and_connected_with_the_version_column() -> None:
    status = parse_imex_status(EIGHTEEN, "gb200")
    assert [node.index for node in status.nodes] == list(range(18))
    assert status.nodes[0].address == "172.31.48.81"
    assert status.nodes[17].address == "172.31.56.47"
    # the `- Version: 570.172` field after the state is not part of it
    assert {node.state for node in status.nodes} == {"READY"}
    assert len(status.connections) == 18 * 18
    assert set(status.connections.values()) == {"C"}
    assert status.domain_state == "UP"


def test_two_gh200_nodes_without_the_version_column() -> None:
    status = parse_imex_status(TWO, "gh200")
    assert [(node.index, node.address, node.state) for node in status.nodes] == [
        (0, "10.136.206.47", "READY"),
        (1, "10.136.206.48", "READY"),
    ]
    assert dict(status.connections) == {(0, 0): "C", (0, 1): "C", (1, 0): "C", (1, 1): "C"}
    assert status.domain_state == "UP"


def test_a_one_node_domain() -> None:
    status = parse_imex_status(ONE, "one")
    assert [node.address for node in status.nodes] == ["10.136.206.48"]
    assert dict(status.connections) == {(0, 0): "C"}


def test_a_peer_down_shows_in_its_cells_and_state() -> None:
    """The shape of a degraded domain, built from the real 2-node sample and the legend's letters."""
    text = TWO.replace("Node #1   - 10.136.206.48   - READY", "Node #1   - 10.136.206.48   - UNAVAILABLE")
    text = text.replace("       0        C  C", "       0        C  D").replace(
        "       1        C  C", "       1        N  N"
    )
    text = text.replace("Domain State: UP", "Domain State: DEGRADED")
    status = parse_imex_status(text, "degraded")
    assert status.nodes[1].state == "UNAVAILABLE"
    assert status.connections[(0, 1)] == "D" and status.connections[(1, 0)] == "N"
    assert status.domain_state == "DEGRADED"


def test_host_names_with_dashes_and_mismatch_cells() -> None:
    text = (
        "Nodes:\nNode #0   - compute-domain-daemon-0000   - READY\n"
        "Node #1   - compute-domain-daemon-0001   - READY\n"
        "\n Nodes From\\To  0  1\n       0        C  !V!\n       1        !M!  C\nDomain State: DEGRADED\n"
    )
    status = parse_imex_status(text, "names")
    assert [node.address for node in status.nodes] == [
        "compute-domain-daemon-0000",
        "compute-domain-daemon-0001",
    ]
    assert status.connections[(0, 1)] == "!V!" and status.connections[(1, 0)] == "!M!"


def test_no_domain_state_line_is_none() -> None:
    status = parse_imex_status(TWO.replace("Domain State: UP\n", ""), "cut")
    assert status.domain_state is None
    assert len(status.nodes) == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no `Nodes:` line"),
        ("IMEX daemon is not running\n", "no `Nodes:` line"),
        ("Nodes:\nNode #0 10.0.0.1 READY\n", "not a `Node #"),
        ("Nodes:\nNode #0   - 10.0.0.1   - READY\nNode #0   - 10.0.0.2   - READY\n", "listed twice"),
        ("Nodes:\nNode #0   - 10.0.0.1   - READY\n Nodes From\\To  0  1\n       0        C\n", "cell x 2"),
        ("Nodes:\nNode #0   - 10.0.0.1   - READY\n Nodes From\\To  a\n", "without node numbers"),
        (
            "Nodes:\nNode #0   - 10.0.0.1   - READY\n Nodes From\\To  0\n       0        Z9\n",
            "legend letters",
        ),
        ("Nodes:\ngarbage\n", "not a `Node #"),
    ],
)
def test_damaged_status_is_refused(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_imex_status(text, "bad")


def test_nodes_config_lists_the_addresses_in_order() -> None:
    assert parse_imex_nodes_config(NODES_CONFIG, "cfg") == (
        "172.27.58.70",
        "172.27.58.71",
        "172.27.58.72",
        "172.27.58.73",
    )


def test_nodes_config_skips_comments_and_blank_lines() -> None:
    text = "# rack 1\n\n  10.0.0.1  \ngpu02\n# end\n"
    assert parse_imex_nodes_config(text, "cfg") == ("10.0.0.1", "gpu02")


def test_nodes_config_with_two_addresses_on_a_line_is_refused() -> None:
    with pytest.raises(ParseError, match="one address per line") as refused:
        parse_imex_nodes_config("10.0.0.1\n10.0.0.2 10.0.0.3\n", "cfg")
    assert refused.value.line == 2


def test_query_reads_ready() -> None:
    assert parse_imex_query((NVLINK / "nvidia-imex-ctl-q-ready.txt").read_text(), "q") == "READY"
    with pytest.raises(ParseError, match="not one state word"):
        parse_imex_query("READY\nstopAtReady: 0\n", "q")


test_mutations_parse_or_refuse, test_hostile_text_parses_or_refuses = parse_or_refuse_tests(
    parse_imex_status, [EIGHTEEN, TWO, ONE]
)
test_config_mutations_parse_or_refuse, test_config_hostile_text_parses_or_refuses = parse_or_refuse_tests(
    parse_imex_nodes_config, [NODES_CONFIG]
)
