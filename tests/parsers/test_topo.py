"""Tests for the ``nvidia-smi topo -m`` parser: every recorded sample, each layout quirk, robustness."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, corpus_samples, corpus_truth
from hostile import hostile_text, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabcheck.errors import ParseError
from fabcheck.parsers.topo import (
    LINK_CLASSES,
    TopoMatrix,
    link_class,
    link_rank,
    parse_topo,
    topo_facts,
)

SAMPLES = corpus_samples("topo")


def _sample(stem: str) -> str:
    return (CORPUS / "topo" / f"{stem}.txt").read_text()


def _parse_sample(stem: str) -> TopoMatrix:
    return parse_topo(_sample(stem), source=f"{stem}.txt")


# --- every recorded sample against its truth file -------------------------------------------------


def test_corpus_has_topo_samples_with_truth() -> None:
    assert len(SAMPLES) >= 14
    assert all(corpus_truth(sample) is not None for sample in SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_sample_matches_truth(sample: Path) -> None:
    truth = corpus_truth(sample)
    assert truth is not None
    text = sample.read_text()
    if truth.get("parse_error"):
        with pytest.raises(ParseError) as caught:
            parse_topo(text, source=sample.name)
        assert caught.value.source == sample.name
        assert caught.value.line is not None
        assert 1 <= caught.value.line <= len(text.split("\n"))
        return
    facts = topo_facts(parse_topo(text, source=sample.name))
    assert facts == {"gpus": truth["gpus"], "nics": truth["nics"]}


# --- INDEX facts the truth files do not cover -----------------------------------------------------


def test_corrupted_sample_names_the_gpu5_row_and_fused_cell() -> None:
    with pytest.raises(ParseError) as caught:
        _parse_sample("tpgds-0008-12nic-CORRUPTED-missing-tabs")
    assert caught.value.line == 7
    assert "GPU5" in caught.value.message
    assert "PIXNODE" in caught.value.message


def test_corrupted_sample_second_damage_self_cell_run_into_next() -> None:
    # With the fused GPU5 cell repaired, the NIC7 row (' X NODE', tab lost) is still refused.
    text = _sample("tpgds-0008-12nic-CORRUPTED-missing-tabs").replace("\tPIXNODE\t", "\tPIX\tNODE\t")
    with pytest.raises(ParseError) as caught:
        parse_topo(text)
    assert caught.value.line == 17
    assert "NIC7" in caught.value.message
    assert "X NODE" in caught.value.message


def test_corrupted_sample_fully_repaired_equals_the_intact_host() -> None:
    text = (
        _sample("tpgds-0008-12nic-CORRUPTED-missing-tabs")
        .replace("\tPIXNODE\t", "\tPIX\tNODE\t")
        .replace("\t X NODE\t", "\t X \tNODE\t")
    )
    assert parse_topo(text) == _parse_sample("tpgds-0007-8xgpu-12nic-numa-off-tabs")


def test_oyanghd_affinity_and_storage_nics() -> None:
    matrix = _parse_sample("oyanghd-dgxa100-10nic-tabs")
    assert dict(matrix.cpu_affinity) == {
        "GPU0": "48-63,176-191",
        "GPU1": "48-63,176-191",
        "GPU2": "16-31,144-159",
        "GPU3": "16-31,144-159",
        "GPU4": "112-127,240-255",
        "GPU5": "112-127,240-255",
        "GPU6": "80-95,208-223",
        "GPU7": "80-95,208-223",
    }
    assert [matrix.numa_affinity[f"GPU{i}"] for i in range(8)] == ["3", "3", "1", "1", "7", "7", "5", "5"]
    assert set(matrix.gpu_numa_id.values()) == {None}  # no GPU NUMA ID column
    for gpu in matrix.gpus:
        assert matrix.link(gpu, "mlx5_8") == "SYS"
        assert matrix.link(gpu, "NIC9") == "SYS"
    assert matrix.link("mlx5_8", "mlx5_9") == "PIX"
    assert {matrix.link("GPU0", f"GPU{i}") for i in range(1, 8)} == {"NV12"}


def test_pytorch_dgx1_hybrid_cube_mesh_nvlinks() -> None:
    matrix = _parse_sample("pytorch-ddp-bench-dgx1-v100-unsorted-mlx5-cols")
    assert matrix.nics == ("mlx5_2", "mlx5_0", "mlx5_3", "mlx5_1")
    assert [matrix.link("GPU0", f"GPU{i}") for i in range(1, 8)] == [
        "NV1",
        "NV1",
        "NV2",
        "NV2",
        "SYS",
        "SYS",
        "SYS",
    ]
    assert matrix.link("GPU0", "mlx5_1") == "PHB"
    assert set(matrix.cpu_affinity.values()) == {"0-19,40-59"}
    assert set(matrix.numa_affinity.values()) == {None}  # no NUMA Affinity column in 2019 drivers


def test_nccl_tests_321_no_legend_affinity_irregular_spacing() -> None:
    matrix = _parse_sample("nccl-tests-321-h20-vm-no-legend")
    assert matrix.nic_labels == matrix.nics == tuple(f"NIC{i}" for i in range(8))
    assert [matrix.cpu_affinity[f"GPU{i}"] for i in range(8)] == ["0-63"] * 4 + ["64-127"] * 4
    assert [matrix.numa_affinity[f"GPU{i}"] for i in range(8)] == ["0"] * 4 + ["1"] * 4
    assert set(matrix.gpu_numa_id.values()) == {None}
    assert matrix.link("GPU3", "GPU5") == "NV18"


def test_a800_legend_names_and_double_tab_gpu_numa_id() -> None:
    matrix = _parse_sample("a800-8gpu-8bond-nic-tabs-gpu-numa-id")
    assert matrix.nic_labels == tuple(f"NIC{i}" for i in range(8))
    assert matrix.link("GPU7", "mlx5_bond_7") == matrix.link("GPU7", "NIC7") == "PIX"
    assert matrix.link("GPU0", "GPU7") == "NV8"
    assert [matrix.cpu_affinity[f"GPU{i}"] for i in range(8)] == ["0-61"] * 4 + ["62-123"] * 4
    assert set(matrix.gpu_numa_id.values()) == {None}


def test_sglang_single_gpu_vm_phb() -> None:
    matrix = _parse_sample("sglang-24413-1xH100PCIe-kvm-phb")
    assert matrix.gpus == ("GPU0",)
    assert matrix.link("mlx5_0", "GPU0") == "PHB"
    assert (matrix.cpu_affinity["GPU0"], matrix.numa_affinity["GPU0"]) == ("0-251", "0")
    assert matrix.gpu_numa_id["GPU0"] is None


def test_pcie_two_switch_gpu_links_and_all_sys_nics() -> None:
    matrix = _parse_sample("pcie-8gpu-2switch-mlx5-cols-all-sys")
    assert matrix.link("GPU0", "GPU3") == "PIX"
    assert matrix.link("GPU3", "GPU4") == "NODE"
    assert matrix.link("mlx5_0", "mlx5_1") == "PIX"
    assert set(matrix.cpu_affinity.values()) == {"0-17,36-53"}


def test_tpgds_0007_nics_not_attached_to_any_gpu() -> None:
    matrix = _parse_sample("tpgds-0007-8xgpu-12nic-numa-off-tabs")
    assert matrix.link("mlx5_3", "mlx5_4") == "PIX"
    assert matrix.link("mlx5_9", "mlx5_10") == "PIX"
    assert {matrix.link(gpu, "mlx5_3") for gpu in matrix.gpus} == {"NODE"}
    assert "SYS" not in matrix.links.values()  # numa=off: one NUMA node


def test_vllm_pcie_gpu_pairs_and_na_affinity() -> None:
    matrix = _parse_sample("vllm-11122-8gpu-pcie-pix-pxb-no-nic")
    assert (matrix.link("GPU0", "GPU1"), matrix.link("GPU4", "GPU5")) == ("PIX", "PIX")
    assert (matrix.link("GPU0", "GPU2"), matrix.link("GPU2", "GPU5")) == ("PXB", "SYS")
    assert set(matrix.cpu_affinity.values()) == {"0-95"}
    assert set(matrix.numa_affinity.values()) == {None}


def test_gke_ansi_header_nvlink_and_affinity() -> None:
    matrix = _parse_sample("gke-a3-h100-8gpu-nv18-no-nic-tabs")
    assert matrix.gpus == tuple(f"GPU{i}" for i in range(8))
    assert matrix.nics == ()
    assert matrix.cpu_affinity["GPU5"] == "52-103,156-207"
    assert matrix.numa_affinity["GPU5"] == "1"


def test_hf_two_gpus_nv2() -> None:
    matrix = _parse_sample("hf-perf-hardware-2gpu-nv2-old-format")
    assert matrix.link("GPU1", "GPU0") == "NV2"
    assert matrix.nearest_nics("GPU0") == ((), None)


def test_parsing_does_not_depend_on_the_source_name() -> None:
    text = _sample("deepep-590-b300-cx8-bond-pxb")
    assert parse_topo(text, source="a.txt") == parse_topo(text, source="nccl-log/whatever.log")
    assert parse_topo(text) == parse_topo(text, source="x")


# --- layout quirks, one small matrix each ---------------------------------------------------------

MODERN_SPACES_WITH_GPU_NUMA_ID = """\
        GPU0    GPU1    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV6     PXB     SYS     0-71            0               2
GPU1    NV6      X      SYS     PXB     72-143          1               10
NIC0    PXB     SYS      X      SYS
NIC1    SYS     PXB     SYS      X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_3
"""


def test_space_separated_modern_layout_with_gpu_numa_id() -> None:
    matrix = parse_topo(MODERN_SPACES_WITH_GPU_NUMA_ID)
    assert matrix.gpus == ("GPU0", "GPU1")
    assert matrix.nics == ("mlx5_0", "mlx5_3")
    assert matrix.nic_labels == ("NIC0", "NIC1")
    assert dict(matrix.gpu_numa_id) == {"GPU0": "2", "GPU1": "10"}
    assert dict(matrix.numa_affinity) == {"GPU0": "0", "GPU1": "1"}
    assert dict(matrix.cpu_affinity) == {"GPU0": "0-71", "GPU1": "72-143"}
    assert matrix.links[("GPU1", "NIC1")] == "PXB"
    assert matrix.nearest_nics("GPU1") == (("mlx5_3",), "PXB")
    assert topo_facts(matrix) == {
        "gpus": [
            {"name": "GPU0", "nearest_nics": ["mlx5_0"], "link": "PXB"},
            {"name": "GPU1", "nearest_nics": ["mlx5_3"], "link": "PXB"},
        ],
        "nics": ["mlx5_0", "mlx5_3"],
    }


LEGACY_SOC = """\
        GPU0    GPU1    GPU2    GPU3    mlx4_0  CPU Affinity
GPU0     X      PIX     SOC     SOC     SOC     0-9,20-29
GPU1    PIX      X      SOC     SOC     SOC     0-9,20-29
GPU2    SOC     SOC      X      PIX     PHB     10-19,30-39
GPU3    SOC     SOC     PIX      X      PHB     10-19,30-39
mlx4_0  SOC     SOC     PHB     PHB      X

Legend:

  X   = Self
  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe switches (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing a single PCIe switch
"""


def test_legacy_soc_reads_as_sys_class_but_prints_as_soc() -> None:
    matrix = parse_topo(LEGACY_SOC)
    assert matrix.nics == ("mlx4_0",)
    assert matrix.link("GPU0", "mlx4_0") == "SOC"
    assert matrix.nearest_nics("GPU0") == (("mlx4_0",), "SYS")
    assert matrix.nearest_nics("GPU3") == (("mlx4_0",), "PHB")
    assert matrix.cpu_affinity["GPU2"] == "10-19,30-39"
    assert matrix.numa_affinity["GPU2"] is None


def test_ansi_escapes_in_header_and_cells() -> None:
    text = (
        "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \t\x1b[32mNV18\x1b[0m\t\x1b[1mPIX\x1b[0m\t0-31\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tNODE\t0-31\t0\t\tN/A\n"
        "NIC0\tPIX\tNODE\t X \t\t\t\t\n"
    )
    matrix = parse_topo(text)
    assert matrix.link("GPU0", "GPU1") == "NV18"
    assert matrix.nearest_nics("GPU0") == (("NIC0",), "PIX")
    assert matrix.nearest_nics("GPU1") == (("NIC0",), "NODE")


@pytest.mark.parametrize(
    "preamble",
    [
        "NVIDIA Topology: \n",
        "GPU Topology:\n",
        "[root@gpu-node-17 ~]# nvidia-smi topo -m\n",
        "user@host:~$ nvidia-smi topo --matrix\n\n",
        "```\n",
        "Collecting environment information...\nGPU 0: NVIDIA H100 80GB HBM3\nGPU0: ok\n",
    ],
)
def test_preamble_lines_before_the_header_are_skipped(preamble: str) -> None:
    assert parse_topo(preamble + MODERN_SPACES_WITH_GPU_NUMA_ID) == parse_topo(MODERN_SPACES_WITH_GPU_NUMA_ID)


def test_crlf_line_endings_and_blank_lines_inside_the_matrix() -> None:
    text = MODERN_SPACES_WITH_GPU_NUMA_ID.replace("\nGPU1", "\n   \nGPU1").replace("\n", "\r\n")
    assert parse_topo(text) == parse_topo(MODERN_SPACES_WITH_GPU_NUMA_ID)


def test_trailing_text_after_the_matrix_is_ignored() -> None:
    text = MODERN_SPACES_WITH_GPU_NUMA_ID + "```\n[root@gpu-node-17 ~]# \nNvidia driver version: 550.54\n"
    assert parse_topo(text) == parse_topo(MODERN_SPACES_WITH_GPU_NUMA_ID)


def test_single_gpu_without_nics_or_affinity_columns() -> None:
    matrix = parse_topo("\tGPU0\nGPU0\t X \n")
    assert matrix.gpus == ("GPU0",)
    assert matrix.links == {("GPU0", "GPU0"): "X"}
    assert matrix.cpu_affinity == {"GPU0": None}


def test_nearest_nics_keeps_every_tie_in_column_order() -> None:
    text = """\
        GPU0    mlx5_1  mlx5_0  mlx5_2  CPU Affinity
GPU0     X      PXB     PIX     PIX     0-7
mlx5_1  PXB      X      PXB     PXB
mlx5_0  PIX     PXB      X      PIX
mlx5_2  PIX     PXB     PIX      X
"""
    assert parse_topo(text).nearest_nics("GPU0") == (("mlx5_0", "mlx5_2"), "PIX")


# --- damaged or missing matrices ------------------------------------------------------------------


def _error(text: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_topo(text, source="topo.txt")
    assert caught.value.source == "topo.txt"
    return caught.value


def test_fused_cell_in_space_layout_is_refused_with_its_line() -> None:
    text = MODERN_SPACES_WITH_GPU_NUMA_ID.replace("NV6      X      SYS     PXB", "NV6      X      SYSPXB")
    error = _error(text)
    assert (error.line, "SYSPXB" in error.message) == (3, True)


@pytest.mark.parametrize("token", ["PCI", "NV", "C2C", "pix", "N/A", "?"])
def test_unknown_link_token_is_refused_with_its_line(token: str) -> None:
    text = MODERN_SPACES_WITH_GPU_NUMA_ID.replace("NIC0    PXB     SYS", f"NIC0    {token}     SYS")
    error = _error(text)
    assert error.line == 4
    assert repr(token) in error.message


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("GPU1    NV6      X      SYS     PXB", "GPU1    NV6      X      SYS", 3),  # short row
        ("NIC1    SYS     PXB     SYS      X", "NIC1    SYS     PXB     SYS      X      SYS", 5),  # long row
        ("0-71            0               2", "0-71            0", 2),  # missing affinity cell
        ("0-71            0               2", "0-71       fast     0     2", 2),  # garbage affinity
        ("GPU1    NV6      X ", "GPU1     X      NV6", 3),  # self cell off the diagonal
        ("GPU0     X      NV6", "GPU0    PIX     NV6", 2),  # diagonal without the self cell
        ("NIC0    PXB     SYS", "NIC0    PIX     SYS", 4),  # disagrees with the GPU0 row
        ("GPU1    NV6", "GPU2    NV6", 3),  # row label not the expected one
        ("NIC1    SYS     PXB     SYS      X\n", "", 6),  # NIC1 row missing: "Legend:" found instead
    ],
)
def test_damaged_rows_are_refused_with_their_line(old: str, new: str, line: int) -> None:
    text = MODERN_SPACES_WITH_GPU_NUMA_ID.replace(old, new)
    assert text != MODERN_SPACES_WITH_GPU_NUMA_ID
    assert _error(text).line == line


def test_row_with_no_header_column_is_refused() -> None:
    text = MODERN_SPACES_WITH_GPU_NUMA_ID.replace(
        "NIC1    SYS     PXB     SYS      X\n",
        "NIC1    SYS     PXB     SYS      X\nNIC2    SYS     SYS     SYS     SYS\n",
    )
    assert _error(text).line == 6


def test_text_ending_inside_the_matrix_is_refused() -> None:
    text = "\n".join(MODERN_SPACES_WITH_GPU_NUMA_ID.split("\n")[:3])
    error = _error(text)
    assert "NIC0" in error.message
    assert error.line == 3


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  NIC1: mlx5_3\n", ""),  # legend cut short: NIC1's name is unknown
        ("  NIC1: mlx5_3\n", "  NIC1: mlx5_3\n  NIC2: mlx5_4\n"),  # legend names a NIC not in the matrix
        ("  NIC1: mlx5_3\n", "  NIC1: mlx5_0\n"),  # two columns, one name
        ("  NIC1: mlx5_3\n", "  NIC0: mlx5_3\n"),  # NIC0 named twice
    ],
)
def test_inconsistent_nic_legend_is_refused(old: str, new: str) -> None:
    error = _error(MODERN_SPACES_WITH_GPU_NUMA_ID.replace(old, new))
    assert error.line is not None
    assert "NIC" in error.message


def test_header_with_repeated_or_misordered_columns_is_refused() -> None:
    assert _error(MODERN_SPACES_WITH_GPU_NUMA_ID.replace("NIC0    NIC1", "NIC0    NIC0")).line == 1
    assert (
        _error(MODERN_SPACES_WITH_GPU_NUMA_ID.replace("GPU0    GPU1    NIC0", "GPU0    NIC0    GPU1")).line
        == 1
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n  \n",
        "nvidia-smi: command not found\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "Legend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe\n\nNIC Legend:\n\n  NIC0: mlx5_0\n",
    ],
)
def test_text_without_a_matrix_is_refused(text: str) -> None:
    assert "no nvidia-smi topo matrix" in _error(text).message


def test_rows_without_a_header_are_refused_at_the_first_row() -> None:
    rows_only = "\n".join(MODERN_SPACES_WITH_GPU_NUMA_ID.split("\n")[1:])
    assert _error("$ nvidia-smi topo -m\n" + rows_only).line == 2


# --- link classes and the record ------------------------------------------------------------------


def test_link_rank_orders_classes_best_to_worst() -> None:
    ordered = ["X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"]
    assert [link_rank(token) for token in ordered] == list(range(len(LINK_CLASSES)))
    assert link_rank("NV1") == link_rank("NV18") == link_rank("NV")
    assert link_rank("SOC") == link_rank("SYS")
    assert link_class("NV12") == "NV"
    assert link_class("SOC") == "SYS"


@pytest.mark.parametrize("token", ["", "nv2", "NVx", "PIXNODE", "sys", "GPU0", " PIX"])
def test_link_rank_rejects_unknown_tokens(token: str) -> None:
    with pytest.raises(ValueError):
        link_rank(token)


def test_matrix_lookups_reject_unknown_devices() -> None:
    matrix = parse_topo(MODERN_SPACES_WITH_GPU_NUMA_ID)
    with pytest.raises(KeyError):
        matrix.link("GPU0", "mlx5_9")
    with pytest.raises(KeyError):
        matrix.nearest_nics("NIC0")


def test_record_built_by_hand_defaults_nic_labels_to_names() -> None:
    matrix = TopoMatrix(
        gpus=("GPU0",),
        nics=("mlx5_0",),
        links={("GPU0", "GPU0"): "X", ("GPU0", "mlx5_0"): "SOC", ("mlx5_0", "GPU0"): "SOC"},
        cpu_affinity={"GPU0": None},
        numa_affinity={"GPU0": None},
        gpu_numa_id={"GPU0": None},
    )
    assert matrix.nic_labels == ("mlx5_0",)
    assert matrix.nearest_nics("GPU0") == (("mlx5_0",), "SYS")


# --- robustness: a TopoMatrix or a ParseError, never anything else ---------------------------------


def _parses_or_refuses(text: str) -> None:
    try:
        parse_topo(text)
    except ParseError as error:
        assert error.message
        assert error.line is None or 1 <= error.line <= len(text.split("\n"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_every_prefix_of_a_sample_parses_or_refuses(sample: Path) -> None:
    text = sample.read_text()
    for end in range(len(text) + 1):
        _parses_or_refuses(text[:end])


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_every_single_line_deletion_parses_or_refuses(sample: Path) -> None:
    lines = sample.read_text().split("\n")
    for dropped in range(len(lines)):
        _parses_or_refuses("\n".join(lines[:dropped] + lines[dropped + 1 :]))


_TOPO_WORDS = st.sampled_from(
    ["GPU0", "GPU1", "NIC0", "NIC1", "mlx5_0", " X ", "X", "NV18", "PIX", "SOC", "SYS", "PIXNODE", "N/A",
     "0-63", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID", "NIC Legend:", "NIC0: mlx5_0", "\x1b[4m"]
)  # fmt: skip
_TOPO_SEPARATORS = st.sampled_from(["\t", "    ", " ", "\n", "\t\t", "\r\n", ""])


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_parses_or_refuses(text: str) -> None:
    _parses_or_refuses(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TOPO_WORDS, _TOPO_SEPARATORS), max_size=60))
def test_topo_shaped_noise_parses_or_refuses(pieces: list[tuple[str, str]]) -> None:
    _parses_or_refuses("".join(word + separator for word, separator in pieces))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES), st.data())
def test_sample_with_a_slice_cut_out_parses_or_refuses(sample: Path, data: st.DataObject) -> None:
    text = sample.read_text()
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    _parses_or_refuses(text[:start] + text[end:])


# Hostile input (tests/parsers/hostile.py): long digit runs, NULs, '\r', tabs, non-ASCII digits, long lines.


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text)
def test_hostile_text_parses_or_refuses(text: str) -> None:
    _parses_or_refuses(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated([s.read_text() for s in SAMPLES]))
def test_hostile_mutations_of_samples_parse_or_refuse(text: str) -> None:
    _parses_or_refuses(text)


def test_long_header_of_repeated_labels_is_refused_quickly() -> None:
    # 'labels.count(label)' per label was quadratic; 13,000 labels now take one pass.
    with pytest.raises(ParseError, match="header repeats column GPU0") as caught:
        parse_topo("GPU0 " * 13_000 + "\nGPU0 X\n")
    assert caught.value.line == 1


def test_line_over_the_cap_is_refused_with_its_number() -> None:
    with pytest.raises(ParseError, match="longer than 64 KiB") as caught:
        parse_topo("\tGPU0\tCPU Affinity\nGPU0\t X \t0-3\n" + "x" * 70_000 + "\n")
    assert caught.value.line == 3


def test_colour_codes_without_esc_and_blank_affinity_cells_are_read() -> None:
    # SYNTHESISED variant of the GKE A3 sample (see INDEX.tsv): '[4m'/'[0m' lost their ESC byte in a
    # paste, and a cgroup-limited job leaves the CPU Affinity cell blank.
    sample = (
        Path(__file__).parents[1] / "data/corpus/topo/gke-a3-h100-SYNTHESISED-esc-lost-empty-cpu-affinity.txt"
    )
    matrix = parse_topo(sample.read_text())
    assert matrix.gpus[0] == "GPU0" and len(matrix.gpus) == 8
    assert set(matrix.cpu_affinity.values()) == {None}
    assert matrix.numa_affinity["GPU4"] == "1"
