"""`nvidia-smi -q` (text) -> per-GPU health records, replaying the real outputs of
tests/data/real/host/INDEX.tsv (an A10G on driver 535, an A100 excerpt with a pending row remap on 510,
`-q -d PAGE_RETIREMENT` of 8 GPUs with pending page retirements)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import parse_or_refuse_tests

from fabcheck.errors import ParseError
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q

HOST = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
A10G = (HOST / "nvidia-smi-q-a10g-535.txt").read_text()
A100 = (HOST / "nvidia-smi-q-a100-row-remap-pending-excerpt.txt").read_text()
RETIREMENT = (HOST / "nvidia-smi-q-d-page-retirement-8gpu-pending.txt").read_text()


def test_a_full_535_output_gives_persistence_ecc_and_row_remapping() -> None:
    query = parse_nvidia_smi_q(A10G, "a10g")
    assert query.driver_version == "535.247.01"
    (gpu,) = query.gpus
    assert (gpu.index, gpu.bus_id, gpu.name) == (0, "0000:00:1e.0", "NVIDIA A10G")
    assert gpu.persistence_mode is False  # `Persistence Mode : Disabled`
    assert gpu.ecc_enabled is True
    # 535 splits SRAM into Parity and SEC-DED; the aggregate DRAM Correctable 1 is not volatile
    assert dict(gpu.volatile_uncorrectable) == {
        "DRAM Uncorrectable": 0,
        "SRAM Uncorrectable Parity": 0,
        "SRAM Uncorrectable SEC-DED": 0,
    }
    assert (gpu.remap_pending, gpu.remap_failure) == (False, False)
    assert gpu.retirement_pending is None  # `Pending Page Blacklist : N/A`: Ampere remaps rows instead


def test_an_a100_with_a_row_remap_pending_on_driver_510() -> None:
    (gpu,) = parse_nvidia_smi_q(A100, "a100").gpus
    assert gpu.bus_id == "0000:10:1c.0"
    assert gpu.remap_pending is True
    assert gpu.remap_failure is False
    # 510 prints one SRAM Uncorrectable counter; the 177 correctable DRAM errors are not uncorrectable
    assert dict(gpu.volatile_uncorrectable) == {"DRAM Uncorrectable": 0, "SRAM Uncorrectable": 0}
    assert gpu.persistence_mode is None  # the excerpt does not show it: not shown is not "Disabled"


def test_page_retirement_display_of_eight_gpus_in_order() -> None:
    query = parse_nvidia_smi_q(RETIREMENT, "retirement")
    assert [gpu.index for gpu in query.gpus] == list(range(8))
    assert [gpu.bus_id for gpu in query.gpus][:2] == ["0001:00:00.0", "0002:00:00.0"]
    pending = [gpu.index for gpu in query.gpus if gpu.retirement_pending]
    assert pending == [1, 3, 5, 7]
    assert all(gpu.remap_pending is None for gpu in query.gpus)


def test_the_volta_double_bit_layout_is_read_unverified() -> None:
    """`Ecc Mode` and `Volatile > Double Bit > Total` as public docs show older drivers print them (no
    capture cited: docs/checks/bus.md lists the layout unverified)."""
    text = (
        "GPU 00000000:02:00.0\n    Ecc Mode\n        Current                     : Enabled\n"
        "    ECC Errors\n        Volatile\n            Single Bit            \n"
        "                Device Memory       : 0\n                Total               : 0\n"
        "            Double Bit            \n                Device Memory       : 2\n"
        "                Total               : 2\n"
    )
    (gpu,) = parse_nvidia_smi_q(text, "volta").gpus
    assert gpu.ecc_enabled is True
    assert dict(gpu.volatile_uncorrectable) == {"Double Bit": 2}


def test_an_uncorrectable_count_that_is_no_number_is_refused() -> None:
    text = A100.replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : lots", 1)
    with pytest.raises(ParseError, match="not a count"):
        parse_nvidia_smi_q(text, "bad")


def test_an_output_without_a_gpu_block_is_refused() -> None:
    with pytest.raises(ParseError, match="no GPU block"):
        parse_nvidia_smi_q("\n==============NVSMI LOG==============\n\nAttached GPUs : 0\n", "none")


def test_a_gpu_header_without_a_bus_id_is_refused() -> None:
    with pytest.raises(ParseError, match="PCI bus id"):
        parse_nvidia_smi_q("GPU banana\n    Persistence Mode : Enabled\n", "bad")


test_mutations_parse_or_refuse, test_hostile_text_parses_or_refuses = parse_or_refuse_tests(
    parse_nvidia_smi_q, [A10G, A100, RETIREMENT]
)


def test_a_line_over_the_line_cap_is_refused_naming_it() -> None:
    # Hypothesis found it: a 100 KB line of digits and tabs once took the key/value regex 15 s.
    with pytest.raises(ParseError, match="line is 100,120 characters long") as refused:
        parse_nvidia_smi_q("9" * 100 + "\t" * 100_020, "long")
    assert refused.value.line == 1


def test_a_colon_inside_the_value_stays_in_the_value() -> None:
    [gpu] = parse_nvidia_smi_q("GPU 00000000:18:00.0\n    Product Name    : A100: SXM4 :  80GB\n", "v").gpus
    assert gpu.name == "A100: SXM4 :  80GB"
