"""Mock ``nv-fabricmanager``: the process the ``nvidia-fabricmanager`` unit of an HGX (NVSwitch) board runs.

The real daemon trains the NVSwitch links and then stays up to watch them; the lab's GPUs are registered
from the start (``nvidia-smi -q`` Fabric State Completed), so the mock only holds the unit's process until
SIGTERM: ``systemctl is-active nvidia-fabricmanager`` then answers as for the real service, and the
fabric-manager-down fault (`systemctl stop`) leaves it inactive.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from .common import Node, err

CONFIG_FILE = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
UNIT = "nvidia-fabricmanager.service"


def daemon(node: Node, args: list[str]) -> int:
    """`nv-fabricmanager -c CONFIG`: refuses a host without GPUs, then runs until SIGTERM."""
    if not node.gpus():
        err("fabric manager: no NVIDIA GPU found on this system\n")
        return 1

    def stop(_signum: int, _frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    while True:
        time.sleep(3600)
