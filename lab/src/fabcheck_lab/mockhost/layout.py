"""Where a mock node's files live on the controller, and where they appear inside the node."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MOCK_STATE_MOUNT = "/var/lib/fabcheck-mock"
# In a node's state folder: bound over /sys/bus/pci/devices (one folder per BDF with its AER counters)
# and over /proc/cmdline by nodeinit.py, which repeats these names (it runs with the standard library only).
PCI_DEVICES_DIR = "sys_bus_pci_devices"  # = tools/pcie.py PCI_DEVICES_DIR (tools import no lab module)
CMDLINE_FILE = "proc_cmdline"


@dataclass(frozen=True)
class MockNodePaths:
    """Per-node folders in the lab run dir.

    ``upper`` is the overlay upperdir of the node's ``/`` (pre-seed /etc files there), ``state`` is
    bind-mounted at MOCK_STATE_MOUNT and ``sys_class`` over ``/sys/class`` inside the node.
    """

    root: Path
    upper: Path
    state: Path
    sys_class: Path

    @classmethod
    def under(cls, root: Path) -> MockNodePaths:
        return cls(root=root, upper=root / "upper", state=root / "state", sys_class=root / "sys_class")

    @property
    def etc(self) -> Path:
        """The node's /etc as seen from the controller (its overlay upper layer)."""
        return self.upper / "etc"
