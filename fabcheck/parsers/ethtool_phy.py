"""`ethtool -S <netdev>` of an mlx5 NIC -> the port's physical-layer counters (LinkCounters).

mlx5 prints its physical-port counters in the same `NIC statistics:` block as every other counter,
with the `_phy` suffix (torvalds/linux Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
counters.rst): the block is read by fabcheck.parsers.ethtool_stats, one NIC per output. Each counter
below that the driver prints lands under its wire-vocabulary name, its mlx5 name kept as `native`.

A counter the NIC does not print is absent, never 0: mlx5 prints `rx_pcs_symbol_err_phy` and
`rx_corrected_bits_phy` only with the firmware's PCAM statistical-group capability, `rx_bits_phy`
only on recent kernels, and a VF has no `_phy` counter at all (the physical port is not exposed to
VMs): the checks then skip what they cannot judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from fabcheck.errors import ParseError
from fabcheck.parsers.ethtool_stats import parse_ethtool_stats
from fabcheck.parsers.wire_records import CounterName, Direction, LinkCounters, PauseKey

# mlx5 counter -> wire vocabulary (meanings from the mlx5 counters documentation).
MLX5_PHY_COUNTERS: Mapping[str, CounterName] = MappingProxyType(
    {
        "rx_crc_errors_phy": "fcs_errors",  # frames dropped for a bad FCS
        "rx_symbol_err_phy": "symbol_errors",  # frames dropped for physical coding errors
        "rx_pcs_symbol_err_phy": "uncorrected_symbols",  # symbols the FEC did not correct: lost
        "rx_corrected_bits_phy": "corrected_bits",  # bits the active FEC corrected (pre-FEC BER)
        "rx_bits_phy": "received_bits",  # the BER denominator
        "link_down_events_phy": "link_down",  # operational down transitions
        "rx_discards_phy": "rx_discards",  # received packets dropped for lack of buffer
        "tx_discards_phy": "tx_discards",  # packets the port could not send
        "rx_out_of_buffer": "rx_out_of_buffer",  # no receive WQE: the host was too slow
    }
)


# mlx5's pause counters (the same counters.rst): rx/tx_prio[p]_pause per priority (PFC), and
# rx/tx_pause_ctrl_phy for link-level (global) pause.
_PRIORITY_PAUSE = re.compile(r"(?P<direction>rx|tx)_prio(?P<priority>[0-7])_pause")
_GLOBAL_PAUSE: Mapping[str, PauseKey] = MappingProxyType(
    {"rx_pause_ctrl_phy": ("rx", None), "tx_pause_ctrl_phy": ("tx", None)}
)


def pause_counters(counters: Mapping[str, int]) -> dict[PauseKey, int]:
    """The pause frames of an mlx5 statistics block, by (direction, priority; None: link-level)."""
    found: dict[PauseKey, int] = {}
    for name, value in counters.items():
        match = _PRIORITY_PAUSE.fullmatch(name)
        if match:
            direction: Direction = "rx" if match["direction"] == "rx" else "tx"
            found[(direction, int(match["priority"]))] = value
        elif name in _GLOBAL_PAUSE:
            found[_GLOBAL_PAUSE[name]] = value
    return found


def parse_link_counters(text: str, source: str = "<text>") -> LinkCounters:
    """The physical counters of the one NIC in `ethtool -S` output. ParseError: not `ethtool -S`
    output (see parse_ethtool_stats) or statistics of more than one NIC."""
    blocks = parse_ethtool_stats(text, source)
    if len(blocks) != 1:
        names = ", ".join(sorted(name or "?" for name in blocks))
        raise ParseError(f"statistics of {len(blocks)} NICs ({names}); expected one NIC's", source=source)
    (block,) = blocks.values()
    values: dict[CounterName, int] = {}
    native: dict[CounterName, str] = {}
    for mlx5_name, name in MLX5_PHY_COUNTERS.items():
        if mlx5_name in block.counters:
            values[name] = block.counters[mlx5_name]
            native[name] = mlx5_name
    return LinkCounters(values, native, pause=pause_counters(block.counters))
