"""The mock NIC's wire (issue 35), in process (no lab, no subprocess): `ethtool -S` prints the mlx5
*_phy counters of fabcheck_lab.wire_model, `ethtool [-I] --show-fec` its FEC, `ethtool -m` a cited real
module with its own thresholds; the host faults link-errors, link-flap and optic-rx-low move them on the
first rail NIC only, and heal stops them keeping what was counted. Every output is read back with the
product's own parsers."""

from __future__ import annotations

from pathlib import Path

import pytest
from mocknode import node_of, prepared

from fabcheck.errors import UsageError
from fabcheck.parsers.ethtool_fec import parse_fec
from fabcheck.parsers.ethtool_module import parse_module
from fabcheck.parsers.ethtool_phy import parse_link_counters
from fabcheck.parsers.ethtool_stats import parse_ethtool_stats
from fabcheck.parsers.wire_records import LinkCounters, Thresholds
from fabcheck_lab import wire_model
from fabcheck_lab.mockhost import HOST_FAULTS, heal, inject
from fabcheck_lab.mockhost.faults import WIRE_FAULTS, active_faults
from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.tools import netdev, wire
from fabcheck_lab.mockhost.tools.common import ToolError

REAL_MODULE = (
    Path(__file__).resolve().parents[1] / "data/real/host/ethtool-m-qsfp-plus-40g-sr4-avago-thresholds.txt"
)
FAULTED, CLEAN = "ens1np0", "ens2np0"  # the first rail NIC (mlx5_0) and its neighbour


@pytest.fixture
def paths(tmp_path: Path) -> MockNodePaths:
    return prepared(tmp_path)


def ethtool(paths: MockNodePaths, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert netdev.ethtool(node_of(paths), list(args)) == 0
    return capsys.readouterr().out


def counters(paths: MockNodePaths, capsys: pytest.CaptureFixture[str], dev: str) -> LinkCounters:
    return parse_link_counters(ethtool(paths, capsys, "-S", dev), f"ethtool -S {dev}").merged(
        parse_fec(ethtool(paths, capsys, "-I", "--show-fec", dev), f"ethtool -I --show-fec {dev}")
    )


def shift_clock(paths: MockNodePaths, dev: str, seconds: float) -> None:
    """Age the port's wire state by `seconds`: as if that long had passed since the fault started."""
    node = node_of(paths)
    state = wire.wire_state(node, dev)
    state["since"] -= seconds
    for entry in state["rates"].values():
        entry["since"] -= seconds
    wire.save_wire_state(node, dev, state)


def test_a_clean_port_prints_every_phy_counter_and_counts_only_bits(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    text = ethtool(paths, capsys, "-S", CLEAN)
    (block,) = parse_ethtool_stats(text, "ethtool -S").values()
    assert {"rx_prio3_pause", "np_cnp_sent", "rx_out_of_buffer"} <= set(
        block.counters
    )  # incast's still there
    before = counters(paths, capsys, CLEAN)
    assert set(before.values) == {
        "fcs_errors",
        "symbol_errors",
        "uncorrected_symbols",
        "corrected_bits",
        "received_bits",
        "link_down",
        "rx_discards",
        "tx_discards",
        "rx_out_of_buffer",
        "fec_corrected",
        "fec_uncorrectable",
    }
    assert before.values["link_down"] == 1 and before.fec_mode == "RS"
    shift_clock(paths, CLEAN, 2.0)
    delta = counters(paths, capsys, CLEAN).since(before, 2.0)
    assert {name: grown for name, grown in delta.grown.items() if grown} == {
        "received_bits": pytest.approx(2 * wire_model.LINE_BITS_PER_S, rel=0.01)
    }
    assert delta.pre_fec_ber == 0.0


def test_the_fec_view_has_statistics_only_with_include_statistics(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = ethtool(paths, capsys, "--show-fec", CLEAN)
    assert (
        plain
        == f"FEC parameters for {CLEAN}:\nSupported/Configured FEC encodings: RS\nActive FEC encoding: RS\n"
    )
    assert parse_fec(plain, "fec").values == {}
    with_stats = ethtool(paths, capsys, "--include-statistics", "--show-fec", CLEAN)
    assert "Statistics:\n  corrected_blocks: 0\n  uncorrectable_blocks: 0\n" in with_stats


def test_the_module_is_the_cited_real_module_lit_on_four_lanes(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    text = ethtool(paths, capsys, "-m", CLEAN)
    real = REAL_MODULE.read_text().splitlines()
    mock = text.splitlines()
    assert len(mock) == len(real)
    # label by label the same; values the same wherever the real module's lane 1 or thresholds speak
    assert [line.split(":")[0].strip() for line in mock] == [line.split(":")[0].strip() for line in real]
    changed = [m.strip() for m, r in zip(mock, real, strict=True) if m.strip() != r.strip()]
    assert len(changed) == 9 and all(
        line.split(":")[0].rstrip().endswith(("2)", "3)", "4)")) for line in changed
    )
    assert all(
        line.endswith(("6.662 mA", "0.7119 mW / -1.48 dBm", "0.7682 mW / -1.15 dBm")) for line in changed
    )
    optics = parse_module(text, "ethtool -m")
    real_optics = parse_module(REAL_MODULE.read_text(), "real")
    assert optics.diagnostics and optics.media == real_optics.media
    assert [r.value for r in optics.of("rx_power")] == [-1.15] * 4
    assert optics.of("rx_power")[0].thresholds == real_optics.of("rx_power")[0].thresholds
    assert optics.of("temperature") == real_optics.of("temperature")
    assert [r.thresholds for r in optics.of("tx_power")] == [None] * 4


def test_link_errors_raise_crc_and_symbol_errors_on_the_first_rail_nic_only(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    inject(paths, "link-errors")
    before = {dev: counters(paths, capsys, dev) for dev in (FAULTED, CLEAN)}
    for dev in (FAULTED, CLEAN):
        shift_clock(paths, dev, 2.0)
    grown = {dev: counters(paths, capsys, dev).since(before[dev], 2.0).grown for dev in (FAULTED, CLEAN)}
    rates = wire_model.FAULT_RATES["link-errors"]
    assert grown[FAULTED]["fcs_errors"] >= rates["fcs_errors"] and grown[FAULTED]["symbol_errors"] >= 2000
    assert grown[FAULTED]["link_down"] == 0 and grown[FAULTED]["fec_uncorrectable"] == 0
    assert grown[CLEAN]["fcs_errors"] == 0 and grown[CLEAN]["symbol_errors"] == 0
    assert node_of(paths).read_sys(f"net/{FAULTED}/operstate") == "up"
    heal(paths)
    assert active_faults(paths) == []
    healed = counters(paths, capsys, FAULTED)
    shift_clock(paths, FAULTED, 5.0)
    after = counters(paths, capsys, FAULTED)
    assert healed.values["fcs_errors"] >= rates["fcs_errors"] * 2  # heal keeps what was counted
    assert after.since(healed, 5.0).grown["fcs_errors"] == 0  # and nothing more is counted


def test_link_flap_counts_down_events_and_keeps_the_port_up(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    sysfs_before = {rel: node_of(paths).read_sys(f"net/{FAULTED}/{rel}") for rel in ("operstate", "carrier")}
    inject(paths, "link-flap")
    before = counters(paths, capsys, FAULTED)
    shift_clock(paths, FAULTED, 6.0)  # one flap every 2 s (fabcheck_lab.wire_model.FAULT_RATES)
    grown = counters(paths, capsys, FAULTED).since(before, 6.0).grown
    assert grown["link_down"] >= 3 and grown["fcs_errors"] == 0
    assert {rel: node_of(paths).read_sys(f"net/{FAULTED}/{rel}") for rel in sysfs_before} == sysfs_before
    heal(paths, "link-flap")
    assert counters(paths, capsys, FAULTED).values["link_down"] >= 4


def test_optic_rx_low_puts_rx_power_under_the_modules_low_alarm(
    paths: MockNodePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    inject(paths, "optic-rx-low")
    text = ethtool(paths, capsys, "-m", FAULTED)
    optics = parse_module(text, "ethtool -m")
    low_alarm = Thresholds(3.40, 2.40, -9.50, -13.51).low_alarm
    assert low_alarm is not None
    assert [r.value for r in optics.of("rx_power")] == [round(low_alarm - 3.0, 2)] * 4
    assert "Laser rx power low alarm    (Channel 1)   : On" in text
    assert [r.value for r in parse_module(ethtool(paths, capsys, "-m", CLEAN), "m").of("rx_power")] == [
        -1.15
    ] * 4
    assert counters(paths, capsys, FAULTED).values["fcs_errors"] == 0  # no counter moves
    heal(paths, "optic-rx-low")
    assert [r.value for r in parse_module(ethtool(paths, capsys, "-m", FAULTED), "m").of("rx_power")] == [
        -1.15
    ] * 4


def test_the_wire_faults_are_host_faults_and_an_injected_one_is_not_started_twice(
    paths: MockNodePaths,
) -> None:
    assert set(WIRE_FAULTS) <= set(HOST_FAULTS)
    inject(paths, "link-errors")
    started = wire.wire_state(node_of(paths), FAULTED)["rates"]["link-errors"]["since"]
    inject(paths, "link-errors")
    assert wire.wire_state(node_of(paths), FAULTED)["rates"]["link-errors"]["since"] == started
    with pytest.raises(UsageError, match="unknown host fault"):
        inject(paths, "link-error")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m"], "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n"),
        (["-m", "ens9np0"], "netlink error: no device matches name (ens9np0)\n"),
        (["--show-fec", "ens9np0"], "netlink error: no device matches name (ens9np0)\n"),
        (["--show-fec", CLEAN, "encoding"], "ethtool: unexpected parameter 'encoding'\n"),
        (["-I"], "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n"),
        (
            ["--show-fecs", CLEAN],
            "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n",
        ),
    ],
)
def test_what_real_ethtool_refuses_is_refused(paths: MockNodePaths, args: list[str], message: str) -> None:
    with pytest.raises(ToolError) as refused:
        netdev.ethtool(node_of(paths), args)
    assert refused.value.message == message and refused.value.code == 1
