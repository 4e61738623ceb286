"""Mock GPU hosts for the lab: tools that behave like the real ones, driven by per-node state.

Controller side (this package): ``install_tools``, ``prepare_node``, ``inject``/``heal``. Node side:
``tools/`` (stdlib only, shipped into each node as one zip application).
"""

from .faults import HOST_FAULTS, heal, inject
from .layout import MOCK_STATE_MOUNT, MockNodePaths
from .prepare import HOST_PROFILES, install_tools, prepare_node

__all__ = [
    "HOST_FAULTS",
    "HOST_PROFILES",
    "MOCK_STATE_MOUNT",
    "MockNodePaths",
    "heal",
    "inject",
    "install_tools",
    "prepare_node",
]
