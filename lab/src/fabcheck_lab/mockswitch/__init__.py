"""Mock switches for the lab: NVUE, SONiC and EOS CLIs over SSH that netmiko drives for real.

Start the server with `python -m fabcheck_lab.mockswitch --run-dir RUN_DIR` after write_spec();
it writes RUN_DIR/switches/<name>.json after every change and RUN_DIR/switches/ready when listening.
"""

from __future__ import annotations

from fabcheck_lab.mockswitch.device import SWITCH_FAULTS
from fabcheck_lab.mockswitch.faults import arm_drop, heal_switch_fault, inject_switch_fault
from fabcheck_lab.mockswitch.spec import (
    SWITCH_PLATFORMS,
    MockSwitchError,
    SwitchSpec,
    known_hosts_path,
    read_spec,
    ready_path,
    state_path,
    write_spec,
)

__all__ = [
    "SWITCH_FAULTS",
    "SWITCH_PLATFORMS",
    "MockSwitchError",
    "SwitchSpec",
    "arm_drop",
    "heal_switch_fault",
    "inject_switch_fault",
    "known_hosts_path",
    "read_spec",
    "ready_path",
    "state_path",
    "write_spec",
]
