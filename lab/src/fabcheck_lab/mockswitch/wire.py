"""The lab's cables between mock switches and mock hosts, seen from the switch server's side.

Switch -> hosts: after each state dump the server writes, for every host NIC cabled to the switch, a
wire view into that host node's state folder (``fabric/<netdev>.json``: the switch, the port and the
port's QoS), which the node's traffic model reads. Hosts -> switch: the node spools one JSON file per
flow and switch port (``fabric/spool/``); ``drain`` adds them to the switches' counters and deletes them.
No switch in the lab: no wire view is written and the hosts keep their host-only model.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fabcheck_lab.mockhost.layout import MockNodePaths
from fabcheck_lab.mockhost.tools.traffic import SPOOL_DIR, WIRE_DIR
from fabcheck_lab.mockswitch.device import ROCE_DSCP, SwitchDevice
from fabcheck_lab.mockswitch.spec import MockSwitchError, write_private

log = logging.getLogger("fabcheck.mockswitch")


def host_state(run_dir: Path, host: str) -> Path:
    """A host node's state folder on the controller (bind-mounted into the node)."""
    return MockNodePaths.under(Path(run_dir) / "nodes" / host).state


def wire_views(device: SwitchDevice) -> dict[tuple[str, str], dict[str, Any]]:
    """(host, netdev) -> the wire view of the port that NIC's cable now plugs into.

    LLDP's view is the cabling (switch-miswired swaps two cables), so traffic follows the same cables.
    """
    qos = device.port_qos()
    views = {}
    for port, (host, netdev) in device.lldp_neighbors().items():
        q = asdict(qos[port])
        views[(host, netdev)] = {
            "switch": device.name,
            "port": port,
            "platform": device.platform,
            "roce_dscp": ROCE_DSCP,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in q.items()},
        }
    return views


class WireWriter:
    """Writes wire views into the host nodes, each file again only when its content changed (the server
    dumps after every typed line)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.written: dict[Path, str] = {}

    def write(self, device: SwitchDevice) -> None:
        for (host, netdev), view in wire_views(device).items():
            state = host_state(self.run_dir, host)
            if not state.is_dir():
                continue  # a neighbour that is not a lab node (a spec written by hand)
            path = state / WIRE_DIR / f"{netdev}.json"
            text = json.dumps(view, indent=1, sort_keys=True) + "\n"
            if self.written.get(path) == text:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            write_private(path, text)
            self.written[path] = text


def cabled_hosts(devices: Iterable[SwitchDevice]) -> list[str]:
    return sorted({host for d in devices for _, host, _ in d.spec.neighbors})


def drain(run_dir: Path, devices: Mapping[str, SwitchDevice]) -> set[str]:
    """Add every spooled record of every cabled host to its switch's counters; return the switches that
    changed. A record that names no switch or port of this server, or is malformed, is logged and dropped
    (it can never become valid later)."""
    changed: set[str] = set()
    for host in cabled_hosts(devices.values()):
        spool = host_state(run_dir, host) / SPOOL_DIR
        try:
            names = sorted(n for n in os.listdir(spool) if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            continue
        for name in names:
            path = spool / name
            switch = _apply(path, devices)
            if switch:
                changed.add(switch)
            path.unlink(missing_ok=True)
    return changed


def _apply(path: Path, devices: Mapping[str, SwitchDevice]) -> str | None:
    try:
        record = json.loads(path.read_text())
        device = devices[record["switch"]]
        device.counters.add(record["port"], record["add"])
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, MockSwitchError) as exc:
        log.warning("%s: traffic record dropped: %s", path, exc)
        return None
    return device.name
