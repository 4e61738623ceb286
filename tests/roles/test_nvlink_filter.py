"""The role nvlink's filter reads NVLink domains from exactly one inventory source: several sources (the
domains could be groups of any of them) are refused, naming them, before anything is written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

REPO = Path(__file__).parents[2]


def load_filter() -> object:
    spec = importlib.util.spec_from_file_location(
        "fabcheck_nvlink", REPO / "plugins/filter/fabcheck_nvlink.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fabcheck_nvlink_hosts


def test_two_inventory_sources_are_refused_naming_both() -> None:
    nvlink_hosts = load_filter()
    with pytest.raises(AnsibleFilterError, match=r"one inventory source; this run has 2 \(a\.yml, b\.yml\)"):
        nvlink_hosts(["a.yml", "b.yml"])  # type: ignore[operator]


def test_one_source_in_a_list_reads_its_domains() -> None:
    nvlink_hosts = load_filter()
    desired = nvlink_hosts([str(REPO / "inventory" / "example-nvl")])  # type: ignore[operator]
    racks = {record["domain"] for record in desired.values()}
    assert len(racks) == 2 and all(len(record["members"]) == 2 for record in desired.values()), desired
