"""All NIC-state parsers against the whole nic-state corpus: coverage, isolation, robustness.

Every sample is read by its tool's parser; every other NIC parser refuses it (tools' blocks are found by
their own markers, never by accident); arbitrary text and damaged samples give a record or ParseError.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CORPUS, corpus_samples
from hostile import hostile_text, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers.ibstat import parse_ibstat, parse_ibstatus
from fabcheck.parsers.ibv_devinfo import parse_ibv_devinfo
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos_all
from fabcheck.parsers.rdma_link import parse_rdma_link
from fabcheck.parsers.show_gids import parse_show_gids

Parser = Callable[..., object]
PARSERS: dict[str, Parser] = {
    "mlnx_qos": parse_mlnx_qos_all,
    "ibv_devinfo": parse_ibv_devinfo,
    "ibstat": parse_ibstat,
    "ibstatus": parse_ibstatus,
    "show_gids": parse_show_gids,
    "rdma_link": parse_rdma_link,
}
TOOL_OF_SAMPLE = {
    "ibdev2netdev-ibstat-cma_roce_mode-cx4lx-25g-rocev1-to-v2.txt": "ibstat",
    "ibstat-b300-cx8-disabled-cx7-4port-rate100.txt": "ibstat",
    "ibstat-mlx4-2port-one-down-polling.txt": "ibstat",
    "ibstatus-filtered-eth25g-ib400g-ndr.txt": "ibstatus",
    "ibv_devinfo-vv-cx6dx-bond-roce-2x50g-gids.txt": "ibv_devinfo",
    "mlnx_qos-3fs-ens4np0-dscp-pfc5-ets-buffers.txt": "mlnx_qos",
    "mlnx_qos-cx5-mce0-firmware-dcbx-ets-grouped.txt": "mlnx_qos",
    "mlnx_qos-ens14f0-dscp-remapped-prio6-split-lines.txt": "mlnx_qos",
    "mlnx_qos-setup-lossless-l3-script-trace-eth4.txt": "mlnx_qos",
    "rdma-link-gke-8xmlx5-one-netdev.txt": "rdma_link",
    "show_gids-centos12-8hca-roce-v1v2-ib-spaces.txt": "show_gids",
    "spiderpool-rdma-qos-query-eth0-dscp-pfc5-ecn-sysfs.txt": "mlnx_qos",
}
SAMPLES = corpus_samples("nic-state")
SAMPLE_TEXT = {sample.name: sample.read_text() for sample in SAMPLES}


def _index_rows() -> dict[str, str]:
    rows = (line.split("\t") for line in (CORPUS / "INDEX.tsv").read_text().splitlines()[1:])
    return {row[0]: row[1] for row in rows if len(row) >= 2}


def test_every_sample_has_a_parser_and_an_index_row() -> None:
    assert sorted(TOOL_OF_SAMPLE) == [sample.name for sample in SAMPLES]
    index = _index_rows()
    for sample in SAMPLES:
        assert index.get(f"nic-state/{sample.name}") == "nic-state"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_sample_is_read_by_its_tool(sample: Path) -> None:
    result = PARSERS[TOOL_OF_SAMPLE[sample.name]](sample.read_text(), source=sample.name)
    assert isinstance(result, tuple) and len(result) > 0


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_other_parsers_refuse_the_sample(sample: Path) -> None:
    for tool, parser in PARSERS.items():
        if tool == TOOL_OF_SAMPLE[sample.name]:
            continue
        with pytest.raises(ParseError) as caught:
            parser(sample.read_text(), source=sample.name)
        assert caught.value.source == sample.name


def _parses_or_refuses(parser: Parser, text: str) -> None:
    try:
        result = parser(text, source="prop.txt")
    except ParseError as err:
        assert err.source == "prop.txt"
        assert err.line is None or 1 <= err.line <= max(1, len(text.splitlines()))
        return
    assert isinstance(result, tuple)


TOOLS = sorted(PARSERS)


def _samples_of(tool: str) -> list[str]:
    return sorted(name for name, owner in TOOL_OF_SAMPLE.items() if owner == tool)


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=100, deadline=None)
@given(text=st.text())
def test_arbitrary_text_parses_or_refuses(tool: str, text: str) -> None:
    _parses_or_refuses(PARSERS[tool], text)


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncated_sample_parses_or_refuses(tool: str, data: st.DataObject) -> None:
    text = SAMPLE_TEXT[data.draw(st.sampled_from(_samples_of(tool)))]
    cut = data.draw(st.integers(0, len(text)))
    _parses_or_refuses(PARSERS[tool], text[:cut])


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sample_with_a_slice_cut_out_parses_or_refuses(tool: str, data: st.DataObject) -> None:
    text = SAMPLE_TEXT[data.draw(st.sampled_from(sorted(SAMPLE_TEXT)))]
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 200)))
    _parses_or_refuses(PARSERS[tool], text[:start] + text[end:])


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sample_lines_shuffled_and_mutated_parse_or_refuse(tool: str, data: st.DataObject) -> None:
    lines = SAMPLE_TEXT[data.draw(st.sampled_from(_samples_of(tool)))].splitlines()
    picked = data.draw(st.lists(st.sampled_from(lines), max_size=40))
    noise = data.draw(st.lists(st.sampled_from(["", " ", "\t", "0", "x", ":", ",", "(", "9"]), max_size=40))
    mutated = [line + extra for line, extra in zip(picked, noise + [""] * len(picked), strict=False)]
    _parses_or_refuses(PARSERS[tool], "\n".join(mutated))


# Hostile input (tests/parsers/hostile.py): long digit runs, NULs, '\r', tabs, non-ASCII digits, long lines.


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_hostile_text_parses_or_refuses(tool: str, text: str) -> None:
    _parses_or_refuses(PARSERS[tool], text)


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_mutations_of_samples_parse_or_refuse(tool: str, data: st.DataObject) -> None:
    text = data.draw(mutated([SAMPLE_TEXT[name] for name in _samples_of(tool)]))
    _parses_or_refuses(PARSERS[tool], text)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("piece", ["9" * 4301, "9" * 21, "²", "٣", "１", "nan", "1e400", "\x00"])
def test_every_number_of_a_sample_replaced_parses_or_refuses(tool: str, piece: str) -> None:
    # The ~22 ValueError sites of issue 7: each number of each sample, one at a time.
    for name in _samples_of(tool):
        text = SAMPLE_TEXT[name]
        for number in re.finditer(r"[0-9]+", text):
            _parses_or_refuses(PARSERS[tool], text[: number.start()] + piece + text[number.end() :])


@pytest.mark.parametrize("tool", TOOLS)
def test_a_line_over_the_cap_is_refused_with_its_number(tool: str) -> None:
    text = SAMPLE_TEXT[_samples_of(tool)[0]]
    with pytest.raises(ParseError, match="longer than 64 KiB") as caught:
        PARSERS[tool]("x\n" + "y" * 70_000 + "\n" + text, source="long.txt")
    assert (caught.value.source, caught.value.line) == ("long.txt", 2)
