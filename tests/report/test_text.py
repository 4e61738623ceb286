"""The terminal report: grouped by node or by check, failures first, passes only with -v."""

from __future__ import annotations

import pytest
from reportdata import TRUST_FAIL, fabric_run

from fabcheck.checks.model import passed, skipped
from fabcheck.report import text
from fabcheck.report.model import NodeKind, Run, Subject


def test_by_node_failures_first_and_summary_last() -> None:
    lines = text.render(fabric_run()).splitlines()
    headers = [line for line in lines if not line.startswith(" ")]
    assert headers == [
        "FAIL  gpu02",
        "ERROR gpu03",  # only skips: nothing checked
        "ERROR gpu04",
        "PASS  gpu01",
        "FAIL: 4 host(s): 1 pass, 1 fail, 2 could not be checked",
    ]
    gpu02 = lines[1 : lines.index("ERROR gpu03")]
    # the failing findings of gpu02, failures first; its passes are not listed without -v
    assert [line for line in gpu02 if line.startswith("  FAIL")] == [
        "  FAIL  host.trust [mlx5_0]",
        "  FAIL  topo.gpu_nic_affinity [GPU1]",
        "  FAIL  link.pfc [gpu02:mlx5_0 <-> leaf01:swp2]",
    ]
    assert gpu02[1:4] == [
        "        expected: trust dscp",
        "        actual:   trust pcp",
        f"        hint:     {TRUST_FAIL.hint}",
    ]
    assert "  PASS" not in "\n".join(gpu02)
    assert gpu02[-1] == "  4/7 checks passed"
    assert "  skip  host.ecn_enable [mlx5_0]" in lines


def test_verbose_lists_passes_after_the_failures() -> None:
    lines = text.render(fabric_run(), verbose=True).splitlines()
    gpu02 = lines[1 : lines.index("ERROR gpu03")]
    marks = [line.split()[0] for line in gpu02 if line.startswith("  ") and not line.startswith("   ")]
    assert marks == ["FAIL"] * 3 + ["PASS"] * 4 + ["4/7"]


def test_by_check_groups_nodes_under_each_check() -> None:
    lines = text.render(fabric_run(), group_by="check").splitlines()
    headers = [line for line in lines if not line.startswith(" ")]
    # failing checks first, each check where it first appears in the run (gpu01's affinity is first)
    assert headers == [
        "FAIL  topo.gpu_nic_affinity",
        "FAIL  host.trust",
        "FAIL  link.pfc",
        "ERROR host.collection",
        "skip  host.ecn_enable",
        "PASS  host.pfc",
        "PASS  link.mtu",
        "FAIL: 4 host(s): 1 pass, 1 fail, 2 could not be checked",
    ]
    affinity = lines[lines.index("FAIL  topo.gpu_nic_affinity") + 1]
    assert affinity == "  FAIL  gpu02 [GPU1]"
    assert "  7/8 checks passed" in lines  # 8 GPU affinity findings over two hosts, one failed
    assert lines[-1].startswith("FAIL: 4 host(s)")


def test_a_check_skipped_everywhere_is_skip_not_error() -> None:
    run = Run(
        "validate",
        (Subject("a", NodeKind.HOST, (skipped("host.cnp", "mlx5_0", "IB"), passed("x", "y", "1", "1"))),),
    )
    assert "skip  host.cnp" in text.render(run, group_by="check").splitlines()


def test_files_show_their_kind_and_unknown_grouping_is_refused() -> None:
    run = Run("analyze", (Subject("t.txt", NodeKind.FILE, (passed("x", "y", "1", "1"),), label="topo"),))
    assert text.render(run).splitlines()[0] == "PASS  t.txt (topo)"
    assert text.render(run).splitlines()[-1] == "PASS: 1 file(s): 1 pass, 0 fail, 0 could not be checked"
    with pytest.raises(ValueError, match="group_by"):
        text.render(run, group_by="rack")
