"""Prometheus metrics of a run: the text exposition format, version 0.0.4 (pure).

What `fabcheck validate --metrics FILE` writes, for node_exporter's textfile collector or any reader of
the format (https://prometheus.io/docs/instrumenting/exposition_formats/: `# HELP` and `# TYPE` once per
family before its samples, label values in double quotes with backslash, double quote and line feed
escaped as `\\\\`, `\\"` and `\\n`, HELP text with backslash and line feed escaped; no timestamps, which
the textfile collector refuses).

Families (every one a gauge):
- `fabcheck_check_status{node,check,part}`: 1 pass, 0 fail, -1 error (could not be judged), -2 skip
  (not applicable); several findings of one check on one part are one sample, the worst of them. A
  finding about the node as a whole has part "" (Prometheus reads an empty label as no label).
- `fabcheck_run_status`: the run's verdict, the same values; `fabcheck_run_timestamp_seconds` (start,
  Unix time) and `fabcheck_run_duration_seconds`.
- the counters the gate read, cumulative as the device showed them at the end of the counter window
  (gauges: a reset or a replaced NIC makes them fall), each with its unit in the name:
  `fabcheck_link_<counter>_<unit>{node,kind,port,native}` for the wire vocabulary
  (fabcheck.parsers.wire_records) of each RDMA port with a netdev (kind host, port the RDMA device)
  and each switch port read (kind switch), `native` the device's own counter name;
  `fabcheck_link_pause_frames{node,kind,port,direction,priority,lossless}` (priority "link": link-level
  802.3x pause; lossless "true" on the priority the host's collection read as lossless);
  `fabcheck_link_pre_fec_bit_error_ratio{node,kind,port}` over the window, as the wire checks judge it;
  `fabcheck_switch_queue_drops_window_packets{node,port,traffic_class}`, each queue's drops over the
  window (switches show them as a delta only; traffic_class "roce": NVUE's RoCE class);
  `fabcheck_read_window_seconds{node}` (--counter-window; 0: read once, lifetime values);
  each RDMA port's hw_counters `fabcheck_rdma_{ecn_marked,cnp_sent,cnp_handled,out_of_sequence}_packets`,
  `fabcheck_rdma_sequence_error_naks`, `fabcheck_rdma_local_ack_timeout_events` `{node,port,native}`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabcheck.checks.host.evidence import HostEvidence, Unreadable
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.switch.evidence import SwitchEvidence
from fabcheck.parsers.switch_records import QueueDrops
from fabcheck.parsers.wire_records import COUNTER_NAMES, CounterName, LinkDelta
from fabcheck.report.model import Run

# Finding status -> sample value. Prometheus alerts compare numbers: a failure is 0, below every pass.
STATUS_VALUE: Mapping[Status, int] = {Status.PASS: 1, Status.FAIL: 0, Status.ERROR: -1, Status.SKIP: -2}
# Several findings of one (node, check, part): the one sample is the worst.
_WORST_FIRST = (Status.FAIL, Status.ERROR, Status.PASS, Status.SKIP)

# Wire counter -> metric name (unit last, as the Prometheus naming guide asks).
LINK_METRICS: Mapping[CounterName, str] = {
    "fcs_errors": "fabcheck_link_fcs_errors_frames",
    "symbol_errors": "fabcheck_link_symbol_errors_frames",
    "alignment_errors": "fabcheck_link_alignment_errors_frames",
    "rx_errors": "fabcheck_link_rx_errors_frames",
    "tx_errors": "fabcheck_link_tx_errors_frames",
    "rx_discards": "fabcheck_link_rx_discards_packets",
    "tx_discards": "fabcheck_link_tx_discards_packets",
    "rx_out_of_buffer": "fabcheck_link_rx_out_of_buffer_packets",
    "fec_corrected": "fabcheck_link_fec_corrected_blocks",
    "fec_uncorrectable": "fabcheck_link_fec_uncorrectable_blocks",
    "uncorrected_symbols": "fabcheck_link_uncorrected_symbols",
    "link_down": "fabcheck_link_down_events",
    "link_changes": "fabcheck_link_state_changes_events",
}
# Bits the FEC corrected and bits received are reported as their ratio over the window, the pre-FEC
# BER the wire checks judge (Prometheus's base unit is bytes, never bits: a ratio has none).
BER_INPUTS: frozenset[CounterName] = frozenset({"corrected_bits", "received_bits"})
BER_METRIC = "fabcheck_link_pre_fec_bit_error_ratio"
assert set(LINK_METRICS) | BER_INPUTS == set(COUNTER_NAMES), "a wire counter without its metric"
_LINK_HELP: Mapping[CounterName, str] = {
    "fcs_errors": "frames received with a bad FCS/CRC",
    "symbol_errors": "frames dropped for physical coding (symbol) errors",
    "alignment_errors": "frames received misaligned",
    "rx_errors": "receive errors (platforms that show only a total)",
    "tx_errors": "transmit errors",
    "rx_discards": "received packets discarded at the port",
    "tx_discards": "packets the port could not send",
    "rx_out_of_buffer": "packets the host NIC dropped for lack of receive buffers",
    "fec_corrected": "FEC codewords or blocks corrected",
    "fec_uncorrectable": "FEC codewords or blocks that could not be corrected (traffic lost)",
    "uncorrected_symbols": "symbols left uncorrected after FEC (traffic lost)",
    "link_down": "operational link-down transitions",
    "link_changes": "link state transitions, up and down",
}
# The RDMA port's hw_counters (mlx5 names, fabcheck.parsers.hw_counters) -> metric and help.
RDMA_METRICS: Mapping[str, tuple[str, str]] = {
    "np_ecn_marked_roce_packets": ("fabcheck_rdma_ecn_marked_packets", "ECN-marked RoCE packets received"),
    "np_cnp_sent": ("fabcheck_rdma_cnp_sent_packets", "CNPs sent as DCQCN notification point"),
    "rp_cnp_handled": ("fabcheck_rdma_cnp_handled_packets", "CNPs handled as DCQCN reaction point"),
    "out_of_sequence": ("fabcheck_rdma_out_of_sequence_packets", "RoCE packets received out of sequence"),
    "packet_seq_err": ("fabcheck_rdma_sequence_error_naks", "NAK sequence errors received"),
    "local_ack_timeout_err": ("fabcheck_rdma_local_ack_timeout_events", "ack timeouts (retransmissions)"),
}
PAUSE_METRIC = "fabcheck_link_pause_frames"
QUEUE_DROPS_METRIC = "fabcheck_switch_queue_drops_window_packets"
WINDOW_METRIC = "fabcheck_read_window_seconds"
CHECK_METRIC = "fabcheck_check_status"


@dataclass(frozen=True)
class PortCounters:
    """One port's counters as its stage read them: a rail NIC (kind host, port the RDMA device) or a
    switch port (kind switch)."""

    node: str
    kind: str  # "host" or "switch"
    port: str
    delta: LinkDelta
    lossless_priority: int | None = None  # the priority whose pause belongs (None: not known)


@dataclass(frozen=True)
class QueueDropCount:
    """Drops of a switch port's lossless queue over the counter window."""

    node: str
    port: str
    traffic_class: str  # the queue number, or "roce" (NVUE's RoCE class)
    packets: int


@dataclass(frozen=True)
class RdmaCounters:
    """One RDMA port's hw_counters as the host showed them at the end of the window (cumulative)."""

    node: str
    port: str
    counters: Mapping[str, int]


@dataclass(frozen=True)
class Readings:
    """Every counter a run read, for the metrics (collected from the stages' evidence)."""

    ports: tuple[PortCounters, ...] = ()
    queue_drops: tuple[QueueDropCount, ...] = ()
    windows: Mapping[str, float] = field(default_factory=dict)  # node -> its counter window, seconds
    rdma: tuple[RdmaCounters, ...] = ()

    def __add__(self, other: Readings) -> Readings:
        return Readings(
            (*self.ports, *other.ports),
            (*self.queue_drops, *other.queue_drops),
            {**self.windows, **other.windows},
            (*self.rdma, *other.rdma),
        )


def escape_label(value: str) -> str:
    """A label value as the exposition format quotes it: backslash, double quote, line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """HELP text: backslash and line feed escaped (double quotes stay)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _sample(name: str, labels: Sequence[tuple[str, str]], value: float) -> str:
    if not labels:
        return f"{name} {_number(value)}"
    shown = ",".join(f'{key}="{escape_label(text)}"' for key, text in labels)
    return f"{name}{{{shown}}} {_number(value)}"


class _Families:
    """Samples grouped by family, each family written once with its HELP and TYPE."""

    def __init__(self) -> None:
        self.help: dict[str, str] = {}
        self.samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}

    def add(self, name: str, help_text: str, labels: Sequence[tuple[str, str]], value: float) -> None:
        self.help.setdefault(name, help_text)
        # The same series twice would make the whole scrape fail: the first reading stands.
        self.samples.setdefault(name, {}).setdefault(tuple(labels), value)

    def text(self) -> str:
        lines: list[str] = []
        for name, help_text in self.help.items():
            lines.append(f"# HELP {name} {escape_help(help_text)}")
            lines.append(f"# TYPE {name} gauge")
            lines.extend(_sample(name, labels, value) for labels, value in self.samples[name].items())
        return "".join(line + "\n" for line in lines)


def _worst(statuses: Iterable[Status]) -> Status:
    present = set(statuses)
    return next(status for status in _WORST_FIRST if status in present)


def _part(finding: Finding) -> str:
    if finding.where is not None:
        return finding.where.part
    return finding.subject


def render(run: Run, readings: Readings | None = None, *, started_s: float | None = None) -> str:
    """The exposition text of the run: check statuses, the run's verdict, start and duration, and the
    counters read. `started_s`: the run's start in Unix seconds (None: no timestamp sample)."""
    families = _Families()
    statuses: dict[tuple[str, str, str], list[Status]] = {}
    for subject, finding in run.findings():
        node = finding.where.node if finding.where is not None and finding.where.node else subject.name
        statuses.setdefault((node, finding.check, _part(finding)), []).append(finding.status)
    for (node, check, part), seen in statuses.items():
        families.add(
            CHECK_METRIC,
            "fabcheck finding status: 1 pass, 0 fail, -1 error (could not judge), -2 skip (not applicable)",
            (("node", node), ("check", check), ("part", part)),
            STATUS_VALUE[_worst(seen)],
        )
    run_status = run.verdict if run.subjects else Status.ERROR
    families.add(
        "fabcheck_run_status",
        f"verdict of the {run.command} run, values as fabcheck_check_status",
        (),
        STATUS_VALUE[run_status],
    )
    if started_s is not None:
        families.add(
            "fabcheck_run_timestamp_seconds",
            f"when the {run.command} run started, Unix time",
            (),
            round(started_s, 3),
        )
    families.add(
        "fabcheck_run_duration_seconds", f"wall time of the {run.command} run", (), round(run.elapsed_s, 3)
    )
    _counters(families, readings or Readings())
    return families.text()


def _counters(families: _Families, readings: Readings) -> None:
    for node, window in readings.windows.items():
        families.add(
            WINDOW_METRIC,
            "seconds between the two counter readings (0: read once)",
            (("node", node),),
            window,
        )
    for port in readings.ports:
        where = (("node", port.node), ("kind", port.kind), ("port", port.port))
        reading = port.delta.reading
        for name in COUNTER_NAMES:
            if name in reading.values and name not in BER_INPUTS:
                native = (("native", reading.native.get(name, name)),)
                help_text = f"{_LINK_HELP[name]}, cumulative as the device showed it"
                families.add(LINK_METRICS[name], help_text, (*where, *native), reading.values[name])
        ber = port.delta.pre_fec_ber
        if ber is not None:
            help_text = "pre-FEC bit error ratio over the read window (else the device's own figure)"
            families.add(BER_METRIC, help_text, where, ber)
        for (direction, priority), frames in sorted(reading.pause.items(), key=_pause_order):
            lossless = priority is not None and priority == port.lossless_priority
            labels = (
                *where,
                ("direction", direction),
                ("priority", "link" if priority is None else str(priority)),
                ("lossless", "true" if lossless else "false"),
            )
            families.add(
                PAUSE_METRIC,
                'pause frames received (rx) or sent (tx) per priority ("link": link-level pause), cumulative',
                labels,
                frames,
            )
    for rdma in readings.rdma:
        for counter, (metric, help_text) in RDMA_METRICS.items():
            if counter in rdma.counters:
                where = (("node", rdma.node), ("port", rdma.port), ("native", counter))
                families.add(metric, f"{help_text}, cumulative", where, rdma.counters[counter])
    for drops in readings.queue_drops:
        families.add(
            QUEUE_DROPS_METRIC,
            "packets the switch port's lossless queue dropped over the counter window",
            (("node", drops.node), ("port", drops.port), ("traffic_class", drops.traffic_class)),
            drops.packets,
        )


def _pause_order(item: tuple[tuple[str, int | None], int]) -> tuple[str, int]:
    (direction, priority), _frames = item
    return direction, -1 if priority is None else priority


def host_readings(node: str, evidence: HostEvidence) -> Readings:
    """The counters a host's collection showed, through the views its wire checks judge
    (HostEvidence.wire: each RDMA port with a netdev) and each RDMA port's hw_counters, named by its
    device ("mlx5_0"; "mlx5_0/2" for a second port). A port whose counters could not be read has no
    sample: absent, never 0."""
    links = () if isinstance(evidence.links, Unreadable) else evidence.links
    ports_of: dict[str, int] = {}
    for link in links:
        ports_of[link.dev] = ports_of.get(link.dev, 0) + 1
    ports: list[PortCounters] = []
    rdma: list[RdmaCounters] = []
    windows: dict[str, float] = {}
    for link in links:
        name = link.dev if ports_of[link.dev] == 1 else f"{link.dev}/{link.port}"
        counters = evidence.rdma_counters(link.name)
        if not isinstance(counters, Unreadable):
            rdma.append(RdmaCounters(node, name, counters))
        if link.netdev is None:
            continue
        delta = evidence.wire(link.netdev).counters
        if isinstance(delta, Unreadable):
            continue
        ports.append(PortCounters(node, "host", name, delta, evidence.priority))
        windows[node] = delta.window_s
    return Readings(tuple(ports), (), windows, tuple(rdma))


def switch_readings(node: str, evidence: SwitchEvidence) -> Readings:
    """The counters a switch session showed: each port's wire counters (LinkDelta) and its queues'
    drops over the window (QueueDrops), as the switch checks read them."""
    ports: list[PortCounters] = []
    drops: list[QueueDropCount] = []
    windows: dict[str, float] = {}
    for (kind, port), record in evidence.records.items():
        if port is None:
            continue
        if kind is LinkDelta and isinstance(record, LinkDelta):
            ports.append(PortCounters(node, "switch", port, record))
            windows[node] = record.window_s
        elif kind is QueueDrops and isinstance(record, QueueDrops):
            drops.extend(QueueDropCount(node, port, str(queue), count) for queue, count in record.by_queue)
            if record.roce_class is not None:
                drops.append(QueueDropCount(node, port, "roce", record.roce_class))
    return Readings(tuple(ports), tuple(drops), windows)
