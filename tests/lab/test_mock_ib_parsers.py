"""The lab's two views of one InfiniBand fabric agree once parsed, in process (no lab start): what the
mock `iblinkinfo --line` prints (fabcheck_lab.ib_fabric) pairs into the same cables, at the same width
and speed on both ends, as what the mock `ibnetdiscover -p` prints, healthy and under each lab fault; the
mock `perfquery -x` reads back the counters the model grows (ib-symbol-errors)."""

from __future__ import annotations

import pytest

from fabcheck.parsers.ib_records import IbLink, IbTopology
from fabcheck.parsers.iblinkinfo import parse_iblinkinfo_lines
from fabcheck.parsers.ibnetdiscover import parse_ibnetdiscover_ports
from fabcheck.parsers.perfquery import parse_perfquery_counters
from fabcheck_lab import ib_fabric as model

T0 = 1000.0


def lab_fabric() -> model.Fabric:
    return model.two_tier(model.modelled_hcas(4, per_host=1), leaves=2, spines=2)


Cable = tuple[frozenset[tuple[str, int]], frozenset[tuple[tuple[str, int], str | None, str | None]]]


def cables(topology: IbTopology) -> set[Cable]:
    """Each link as its two (description, port) ends and what each end reported, order-free."""

    def seen(link: IbLink) -> Cable:
        a, b = (link.a.description, link.a.port), (link.b.description, link.b.port)
        return frozenset((a, b)), frozenset(
            ((a, link.width_a, link.speed_a), (b, link.width_b, link.speed_b))
        )

    return {seen(link) for link in topology.links()}


@pytest.mark.parametrize("fault", [None, *model.FAULTS])
def test_iblinkinfo_and_ibnetdiscover_show_the_same_cables(fault: str | None) -> None:
    fabric = lab_fabric()
    if fault is not None:
        fabric = model.with_fault(fabric, fault, "leaf01", T0)
    discovered = parse_ibnetdiscover_ports(model.render_ibnetdiscover_ports(fabric), "ibnetdiscover")
    linked = parse_iblinkinfo_lines(model.render_iblinkinfo_line(fabric), "iblinkinfo")
    assert cables(linked) == cables(discovered)
    assert len(discovered.links()) == len(fabric.cables)  # the model drops an unplugged cable itself
    # every switch port iblinkinfo shows is a switch in ibnetdiscover too (iblinkinfo prints no node type)
    kinds = {end.key: end.kind for end in discovered.ends()}
    assert {end.key for end in linked.ends() if end.kind == "SW"} <= {
        k for k, v in kinds.items() if v == "SW"
    }


def test_an_unplugged_uplink_is_one_link_fewer_in_both_views() -> None:
    healthy = len(parse_iblinkinfo_lines(model.render_iblinkinfo_line(lab_fabric())).links())
    unplugged = model.with_fault(lab_fabric(), "ib-link-missing", "leaf01", T0)
    assert len(parse_iblinkinfo_lines(model.render_iblinkinfo_line(unplugged)).links()) == healthy - 1


def test_perfquery_reads_the_symbol_errors_the_model_grows() -> None:
    fabric = model.with_fault(lab_fabric(), "ib-symbol-errors", "leaf01", T0)
    leaf = next(s for s in fabric.switches if s.name == "leaf01")
    grown = {
        port: counts["SymbolErrorCounter"]
        for (node, port), counts in model.counters_at(fabric, T0 + 60).items()
        if node == "leaf01" and counts.get("SymbolErrorCounter")
    }
    assert grown, "the fault grows symbol errors on a leaf01 port"
    (port, count), *_ = grown.items()
    text = model.render_perfquery_extended(fabric, leaf.lid, port, T0 + 60, 60.0)
    assert text is not None
    (counters,) = parse_perfquery_counters(text, "perfquery -x", "0x0", "leaf01")
    assert (counters.port, counters.counts["SymbolErrorCounter"]) == (port, count)
