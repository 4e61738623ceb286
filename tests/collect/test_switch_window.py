"""fabcheck.collect.probes.collect over a counter window: every counter probe read first, the rest of the
window waited out, then every probe read (the counters again); a port's LinkCounters of every counter
view merged per reading and made its LinkDelta; QueueDrops the difference as before; anything else a
counter probe yields comes from the later reading. Run on a scripted session and clock."""

from __future__ import annotations

import json

from fabcheck.collect.probes import Placed, Probe, collect
from fabcheck.errors import ParseError
from fabcheck.parsers.switch_records import Mtu, QueueDrops
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta, ModuleOptics


class Session:
    """Answers each command with its next scripted reading; the clock advances a second per command."""

    def __init__(self, readings: dict[str, list[dict[str, int]]]) -> None:
        self.readings = {command: list(values) for command, values in readings.items()}
        self.sent: list[str] = []
        self.now = 100.0
        self.waited: list[float] = []

    def run(self, command: str) -> str:
        self.sent.append(command)
        self.now += 1
        return json.dumps(self.readings[command].pop(0))

    def wait(self, seconds: float) -> None:
        self.waited.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _errors(text: str, port: str | None, _source: str) -> list[Placed]:
    values = json.loads(text)
    return [(port, LinkCounters({"fcs_errors": values["fcs"]}, {"fcs_errors": "fcsErrors"}))]


def _fec(text: str, port: str | None, source: str) -> list[Placed]:
    values = json.loads(text)
    if "unc" not in values:
        raise ParseError("no FEC counters", source=source)
    # A FEC view that also says the port's MTU: a record that is no counter, passed through.
    return [(port, LinkCounters({"fec_uncorrectable": values["unc"]}, fec_mode="RS")), (port, Mtu(9216))]


def _drops(text: str, port: str | None, _source: str) -> list[Placed]:
    return [(port, QueueDrops(((3, json.loads(text)["drops"]),)))]


def _optics(text: str, port: str | None, _source: str) -> list[Placed]:
    return [(port, ModuleOptics(True, bool(json.loads(text)["dom"])))]


ERRORS = Probe("errors", "switch-port", "show errors {port}", _errors, (LinkDelta,), counter=True)
FEC = Probe("fec", "switch-port", "show fec {port}", _fec, (LinkDelta, Mtu), counter=True)
DROPS = Probe("drops", "switch-port", "show drops {port}", _drops, (QueueDrops,), counter=True)
OPTICS = Probe("optics", "switch-port", "show optics {port}", _optics, (ModuleOptics,))


def test_the_counters_are_read_a_window_apart_and_merged_into_one_delta_per_port() -> None:
    session = Session(
        {
            "show errors swp1": [{"fcs": 10}, {"fcs": 25}],
            "show fec swp1": [{"unc": 0}, {"unc": 2}],
            "show drops swp1": [{"drops": 5}, {"drops": 9}],
            "show optics swp1": [{"dom": 1}],
        }
    )
    probes = (OPTICS, ERRORS, FEC, DROPS)
    got = collect(session.run, probes, ["swp1"], "switch leaf01", 5, session.wait, session.clock)
    # The three counter views first (3 s on this clock), then the view read once inside the window (1 s),
    # then only the rest of the 5 s window, then the counter views again.
    assert session.sent[:4] == ["show errors swp1", "show fec swp1", "show drops swp1", "show optics swp1"]
    assert session.waited == [1.0]
    assert session.sent[4:] == ["show errors swp1", "show fec swp1", "show drops swp1"]
    delta = got.records[(LinkDelta, "swp1")]
    assert isinstance(delta, LinkDelta) and delta.window_s == 5
    assert dict(delta.grown) == {"fcs_errors": 15, "fec_uncorrectable": 2}
    assert delta.reading.fec_mode == "RS" and delta.native_name("fcs_errors") == "fcsErrors"
    assert got.records[(QueueDrops, "swp1")] == QueueDrops(((3, 4),))
    assert got.records[(Mtu, "swp1")] == Mtu(9216)  # passed through from the later reading
    assert got.records[(ModuleOptics, "swp1")] == ModuleOptics(True, True)
    assert (LinkCounters, "swp1") not in got.records and not got.errors
    # Both readings are kept in order: a snapshot replays them the same way.
    assert [out.text for out in got.outputs if out.probe == "errors"] == ['{"fcs": 10}', '{"fcs": 25}']


def test_a_window_already_spent_by_the_first_reading_is_not_waited() -> None:
    session = Session(
        {"show errors swp1": [{"fcs": 1}, {"fcs": 1}], "show errors swp2": [{"fcs": 0}, {"fcs": 0}]}
    )
    collect(session.run, (ERRORS,), ["swp1", "swp2"], "switch leaf01", 1, session.wait, session.clock)
    assert session.waited == []


def test_a_zero_window_reads_the_wire_once_and_reports_lifetime_totals() -> None:
    session = Session(
        {
            "show errors swp1": [{"fcs": 10}],
            "show fec swp1": [{"unc": 3}],
            "show drops swp1": [{"drops": 5}, {"drops": 9}],
        }
    )
    got = collect(
        session.run, (ERRORS, FEC, DROPS), ["swp1"], "switch leaf01", 0, session.wait, session.clock
    )
    assert session.waited == []
    # Queue drops are still a difference of two readings at once, as before the window existed.
    assert session.sent == ["show drops swp1", "show errors swp1", "show fec swp1", "show drops swp1"]
    delta = got.records[(LinkDelta, "swp1")]
    assert isinstance(delta, LinkDelta) and delta.lifetime
    assert dict(delta.grown) == {"fcs_errors": 10, "fec_uncorrectable": 3}
    assert got.records[(QueueDrops, "swp1")] == QueueDrops(((3, 4),))


def test_a_failed_first_reading_is_an_error_and_no_delta() -> None:
    session = Session({"show errors swp1": [{"fcs": 10}, {"fcs": 12}], "show fec swp1": [{}, {"unc": 1}]})
    got = collect(session.run, (ERRORS, FEC), ["swp1"], "switch leaf01", 5, session.wait, session.clock)
    assert [(error.probe, error.port) for error in got.errors] == [("fec", "swp1")]
    assert got.failure((LinkDelta,), "swp1") is not None
    # The errors view alone still makes the port's delta; the FEC view's later reading is not used.
    delta = got.records[(LinkDelta, "swp1")]
    assert isinstance(delta, LinkDelta) and dict(delta.grown) == {"fcs_errors": 2}
