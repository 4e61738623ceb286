"""`nvidia-smi nvlink -s` -> per-GPU link states, replaying the real outputs of
tests/data/real/nvlink/INDEX.tsv (HGX H100 18 x 26.562 GB/s, GB200 18 x 53.125 GB/s, a V100 with two
links <inactive>)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.nvlink import parse_active_state, parse_nvlink_status

NVLINK = Path(__file__).resolve().parents[1] / "data" / "real" / "nvlink"
H100 = (NVLINK / "nvidia-smi-nvlink-s-h100-2gpu-excerpt.txt").read_text()
GB200 = (NVLINK / "nvidia-smi-nvlink-s-gb200-gpu0-excerpt.txt").read_text()
V100 = (NVLINK / "nvidia-smi-nvlink-s-v100-inactive-excerpt.txt").read_text()


def test_h100_gpus_with_18_links_at_26_562() -> None:
    status = parse_nvlink_status(H100, "h100")
    assert [gpu.index for gpu in status.gpus] == [0, 1]
    first = status.gpus[0]
    assert first.name == "NVIDIA H100 80GB HBM3"
    assert first.uuid == "GPU-4039dfe4-0c97-4b1e-683e-eb7d42699053"
    assert [link.link for link in first.links] == list(range(18))
    assert {link.gbytes for link in first.links} == {26.562}
    assert first.note is None


def test_gb200_gpu_with_18_links_at_53_125() -> None:
    (gpu,) = parse_nvlink_status(GB200, "gb200").gpus
    assert (gpu.index, gpu.name) == (0, "NVIDIA GB200")
    assert len(gpu.links) == 18 and all(link.gbytes == 53.125 for link in gpu.links)


def test_v100_inactive_links_have_no_rate() -> None:
    (gpu,) = parse_nvlink_status(V100, "v100").gpus
    assert gpu.index == 3
    assert gpu.uuid == "..."  # the reporter elided it; kept as printed
    assert [link.link for link in gpu.links if not link.active] == [3, 5]
    assert [link.gbytes for link in gpu.links if link.active] == [25.781] * 4


def test_tab_indented_link_lines_read_like_spaces() -> None:
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    (gpu,) = parse_nvlink_status(text, "tab").gpus
    assert [link.gbytes for link in gpu.links] == [26.562, None]


def test_a_line_that_is_no_link_becomes_the_gpus_note() -> None:
    text = "GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-y)\n\t NVML: Unable to retrieve NVLink information\n"
    (gpu,) = parse_nvlink_status(text, "note").gpus
    assert gpu.links == ()
    assert gpu.note == "NVML: Unable to retrieve NVLink information"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no `GPU"),
        ("\t Link 0: 26.562 GB/s\n", "before any GPU header"),
        ("GPU 0: X (UUID: a)\n\t Link 0: fast\n", "neither"),
        ("GPU 0: X (UUID: a)\n\t Link 0: 26.5 GB/s\n\t Link 0: 26.5 GB/s\n", "Link 0 is listed twice"),
        ("GPU 0: X (UUID: a)\nGPU 0: X (UUID: a)\n", "GPU 0 is listed twice"),
        ("GPU zero: X (UUID: a)\n", "not a `GPU"),
        ("No devices were found\n", "outside a GPU block"),
        ("GPU 0: X (UUID: a)\n\t Link 0: nan GB/s\n", "neither"),
    ],
)
def test_damaged_output_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_nvlink_status(text, "bad")


test_mutations_parse_or_refuse, test_hostile_text_parses_or_refuses = parse_or_refuse_tests(
    parse_nvlink_status, [H100, GB200, V100]
)


@pytest.mark.parametrize(("rc", "word"), [(0, "active"), (3, "inactive"), (3, "failed"), (3, "activating")])
def test_is_active_reads_the_state_word_whatever_the_exit(rc: int, word: str) -> None:
    assert parse_active_state(rc, word + "\n", "", "systemctl is-active nvidia-imex") == word


def test_is_active_without_a_state_word_is_refused_naming_what_it_said() -> None:
    with pytest.raises(ParseError, match="Failed to connect to bus"):
        parse_active_state(1, "", "Failed to connect to bus: No such file or directory\n", "is-active")
    with pytest.raises(ParseError, match="no unit state"):
        parse_active_state(0, "running\n", "", "is-active")
