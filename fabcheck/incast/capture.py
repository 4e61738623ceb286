"""Counter captures around an incast: `ethtool -S` of the NICs involved (one ssh round trip per host per
capture) and each leaf's queue, PFC, ECN and watchdog counters (one read-only netmiko session per switch
per capture, the gate's own probes and session where they exist).

A capture that cannot be taken comes back as the reason (a string), never as zeros: the judge makes
every check that needs it an error.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabcheck.collect.probes import Collected, Probe
from fabcheck.collect.switch import Connect, collect_switch
from fabcheck.collect.switch_probes import PROBES
from fabcheck.errors import ParseError
from fabcheck.intent.platforms import PLATFORMS, Platform, UnknownPlatform
from fabcheck.pairs.runner import SshRunner
from fabcheck.parsers import switch_nvue
from fabcheck.parsers.ethtool_stats import parse_ethtool_stats
from fabcheck.parsers.hw_counters import parse_hw_counters
from fabcheck.parsers.switch_records import Placed, QueueDrops
from fabcheck.switch.connect import SwitchLogin

NicCounters = Mapping[str, Mapping[str, int]]  # netdev -> ethtool -S counter -> value
HostCapture = NicCounters | str  # or why the host's counters could not be read
SwitchCapture = Collected | str  # or why the switch could not be read at all

# Every netdev's block after the command line that printed it, as parse_ethtool_stats reads a capture
# of several interfaces. A netdev ethtool cannot read has no block: the judge names it.
# Then each netdev's RDMA port counters (/sys/class/infiniband/IB/ports/N/hw_counters: out_of_sequence,
# packet_seq_err, local_ack_timeout_err, np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled): mlx5
# keeps them there, not in `ethtool -S`. A "# rdma NETDEV IB" line says whose they are.
SNAPSHOT_SCRIPT = r"""
for dev in "$@"; do
  echo "$ ethtool -S $dev"
  ethtool -S "$dev" 2>&1
  echo
done
for dev in "$@"; do
  for ib in /sys/class/infiniband/*; do
    [ -e "$ib/device/net/$dev" ] || continue
    echo "# rdma $dev ${ib##*/}"
    grep -r -H '' "$ib"/ports/*/hw_counters 2>/dev/null
  done
done
"""
_RDMA_OWNER = re.compile(r"^# rdma (?P<netdev>\S+) (?P<ib>\S+)\s*$", re.MULTILINE)


def snapshot_command(netdevs: Sequence[str]) -> tuple[str, ...]:
    return ("sh", "-c", SNAPSHOT_SCRIPT, "fabcheck-incast-counters", *netdevs)


def capture_host(runner: SshRunner, host: str, netdevs: Sequence[str]) -> HostCapture:
    done = runner.run_on(host, snapshot_command(netdevs))
    if done.returncode != 0:
        said = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        return f"`ethtool -S` over ssh: {said[-1] if said else f'exit status {done.returncode}'}"
    try:
        blocks = parse_ethtool_stats(done.stdout, f"{host}: ethtool -S")
    except ParseError as err:
        return f"`ethtool -S` output unreadable: {err.message}"
    counters = {name: dict(block.counters) for name, block in blocks.items()}
    for netdev, rdma in rdma_counters(done.stdout, host).items():
        if netdev in counters:
            # ethtool's own names win: a driver that counts these in `ethtool -S` is read as it says.
            counters[netdev] = {**rdma, **counters[netdev]}
    return counters


def rdma_counters(output: str, host: str) -> dict[str, dict[str, int]]:
    """netdev -> its RDMA device's hw_counters (summed over the device's ports) from the snapshot's
    second part; a netdev without RDMA counters (none exposed, or unreadable) is left out."""
    found: dict[str, dict[str, int]] = {}
    owners = list(_RDMA_OWNER.finditer(output))
    for index, owner in enumerate(owners):
        end = owners[index + 1].start() if index + 1 < len(owners) else len(output)
        text = output[owner.end() : end]
        try:
            ports = parse_hw_counters(text, f"{host}: hw_counters of {owner['ib']}")
        except ParseError:
            continue
        summed: dict[str, int] = {}
        for port_counters in ports.values():
            for name, value in port_counters.items():
                summed[name] = summed.get(name, 0) + value
        found[owner["netdev"]] = summed
    return found


# -- switches --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PortPauseEcn:
    """A leaf port's RoCE-class PFC and ECN counters (NVUE's `qos roce counters`): a counter reading."""

    pause_rx: int
    pause_tx: int
    ecn_marked: int

    def minus(self, earlier: PortPauseEcn) -> PortPauseEcn:
        return PortPauseEcn(
            self.pause_rx - earlier.pause_rx,
            self.pause_tx - earlier.pause_tx,
            self.ecn_marked - earlier.ecn_marked,
        )


def parse_nvue_roce_counters(text: str, port: str | None, source: str = "<text>") -> list[Placed]:
    """The gate's NVUE drop reading of the port, plus its RoCE pause and ECN counters (nested as
    NVIDIA's CL 5.16 `qos roce counters` sample prints them: rx-stats / tx-stats groups)."""
    placed = switch_nvue.parse_roce_counters(text, port, source)
    paths = (switch_nvue.ROCE_PAUSES_RX, switch_nvue.ROCE_PAUSES_TX, switch_nvue.ROCE_ECN_MARKED)
    counters = PortPauseEcn(*switch_nvue.roce_counters(text, port, source, paths))
    # PortPauseEcn is the incast's own record: Placed's Record union is the parsers' (a layer below,
    # which cannot name it), and Collected keeps whatever record a probe places, by its type.
    return [*placed, (port, counters)]  # type: ignore[list-item]


def _read_once(probe: Probe) -> Probe:
    """A gate probe read once per capture: the incast's two captures make the difference."""
    return dataclasses.replace(probe, counter=False)


def _gate_probe(platform: str, name: str) -> Probe:
    return _read_once(next(p for p in PROBES[platform] if p.name == name))


# The incast's own versions of gate probes, by the name a platform record's incast_probes gives them.
INCAST_OWN_PROBES: Mapping[str, Probe] = {
    "incast.nvue.roce_counters": dataclasses.replace(
        _gate_probe("nvue", "nvue.roce_counters"),
        name="incast.nvue.roce_counters",
        parse=parse_nvue_roce_counters,
        provides=(QueueDrops, PortPauseEcn),
    ),
}


def _incast_probes(record: Platform) -> tuple[Probe, ...]:
    gate = {probe.name: probe for probe in PROBES[record.name]}
    probes = []
    for name in record.incast_probes:
        if name in INCAST_OWN_PROBES:
            probes.append(INCAST_OWN_PROBES[name])
        elif name in gate:
            probes.append(_read_once(gate[name]))
        else:
            raise UnknownPlatform(
                f"platform {record.name}: incast probe {name!r} is neither the gate's nor ours"
            )
    return tuple(probes)


# Per platform: what the incast reads of each leaf (its record's incast_probes). Where a platform does
# not show the RoCE class's pause and ECN mark counters per port (SONiC, EOS), those checks are a skip
# that says so.
INCAST_PROBES: Mapping[str, tuple[Probe, ...]] = {
    name: _incast_probes(record) for name, record in PLATFORMS.items()
}


def reads(platform: str, kind: type) -> bool:
    """Whether the incast reads records of `kind` on this platform."""
    return any(kind in probe.provides for probe in INCAST_PROBES.get(platform, ()))


def capture_switch(
    login: SwitchLogin, platform: str, ports: Sequence[str], connect: Connect
) -> SwitchCapture:
    """One session: the platform's incast probes over the incast's ports."""
    probes = INCAST_PROBES.get(platform, ())
    if not probes:
        return Collected()
    return collect_switch(login, platform, probes, ports, connect)
