"""The check catalog: one entry per declared check (host, fleet, switch, link), `--checks`/`--skip`
selection with globs, and the docs' host table (docs/checks/host.md), which must equal the one generated
from the declarations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabcheck.checks import as_planned, host, ib, link, link_health, sm, switch, uplinks
from fabcheck.checks.model import errored, failed, passed
from fabcheck.cli import main
from fabcheck.cli import validate as validate_cli
from fabcheck.errors import UsageError
from fabcheck.gate import catalog
from fabcheck.gate.fabric import GateResult
from fabcheck.gate.host_stage import HostResult
from fabcheck.gate.stages import NodeOutcome, StageOutcome
from fabcheck.report.model import NodeKind

CHECKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "checks" / "host.md"


def test_every_declared_check_is_listed_once_in_declaration_order() -> None:
    ids = catalog.known_ids()
    assert len(ids) == len(set(ids))
    assert ids == (
        *host.HOST_CHECKS,
        *host.FLEET_CHECKS,
        *switch.SWITCH_CHECK_IDS,
        *link.LINK_CHECKS,
        *(check.id for check in link_health.LINK_HEALTH_CHECK_DECLS),
        uplinks.SWITCH_LLDP,
        as_planned.LINK_AS_PLANNED,
        *sm.SM_CHECKS,
        *ib.IB_CHECKS,
        as_planned.IB_AS_PLANNED,
    )
    assert all(entry.summary and entry.reads and entry.fixed_by for entry in catalog.catalog())


def test_globs_select_and_skip() -> None:
    chosen = catalog.selection("host.*,link.pfc", "host.versions")
    assert chosen.keeps(host.PFC) and chosen.keeps(link.PFC)
    assert not chosen.keeps(switch.PFC) and not chosen.keeps(host.VERSIONS)
    assert not chosen.keeps(host.AFFINITY)  # topo.gpu_nic_affinity is not host.*
    assert catalog.selection(None, "switch.*").keeps(host.TRUST)
    assert catalog.EVERY_CHECK.keeps(switch.ECN)


def test_a_node_that_could_not_be_read_is_kept_whatever_is_selected() -> None:
    chosen = catalog.selection("switch.pfc", None)
    assert chosen.keeps("host.collection") and chosen.keeps("host.inventory")


@pytest.mark.parametrize(("checks", "skip"), [("host.nope", None), (None, "sw*ch.x,host.pfc"), (",", None)])
def test_a_pattern_that_names_no_check_is_a_usage_error_listing_the_known_ones(
    checks: str | None, skip: str | None
) -> None:
    with pytest.raises(UsageError) as raised:
        catalog.selection(checks, skip)
    assert "known checks: host.rdma_device, " in str(raised.value) and "link.cabled" in str(raised.value)


def test_validate_refuses_an_unknown_check_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["validate", "-i", "inventory/lab", "--checks", "host.nope"])
    assert raised.value.code == 2
    assert "'host.nope' matches no check; known checks: host.rdma_device" in capsys.readouterr().err


def test_the_selection_filters_every_stage_and_drops_nodes_left_with_nothing() -> None:
    hosts = (
        HostResult(
            "gpu01", (passed(host.PFC, "mlx5_0", "x", "x"), failed(host.TRUST, "mlx5_0", "x", "y", "h"))
        ),
        HostResult("gpu02", (errored("host.collection", "gpu02", "x", "down", "h"),)),
        HostResult("gpu03", (passed(host.TRUST, "mlx5_0", "x", "x"),)),
    )
    links = (NodeOutcome("gpu01", NodeKind.HOST, (failed(link.PFC, "gpu01:mlx5_0", "x", "y", "h"),)),)
    result = GateResult((StageOutcome("host", hosts), StageOutcome("link", links)))
    chosen = validate_cli._selected(result, catalog.selection("host.pfc", None))
    assert [(h.host, [f.check for f in h.findings]) for h in chosen.hosts] == [
        ("gpu01", [host.PFC]),
        ("gpu02", ["host.collection"]),
    ]
    assert chosen.outcome("link") == StageOutcome("link", ())
    assert validate_cli._selected(result, catalog.EVERY_CHECK) is result


def _page_table(name: str) -> str:
    text = CHECKS_PAGE.read_text()
    found = re.search(rf"<!-- checks:{name} [^\n]*-->\n(.*?)<!-- /checks:{name} -->", text, re.S)
    assert found, f"docs/checks/host.md has no generated {name} check table"
    return found.group(1)


def test_the_docs_host_table_is_the_generated_one() -> None:
    """Regenerate with `scripts/gen_docs` after changing a declaration."""
    assert _page_table("host") == catalog.markdown(catalog.TABLES["host"])


def test_the_catalog_command_prints_ids_and_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert catalog.main([]) == 0
    assert capsys.readouterr().out.splitlines() == list(catalog.known_ids())
    assert catalog.main(["--markdown", "switch"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| check | per |") and "`switch.ecn`" in table and "`link.cabled`" in table


def test_subnet_manager_checks_are_listed_and_plugged_stages_own_their_prefix() -> None:
    assert set(sm.SM_CHECKS) <= set(catalog.known_ids())
    assert catalog.stage_namespaces() == ("nccl", "perftest", "incast", "extra")
    assert catalog.selection(None, "incast.*").keeps("incast.stage")  # never dropped
    assert catalog.patterns("nccl.*,perftest.host,sm.master", "--checks")
    chosen = catalog.selection("host.*", None)
    assert not chosen.keeps("nccl.rank_transport") and not chosen.keeps("sm.master")
    # A stage that could not run is reported whatever is selected.
    assert chosen.keeps("nccl.stage") and chosen.keeps("perftest.stage")
    assert not catalog.selection(None, "perftest.*").keeps("perftest.host")
    with pytest.raises(UsageError, match=r"'ncc\.x' matches no check"):
        catalog.patterns("ncc.x", "--checks")
