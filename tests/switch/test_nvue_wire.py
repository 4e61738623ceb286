"""The mock NVUE switch's wire views, driven in-process and read back with fabcheck's own NVUE wire
parsers (fabcheck.parsers.switch_nvue_wire): the layouts are NVIDIA's samples' (tests/data/real/nvue),
a clean port counts nothing, `switch-link-errors` makes the first cabled port's effective (post-FEC)
errors rise, `switch-optic-hot` puts its module over the module's own high temperature warning, and a
view is refused in a release that does not have it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabcheck.collect.probes import collect
from fabcheck.collect.switch_probes import NVUE_WIRE_PROBES, RELEASE_READS
from fabcheck.errors import FabcheckError
from fabcheck.parsers.switch_nvue_wire import (
    parse_counters,
    parse_phy_detail,
    parse_phy_health,
    parse_transceiver,
)
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta, ModuleOptics
from fabcheck_lab import wire_model
from fabcheck_lab.mockswitch.nvue import NvueDevice
from fabcheck_lab.mockswitch.spec import SwitchSpec
from tests.switch.wiregate import wire_gate

REAL = Path(__file__).parent.parent / "data" / "real" / "nvue"
PORTS = ("swp1", "swp2", "swp3")
NEIGHBORS = (("swp2", "gpu01", "ens1np0"), ("swp3", "gpu02", "ens1np0"))  # swp2: the first cabled port


def device(release: str = "") -> NvueDevice:
    return NvueDevice(
        SwitchSpec("leaf01", "nvue", "127.0.3.1", 2201, "cumulus", "pw", PORTS, NEIGHBORS, release)
    )


def show(dev: NvueDevice, command: str) -> str:
    return dev.new_session("cumulus").handle(command)


def counters(dev: NvueDevice, port: str) -> LinkCounters:
    [(_, record)] = parse_counters(show(dev, f"nv show interface {port} counters"), port, "mock")
    [(_, phy)] = parse_phy_detail(show(dev, f"nv show interface {port} link phy-detail"), port, "mock")
    assert isinstance(record, LinkCounters) and isinstance(phy, LinkCounters)
    return record.merged(phy)


def optics(dev: NvueDevice, port: str) -> ModuleOptics:
    [(_, record)] = parse_transceiver(show(dev, f"nv show platform transceiver {port}"), port, "mock")
    assert isinstance(record, ModuleOptics)
    return record


def age(dev: NvueDevice, seconds: float) -> None:
    """Move every port's wire state (and running faults) `seconds` into the past."""
    for state in dev.wire.values():
        state["since"] -= seconds
        for entry in state.get("rates", {}).values():
            entry["since"] -= seconds


def table_keys(text: str) -> list[str]:
    return [line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith(("-", " "))]


def test_the_mock_prints_the_real_layouts() -> None:
    dev = device()
    mock = show(dev, "nv show interface swp1 counters")
    real = (REAL / "nv-show-interface-swp1-counters.txt").read_text()
    for section in ("Drop Counters", "Error Counters"):
        assert section in mock
    mock_rows = {line.strip().rsplit(None, 2)[0] for line in mock.splitlines() if line.startswith("    ")}
    real_rows = {line.strip().rsplit(None, 2)[0] for line in real.splitlines() if line.startswith("    ")}
    assert mock_rows <= real_rows  # each row is a real one (the packet sections are left out)
    phy = show(dev, "nv show interface swp1 link phy-detail")
    real_phy = table_keys((REAL / "nv-show-interface-swp1-link-phy-detail.txt").read_text())
    assert set(table_keys(phy)) <= set(real_phy)
    module = show(dev, "nv show platform transceiver swp1")
    real_module = (REAL / "nv-show-platform-transceiver-swp2.txt").read_text()
    # the sample's channel-1 block and module lines verbatim (its temperature-setpoint line is a setting)
    for line in real_module.splitlines():
        if "setpoint" not in line:
            assert line in module.splitlines(), line


def test_a_clean_port_counts_nothing_but_bits() -> None:
    dev = device()
    first = counters(dev, "swp2")
    age(dev, 5)
    later = counters(dev, "swp2")
    delta = later.since(first, 5)
    assert {name: n for name, n in delta.grown.items() if n} == {
        "received_bits": delta.grown["received_bits"]
    }
    assert delta.grown["received_bits"] > 0
    assert later.pre_fec_ber is None  # 15E-255
    module = optics(dev, "swp2")
    assert module.present and module.diagnostics
    assert module.media == "QSFP28 Active cable MFA1A00-C003"
    for reading in module.readings:
        assert reading.thresholds is not None and reading.value is not None
        assert reading.thresholds.low_warning is not None and reading.thresholds.high_warning is not None
        assert reading.thresholds.low_warning <= reading.value <= reading.thresholds.high_warning


def test_switch_link_errors_raise_effective_errors_on_the_first_cabled_port() -> None:
    dev = device()
    dev.inject("switch-link-errors")
    assert dev.wire_fault_port() == "swp2"
    first = {port: counters(dev, port) for port in PORTS}
    age(dev, 2)
    grown = {port: counters(dev, port).since(first[port], 2).grown for port in PORTS}
    assert (
        grown["swp2"]["fec_uncorrectable"]
        >= 2 * wire_model.FAULT_RATES["switch-link-errors"]["fec_uncorrectable"] - 1
    )
    assert grown["swp1"]["fec_uncorrectable"] == 0 and grown["swp3"]["fec_uncorrectable"] == 0
    assert all(grown[port]["fcs_errors"] == 0 for port in PORTS)
    phy = show(dev, "nv show interface swp2 link phy-detail")
    assert "effective-ber              15E-255" not in phy  # the rate the errors make
    dev.heal("switch-link-errors")
    healed = counters(dev, "swp2")
    age(dev, 2)
    assert counters(dev, "swp2").since(healed, 2).grown["fec_uncorrectable"] == 0  # stops, keeps the count
    assert healed.values["fec_uncorrectable"] > 0


def test_switch_optic_hot_is_over_the_modules_own_high_warning() -> None:
    dev = device()
    dev.inject("switch-optic-hot")
    [hot] = optics(dev, "swp2").of("temperature")
    assert hot.thresholds is not None and hot.thresholds.high_warning == 70.0
    assert hot.value is not None and hot.value > hot.thresholds.high_warning
    [cool] = optics(dev, "swp3").of("temperature")
    assert cool.value == 42.56
    dev.heal("switch-optic-hot")
    [healed] = optics(dev, "swp2").of("temperature")
    assert healed.value == 42.56


@pytest.mark.parametrize(
    ("release", "command", "refused"),
    [
        ("5.4.0", "nv show interface swp1 counters", True),  # counters from CL 5.5
        ("5.9.0", "nv show interface swp1 link phy-detail", True),  # phy-detail from CL 5.10
        ("5.15.0", "nv show interface swp1 link phy-detail", True),  # renamed phy health in CL 5.15
        ("5.15.0", "nv show interface swp1 link phy health", False),
        ("5.14.0", "nv show interface swp1 link phy health", True),
        ("5.10.0", "nv show platform transceiver swp1", True),  # platform transceiver <id> from CL 5.11
        ("5.11.0", "nv show platform transceiver swp9", True),  # no such port
    ],
)
def test_a_view_outside_its_releases_is_refused(release: str, command: str, refused: bool) -> None:
    shown = show(device(release), command)
    assert shown.startswith("Error:") == refused, shown


def test_json_forms_carry_the_same_counts() -> None:
    dev = device()
    dev.inject("switch-link-errors")
    age(dev, 1)
    data = json.loads(show(dev, "nv show interface swp2 link phy-detail -o json"))
    assert int(data["effective-errors"]) > 0
    assert json.loads(show(dev, "nv show interface swp2 counters -o json"))["carrier-transitions"] == 2


def test_the_gate_probes_read_the_mock() -> None:
    dev = device()
    dev.inject("switch-optic-hot")
    session = dev.new_session("cumulus")
    probes = [
        probe
        for probe in NVUE_WIRE_PROBES
        if probe.name in ("nvue.counters", "nvue.phy_detail", "nvue.transceiver")
    ]
    assert len(probes) == 3
    collected = collect(
        session.handle, probes, ["swp2"], "leaf01", 1, lambda _s: None, release_read=RELEASE_READS["nvue"]
    )
    assert collected.errors == []
    assert isinstance(collected.records[(LinkDelta, "swp2")], LinkDelta)  # the two readings' delta
    module = collected.records[(ModuleOptics, "swp2")]
    assert isinstance(module, ModuleOptics)
    [hot] = module.of("temperature")
    assert hot.value is not None and hot.value > 70.0
    assert [output.command for output in collected.outputs].count("nv show interface swp2 counters") == 2


WINDOW_S = 0.3  # the gate's counter window here: switch-link-errors counts 500 blocks a second


def gate_findings(device: NvueDevice) -> set[tuple[str, str, str]]:
    """What the gate's own NVUE probes (the post-FEC view by the mock's release) say about the mock."""
    session = device.new_session("cumulus")
    failing, collected = wire_gate("nvue", session.handle, "leaf01:swp1", WINDOW_S, RELEASE_READS["nvue"])
    post_fec = collected.records[(LinkDelta, "swp1")]
    assert isinstance(post_fec, LinkDelta) and "fec_uncorrectable" in post_fec.reading.values
    return failing


@pytest.mark.parametrize("release", ["", "5.15.0"])  # the mock's default (phy-detail); phy health
@pytest.mark.parametrize(
    ("fault", "failing"),
    [
        (None, set()),
        ("switch-link-errors", {("switch.link_errors", "leaf01:swp1", "fail")}),
        ("switch-optic-hot", {("switch.optics", "leaf01:swp1", "fail")}),
    ],
)
def test_each_wire_fault_fails_exactly_its_check_at_the_cabled_port(
    fault: str | None, failing: set, release: str
) -> None:
    """The converged in-process mock (the driver's own push), gpu01 cabled to swp1: each wire fault
    fails exactly its check there and nothing else; healed, everything passes again. On CL 5.15 the
    post-FEC errors come from `link phy health`, the view's new name."""
    from tests.invariant.harness import PORTS as FABRIC_PORTS
    from tests.invariant.harness import repush

    spec = SwitchSpec(
        "leaf01",
        "nvue",
        "127.0.3.1",
        2201,
        "cumulus",
        "pw",
        FABRIC_PORTS["nvue"],
        (("swp1", "gpu01", "ens1np0"),),
        release,
    )
    dev = NvueDevice(spec)
    repush("nvue", dev)
    if fault is not None:
        dev.inject(fault)
    assert gate_findings(dev) == failing
    if fault is not None:
        dev.heal(fault)
        assert gate_findings(dev) == set()


def test_the_mock_prints_cl515s_phy_health_layout() -> None:
    """CL 5.15's `link phy health` (NVIDIA's 5.15 sample): the mock's rows are real rows in their order,
    and fabcheck's parser reads the same counts from it as from 5.14's phy-detail."""
    dev = device("5.15.0")
    dev.inject("switch-link-errors")
    age(dev, 1)
    health = show(dev, "nv show interface swp2 link phy health")
    real = table_keys((REAL / "nv-show-interface-swp1-link-phy-health.txt").read_text())
    mock = table_keys(health)
    assert mock == [key for key in real if key in mock] and len(mock) == 7
    [(_, record)] = parse_phy_health(health, "swp2", "mock")
    assert isinstance(record, LinkCounters) and record.values["fec_uncorrectable"] > 0
    assert record.native["fec_uncorrectable"] == "effective-errors"


@pytest.mark.parametrize(
    ("release", "sent"),
    [
        ("5.9.0", None),  # before CL 5.10: no post-FEC view at all
        ("5.14.0", "nv show interface swp2 link phy-detail"),
        ("5.15.0", "nv show interface swp2 link phy health"),
        ("5.16.0", "nv show interface swp2 link phy health"),
    ],
)
def test_the_post_fec_probe_follows_the_switchs_release(release: str, sent: str | None) -> None:
    """The release `nv show system` names picks the PHY view's name, once per session: the other name
    is never sent, and a release without the view is not asked (no error; the record lacks the post-FEC
    counters, so switch.link_errors judges only what the counters view shows)."""
    dev = device(release)
    session = dev.new_session("cumulus")
    collected = collect(
        session.handle,
        NVUE_WIRE_PROBES,
        ["swp2"],
        "leaf01",
        1,
        lambda _s: None,
        release_read=RELEASE_READS["nvue"],
    )
    commands = [output.command for output in collected.outputs]
    assert commands[0] == "nv show system"
    assert [c for c in commands if "link phy" in c] == ([] if sent is None else [sent, sent])
    # `platform transceiver <id>` is from CL 5.11: a 5.9 switch is not asked it either (no error), and
    # its ModuleOptics are named as not in that release (switch.optics: a skip, not "not read")
    assert collected.errors == []
    transceiver = [c for c in commands if "platform transceiver" in c]
    assert transceiver == ([] if sent is None else ["nv show platform transceiver swp2"])
    assert list(collected.not_in_release) == ([ModuleOptics] if sent is None else [])
    delta = collected.records[(LinkDelta, "swp2")]
    assert isinstance(delta, LinkDelta)
    assert ("fec_uncorrectable" in delta.reading.values) == (sent is not None)


def test_a_release_the_switch_does_not_name_sends_no_bound_probe() -> None:
    """`nv show system` unanswerable (NVUE before CL 5.2, or a replay without it): an error naming the
    release read, neither PHY view sent, the rest read."""
    dev = device("5.14.0")
    session = dev.new_session("cumulus")

    def run(command: str) -> str:
        if command == "nv show system":
            raise FabcheckError("Error: Invalid Command: nv show system")
        return session.handle(command)

    collected = collect(
        run, NVUE_WIRE_PROBES, ["swp2"], "leaf01", 1, lambda _s: None, release_read=RELEASE_READS["nvue"]
    )
    [error] = collected.errors
    assert error.probe == "nvue.release" and set(error.provides) == {LinkDelta, ModuleOptics}
    assert (ModuleOptics, "swp2") not in collected.records  # its probe is bound to releases: not sent
    assert "not sent" in error.reason
    assert not any("link phy" in output.command for output in collected.outputs)
    assert isinstance(collected.records[(LinkDelta, "swp2")], LinkDelta)
