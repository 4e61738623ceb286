"""The five NVLink host probes (issue 38): the exact commands the collection runs and the records read
back from their sections, replaying the real outputs of tests/data/real/nvlink/INDEX.tsv."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect.host import PROBES_BY_NAME, Unreadable, read_section, section_command
from fabcheck.collect.script import Section
from fabcheck.parsers.nvlink_records import ImexStatus, NvlinkStatus

NVLINK = Path(__file__).resolve().parents[1] / "data" / "real" / "nvlink"


@pytest.mark.parametrize(
    ("probe", "command"),
    [
        (collect.NVLINK_STATUS, "nvidia-smi nvlink -s"),
        (collect.IMEX_ACTIVE, "systemctl is-active nvidia-imex"),
        (collect.IMEX_NODES, "cat /etc/nvidia-imex/nodes_config.cfg"),
        (collect.IMEX_STATUS, "nvidia-imex-ctl -N"),
        (collect.FABRIC_MANAGER_ACTIVE, "systemctl is-active nvidia-fabricmanager"),
    ],
)
def test_each_probe_runs_its_fixed_command_once_per_host(probe: str, command: str) -> None:
    assert PROBES_BY_NAME[probe].scope == "host"
    assert section_command(probe, 3) == command
    assert f'section "{probe}"' in collect.COLLECT_SCRIPT


def _read(probe: str, section: Section) -> object:
    return read_section(PROBES_BY_NAME[probe], {probe: section}, "", 3)


def test_nvlink_status_is_read_into_its_record() -> None:
    text = (NVLINK / "nvidia-smi-nvlink-s-h100-2gpu-excerpt.txt").read_text()
    record = _read(collect.NVLINK_STATUS, Section(0, text))
    assert isinstance(record, NvlinkStatus)
    assert [len(gpu.links) for gpu in record.gpus] == [18, 18]


def test_an_nvlink_status_that_fails_is_unreadable_naming_the_command() -> None:
    record = _read(
        collect.NVLINK_STATUS, Section(9, "", "NVIDIA-SMI has failed because it couldn't communicate")
    )
    assert isinstance(record, Unreadable)
    assert record.command == "nvidia-smi nvlink -s"
    assert "exit 9" in record.reason


@pytest.mark.parametrize("probe", [collect.IMEX_ACTIVE, collect.FABRIC_MANAGER_ACTIVE])
@pytest.mark.parametrize(("rc", "word"), [(0, "active"), (3, "inactive"), (3, "failed")])
def test_is_active_is_an_answer_whatever_its_exit(probe: str, rc: int, word: str) -> None:
    assert _read(probe, Section(rc, word + "\n")) == word


def test_is_active_without_a_word_is_unreadable() -> None:
    record = _read(collect.IMEX_ACTIVE, Section(1, "", "System has not been booted with systemd\n"))
    assert isinstance(record, Unreadable)
    assert "System has not been booted with systemd" in record.reason


def test_imex_nodes_config_is_the_address_list_and_an_absent_file_is_unreadable() -> None:
    text = (NVLINK / "imex-nodes-config-4-trays.cfg").read_text()
    assert _read(collect.IMEX_NODES, Section(0, text)) == (
        "172.27.58.70",
        "172.27.58.71",
        "172.27.58.72",
        "172.27.58.73",
    )
    missing = Section(1, "", "cat: /etc/nvidia-imex/nodes_config.cfg: No such file or directory\n")
    record = _read(collect.IMEX_NODES, missing)
    assert isinstance(record, Unreadable)
    assert "No such file or directory" in record.reason


def test_imex_status_is_read_and_an_absent_tool_is_none() -> None:
    text = (NVLINK / "nvidia-imex-ctl-N-2-nodes-gh200-570.txt").read_text()
    record = _read(collect.IMEX_STATUS, Section(0, text))
    assert isinstance(record, ImexStatus)
    assert record.domain_state == "UP"
    # optional tool: not installed (exit 127) is the answer None, never an error of the collection
    assert _read(collect.IMEX_STATUS, Section(127, "", "nvidia-imex-ctl: not found\n")) is None


def test_imex_status_of_a_stopped_daemon_is_unreadable() -> None:
    record = _read(collect.IMEX_STATUS, Section(1, "", "Connection refused\n"))
    assert isinstance(record, Unreadable)
    assert record.command == "nvidia-imex-ctl -N"
