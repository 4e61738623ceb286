"""show_gids parser/renderer: the 8-HCA corpus table, exact re-rendering, damaged tables."""

from __future__ import annotations

import pytest
from conftest import CORPUS

from fabcheck.errors import ParseError
from fabcheck.parsers.show_gids import GidEntry, parse_show_gids
from tests.parsers.renderers import render_show_gids

SAMPLE = CORPUS / "nic-state" / "show_gids-centos12-8hca-roce-v1v2-ib-spaces.txt"
LINK_LOCAL_ONLY = {
    "mlx5_0": "ens4f0",
    "mlx5_1": "ens4f1",
    "mlx5_4": "ens14f1",
    "mlx5_6": "ens6f1",
    "mlx5_7": "ens6f2",
}


def _entries() -> tuple[GidEntry, ...]:
    return parse_show_gids(SAMPLE.read_text(), source=SAMPLE.name)


def test_sample_counts_and_link_local_ports() -> None:
    entries = _entries()
    assert len(entries) == 19
    for dev, netdev in LINK_LOCAL_ONLY.items():
        rows = [e for e in entries if e.dev == dev]
        assert [(e.port, e.index, e.version, e.ipv4, e.netdev) for e in rows] == [
            (1, 0, "v1", None, netdev),
            (1, 1, "v2", None, netdev),
        ]
        assert all(e.gid.startswith("fe80:0000:0000:0000:") for e in rows)


def test_sample_ipv4_gids() -> None:
    entries = _entries()
    ens6 = [(e.index, e.version, e.ipv4) for e in entries if e.dev == "mlx5_2"]
    assert ens6 == [(0, "v1", None), (1, "v2", None), (2, "v1", "172.17.242.56"), (3, "v2", "172.17.242.56")]
    assert {e.netdev for e in entries if e.dev == "mlx5_2"} == {"ens6"}
    ens14f0 = [(e.index, e.version, e.ipv4, e.netdev) for e in entries if e.dev == "mlx5_3"][2:]
    assert ens14f0 == [(2, "v1", "192.168.242.56", "ens14f0"), (3, "v2", "192.168.242.56", "ens14f0")]
    roce_v2_ipv4 = [(e.dev, e.index) for e in entries if e.version == "v2" and e.ipv4]
    assert roce_v2_ipv4 == [("mlx5_2", 3), ("mlx5_3", 3)]


def test_sample_infiniband_port_has_no_netdev() -> None:
    (ib,) = [e for e in _entries() if e.dev == "mlx5_5"]
    assert ib == GidEntry("mlx5_5", 1, 0, "fe80:0000:0000:0000:08c0:eb03:00b6:a0b4", None, "v1", None)


def test_render_reproduces_the_captured_table() -> None:
    # The capture lost its tabs (pasted), and trailing whitespace; the misaligned 192.168 rows are real.
    rendered = [line.rstrip() for line in render_show_gids(_entries()).expandtabs().splitlines()]
    captured = [line.rstrip() for line in SAMPLE.read_text().splitlines()]
    assert captured[1 : 1 + len(rendered)] == rendered


def test_render_uses_the_script_tabs() -> None:
    rows = [
        GidEntry("mlx5_0", 1, 0, "fe80:0000:0000:0000:ba3f:d2ff:fea1:2b3c", None, "v1", "ens1f0np0"),
        GidEntry("mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "10.0.0.1", "v2", "ens1f0np0"),
        GidEntry("mlx5_1", 1, 0, "fe80:0000:0000:0000:b83f:d203:00a1:2b3c", None, "v1", None),
    ]
    assert render_show_gids(rows) == (
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
        "mlx5_0\t1\t0\tfe80:0000:0000:0000:ba3f:d2ff:fea1:2b3c\t\t\tv1\tens1f0np0\n"
        "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv2\tens1f0np0\n"
        "mlx5_1\t1\t0\tfe80:0000:0000:0000:b83f:d203:00a1:2b3c\t\t\tv1\t\n"
        "n_gids_found=3\n"
    )
    assert parse_show_gids(render_show_gids(rows)) == tuple(rows)


def test_round_trip_of_the_sample_and_of_an_empty_table() -> None:
    entries = _entries()
    assert parse_show_gids(render_show_gids(entries)) == entries
    assert parse_show_gids(render_show_gids([])) == ()


def _sample_lines() -> list[str]:
    return SAMPLE.read_text().splitlines()


@pytest.mark.parametrize(
    ("line", "replacement", "message"),
    [
        (23, "n_gids_found=18", "n_gids_found=18"),
        (
            10,
            "mlx5_2  1       2       0000:0000:0000:0000:0000:ffff:ac11:f238 172.17.242.57   v1  ens6",
            "IPv4",
        ),
        (4, "mlx5_0  1       0       fe80:0000:0000:0000:0ac0:ebff:fe40:8df2 10.0.0.1  v1  ens4f0", "IPv4"),
        (4, "mlx5_0  1       0       fe80:0000:0000:0000:0ac0:ebff:fe40:8df  v1      ens4f0", "GID"),
        (4, "mlx5_0  one     0       fe80:0000:0000:0000:0ac0:ebff:fe40:8df2 v1      ens4f0", "DEV PORT"),
        (4, "mlx5_0  1       0       fe80:0000:0000:0000:0ac0:ebff:fe40:8df2 v1 ens4f0 extra", "too many"),
        (4, "some unrelated line", "DEV PORT"),
    ],
)
def test_damaged_table_names_the_line(line: int, replacement: str, message: str) -> None:
    lines = _sample_lines()
    lines[line - 1] = replacement
    with pytest.raises(ParseError) as caught:
        parse_show_gids("\n".join(lines), source="gids.txt")
    assert caught.value.line == line and caught.value.source == "gids.txt"
    assert message in caught.value.message


def test_table_without_footer_is_truncated() -> None:
    lines = _sample_lines()[:15]
    with pytest.raises(ParseError) as caught:
        parse_show_gids("\n".join(lines))
    assert "n_gids_found" in caught.value.message and caught.value.line == 15


def test_duplicate_gid_index_is_an_error() -> None:
    lines = _sample_lines()
    lines[4] = lines[3]  # mlx5_0 index 0 twice
    with pytest.raises(ParseError) as caught:
        parse_show_gids("\n".join(lines))
    assert "twice" in caught.value.message


def test_text_without_a_table_is_an_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_show_gids("$ show_gids\nbash: show_gids: command not found\n")
    assert caught.value.line is None
